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
//
// Distributed (`strata ocr -n N strata-umt-fwi ...`, umt_net.hpp): rank r
// computes slices [S*r/N, S*(r+1)/N) and keeps its snapshots in a file of its
// own (--file with ".rank<r>"). After each step an exchange task per
// neighbour sends its boundary slice and receives the neighbour's (blocking
// MPI calls, --net-wait=kernel|spin); the exchanges with one neighbour form a
// chain (each waits for the one before), the sequential ordering of
// communication tasks the paper's programs enforce, and start before ready
// compute tasks (a priority hint). --dump=PATH writes the
// final volume (every rank its slices) for a check against a reference.
#include <cmath>
#include <tuple>
#include <vector>

#include "umt_common.hpp"
#include "umt_net.hpp"

namespace {

struct Config {
    std::uint64_t slices, slice_doubles, steps, sweeps, io_freq;
    bool direct;
    bool yield_after_io;
    std::uint64_t latency_us = 0;
    umt::net::Wait net_wait = umt::net::Wait::kernel;
    std::uint64_t rank = 0, ranks = 1, lo = 0, hi = 0;  // this rank's slices: [lo, hi)
    std::string dump;
    int fd = -1;
};
// The parameters mainEdt passes to every rank's EDT, then two paths and the rank.
enum Param : std::size_t {
    P_SLICES,
    P_SLICE_KIB,
    P_STEPS,
    P_SWEEPS,
    P_IO_FREQ,
    P_DIRECT,
    P_YIELD,
    P_LATENCY,
    P_WAIT,
    P_FILE
};
constexpr std::size_t P_DUMP = P_FILE + umt::net::path_words;
constexpr std::size_t P_RANK = P_DUMP + umt::net::path_words;
Config g;
// Two copies of the volume (steps alternate between them), one per slice.
std::vector<double*> g_volume[2];
std::vector<std::uint64_t> g_written_sum;  // checksum of every snapshot written
std::atomic<std::uint64_t> g_mismatches{0};
std::vector<ocrGuid_t> g_done;          // STICKY event per (global step, own slice)
std::vector<ocrGuid_t> g_exchanged[2];  // STICKY event per global step: the exchange with the left / right rank

ocrGuid_t& done(std::uint64_t k, std::uint64_t s) {
    return g_done[k * (g.hi - g.lo) + (s - g.lo)];
}
std::uint64_t local_slices() {
    return g.hi - g.lo;
}

std::uint64_t checksum(const double* data, std::uint64_t n) {
    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i < n; i += 61) {
        std::uint64_t bits;
        std::memcpy(&bits, &data[i], sizeof bits);
        sum = sum * 1099511628211ULL + bits;
    }
    return sum;
}

// This rank's snapshot file holds its own slices only.
std::uint64_t snapshot_index(std::uint64_t step, std::uint64_t slice) {
    return (step / g.io_freq) * local_slices() + (slice - g.lo);
}

// Snapshots per slice: one every --io-freq steps (none for 0, which the
// harness uses to measure compute alone).
std::uint64_t snapshot_count() {
    return g.io_freq == 0 ? 0 : ((g.steps + g.io_freq - 1) / g.io_freq) * local_slices();
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
    ocrEventSatisfy(done(k, slice), NULL_GUID);
    return NULL_GUID;
}

// paramv: side (0 left, 1 right), global step k. Sends this rank's boundary
// slice of step k to the neighbour and receives the neighbour's into this
// rank's copy of it, which the boundary task of step k + 1 reads.
ocrGuid_t exchangeEdt(u32, u64* paramv, u32, ocrEdtDep_t*) {
    const std::uint64_t side = paramv[0], k = paramv[1];
    const std::uint64_t mine = side == 0 ? g.lo : g.hi - 1;
    const std::uint64_t theirs = side == 0 ? g.lo - 1 : g.hi;
    auto& copy = g_volume[k & 1];
    umt::net::exchange(side == 0 ? g.rank - 1 : g.rank + 1, copy[mine], copy[theirs], g.slice_doubles * sizeof(double),
                       1, g.net_wait);
    ocrEventSatisfy(g_exchanged[side][k], NULL_GUID);
    return NULL_GUID;
}

