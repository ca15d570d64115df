#include "segment_ports.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <climits>
#include <cstring>
#include <ctime>

namespace strata::workflow::detail {

namespace {

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Process-shared futex calls on a word of the segment (no FUTEX_PRIVATE_FLAG).
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, int timeout_ms) noexcept {
    timespec ts{timeout_ms / 1000, static_cast<long>(timeout_ms % 1000) * 1'000'000};
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake_all(std::atomic<std::uint32_t>& word) noexcept {
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Spins only a little: on an oversubscribed machine the peer needs this core.
constexpr int kSpins = 256;
constexpr int kSlice_ms = 100;

// Waits until ready() holds. `word` is what the peer changes and wakes.
template <class Ready>
bool wait_for(std::atomic<std::uint32_t>& word, std::atomic<std::uint32_t>& waiters, Wait mode, int timeout_ms,
              Ready ready) {
    for (int i = 0; i < kSpins; ++i) {
        if (ready()) {
            return true;
        }
        cpu_relax();
    }
    const std::int64_t deadline = now_ns() + static_cast<std::int64_t>(timeout_ms) * 1'000'000;
    std::uint32_t spins = 0;
    while (!ready()) {
        if (mode == Wait::busy_poll) {
            cpu_relax();
            if ((++spins & 0xffff) == 0 && now_ns() > deadline) {
                return false;
            }
            continue;
        }
        const std::uint32_t seen = word.load(std::memory_order_seq_cst);
        waiters.fetch_add(1, std::memory_order_seq_cst);
        if (!ready()) {
            futex_wait(word, seen, kSlice_ms);
        }
        waiters.fetch_sub(1, std::memory_order_seq_cst);
        if (now_ns() > deadline && !ready()) {
            return false;
        }
    }
    return true;
}

}  // namespace

SlotHeader& OutboxView::header(std::uint64_t it) const noexcept {
    return *reinterpret_cast<SlotHeader*>(base + (it % slots) * slot_bytes(data_size));
}

std::uint64_t* OutboxView::data(std::uint64_t it) const noexcept {
    return reinterpret_cast<std::uint64_t*>(base + (it % slots) * slot_bytes(data_size) + kPage);
}

SegmentOutput::SegmentOutput(OutboxView box, std::uint32_t consumers, bool copy_into)
    : box_(box), consumers_(consumers) {
    if (copy_into) {
        private_.assign(box.data_size / 8, 0);
    }
}

Result<std::span<std::uint64_t>> SegmentOutput::buffer(std::uint64_t it) {
    if (!private_.empty()) {
        return std::span<std::uint64_t>(private_);
    }
    auto& h = box_.header(it);
    if (!wait_for(h.pending, h.producer_waiters, box_.wait, box_.timeout_ms,
                  [&] { return h.pending.load(std::memory_order_acquire) == 0; })) {
        return make_error(Errc::peer_dead, "slot {} of iteration {}: consumers did not release it within {} ms",
                          it % box_.slots, it, box_.timeout_ms);
    }
    return std::span<std::uint64_t>(box_.data(it), box_.data_size / 8);
}

Result<void> SegmentOutput::publish(std::uint64_t it) {
    auto& h = box_.header(it);
    if (!private_.empty()) {
        if (!wait_for(h.pending, h.producer_waiters, box_.wait, box_.timeout_ms,
                      [&] { return h.pending.load(std::memory_order_acquire) == 0; })) {
            return make_error(Errc::peer_dead, "slot {} of iteration {}: consumers did not release it within {} ms",
                              it % box_.slots, it, box_.timeout_ms);
        }
        std::memcpy(box_.data(it), private_.data(), box_.data_size);
    }
    h.pending.store(consumers_, std::memory_order_relaxed);
    h.stamp_ns = now_ns();
    h.published.store(static_cast<std::uint32_t>(it + 1), std::memory_order_seq_cst);
    if (h.consumer_waiters.load(std::memory_order_seq_cst) != 0) {
        futex_wake_all(h.published);
    }
    return {};
}

SegmentInput::SegmentInput(OutboxView box, bool copy_from) : box_(box) {
    if (copy_from) {
        private_.assign(box.data_size / 8, 0);
    }
}

Result<std::span<const std::uint64_t>> SegmentInput::receive(std::uint64_t it, std::int64_t& stamp_ns) {
    auto& h = box_.header(it);
    const auto want = static_cast<std::uint32_t>(it + 1);
    if (!wait_for(h.published, h.consumer_waiters, box_.wait, box_.timeout_ms,
                  [&] { return h.published.load(std::memory_order_acquire) == want; })) {
        return make_error(Errc::peer_dead, "slot {} of iteration {}: the producer did not publish it within {} ms",
                          it % box_.slots, it, box_.timeout_ms);
    }
    stamp_ns = h.stamp_ns;
    if (private_.empty()) {
        return std::span<const std::uint64_t>(box_.data(it), box_.data_size / 8);
    }
    std::memcpy(private_.data(), box_.data(it), box_.data_size);
    // The copy is ours: the producer may reuse the slot while we read it.
    auto& slot = box_.header(it);
    if (slot.pending.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
        slot.producer_waiters.load(std::memory_order_seq_cst) != 0) {
        futex_wake_all(slot.pending);
    }
    return std::span<const std::uint64_t>(private_);
}

void SegmentInput::release(std::uint64_t it) {
    if (!private_.empty()) {
        return;  // released in receive()
    }
    auto& h = box_.header(it);
    if (h.pending.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        h.producer_waiters.load(std::memory_order_seq_cst) != 0) {
        futex_wake_all(h.pending);
    }
}

}  // namespace strata::workflow::detail
