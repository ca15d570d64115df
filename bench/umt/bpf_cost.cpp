// SPDX-License-Identifier: MIT
// The ebpf monitor's own cost: nanoseconds per run of its two BPF programs
// (sched_switch, sched_wakeup), which run on every context switch and wakeup
// of the machine, not only the registered workers'. Kernel run-time
// statistics are switched on with BPF_ENABLE_STATS for the duration of the
// measurement only (they stop when the descriptor closes).
//
//   strata-umt-bpf-cost [seconds]     prints one JSON line: UMT_BPF_COST {...}
//
// Load: two registered threads pinned to CPU 0 ping-pong bytes over pipes, so
// every round trip is two blocks and two unblocks of monitored workers.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <bpf/bpf.h>

#include "strata/monitor.hpp"

namespace {

// The BPF program ids this process holds (/proc/self/fdinfo "prog_id:").
std::vector<std::uint32_t> program_ids() {
    std::vector<std::uint32_t> ids;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fdinfo")) {
        std::ifstream in(entry.path());
        std::string key;
        std::uint32_t value = 0;
        while (in >> key)
            if (key == "prog_id:" && in >> value) ids.push_back(value);
    }
    return ids;
}

struct Totals {
    std::uint64_t runs = 0;
    std::uint64_t ns = 0;
};

Totals totals(const std::vector<std::uint32_t>& ids) {
    Totals t;
    for (const auto id : ids) {
        const int fd = bpf_prog_get_fd_by_id(id);
        if (fd < 0) continue;
        bpf_prog_info info{};
        __u32 length = sizeof(info);
        if (bpf_obj_get_info_by_fd(fd, &info, &length) == 0 && std::string(info.name).starts_with("stmon_")) {
            t.runs += info.run_cnt;
            t.ns += info.run_time_ns;
        }
        ::close(fd);
    }
    return t;
}

void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(static_cast<unsigned>(cpu), &set);
    ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set);
}

std::uint64_t machine_switches() {
    std::ifstream in("/proc/stat");
    std::string key;
    std::uint64_t value = 0;
    while (in >> key)
        if (key == "ctxt" && in >> value) return value;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
    strata::monitor::Options options;
    options.backend = strata::monitor::Backend::ebpf;
    auto monitor = strata::monitor::Monitor::start(options, 1, {});
    if (!monitor) {
        std::fprintf(stderr, "strata-umt-bpf-cost: %s\n", monitor.error().what().c_str());
        return 1;
    }
    const int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (stats_fd < 0) {
        std::perror("strata-umt-bpf-cost: BPF_ENABLE_STATS");
        return 1;
    }
    const auto ids = program_ids();
    int ping[2], pong[2];
    if (::pipe(ping) != 0 || ::pipe(pong) != 0) return 1;
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> round_trips{0};
    const Totals before = totals(ids);
    const std::uint64_t switches_before = machine_switches();
    const auto start = std::chrono::steady_clock::now();
    std::thread echo([&] {
        pin(0);
        (void)(*monitor)->register_worker(::gettid(), 0);
        char byte = 0;
        while (::read(ping[0], &byte, 1) == 1 && byte != 'q') (void)::write(pong[1], &byte, 1);
        (*monitor)->unregister_worker(::gettid());
    });
    std::thread client([&] {
        pin(0);
        (void)(*monitor)->register_worker(::gettid(), 0);
        char byte = 'x';
        while (!stop.load(std::memory_order_relaxed)) {
            (void)::write(ping[1], &byte, 1);
            (void)::read(pong[0], &byte, 1);
            round_trips.fetch_add(1, std::memory_order_relaxed);
        }
        (void)::write(ping[1], "q", 1);
        (*monitor)->unregister_worker(::gettid());
    });
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop = true;
    client.join();
    echo.join();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const Totals after = totals(ids);
    const std::uint64_t switches = machine_switches() - switches_before;
    ::close(stats_fd);
    const auto stats = (*monitor)->stats(0);
    const std::uint64_t runs = after.runs - before.runs;
    const std::uint64_t ns = after.ns - before.ns;
    std::printf(
        "UMT_BPF_COST {\"seconds\":%.3f,\"program_runs\":%llu,\"program_ns\":%llu,\"ns_per_run\":%.1f,"
        "\"machine_context_switches\":%llu,\"round_trips\":%llu,\"worker_blocks\":%llu,\"worker_unblocks\":%llu,"
        "\"cpu_share_of_one_core\":%.6f}\n",
        elapsed, static_cast<unsigned long long>(runs), static_cast<unsigned long long>(ns),
        runs ? static_cast<double>(ns) / static_cast<double>(runs) : 0.0, static_cast<unsigned long long>(switches),
        static_cast<unsigned long long>(round_trips.load()), static_cast<unsigned long long>(stats.blocks),
        static_cast<unsigned long long>(stats.unblocks), static_cast<double>(ns) / 1e9 / elapsed);
    return 0;
}
