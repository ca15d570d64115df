// SPDX-License-Identifier: MIT
// strata-video's command line: which implementation, which files, and the
// knobs of each transport. Every bad value is refused before anything runs,
// with a message naming the option, the value and the cause.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/error.hpp"

namespace strata::video {

enum class Impl {
    serial,           ///< one process: decode, filter, encode (the baseline and the reference run)
    mpi_sync,         ///< paper: MPI synchronous, single buffer
    mpi_async,        ///< paper: MPI asynchronous, single buffer
    mpi_async_multi,  ///< paper: MPI asynchronous, one buffer per worker (+ prefetch by credits)
    zmq,              ///< paper: ZeroMQ REQ-REP to the input, PUSH-PULL to the output, high-water mark
    zmq_credit,       ///< ZeroMQ DEALER-ROUTER with credits (several frames in flight per worker)
    dsm,              ///< libstrata-dsm: frames in chunks, notifications with the data (update-on-write)
    dsm_acquire,      ///< libstrata-dsm: notifications without data, readers acquire the chunk
};

struct Options {
    Impl impl = Impl::serial;
    std::string impl_name = "serial";
    std::string input;
    std::string output;
    std::string codec = "rawvideo";
    bool overwrite = false;
    bool strict = false;  ///< a truncated input is an error, not a warning
    bool quiet = false;   ///< no progress line (the output rank draws one when mpiexec's or its stderr is a terminal)
    std::int64_t frames = 0;  ///< 0: every frame of the input
    int timeout_ms = 10000;
    int heartbeat_ms = 250;
    /// Frames in flight per worker; 0 until parsed, then the implementation's default: 1 for
    /// dsm (a worker's next frame when its credit returns, as ZeroMQ's REQ-REP hands one per
    /// request), 2 for zmq-credit and mpi-async-multi (whose point is several).
    int credits = 0;
    int hwm = 10;
    std::string zmq_host = "127.0.0.1";
    int zmq_port = 0;
    int dsm_servers = 1;
    std::string stats_dir;
    std::string log_dir;
    int rank = -1;  ///< without mpiexec (zmq, serial): this process's rank
    int size = -1;
    int decode_threads = 1;
    int encode_threads = 1;
    std::string kernel = "vector";
    int kernel_passes = 1;    ///< the filter applied this many times per frame (a heavier kernel)
    int worker_sleep_ms = 0;  ///< tests and demos: each worker sleeps this long per frame (a slow node)
    std::string node;         ///< a label for the stats (default: $STRATA_VIDEO_NODE or the host name)
    // --kernel-time WxH: measure the kernel instead of running the pipeline.
    std::string kernel_time;
    int width = 0;
    int height = 0;
    int repeats = 20;
    double kernel_seconds = 0;  ///< --kernel-time: keep running until this much time passed too
};

enum class ParseOutcome { run, exit_ok, exit_error };

/// Parses and checks argv; on exit_* the message is already printed.
ParseOutcome parse_options(int argc, char** argv, Options& options);

/// The implementation names, as --impl takes them.
const std::vector<std::string>& impl_names();

/// true for the implementations that run over MPI (mpi-*, dsm*).
bool uses_mpi(Impl impl);

}  // namespace strata::video
