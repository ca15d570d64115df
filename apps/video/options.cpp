// SPDX-License-Identifier: MIT
// Command-line parsing (options.hpp) with CLI11, then one check per option.
#include "options.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "encoder.hpp"

namespace strata::video {

namespace {

struct Named {
    const char* name;
    Impl impl;
};
constexpr Named impls[] = {
    {"serial", Impl::serial},
    {"mpi-sync", Impl::mpi_sync},
    {"mpi-async", Impl::mpi_async},
    {"mpi-async-multi", Impl::mpi_async_multi},
    {"zmq", Impl::zmq},
    {"zmq-credit", Impl::zmq_credit},
    {"dsm", Impl::dsm},
    {"dsm-acquire", Impl::dsm_acquire},
};

std::string check(const Options& o) {
    auto range = [](const char* name, long long v, long long lo, long long hi, const char* what) -> std::string {
        if (v < lo || v > hi) return fmt::format("{}={}: must be {}..{} ({})", name, v, lo, hi, what);
        return {};
    };
    if (!o.kernel_time.empty()) {
        if (o.width <= 0 || o.height <= 0) {
            return fmt::format("--kernel-time={}: expected WIDTHxHEIGHT with both at least 1 (e.g. 1920x1080)",
                               o.kernel_time);
        }
        if (o.kernel_seconds < 0 || o.kernel_seconds > 600) {
            return fmt::format("--kernel-seconds={}: must be 0..600", o.kernel_seconds);
        }
        if (auto e = range("--kernel-passes", o.kernel_passes, 1, 1000, "filter passes per frame"); !e.empty()) {
            return e;
        }
        return range("--repeats", o.repeats, 1, 100000, "kernel runs to take the median of");
    }
    std::string e;
    if (o.input.empty()) return "--input: missing (the video to read)";
    if (o.output.empty()) return "--output: missing (the file to write)";
    if (!known_codec(o.codec)) return fmt::format("--codec={}: unknown codec (expected rawvideo or ffv1)", o.codec);
    if (o.kernel != "vector" && o.kernel != "scalar") {
        return fmt::format("--kernel={}: unknown kernel (expected vector or scalar)", o.kernel);
    }
    for (const std::string& r :
         {range("--kernel-passes", o.kernel_passes, 1, 1000, "filter passes per frame"),
          range("--frames", o.frames, 0, 1LL << 40, "0 means every frame"),
          range("--timeout-ms", o.timeout_ms, 100, 3600000, "how long a silent peer is waited for"),
          range("--heartbeat-ms", o.heartbeat_ms, 10, 60000, "how often a waiting rank checks its peers"),
          range("--credits", o.credits, 1, 64, "frames in flight per worker"),
          range("--hwm", o.hwm, 1, 100000, "ZeroMQ high-water mark in messages"),
          range("--zmq-port", o.zmq_port, 0, 65533, "the input binds it, the output the next two"),
          range("--dsm-servers", o.dsm_servers, 1, 255, "DSM server ranks"),
          range("--decode-threads", o.decode_threads, 1, 64, "FFmpeg decoding threads"),
          range("--worker-sleep-ms", o.worker_sleep_ms, 0, 60000, "a worker's extra time per frame"),
          range("--encode-threads", o.encode_threads, 1, 64, "FFmpeg encoding threads")}) {
        if (!r.empty()) return r;
    }
    if (o.heartbeat_ms >= o.timeout_ms) {
        return fmt::format("--heartbeat-ms={}: must be below --timeout-ms={}", o.heartbeat_ms, o.timeout_ms);
    }
    if ((o.impl == Impl::zmq || o.impl == Impl::zmq_credit) && o.zmq_port == 0) {
        return fmt::format("--zmq-port: missing for --impl={} (the input binds it, the output the next two)",
                           o.impl_name);
    }
    for (const auto& [name, dir] : {std::pair{"--stats", o.stats_dir}, std::pair{"--log-dir", o.log_dir}}) {
        struct stat st {};
        if (!dir.empty() && (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
            return fmt::format("{}={}: not a directory", name, dir);
        }
    }
    if ((o.rank >= 0) != (o.size >= 0)) return "--rank and --size: give both or neither";
    if (o.size >= 0 && (o.rank >= o.size || o.size < 1)) {
        return fmt::format("--rank={}: must be below --size={}", o.rank, o.size);
    }
    if (o.rank >= 0 && uses_mpi(o.impl)) {
        return fmt::format("--rank={}: --impl={} takes its rank from MPI (run it with mpiexec)", o.rank, o.impl_name);
    }
    return {};
}

}  // namespace

const std::vector<std::string>& impl_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const auto& n : impls) v.emplace_back(n.name);
        return v;
    }();
    return names;
}

bool uses_mpi(Impl impl) {
    return impl == Impl::mpi_sync || impl == Impl::mpi_async || impl == Impl::mpi_async_multi || impl == Impl::dsm ||
           impl == Impl::dsm_acquire;
}

