// SPDX-License-Identifier: MIT
// Shared by the UMT benchmark programs (synthetic.cpp, fwi.cpp, heat.cpp):
// arguments, the calibrated compute kernel, aligned O_DIRECT buffers, and
// the one-line JSON result that bench/umt/run collects.
//
// The programs are OCR programs (mainEdt, EDTs, events; -lstrata-ocr), in
// C++ only so that the final EDT can read the runtime's per-core statistics
// (strata::runtime::Runtime::current()->stats()) for the report.
#pragma once

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "core/sched_attr.hpp"
#include "ocr.h"
#include "strata/runtime.hpp"

namespace umt {

// --key=value arguments from the OCR argv data block; unknown keys are fatal
// so a typo in the harness cannot silently run a different experiment.
class Args {
public:
    Args(void* argv_db, std::initializer_list<std::pair<const char*, const char*>> defaults) {
        for (const auto& [key, value] : defaults) values_[key] = value;
        const u64 argc = ocrGetArgc(argv_db);
        for (u64 i = 1; i < argc; ++i) {
            const std::string_view arg(ocrGetArgv(argv_db, i));
            const auto eq = arg.find('=');
            if (!arg.starts_with("--") || eq == std::string_view::npos) fail(arg, "expected --key=value");
            const std::string key(arg.substr(2, eq - 2));
            if (!values_.contains(key)) fail(arg, "unknown key");
            values_[key] = std::string(arg.substr(eq + 1));
        }
    }
    [[nodiscard]] std::string str(const char* key) const { return values_.at(key); }
    [[nodiscard]] std::uint64_t count(const char* key) const {
        const auto& text = values_.at(key);
        char* end = nullptr;
        const auto value = std::strtoull(text.c_str(), &end, 10);
        if (end == text.c_str() || *end != '\0') fail(text, key);
        return value;
    }
    [[nodiscard]] double real(const char* key) const { return std::strtod(values_.at(key).c_str(), nullptr); }

private:
    [[noreturn]] static void fail(std::string_view arg, std::string_view why) {
        std::fprintf(stderr, "umt: bad argument '%.*s': %.*s\n", static_cast<int>(arg.size()), arg.data(),
                     static_cast<int>(why.size()), why.data());
        std::exit(2);
    }
    std::map<std::string, std::string> values_;
};

inline double now_s() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline double thread_cpu_s() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline double process_cpu_s() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& tv) {
        return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
    };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// A dependent chain of floating-point operations: its duration per iteration
// is fixed by the core's latency, not by memory, so `iterations` calibrated
// once by the harness means the same work in every run.
inline double spin_compute(std::uint64_t iterations, double seed) {
    double x = seed;
    for (std::uint64_t i = 0; i < iterations; ++i) x = x * 0.999999 + 1e-7;
    return x;
}

// Time in tasks' compute kernels, summed over tasks (thread CPU time): the
// calibrated work alone, without the task's copies, checksums and system calls.
inline std::atomic<std::uint64_t>& task_cpu_ns() {
    static std::atomic<std::uint64_t> total{0};
    return total;
}

// Time in tasks' whole bodies, summed over tasks (thread CPU time): everything
// a task does on a CPU — compute, copies, checksums, the CPU side of its I/O
// system calls — up to the event that hands its result to the runtime. Blocked
// time is not CPU time, so it is not in either figure.
inline std::atomic<std::uint64_t>& task_body_cpu_ns() {
    static std::atomic<std::uint64_t> total{0};
    return total;
}

// UMT_SLICE_US (experiment): the EEVDF slice of each worker thread, set on
// its first task, so that a worker woken from I/O preempts the one that
// replaced it sooner (kernel 6.12+ honours sched_attr.sched_runtime for
// SCHED_OTHER).
inline void apply_slice_once() {
    thread_local bool done = false;
    if (done) return;
    done = true;
    const char* text = std::getenv("UMT_SLICE_US");
    if (text == nullptr) return;
    strata::core::SchedAttr attr;
    attr.sched_runtime = std::strtoull(text, nullptr, 10) * 1000;
    if (strata::core::sched_setattr(0, attr) != 0) std::perror("umt: sched_setattr");
}

// Adds the calling thread's CPU time over its lifetime to a total.
class CpuTally {
public:
    explicit CpuTally(std::atomic<std::uint64_t>& total) : total_(total), start_(thread_cpu_s()) {}
    ~CpuTally() {
        total_.fetch_add(static_cast<std::uint64_t>((thread_cpu_s() - start_) * 1e9), std::memory_order_relaxed);
    }
    CpuTally(const CpuTally&) = delete;
    CpuTally& operator=(const CpuTally&) = delete;

private:
    std::atomic<std::uint64_t>& total_;
    double start_;
};