// Creates this rank's tasks; a task of global step k depends on the STICKY
// events of slices s-1, s, s+1 at global step k-1 (sticky, so adding a
// dependence after the event fired is still correct), a neighbour on another
// rank through the exchange with that rank at step k-1.
ocrGuid_t rootEdt(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t slice_template, exchange_template;
    ocrEdtTemplateCreate(&slice_template, sliceEdt, 4, EDT_PARAM_UNK);
    ocrEdtTemplateCreate(&exchange_template, exchangeEdt, 2, EDT_PARAM_UNK);
    const std::uint64_t total_steps = 2 * g.steps;
    const bool has_side[2] = {g.lo > 0, g.hi < g.slices};
    for (std::uint64_t k = 0; k < total_steps; ++k) {
        const std::uint64_t phase = k / g.steps;
        const std::uint64_t step = phase == 0 ? k : g.steps - 1 - (k - g.steps);
        for (std::uint64_t s = g.lo; s < g.hi; ++s) {
            std::vector<ocrGuid_t> deps;
            if (k > 0) {
                if (s > g.lo) deps.push_back(done(k - 1, s - 1));
                if (s == g.lo && has_side[0]) deps.push_back(g_exchanged[0][k - 1]);
                deps.push_back(done(k - 1, s));
                if (s + 1 < g.hi) deps.push_back(done(k - 1, s + 1));
                if (s + 1 == g.hi && has_side[1]) deps.push_back(g_exchanged[1][k - 1]);
            }
            u64 params[4] = {phase, step, s, k};
            ocrGuid_t edt;
            ocrEdtCreate(&edt, slice_template, 4, params, static_cast<u32>(deps.size()),
                         deps.empty() ? nullptr : deps.data(), EDT_PROP_NONE, NULL_HINT, nullptr);
        }
        for (std::uint64_t side = 0; side < 2; ++side) {
            if (!has_side[side] || k + 1 == total_steps) continue;
            std::vector<ocrGuid_t> deps{done(k, side == 0 ? g.lo : g.hi - 1)};
            if (k > 0) deps.push_back(g_exchanged[side][k - 1]);
            u64 params[2] = {side, k};
            ocrGuid_t edt;
            ocrHint_t hint;
            ocrEdtCreate(&edt, exchange_template, 2, params, static_cast<u32>(deps.size()), deps.data(), EDT_PROP_NONE,
                         umt::net::communication_hint(&hint), nullptr);
        }
    }
    return NULL_GUID;
}

// --dump: this rank's slices of the final volume, at their place in the file.
void dump_volume(const double* const* volume) {
    if (g.dump.empty()) return;
    const int fd = ::open(g.dump.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        std::fprintf(stderr, "umt: --dump=%s: %s\n", g.dump.c_str(), std::strerror(errno));
        std::exit(1);
    }
    const std::size_t bytes = g.slice_doubles * sizeof(double);
    for (std::uint64_t s = g.lo; s < g.hi; ++s) umt::full_pwrite(fd, volume[s], bytes, s * bytes);
    ::close(fd);
}

ocrGuid_t reportEdt(u32, u64*, u32, ocrEdtDep_t*) {
    const auto final_parity = (2 * g.steps - 1) & 1;
    // XOR over slices: the ranks' figures XORed give the one-rank checksum.
    std::uint64_t sum = 0;
    for (std::uint64_t s = g.lo; s < g.hi; ++s) sum ^= checksum(g_volume[final_parity][s], g.slice_doubles) + s;
    dump_volume(g_volume[final_parity].data());
    const std::uint64_t snapshots = snapshot_count();
    umt::report("fwi",
                "\"slices\":" + std::to_string(g.slices) + ",\"slice_bytes\":" +
                    std::to_string(g.slice_doubles * sizeof(double)) + ",\"steps\":" + std::to_string(g.steps) +
                    ",\"sweeps\":" + std::to_string(g.sweeps) + ",\"io_freq\":" + std::to_string(g.io_freq) +
                    ",\"direct\":" + (g.direct ? "true" : "false") + ",\"latency_us\":" + std::to_string(g.latency_us) +
                    ",\"io_bytes\":" + std::to_string(2 * snapshots * g.slice_doubles * sizeof(double)) +
                    ",\"snapshot_mismatches\":" + std::to_string(g_mismatches.load()) + "," +
                    umt::net::report_fields(g.rank, g.ranks, g.net_wait) + ",\"checksum\":" + std::to_string(sum));
    for (const auto event : g_done) ocrEventDestroy(event);
    for (const auto& side : g_exchanged)
        for (const auto event : side) ocrEventDestroy(event);
    if (g_mismatches.load() != 0) ocrAbort(3);
    return NULL_GUID;  // mainEdt's last EDT shuts down once every rank reported
}