ParseOutcome parse_options(int argc, char** argv, Options& o) {
    CLI::App app{
        "strata-video: paper 003's video pipeline (decode, 3x3 edge filter, encode) over MPI, ZeroMQ or "
        "libstrata-dsm (docs/video.md).\nRanks: 0 input, 1 output, 2.. workers (dsm: the first --dsm-servers ranks "
        "serve, then input, output, workers)."};
    std::string impl = o.impl_name;
    app.add_option("--impl", impl,
                   "serial | mpi-sync | mpi-async | mpi-async-multi | zmq | zmq-credit | dsm | "
                   "dsm-acquire");
    app.add_option("--input,-i", o.input, "video to read (any format FFmpeg reads; converted to 8-bit grey)");
    app.add_option("--output,-o", o.output, "file to write: .mkv, .nut, .avi, or .raw/.gray for bare bytes");
    app.add_option("--codec", o.codec, "rawvideo | ffv1 (lossless)");
    app.add_flag("--overwrite", o.overwrite, "replace an existing output file");
    app.add_flag("--strict", o.strict,
                 "a truncated input (fewer frames than its container declares) fails the job instead of a warning");
    app.add_flag("--quiet,-q", o.quiet,
                 "no progress line (the output rank shows frames done of the total when stderr, or mpiexec's on "
                 "this node, is a terminal)");
    app.add_option("--frames", o.frames, "process only the first N frames (0: all)");
    app.add_option("--timeout-ms", o.timeout_ms, "a peer silent this long while waited for is dead (default 10000)");
    app.add_option("--heartbeat-ms", o.heartbeat_ms, "ZeroMQ heartbeat / DSM ping interval (default 250)");
    const auto* credits = app.add_option(
        "--credits", o.credits, "frames in flight per worker (zmq-credit, mpi-async-multi: default 2; dsm: default 1)");
    app.add_option("--hwm", o.hwm, "ZeroMQ high-water mark (default 10, the paper's)");
    app.add_option("--zmq-host", o.zmq_host, "address the input and output bind (default 127.0.0.1)");
    app.add_option("--zmq-port", o.zmq_port, "input's port; the output uses the next two");
    app.add_option("--dsm-servers", o.dsm_servers, "DSM server ranks (the paper: 1 or 4)");
    app.add_option("--stats", o.stats_dir, "write each rank's counters to DIR/rank<r>.json");
    app.add_option("--log-dir", o.log_dir, "also write each rank's errors to DIR/rank<r>.log");
    app.add_option("--rank", o.rank, "zmq/serial without mpiexec: this process's rank (default $PMI_RANK)");
    app.add_option("--size", o.size, "zmq/serial without mpiexec: the number of ranks (default $PMI_SIZE)");
    app.add_option("--decode-threads", o.decode_threads, "FFmpeg decoding threads (default 1)");
    app.add_option("--encode-threads", o.encode_threads, "FFmpeg encoding threads (default 1)");
    app.add_option("--kernel", o.kernel, "vector | scalar");
    app.add_option("--kernel-passes", o.kernel_passes,
                   "apply the filter this many times per frame, each pass to the last one's output (default 1)");
    app.add_option("--worker-sleep-ms", o.worker_sleep_ms,
                   "tests and demos: workers sleep this long per frame (a slow node; default 0)");
    app.add_option("--node", o.node, "node label in the stats (default $STRATA_VIDEO_NODE or the host name)");
    app.add_option("--kernel-time", o.kernel_time, "WxH: time the kernel on one frame of that size, print JSON");
    app.add_option("--repeats", o.repeats, "--kernel-time runs (default 20)");
    app.add_option("--kernel-seconds", o.kernel_seconds,
                   "--kernel-time: also run for at least this long, so that a CPU quota's throttling shows in "
                   "the mean (default 0)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e) == 0 ? ParseOutcome::exit_ok : ParseOutcome::exit_error;
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "strata-video: %s (see --help)\n", e.what());
        return ParseOutcome::exit_error;
    }
    bool found = false;
    for (const auto& n : impls) {
        if (impl == n.name) {
            o.impl = n.impl;
            o.impl_name = n.name;
            found = true;
        }
    }
    if (!found) {
        std::fprintf(stderr, "strata-video: --impl=%s: unknown implementation (expected one of %s)\n", impl.c_str(),
                     fmt::format("{}", fmt::join(impl_names(), ", ")).c_str());
        return ParseOutcome::exit_error;
    }
    if (!o.kernel_time.empty()) {
        char x = 0;
        char rest = 0;
        if (std::sscanf(o.kernel_time.c_str(), "%d%c%d%c", &o.width, &x, &o.height, &rest) != 3 || x != 'x') {
            o.width = o.height = 0;
        }
    }
    if (credits->count() == 0) {
        o.credits = o.impl == Impl::dsm ? 1 : 2;
    }
    if (std::string problem = check(o); !problem.empty()) {
        std::fprintf(stderr, "strata-video: %s\n", problem.c_str());
        return ParseOutcome::exit_error;
    }
    if (o.node.empty()) {
        if (const char* env = std::getenv("STRATA_VIDEO_NODE")) {
            o.node = env;
        } else {
            char host[256] = {};
            ::gethostname(host, sizeof host - 1);
            o.node = host;
        }
    }
    return ParseOutcome::run;
}

}  // namespace strata::video
