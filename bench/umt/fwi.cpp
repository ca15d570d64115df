// SPDX-License-Identifier: MIT
// UMT FWI mock-up (after the paper's Full Waveform Inversion mock-up): a
// volume split in Y-slices; a forward propagation of --steps steps, then a
// backward one. One task per slice and step, depending on its own slice and
// its two neighbours at the previous step. Every --io-freq steps the forward
// task writes its slice as a snapshot and the backward task of that step
// reads it back (and checks it) before computing.
//
//   strata-umt-fwi --slices=16 --slice-kib=512 --steps=16 --sweeps=8 --io-freq=1 --direct=1
//
// --sweeps is how many stencil passes a task makes over its slice (compute
// per task); --io-freq=0 writes no snapshots; --yield=1 (default) adds a
// scheduling point after each snapshot read; --direct=1 opens the snapshot file with O_DIRECT, as the paper
// does to keep the page cache out of the measurement; --latency-us=N makes every
// snapshot transfer also wait N µs for a latency-bound device
// (umt::device_wait: a fixed latency however many transfers are in flight,
// as on a remote store), for runs with the paper's blocking share.
#include <cmath>
#include <vector>

#include "umt_common.hpp"

namespace {

struct Config {
    std::uint64_t slices, slice_doubles, steps, sweeps, io_freq;
    bool direct;
    bool yield_after_io;
    std::uint64_t latency_us = 0;
    int fd = -1;
};
Config g;
// Two copies of the volume (steps alternate between them), one per slice.
std::vector<double*> g_volume[2];
std::vector<std::uint64_t> g_written_sum;  // checksum of every snapshot written
std::atomic<std::uint64_t> g_mismatches{0};
std::vector<ocrGuid_t> g_done;  // STICKY event per (phase, step, slice)

std::uint64_t checksum(const double* data, std::uint64_t n) {
    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i < n; i += 61) {
        std::uint64_t bits;
        std::memcpy(&bits, &data[i], sizeof bits);
        sum = sum * 1099511628211ULL + bits;
    }
    return sum;
}

std::uint64_t snapshot_index(std::uint64_t step, std::uint64_t slice) {
    return (step / g.io_freq) * g.slices + slice;
}

// Snapshots per slice: one every --io-freq steps (none for 0, which the
// harness uses to measure compute alone).
std::uint64_t snapshot_count() {
    return g.io_freq == 0 ? 0 : ((g.steps + g.io_freq - 1) / g.io_freq) * g.slices;
}

// out[i] from the slice and its neighbours at the previous step, then
// --sweeps - 1 smoothing passes over the slice itself.
void propagate(std::uint64_t parity, std::uint64_t slice) {
    const double* left = g_volume[parity ^ 1][slice == 0 ? slice : slice - 1];
    const double* mid = g_volume[parity ^ 1][slice];
    const double* right = g_volume[parity ^ 1][slice + 1 == g.slices ? slice : slice + 1];
    double* out = g_volume[parity][slice];
    const std::uint64_t n = g.slice_doubles;
    for (std::uint64_t i = 0; i < n; ++i) {
        const double up = mid[i == 0 ? i : i - 1];
        const double down = mid[i + 1 == n ? i : i + 1];
        out[i] = 0.2 * (left[i] + right[i] + up + down + mid[i]) + 1e-3;
    }
    for (std::uint64_t sweep = 1; sweep < g.sweeps; ++sweep) {
        for (std::uint64_t i = 1; i + 1 < n; ++i) out[i] = 0.25 * (out[i - 1] + 2.0 * out[i] + out[i + 1]);
    }
}

// paramv: phase (0 forward, 1 backward), step, slice, global step k (the
// forward steps, then the backward ones in reverse order).
ocrGuid_t sliceEdt(u32, u64* paramv, u32, ocrEdtDep_t*) {
    const std::uint64_t phase = paramv[0], step = paramv[1], slice = paramv[2], k = paramv[3];
    const std::uint64_t parity = k & 1;
    const std::size_t bytes = g.slice_doubles * sizeof(double);
    const bool io_step = g.io_freq != 0 && step % g.io_freq == 0;
    if (phase == 1 && io_step) {
        {
            // Backward: the snapshot of this slice and step first, checked. One buffer per worker
            // thread (as heat's and the synthetic tasks'), not a freshly faulted one per transfer.
            const umt::TaskBodyCpu body;
            thread_local umt::AlignedBuffer buffer(bytes);
            umt::full_pread(g.fd, buffer.data(), bytes, snapshot_index(step, slice) * bytes);
            if (g.latency_us != 0) umt::device_wait(g.latency_us);
            if (checksum(reinterpret_cast<const double*>(buffer.data()), g.slice_doubles) !=
                g_written_sum[snapshot_index(step, slice)])
                g_mismatches.fetch_add(1);
        }
        // The runtime's scheduling point is not the task's own work.
        if (g.yield_after_io) umt::scheduling_point_after_io();
    }
    {
        const umt::TaskBodyCpu body;
        {
            const umt::TaskCpu cpu;
            propagate(parity, slice);
        }
        if (phase == 0 && io_step) {
            // Forward: the snapshot of this slice; O_DIRECT needs an aligned copy.
            thread_local umt::AlignedBuffer buffer(bytes);
            std::memcpy(buffer.data(), g_volume[parity][slice], bytes);
            g_written_sum[snapshot_index(step, slice)] =
                checksum(reinterpret_cast<const double*>(buffer.data()), g.slice_doubles);
            umt::full_pwrite(g.fd, buffer.data(), bytes, snapshot_index(step, slice) * bytes);
            if (g.latency_us != 0) umt::device_wait(g.latency_us);
        }
    }
    ocrEventSatisfy(g_done[k * g.slices + slice], NULL_GUID);
    return NULL_GUID;
}

