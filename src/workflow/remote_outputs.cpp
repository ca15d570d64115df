// SPDX-License-Identifier: MIT
#include "remote_outputs.hpp"

namespace strata::workflow::detail {

SenderOutput::SenderOutput(std::size_t words, std::unique_ptr<Sender> sender)
    : message_(words + 1, 0), sender_(std::move(sender)) {}

Result<std::span<std::uint64_t>> SenderOutput::buffer(std::uint64_t /*it*/) {
    return std::span<std::uint64_t>(message_.data(), message_.size() - 1);
}

Result<void> SenderOutput::publish(std::uint64_t /*it*/) {
    message_.back() = static_cast<std::uint64_t>(now_ns());
    return sender_->send(message_);
}

PortAndSenderOutput::PortAndSenderOutput(PortOutput local, std::unique_ptr<Sender> sender)
    : local_(std::move(local)), sender_(std::move(sender)) {}

Result<std::span<std::uint64_t>> PortAndSenderOutput::buffer(std::uint64_t it) {
    return local_.buffer(it);
}

Result<void> PortAndSenderOutput::publish(std::uint64_t it) {
    // The committed slot stays as written until this producer loans it again, which is after the send.
    std::span<const std::uint64_t> slot;
    if (auto r = local_.publish(it, &slot); !r) {
        return r;
    }
    return sender_->send(slot);
}

}  // namespace strata::workflow::detail