// Around a task's compute kernel.
class TaskCpu : public CpuTally {
public:
    TaskCpu() : CpuTally(task_cpu_ns()) { apply_slice_once(); }
};

// Around a task's whole body, before it satisfies its output event.
class TaskBodyCpu : public CpuTally {
public:
    TaskBodyCpu() : CpuTally(task_body_cpu_ns()) {}
};

// A 4 KiB-aligned buffer, as O_DIRECT needs.
class AlignedBuffer {
public:
    explicit AlignedBuffer(std::size_t bytes) : bytes_(bytes) {
        if (::posix_memalign(&data_, 4096, bytes) != 0) {
            std::fprintf(stderr, "umt: posix_memalign(%zu) failed\n", bytes);
            std::exit(1);
        }
        std::memset(data_, 0, bytes);
    }
    ~AlignedBuffer() { std::free(data_); }
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;
    [[nodiscard]] char* data() const { return static_cast<char*>(data_); }
    [[nodiscard]] std::size_t size() const { return bytes_; }

private:
    void* data_ = nullptr;
    std::size_t bytes_;
};

// Opens (creating, preallocating) a data file; O_DIRECT when `direct`.
inline int open_data_file(const std::string& path, std::uint64_t bytes, bool direct) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (direct ? O_DIRECT : 0), 0600);
    if (fd < 0) {
        std::fprintf(stderr, "umt: open %s: %s\n", path.c_str(), std::strerror(errno));
        std::exit(1);
    }
    if (bytes > 0 && ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)) != 0) {
        std::fprintf(stderr, "umt: fallocate %s to %llu bytes failed\n", path.c_str(),
                     static_cast<unsigned long long>(bytes));
        std::exit(1);
    }
    return fd;
}

inline void full_pwrite(int fd, const void* data, std::size_t bytes, std::uint64_t offset) {
    if (::pwrite(fd, data, bytes, static_cast<off_t>(offset)) != static_cast<ssize_t>(bytes)) {
        std::fprintf(stderr, "umt: pwrite of %zu bytes at %llu: %s\n", bytes, static_cast<unsigned long long>(offset),
                     std::strerror(errno));
        std::exit(1);
    }
}

inline void full_pread(int fd, void* data, std::size_t bytes, std::uint64_t offset) {
    if (::pread(fd, data, bytes, static_cast<off_t>(offset)) != static_cast<ssize_t>(bytes)) {
        std::fprintf(stderr, "umt: pread of %zu bytes at %llu: %s\n", bytes, static_cast<unsigned long long>(offset),
                     std::strerror(errno));
        std::exit(1);
    }
}

// A device whose requests take a fixed latency however many are in flight
// (latency-bound storage, e.g. a remote store's acknowledgement):
// device_wait(us) blocks the calling thread in read() on a timerfd armed for `us`
// microseconds, so the kernel's timer wakes it as a device's completion
// interrupt would. No CPU is used meanwhile, by the caller or by anyone else:
// an earlier version had a thread of its own write to a pipe at each
// deadline, and that thread, running on the workers' two cores, took up to
// 4.3 % of their time from the tasks in the monitored modes (while in `off`
// it ran when the cores would have idled) — a cost no real device puts on the
// host (git show dd8aaca:docs/benchmarks/umt/thread-cpu/).
inline void device_wait(std::uint64_t us) {
    const int fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (fd < 0) {
        std::perror("umt: timerfd_create");
        std::exit(1);
    }
    itimerspec at{};
    at.it_value.tv_sec = static_cast<time_t>(us / 1'000'000);
    at.it_value.tv_nsec = static_cast<long>((us % 1'000'000) * 1000);
    if (at.it_value.tv_sec == 0 && at.it_value.tv_nsec == 0) at.it_value.tv_nsec = 1;  // 0 would disarm it
    if (::timerfd_settime(fd, 0, &at, nullptr) != 0) {
        std::perror("umt: timerfd_settime");
        std::exit(1);
    }
    std::uint64_t expirations = 0;
    while (::read(fd, &expirations, sizeof expirations) < 0 && errno == EINTR) {
    }
    ::close(fd);
}
// The paper's advice for a task that computes after I/O: a scheduling point
// right after the I/O, so a worker woken meanwhile and this one do not both
// run for the rest of the task (oversubscription).
inline void scheduling_point_after_io() {
    if (auto* runtime = strata::runtime::Runtime::current(); runtime != nullptr) runtime->yield();
}

