// SPDX-License-Identifier: MIT
#include "shm_ports.hpp"

#include <cstring>
#include <limits>

#include "core/cpu_relax.hpp"

namespace strata::workflow::detail {

namespace {

bool through_segment(Method m) {
    return m == Method::shm || m == Method::copy_into || m == Method::copy_from || m == Method::copy;
}

// Calls op(timeout) until it does not time out: with `spin`, zero timeouts in
// a tight loop until `timeout` has passed; otherwise one call that waits.
template <class Op>
auto poll(bool spin, Port::Timeout timeout, Op op) -> decltype(op(timeout)) {
    if (!spin) {
        return op(timeout);
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (unsigned i = 0;; ++i) {
        auto r = op(Port::Timeout::zero());
        if (r || r.error().code != Errc::timeout) {
            return r;
        }
        if ((i & 0xfff) == 0xfff && std::chrono::steady_clock::now() > deadline) {
            return op(Port::Timeout::zero());
        }
        core::cpu_relax();
    }
}

}  // namespace

std::size_t segment_bytes_for_ports(const Workflow& wf) {
    constexpr std::size_t saturated = std::numeric_limits<std::size_t>::max();
    std::size_t bytes = 4U << 20;  // the segment's own tables and allocator slack
    for (const auto& t : wf.tasks) {
        for (const auto& e : wf.edges) {
            if (e.from == t.name && through_segment(e.method)) {
                // Sizes come from users: any overflow saturates, and validate() refuses it.
                if (t.data_size > saturated - 128) {
                    return saturated;
                }
                const std::size_t slot_bytes = (port_slot_bytes(t.data_size) + 63) / 64 * 64;
                std::size_t port = 0;
                if (__builtin_mul_overflow(std::size_t{wf.slots}, slot_bytes, &port) ||
                    port > saturated - (64U << 10) || __builtin_add_overflow(bytes, port + (64U << 10), &bytes)) {
                    return saturated;
                }
                break;
            }
        }
    }
    return bytes;
}

PortOutput::PortOutput(Port port, std::size_t data_size, bool copy_into, Port::Timeout timeout, bool spin)
    : port_(std::move(port)), data_size_(data_size), timeout_(timeout), spin_(spin) {
    if (copy_into) {
        private_.assign(data_size / 8, 0);
    }
}

Result<void> PortOutput::take_loan() {
    auto loan = poll(spin_, timeout_, [&](Port::Timeout t) { return port_.loan(t); });
    if (!loan) {
        return std::unexpected(loan.error());
    }
    loan_.emplace(std::move(*loan));
    return {};
}

Result<std::span<std::uint64_t>> PortOutput::buffer(std::uint64_t /*it*/) {
    if (!private_.empty()) {
        return std::span<std::uint64_t>(private_);
    }
    if (auto r = take_loan(); !r) {
        return std::unexpected(r.error());
    }
    return std::span<std::uint64_t>(reinterpret_cast<std::uint64_t*>(loan_->bytes().data()), data_size_ / 8);
}

Result<void> PortOutput::publish(std::uint64_t it) {
    return publish(it, nullptr);
}

Result<void> PortOutput::publish(std::uint64_t /*it*/, std::span<const std::uint64_t>* committed) {
    if (!private_.empty()) {
        if (auto r = take_loan(); !r) {
            return r;
        }
        std::memcpy(loan_->bytes().data(), private_.data(), data_size_);
    }
    const std::int64_t stamp = now_ns();
    std::memcpy(loan_->bytes().data() + data_size_, &stamp, sizeof stamp);
    if (committed != nullptr) {
        *committed = {reinterpret_cast<const std::uint64_t*>(loan_->bytes().data()), data_size_ / 8 + 1};
    }
    auto r = port_.commit(std::move(*loan_));
    loan_.reset();
    return r;
}

PortInput::PortInput(Port port, std::size_t data_size, bool copy_from, Port::Timeout timeout, bool spin)
    : port_(std::move(port)), data_size_(data_size), timeout_(timeout), spin_(spin) {
    if (copy_from) {
        private_.assign(data_size / 8, 0);
    }
}

Result<std::span<const std::uint64_t>> PortInput::receive(std::uint64_t /*it*/, std::int64_t& stamp_ns) {
    auto sample = poll(spin_, timeout_, [&](Port::Timeout t) { return port_.recv(t); });
    if (!sample) {
        return std::unexpected(sample.error());
    }
    const std::byte* bytes = sample->bytes().data();
    std::memcpy(&stamp_ns, bytes + data_size_, sizeof stamp_ns);
    if (private_.empty()) {
        sample_.emplace(std::move(*sample));
        return std::span<const std::uint64_t>(reinterpret_cast<const std::uint64_t*>(bytes), data_size_ / 8);
    }
    std::memcpy(private_.data(), bytes, data_size_);
    // The copy is ours: the producer may reuse the slot while we read it.
    if (auto r = port_.release(std::move(*sample)); !r) {
        return std::unexpected(r.error());
    }
    return std::span<const std::uint64_t>(private_);
}

Result<void> PortInput::release(std::uint64_t /*it*/) {
    if (!sample_) {
        return {};
    }
    auto r = port_.release(std::move(*sample_));
    sample_.reset();
    return r;
}

}  // namespace strata::workflow::detail
