// SPDX-License-Identifier: MIT
#include "dsm_ports.hpp"

#include <cstring>

#include <fmt/format.h>

namespace strata::workflow::detail {

DsmMailbox::DsmMailbox(dsm::Node& node, std::chrono::milliseconds timeout) : node_(node), timeout_(timeout) {}

void DsmMailbox::keep(dsm::ChunkId chunk) {
    kept_.try_emplace(chunk);
}

Result<void> DsmMailbox::take_one(std::chrono::steady_clock::time_point deadline, const std::string& what) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
        return make_error(Errc::timeout, "{}: nothing within {} ms (STRATA_WORKFLOW_TIMEOUT_MS)", what,
                          timeout_.count());
    }
    auto note = node_.wait_notification(left);
    if (!note) {
        if (note.error().code == Errc::timeout) {
            return make_error(Errc::timeout, "{}: nothing within {} ms (STRATA_WORKFLOW_TIMEOUT_MS)", what,
                              timeout_.count());
        }
        return make_error(note.error().code, "{}: {}", what, note.error().message);
    }
    auto& version = versions_[note->chunk];
    version = std::max(version, note->version);
    if (auto it = kept_.find(note->chunk); it != kept_.end()) {
        it->second.push_back(std::move(*note));
    }
    return {};
}

Result<dsm::Notification> DsmMailbox::next(dsm::ChunkId chunk, const std::string& what) {
    auto& queue = kept_[chunk];
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (queue.empty()) {
        if (auto r = take_one(deadline, what); !r) {
            return std::unexpected(r.error());
        }
    }
    dsm::Notification note = std::move(queue.front());
    queue.pop_front();
    return note;
}

Result<void> DsmMailbox::wait_version(dsm::ChunkId chunk, std::uint64_t version, const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (versions_[chunk] < version) {
        if (auto r = take_one(deadline, what); !r) {
            return r;
        }
    }
    return {};
}

DsmSender::DsmSender(std::shared_ptr<DsmMailbox> mailbox, dsm::ChunkId data, std::vector<dsm::ChunkId> acks,
                     std::vector<std::string> consumers, std::uint32_t window)
    : mailbox_(std::move(mailbox)),
      data_(data),
      acks_(std::move(acks)),
      consumers_(std::move(consumers)),
      window_(std::max<std::uint32_t>(window, 1)) {}

Result<void> DsmSender::send(std::span<const std::uint64_t> message) {
    // Iteration sent_ may be written once every consumer read iteration sent_ - window (its ack's version).
    if (sent_ >= window_) {
        for (std::size_t c = 0; c < acks_.size(); ++c) {
            const std::uint64_t needed = sent_ - window_ + 1;
            if (auto r = mailbox_->wait_version(
                    acks_[c], needed,
                    fmt::format("dsm: waiting for task {} to read iteration {}", consumers_[c], needed - 1));
                !r) {
                return r;
            }
        }
    }
    dsm::Node& node = mailbox_->node();
    auto bytes = node.acquire_write(data_);
    if (!bytes) {
        return std::unexpected(bytes.error());
    }
    std::memcpy(bytes->data(), message.data(), std::min(bytes->size(), message.size_bytes()));
    if (auto r = node.release(data_); !r) {
        return r;
    }
    ++sent_;
    return {};
}

DsmInput::DsmInput(std::shared_ptr<DsmMailbox> mailbox, dsm::ChunkId data, dsm::ChunkId ack, std::size_t words,
                   std::string producer)
    : mailbox_(std::move(mailbox)), data_(data), ack_(ack), words_(words), producer_(std::move(producer)) {
    mailbox_->keep(data_);
}

Result<std::span<const std::uint64_t>> DsmInput::receive(std::uint64_t it, std::int64_t& stamp_ns) {
    auto note = mailbox_->next(data_, fmt::format("dsm: waiting for iteration {} from task {}", it, producer_));
    if (!note) {
        return std::unexpected(note.error());
    }
    if (note->version != it + 1 || !note->has_data || note->data().size() < (words_ + 1) * 8) {
        return make_error(Errc::internal,
                          "dsm: task {}'s chunk {:#x}: expected version {} with {} bytes for iteration {}, got version "
                          "{} with {} bytes (a release was lost or repeated)",
                          producer_, data_, it + 1, (words_ + 1) * 8, it, note->version, note->data().size());
    }
    held_ = std::move(*note);
    const std::byte* bytes = held_.data().data();
    const std::uint64_t* words = nullptr;
    if (reinterpret_cast<std::uintptr_t>(bytes) % alignof(std::uint64_t) == 0) {
        words = reinterpret_cast<const std::uint64_t*>(bytes);
    } else {
        aligned_.resize(words_ + 1);
        std::memcpy(aligned_.data(), bytes, (words_ + 1) * 8);
        words = aligned_.data();
    }
    stamp_ns = static_cast<std::int64_t>(words[words_]);
    return std::span<const std::uint64_t>(words, words_);
}

Result<void> DsmInput::release(std::uint64_t it) {
    held_ = {};
    dsm::Node& node = mailbox_->node();
    auto bytes = node.acquire_write(ack_);
    if (!bytes) {
        return std::unexpected(bytes.error());
    }
    const std::uint64_t read = it + 1;
    std::memcpy(bytes->data(), &read, std::min(bytes->size(), sizeof read));
    return node.release(ack_);
}

}  // namespace strata::workflow::detail
