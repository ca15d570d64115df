// SPDX-License-Identifier: MIT
// The blocking monitor's section of `strata demo` (docs/monitor.md): the
// backend auto picks, a worker blocked on a pipe seen within the callback's
// latency, preemption not counted as a block, and a bad setting refused.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "sections.hpp"
#include "strata/monitor.hpp"

namespace strata::cli {

namespace {

using Clock = std::chrono::steady_clock;

void pin_to_cpu0() {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set);
}

// Spins without a system call (so without blocking) until `flag` is set.
void spin_until(const std::atomic<bool>& flag) {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (!flag.load() && Clock::now() < deadline) {
    }
}

Result<std::unique_ptr<monitor::Monitor>> start_auto(monitor::Monitor::Callback callback) {
    auto options = monitor::choose_auto();
    options.proc_period = std::chrono::microseconds(200);
    return monitor::Monitor::start(options, 1, std::move(callback));
}

}  // namespace

void tour_monitor(Tour& tour) {
    const std::string section = "Blocking monitor: which cores still have a ready worker (docs/monitor.md)";

    tour.run(section, "STRATA_MONITOR=auto picks the best backend here",
             []() -> Result<std::string> { return std::string(monitor::choose_auto().reason); });

    tour.run(section, "a worker blocked in read() on a pipe is seen, and its core reported",
             []() -> Result<std::string> {
                 std::atomic<std::int64_t> called_ns{0};
                 auto sut = start_auto([&](int) { called_ns = Clock::now().time_since_epoch().count(); });
                 if (!sut) return std::unexpected(sut.error());
                 int fds[2];
                 if (::pipe2(fds, O_CLOEXEC) != 0) return make_sys_error(errno, "pipe2");
                 std::atomic<bool> go{false};
                 std::atomic<std::int64_t> blocked_ns{0};
                 std::thread worker([&] {
                     pin_to_cpu0();
                     (void)(*sut)->register_worker(::gettid(), 0);
                     spin_until(go);
                     blocked_ns = Clock::now().time_since_epoch().count();
                     char byte = 0;
                     (void)::read(fds[0], &byte, 1);
                     (*sut)->unregister_worker(::gettid());
                 });
                 go = true;
                 const auto deadline = Clock::now() + std::chrono::seconds(2);
                 while (called_ns.load() == 0 && Clock::now() < deadline)
                     std::this_thread::sleep_for(std::chrono::microseconds(50));
                 const int ready_while_blocked = (*sut)->ready(0);
                 (void)::write(fds[1], "x", 1);
                 worker.join();
                 ::close(fds[0]);
                 ::close(fds[1]);
                 if (called_ns.load() == 0) return make_error(Errc::timeout, "no callback within 2 s of the block");
                 if (ready_while_blocked != 0)
                     return make_error(Errc::internal, "ready(0) = {} while the only worker was blocked",
                                       ready_while_blocked);
                 return fmt::format("{}: ready(0) dropped to 0, callback {:.0f} us after the read() began",
                                    monitor::to_string((*sut)->backend()),
                                    static_cast<double>(called_ns.load() - blocked_ns.load()) / 1e3);
             });

    tour.run(section, "two busy workers sharing a CPU: preemption is not a block", []() -> Result<std::string> {
        auto sut = start_auto({});
        if (!sut) return std::unexpected(sut.error());
        std::atomic<bool> stop{false};
        const auto busy = [&] {
            pin_to_cpu0();
            (void)(*sut)->register_worker(::gettid(), 0);
            spin_until(stop);
            (*sut)->unregister_worker(::gettid());
        };
        std::thread first(busy);
        std::thread second(busy);
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        const auto stats = (*sut)->stats(0);
        stop = true;
        first.join();
        second.join();
        if (stats.blocks != 0) return make_error(Errc::internal, "{} preemptions were counted as blocks", stats.blocks);
        return fmt::format("{} context switches, 0 blocks, {:.0f} ms oversubscribed (2 ready workers)",
                           stats.context_switches, static_cast<double>(stats.oversubscribed_ns) / 1e6);
    });

    tour.run(section, "a bad STRATA_MONITOR value is refused, naming it", []() -> Result<std::string> {
        const char* saved = std::getenv("STRATA_MONITOR");
        const std::optional<std::string> previous = saved ? std::optional<std::string>(saved) : std::nullopt;
        ::setenv("STRATA_MONITOR", "kernel-patch", 1);
        auto options = monitor::options_from_env();
        if (previous) {
            ::setenv("STRATA_MONITOR", previous->c_str(), 1);
        } else {
            ::unsetenv("STRATA_MONITOR");
        }
        if (options) return make_error(Errc::internal, "STRATA_MONITOR=kernel-patch was accepted");
        return options.error().what();
    });
}

}  // namespace strata::cli
