// SPDX-License-Identifier: MIT
// UMT synthetic benchmark: many independent tasks, each computes then blocks.
//
//   strata-umt-synthetic --tasks=400 --compute-iters=2000000 --block=pipe --block-us=2000
//
// --block=pipe     read() on a pipe that a "device" thread (not a worker)
//                  writes to --block-us after the request: a device latency
//                  with no CPU use, so the blocking share is exact;
// --block=odirect  pread of --io-bytes at a random aligned offset of --file
//                  opened with O_DIRECT (the harness throttles the disk);
// --block=fsync    pwrite of 4 KiB then fdatasync on --file;
// --block=mix      task i blocks the way i % 3 says: pipe, odirect, fsync;
// --block=none     compute only (the monitor's overhead).
//
// One FINISH EDT creates every task; the report EDT waits for it.
#include <poll.h>
#include <sys/stat.h>

#include <random>

#include "umt_common.hpp"

namespace {

struct Config {
    std::uint64_t tasks;
    std::uint64_t compute_iters;
    std::string block;
    std::uint64_t block_us;
    std::uint64_t io_bytes;
    std::uint64_t file_bytes;
    int fd = -1;       // O_DIRECT reads
    int sync_fd = -1;  // buffered writes + fdatasync
    std::string file;
};
Config g;
std::atomic<std::uint64_t> g_checksum{0};

void block_once(std::uint64_t task) {
    static const char* const kinds[] = {"pipe", "odirect", "fsync"};
    const std::string kind = g.block == "mix" ? kinds[task % 3] : g.block;
    if (kind == "pipe") {
        umt::device_wait(g.block_us);
    } else if (kind == "odirect") {
        thread_local umt::AlignedBuffer buffer(g.io_bytes);
        const std::uint64_t slots = g.file_bytes / g.io_bytes;
        std::mt19937_64 rng(task * 7919 + 1);
        umt::full_pread(g.fd, buffer.data(), g.io_bytes, (rng() % slots) * g.io_bytes);
        g_checksum.fetch_add(static_cast<unsigned char>(buffer.data()[0]), std::memory_order_relaxed);
    } else if (kind == "fsync") {
        thread_local umt::AlignedBuffer buffer(4096);
        umt::full_pwrite(g.sync_fd, buffer.data(), 4096, (task % 1024) * 4096);
        ::fdatasync(g.sync_fd);
    }
}

ocrGuid_t taskEdt(u32, u64* paramv, u32, ocrEdtDep_t*) {
    const umt::TaskBodyCpu body;
    {
        const umt::TaskCpu cpu;
        const double x = umt::spin_compute(g.compute_iters, static_cast<double>(paramv[0]));
        g_checksum.fetch_add(static_cast<std::uint64_t>(x * 1000.0), std::memory_order_relaxed);
    }
    block_once(paramv[0]);
    return NULL_GUID;
}

ocrGuid_t rootEdt(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t task_template;
    ocrEdtTemplateCreate(&task_template, taskEdt, 1, 0);
    for (u64 i = 0; i < g.tasks; ++i) {
        ocrGuid_t edt;
        u64 params[1] = {i};
        ocrEdtCreate(&edt, task_template, EDT_PARAM_DEF, params, 0, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    }
    return NULL_GUID;
}

ocrGuid_t reportEdt(u32, u64*, u32, ocrEdtDep_t*) {
    umt::report("synthetic", "\"block\":\"" + g.block + "\",\"block_us\":" + std::to_string(g.block_us) +
                                 ",\"io_bytes\":" + std::to_string(g.io_bytes) + ",\"tasks\":" +
                                 std::to_string(g.tasks) + ",\"compute_iters\":" + std::to_string(g.compute_iters) +
                                 ",\"checksum\":" + std::to_string(g_checksum.load()));
    if (g.sync_fd >= 0) ::unlink((g.file + ".sync").c_str());
    ocrShutdown();
    return NULL_GUID;
}

// The data the odirect mode reads must really be on the disk: an unwritten
// (fallocated) extent reads as zeros without any device I/O.
void fill_file(int fd, std::uint64_t bytes) {
    umt::AlignedBuffer chunk(1 << 20);
    for (std::size_t i = 0; i < chunk.size(); ++i) chunk.data()[i] = static_cast<char>(i * 31 + 7);
    for (std::uint64_t off = 0; off < bytes; off += chunk.size()) umt::full_pwrite(fd, chunk.data(), chunk.size(), off);
    ::fsync(fd);
}

}  // namespace

extern "C" ocrGuid_t mainEdt(u32, u64*, u32, ocrEdtDep_t depv[]) {
    const umt::Args args(depv[0].ptr, {{"tasks", "400"},
                                       {"compute-iters", "1000000"},
                                       {"block", "pipe"},
                                       {"block-us", "1000"},
                                       {"io-bytes", "1048576"},
                                       {"file", "/var/tmp/strata-umt-synthetic.dat"},
                                       {"file-bytes", "268435456"}});
    g.tasks = args.count("tasks");
    g.compute_iters = args.count("compute-iters");
    g.block = args.str("block");
    g.block_us = args.count("block-us");
    g.io_bytes = args.count("io-bytes");
    g.file_bytes = args.count("file-bytes");
    g.file = args.str("file");
    if (g.block != "pipe" && g.block != "odirect" && g.block != "fsync" && g.block != "mix" && g.block != "none") {
        std::fprintf(stderr, "umt: --block=%s: expected pipe, odirect, fsync, mix or none\n", g.block.c_str());
        std::exit(2);
    }
    if (g.block == "odirect" || g.block == "mix") {
        g.fd = umt::open_data_file(args.str("file"), 0, true);
        struct stat st {};
        ::fstat(g.fd, &st);
        if (static_cast<std::uint64_t>(st.st_size) < g.file_bytes) fill_file(g.fd, g.file_bytes);
    }
    if (g.block == "fsync" || g.block == "mix")
        g.sync_fd = umt::open_data_file(args.str("file") + ".sync", 4096 * 1024, false);

    umt::start_measuring();
    ocrGuid_t root_template, report_template, start, root, done, report;
    ocrEdtTemplateCreate(&root_template, rootEdt, 0, 1);
    ocrEdtTemplateCreate(&report_template, reportEdt, 0, 1);
    ocrEventCreate(&start, OCR_EVENT_ONCE_T, EVT_PROP_NONE);
    ocrEdtCreate(&root, root_template, 0, nullptr, 1, &start, EDT_PROP_FINISH, NULL_HINT, &done);
    ocrEdtCreate(&report, report_template, 0, nullptr, 1, &done, EDT_PROP_NONE, NULL_HINT, nullptr);
    ocrEventSatisfy(start, NULL_GUID);
    return NULL_GUID;
}
