// SPDX-License-Identifier: MIT
// Threads for the monitor tests: pinned to one CPU, registered with a
// Monitor by themselves (as a runtime's workers do), driven through atomics
// so that waiting for the next step never blocks in the kernel.
#pragma once

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <functional>
#include <thread>

#include "strata/monitor.hpp"

namespace strata::test {

inline std::uint64_t now_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000U + static_cast<std::uint64_t>(ts.tv_nsec);
}

inline void pin_to_cpu(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(static_cast<unsigned>(cpu), &set);
    ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set);
}

/// Default hang bound of the waits below: far beyond any delay load causes
/// (an ebpf change shows at once, a proc one within a few periods).
inline constexpr std::chrono::milliseconds kHang{10'000};

/// Spins (no system call, so no block) until `predicate` holds or `timeout` passes.
template <class Predicate>
bool spin_until(Predicate predicate, std::chrono::milliseconds timeout = kHang) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!predicate()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
    }
    return true;
}

/// Sleeps in small steps until `predicate` holds or `timeout` passes (for the
/// test's own thread, which is never registered).
template <class Predicate>
bool wait_until(Predicate predicate, std::chrono::milliseconds timeout = kHang) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!predicate()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return true;
}

/// A thread pinned to `cpu` that registers itself as a worker of `core`
/// (when `monitor` is not null), runs `body`, then unregisters.
class PinnedWorker {
public:
    PinnedWorker(monitor::Monitor* monitor, int cpu, int core, std::function<void()> body)
        : thread_([this, monitor, cpu, core, body = std::move(body)] {
              pin_to_cpu(cpu);
              tid_ = ::gettid();
              if (monitor != nullptr) registered_ = monitor->register_worker(tid_, core).has_value();
              started_ = true;
              body();
              if (monitor != nullptr) monitor->unregister_worker(tid_);
          }) {
        spin_until([this] { return started_.load(); });
    }
    PinnedWorker(const PinnedWorker&) = delete;
    PinnedWorker& operator=(const PinnedWorker&) = delete;
    ~PinnedWorker() {
        if (thread_.joinable()) thread_.join();
    }

    [[nodiscard]] pid_t tid() const { return tid_; }
    [[nodiscard]] bool registered() const { return registered_; }
    void join() { thread_.join(); }

private:
    std::atomic<pid_t> tid_{0};
    std::atomic<bool> registered_{false};
    std::atomic<bool> started_{false};
    std::thread thread_;
};

/// A pipe whose ends close with the object.
class Pipe {
public:
    Pipe() { (void)::pipe2(fds_, O_CLOEXEC); }
    ~Pipe() {
        ::close(fds_[0]);
        ::close(fds_[1]);
    }
    Pipe(const Pipe&) = delete;
    Pipe& operator=(const Pipe&) = delete;
    /// Blocks until a byte arrives.
    void read_byte() const {
        char byte = 0;
        (void)::read(fds_[0], &byte, 1);
    }
    void write_byte() const { (void)::write(fds_[1], "x", 1); }

private:
    int fds_[2] = {-1, -1};
};

}  // namespace strata::test