// CPU time of each of this process's threads by kind (workers "strata-w*",
// the monitor's and the leader's threads, the rest; "device" was the
// benchmark's own device thread before the timerfd device and stays in the
// records at 0, so reports of old and new runs have the same columns), from /proc/self/task/*/schedstat (nanoseconds on
// a CPU), keyed by thread id so that the measured window can subtract its start.
struct ThreadCpu {
    std::map<long, std::pair<std::string, double>> by_tid;  // tid -> (kind, seconds)
};
inline std::string thread_kind(std::string comm) {
    while (!comm.empty() && (comm.back() == '\n' || comm.back() == ' ')) comm.pop_back();
    if (comm.rfind("strata-w", 0) == 0) return "worker";
    if (comm == "strata-monitor") return "monitor";
    if (comm == "strata-leader") return "leader";
    return "other";
}
inline ThreadCpu thread_cpu() {
    ThreadCpu out;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", error)) {
        std::ifstream comm(entry.path() / "comm");
        std::ifstream schedstat(entry.path() / "schedstat");
        std::string name;
        double ns = 0;
        if (!std::getline(comm, name) || !(schedstat >> ns)) continue;
        out.by_tid[std::strtol(entry.path().filename().c_str(), nullptr, 10)] = {thread_kind(name), ns * 1e-9};
    }
    return out;
}
// "worker":s,"monitor":s,... over the window from `from` to now (threads
// that exited meanwhile are not counted).
inline std::string thread_cpu_json(const ThreadCpu& from) {
    std::map<std::string, double> kinds{{"worker", 0}, {"monitor", 0}, {"leader", 0}, {"device", 0}, {"other", 0}};
    for (const auto& [tid, now] : thread_cpu().by_tid) {
        const auto before = from.by_tid.find(tid);
        kinds[now.first] += now.second - (before == from.by_tid.end() ? 0.0 : before->second.second);
    }
    std::string json = "{";
    for (const auto& [kind, seconds] : kinds) {
        json += (json.size() > 1 ? "," : "") + std::string("\"") + kind + "\":" + std::to_string(seconds);
    }
    return json + "}";
}

// Where the measured part of a run begins (after setup: files, BPF loading).
struct Start {
    double wall_s = 0;
    double cpu_s = 0;
    ThreadCpu threads;
};
inline Start& start() {
    static Start at;
    return at;
}
inline void start_measuring() {
    start().threads = thread_cpu();
    start().cpu_s = process_cpu_s();
    start().wall_s = now_s();
}

