// SPDX-License-Identifier: MIT
// monitor: which backend STRATA_MONITOR=auto picks here and why, proven by
// starting it and watching a thread of this process block on a pipe.
//
// Not required: every backend, down to proc, keeps the runtime correct; ebpf
// is ok, proc is degraded (sampled, so short blocks go unseen).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "probe.hpp"
#include "strata/monitor.hpp"
#include "system.hpp"

namespace strata::doctor {

namespace {

// Registers a thread that blocks in read() and waits up to 1 s for the monitor
// to see it; an empty string on success, else what went wrong.
std::string watch_a_block(monitor::Monitor& sut) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return "pipe: " + errno_text(errno);
    std::atomic<int> registered{0};
    std::thread blocker([&] {
        registered = sut.register_worker(::gettid(), 0) ? 1 : -1;
        char byte = 0;
        (void)::read(fds[0], &byte, 1);
        sut.unregister_worker(::gettid());
    });
    std::string problem;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (registered.load() == 0) std::this_thread::yield();
    if (registered.load() < 0) problem = "register_worker failed";
    while (problem.empty() && sut.ready(0) != 0) {
        if (std::chrono::steady_clock::now() > deadline) {
            problem = "a thread blocked in read() for 1 s was never seen as blocked";
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    (void)::write(fds[1], "x", 1);
    blocker.join();
    ::close(fds[0]);
    ::close(fds[1]);
    return problem;
}

}  // namespace

Capability probe_monitor() {
    Capability cap("monitor", false);
    auto options = monitor::choose_auto();
    options.proc_period = std::chrono::microseconds(1000);
    auto started = monitor::Monitor::start(options, 1, {});
    if (!started) {
        cap.detail = fmt::format("auto picks {}, which does not start: {}", monitor::to_string(options.backend),
                                 started.error().what());
        cap.fix = "check that /proc is mounted (the proc backend reads /proc/self/task)";
        return cap;
    }
    if (const auto problem = watch_a_block(**started); !problem.empty()) {
        cap.detail = fmt::format("{}: {}", options.reason, problem);
        cap.fix = "use STRATA_MONITOR=proc or off";
        return cap;
    }
    cap.detail = options.reason + "; a thread blocked in read() was seen";
    if (options.backend == monitor::Backend::ebpf) {
        cap.status = Status::ok;
    } else {
        cap.status = Status::degraded;
        cap.fix = "run as root or grant CAP_BPF and CAP_PERFMON for the ebpf backend (proc only samples)";
    }
    return cap;
}

}  // namespace strata::doctor