// Creates every task; a task of global step k depends on the STICKY events
// of slices s-1, s, s+1 at global step k-1 (sticky, so adding a dependence
// after the event fired is still correct).
ocrGuid_t rootEdt(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t slice_template;
    ocrEdtTemplateCreate(&slice_template, sliceEdt, 4, EDT_PARAM_UNK);
    const std::uint64_t total_steps = 2 * g.steps;
    for (std::uint64_t k = 0; k < total_steps; ++k) {
        const std::uint64_t phase = k / g.steps;
        const std::uint64_t step = phase == 0 ? k : g.steps - 1 - (k - g.steps);
        for (std::uint64_t s = 0; s < g.slices; ++s) {
            std::vector<ocrGuid_t> deps;
            if (k > 0) {
                if (s > 0) deps.push_back(g_done[(k - 1) * g.slices + s - 1]);
                deps.push_back(g_done[(k - 1) * g.slices + s]);
                if (s + 1 < g.slices) deps.push_back(g_done[(k - 1) * g.slices + s + 1]);
            }
            u64 params[4] = {phase, step, s, k};
            ocrGuid_t edt;
            ocrEdtCreate(&edt, slice_template, 4, params, static_cast<u32>(deps.size()),
                         deps.empty() ? nullptr : deps.data(), EDT_PROP_NONE, NULL_HINT, nullptr);
        }
    }
    return NULL_GUID;
}

ocrGuid_t reportEdt(u32, u64*, u32, ocrEdtDep_t*) {
    const auto final_parity = (2 * g.steps - 1) & 1;
    std::uint64_t sum = 0;
    for (std::uint64_t s = 0; s < g.slices; ++s) sum ^= checksum(g_volume[final_parity][s], g.slice_doubles) + s;
    const std::uint64_t snapshots = snapshot_count();
    umt::report("fwi", "\"slices\":" + std::to_string(g.slices) + ",\"slice_bytes\":" +
                           std::to_string(g.slice_doubles * sizeof(double)) + ",\"steps\":" + std::to_string(g.steps) +
                           ",\"sweeps\":" + std::to_string(g.sweeps) + ",\"io_freq\":" + std::to_string(g.io_freq) +
                           ",\"direct\":" + (g.direct ? "true" : "false") +
                           ",\"latency_us\":" + std::to_string(g.latency_us) +
                           ",\"io_bytes\":" + std::to_string(2 * snapshots * g.slice_doubles * sizeof(double)) +
                           ",\"snapshot_mismatches\":" + std::to_string(g_mismatches.load()) +
                           ",\"checksum\":" + std::to_string(sum));
    for (const auto event : g_done) ocrEventDestroy(event);
    if (g_mismatches.load() != 0) {
        ocrAbort(3);
    } else {
        ocrShutdown();
    }
    return NULL_GUID;
}

}  // namespace

extern "C" ocrGuid_t mainEdt(u32, u64*, u32, ocrEdtDep_t depv[]) {
    const umt::Args args(depv[0].ptr, {{"slices", "16"},
                                       {"slice-kib", "512"},
                                       {"steps", "16"},
                                       {"sweeps", "8"},
                                       {"io-freq", "1"},
                                       {"direct", "1"},
                                       {"yield", "1"},
                                       {"latency-us", "0"},
                                       {"file", "/var/tmp/strata-umt-fwi.dat"}});
    g.slices = args.count("slices");
    g.slice_doubles = args.count("slice-kib") * 1024 / sizeof(double);
    g.steps = args.count("steps");
    g.sweeps = std::max<std::uint64_t>(1, args.count("sweeps"));
    g.io_freq = args.count("io-freq");
    g.direct = args.count("direct") != 0;
    g.yield_after_io = args.count("yield") != 0;
    g.latency_us = args.count("latency-us");
    const std::uint64_t snapshots = snapshot_count();
    const std::uint64_t bytes = g.slice_doubles * sizeof(double);
    g.fd = umt::open_data_file(args.str("file"), snapshots * bytes, g.direct);
    g_written_sum.assign(snapshots, 0);
    for (auto& copy : g_volume) {
        for (std::uint64_t s = 0; s < g.slices; ++s) {
            auto* slice = static_cast<double*>(std::aligned_alloc(4096, bytes));
            for (std::uint64_t i = 0; i < g.slice_doubles; ++i) slice[i] = std::sin(static_cast<double>(s * 7 + i));
            copy.push_back(slice);
        }
    }
    g_done.resize(2 * g.steps * g.slices);
    for (auto& event : g_done) ocrEventCreate(&event, OCR_EVENT_STICKY_T, EVT_PROP_NONE);

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