// Prints the result line: UMT_RESULT {...}. `fields` is the benchmark's own
// JSON members (without braces). Wall and process CPU time count from
// start_measuring().
inline void report(const char* bench, const std::string& fields) {
    const double wall = now_s() - start().wall_s;
    const double cpu = process_cpu_s() - start().cpu_s;
    const std::string threads = thread_cpu_json(start().threads);
    auto* runtime = strata::runtime::Runtime::current();
    std::string monitor = "none";
    std::string cover = "none";  // the cover priority `auto` resolved to
    double oversub = 0;
    double oversub_wait = 0;
    std::uint64_t oversub_wakeups = 0;
    std::uint64_t scans = 0;
    double no_ready = 0;
    std::uint64_t blocks = 0;
    std::uint64_t wakes = 0;
    std::uint64_t surrenders = 0;
    std::uint64_t workers = 0;
    std::uint64_t covers = 0;
    std::uint64_t kicks = 0;
    std::size_t cores = 1;
    // idle+suspend (suspend.cpp): what the suspension did.
    std::uint64_t suspend_requests = 0;
    std::uint64_t suspends = 0;
    std::uint64_t suspend_declined = 0;
    std::uint64_t suspend_timeouts = 0;
    std::uint64_t suspend_handbacks = 0;
    double suspended = 0;
    double suspended_max = 0;
    double suspend_latency = 0;
    double suspend_latency_max = 0;
    std::uint64_t standby_takeovers = 0;  // idle+standby: the standby worker took over an emptied core
    std::uint64_t cover_swaps = 0;        // a worker back from its block took the cover role (cover.cpp)
    std::uint64_t woken_events = 0;       // the monitor's wakeup events, and their latency to its thread
    double woken_event_latency = 0;
    const auto seconds = [](std::chrono::nanoseconds t) { return static_cast<double>(t.count()) * 1e-9; };
    if (runtime != nullptr) {
        monitor = std::string(runtime->monitor_backend());
        cover = std::string(strata::runtime::to_string(runtime->cover_priority()));
        cores = runtime->cpus().size();
        for (const auto& core : runtime->stats()) {
            oversub += static_cast<double>(core.monitor.oversubscribed_time.count()) * 1e-9;
            oversub_wait += static_cast<double>(core.monitor.oversubscribed_wait.count()) * 1e-9;
            oversub_wakeups += core.monitor.oversubscribing_wakeups;
            scans += core.scans;
            no_ready += static_cast<double>(core.monitor.no_ready_time.count()) * 1e-9;
            blocks += core.monitor.blocks;
            wakes += core.wakes;
            surrenders += core.surrenders;
            workers += core.workers;
            covers += core.covers;
            kicks += core.kicks;
            suspend_requests += core.suspend_requests;
            suspends += core.suspends;
            suspend_declined += core.suspend_declined;
            suspend_timeouts += core.suspend_timeouts;
            suspend_handbacks += core.suspend_handbacks;
            suspended += seconds(core.suspended_time);
            suspended_max = std::max(suspended_max, seconds(core.suspended_max));
            suspend_latency += seconds(core.suspend_latency);
            suspend_latency_max = std::max(suspend_latency_max, seconds(core.suspend_latency_max));
            woken_events += core.monitor.woken_events;
            standby_takeovers += core.standby_takeovers;
            cover_swaps += core.cover_swaps;
            woken_event_latency += seconds(core.monitor.woken_event_latency);
        }
    }
    const double capacity = wall * static_cast<double>(cores);
    const double task_cpu = static_cast<double>(task_cpu_ns().load()) * 1e-9;
    const double task_body_cpu = static_cast<double>(task_body_cpu_ns().load()) * 1e-9;
    std::printf(
        "UMT_RESULT {\"bench\":\"%s\",\"monitor\":\"%s\",\"cover\":\"%s\",\"cores\":%zu,\"wall_s\":%.6f,\"cpu_s\":%.6f,"
        "\"task_cpu_s\":%.6f,\"utilization\":%.6f,\"task_utilization\":%.6f,\"task_body_cpu_s\":%.6f,"
        "\"task_body_utilization\":%.6f,\"oversubscribed_s\":%.6f,"
        "\"oversubscribed_share\":%.6f,\"no_ready_s\":%.6f,\"blocks\":%llu,\"wakes\":%llu,\"surrenders\":%llu,"
        "\"workers\":%llu,\"covers\":%llu,\"kicks\":%llu,\"oversubscribed_wait_s\":%.6f,"
        "\"oversubscribed_wait_share\":%.6f,\"oversubscribing_wakeups\":%llu,\"leader_scans\":%llu,"
        "\"suspend_requests\":%llu,\"suspends\":%llu,\"suspend_declined\":%llu,\"suspend_timeouts\":%llu,\"suspend_"
        "handbacks\":%llu,"
        "\"suspended_s\":%.6f,\"suspended_max_s\":%.6f,\"suspend_latency_s\":%.6f,\"suspend_latency_max_s\":%.6f,"
        "\"woken_events\":%llu,\"woken_event_latency_s\":%.6f,\"standby_takeovers\":%llu,\"cover_swaps\":%llu,"
        "\"thread_cpu_s\":%s,%s}\n",
        bench, monitor.c_str(), cover.c_str(), cores, wall, cpu, task_cpu, cpu / capacity, task_cpu / capacity,
        task_body_cpu, task_body_cpu / capacity, oversub, oversub / capacity, no_ready,
        static_cast<unsigned long long>(blocks), static_cast<unsigned long long>(wakes),
        static_cast<unsigned long long>(surrenders), static_cast<unsigned long long>(workers),
        static_cast<unsigned long long>(covers), static_cast<unsigned long long>(kicks), oversub_wait,
        oversub_wait / capacity, static_cast<unsigned long long>(oversub_wakeups),
        static_cast<unsigned long long>(scans), static_cast<unsigned long long>(suspend_requests),
        static_cast<unsigned long long>(suspends), static_cast<unsigned long long>(suspend_declined),
        static_cast<unsigned long long>(suspend_timeouts), static_cast<unsigned long long>(suspend_handbacks),
        suspended, suspended_max, suspend_latency, suspend_latency_max, static_cast<unsigned long long>(woken_events),
        woken_event_latency, static_cast<unsigned long long>(standby_takeovers),
        static_cast<unsigned long long>(cover_swaps), threads.c_str(), fields.c_str());
    std::fflush(stdout);
}

inline ocrGuid_t u64_to_guid(u64 v) {
    ocrGuid_t g;
    std::memcpy(&g, &v, sizeof g);
    return g;
}
inline u64 guid_to_u64(ocrGuid_t g) {
    u64 v;
    std::memcpy(&v, &g, sizeof v);
    return v;
}

}  // namespace umt