// One per rank (a FINISH EDT, umt::net::start_ranks): this rank's volume,
// file and tasks, then its report.
ocrGuid_t rankEdt(u32, u64* paramv, u32, ocrEdtDep_t*) {
    g.slices = paramv[P_SLICES];
    g.slice_doubles = paramv[P_SLICE_KIB] * 1024 / sizeof(double);
    g.steps = paramv[P_STEPS];
    g.sweeps = paramv[P_SWEEPS];
    g.io_freq = paramv[P_IO_FREQ];
    g.direct = paramv[P_DIRECT] != 0;
    g.yield_after_io = paramv[P_YIELD] != 0;
    g.latency_us = paramv[P_LATENCY];
    g.net_wait = static_cast<umt::net::Wait>(paramv[P_WAIT]);
    g.dump = umt::net::unpack_path(paramv + P_DUMP);
    g.rank = paramv[P_RANK];
    g.ranks = umt::net::rank_count();
    umt::net::check_rank(g.rank);
    std::tie(g.lo, g.hi) = umt::net::share(g.slices, g.rank, g.ranks);
    const std::uint64_t snapshots = snapshot_count();
    const std::uint64_t bytes = g.slice_doubles * sizeof(double);
    g.fd = umt::open_data_file(umt::net::rank_file(umt::net::unpack_path(paramv + P_FILE), g.rank, g.ranks),
                               snapshots * bytes, g.direct);
    g_written_sum.assign(snapshots, 0);
    // Every slice, though the rank computes only its own: the neighbours'
    // boundary slices are the halos, written by the exchanges.
    for (auto& copy : g_volume) {
        for (std::uint64_t s = 0; s < g.slices; ++s) {
            auto* slice = static_cast<double*>(std::aligned_alloc(4096, bytes));
            for (std::uint64_t i = 0; i < g.slice_doubles; ++i) slice[i] = std::sin(static_cast<double>(s * 7 + i));
            copy.push_back(slice);
        }
    }
    g_done.resize(2 * g.steps * local_slices());
    for (auto& event : g_done) ocrEventCreate(&event, OCR_EVENT_STICKY_T, EVT_PROP_NONE);
    for (auto& side : g_exchanged) {
        side.resize(2 * g.steps);
        for (auto& event : side) ocrEventCreate(&event, OCR_EVENT_STICKY_T, EVT_PROP_NONE);
    }

    umt::start_measuring();
    ocrGuid_t root_template, report_template, start, root, finished, report;
    ocrEdtTemplateCreate(&root_template, rootEdt, 0, 1);
    ocrEdtTemplateCreate(&report_template, reportEdt, 0, 1);
    ocrEventCreate(&start, OCR_EVENT_ONCE_T, EVT_PROP_NONE);
    ocrEdtCreate(&root, root_template, 0, nullptr, 1, &start, EDT_PROP_FINISH, NULL_HINT, &finished);
    ocrEdtCreate(&report, report_template, 0, nullptr, 1, &finished, EDT_PROP_NONE, NULL_HINT, nullptr);
    ocrEventSatisfy(start, NULL_GUID);
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
                                       {"net-wait", "kernel"},
                                       {"dump", ""},
                                       {"file", "/var/tmp/strata-umt-fwi.dat"}});
    std::vector<u64> params(P_RANK);
    params[P_SLICES] = args.count("slices");
    params[P_SLICE_KIB] = args.count("slice-kib");
    params[P_STEPS] = args.count("steps");
    params[P_SWEEPS] = std::max<std::uint64_t>(1, args.count("sweeps"));
    params[P_IO_FREQ] = args.count("io-freq");
    params[P_DIRECT] = args.count("direct");
    params[P_YIELD] = args.count("yield");
    params[P_LATENCY] = args.count("latency-us");
    params[P_WAIT] = static_cast<u64>(umt::net::parse_wait(args.str("net-wait")));
    if (params[P_SLICES] < umt::net::rank_count()) {
        std::fprintf(stderr, "umt: --slices=%llu: fewer slices than the %llu ranks\n",
                     static_cast<unsigned long long>(params[P_SLICES]),
                     static_cast<unsigned long long>(umt::net::rank_count()));
        std::exit(2);
    }
    umt::net::pack_path(args.str("file"), params.data() + P_FILE);
    umt::net::pack_path(args.str("dump"), params.data() + P_DUMP);
    umt::net::start_ranks(rankEdt, params);
    return NULL_GUID;
}
