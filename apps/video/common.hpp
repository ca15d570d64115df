// SPDX-License-Identifier: MIT
// What every implementation of the pipeline shares: the rank's context
// (options, role, counters, error reporting), the wire header of control
// messages, and the clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "options.hpp"
#include "progress.hpp"
#include "strata/error.hpp"

namespace strata::video {

/// What a rank does. MPI and ZeroMQ: rank 0 input, 1 output, 2.. workers; DSM: servers first.
enum class Role { input, output, worker, server };
const char* to_string(Role role);

/// A rank's counters, written to --stats DIR/rank<r>.json.
struct Stats {
    std::int64_t frames = 0;  ///< decoded (input), processed (worker), written (output)
    double busy_s = 0;        ///< decoding, filtering or encoding
    double wait_s = 0;        ///< waiting for messages or completions
    double total_s = 0;       ///< from the start of the pipeline to the end of this rank's part
    std::uint64_t messages_sent = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t messages_received = 0;
    std::uint64_t bytes_received = 0;
    double first_frame_s = -1;     ///< worker: when the first frame arrived (from the start)
    double first_decode_unix = 0;  ///< input: wall clock (s since the epoch) when it started decoding
    double done_unix = 0;          ///< output: wall clock when the last frame was written
};

struct Context {
    explicit Context(const Options& o) : options(o) {}
    const Options& options;
    int rank = 0;
    int size = 1;
    Role role = Role::input;
    int worker = -1;  ///< 0.. for workers
    Stats stats;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    /// The output's progress line (OutputTask::start); error() and note() erase it before they print.
    std::unique_ptr<progress::Line> progress;

    /// Every rank's node label (--node), once known (MPI: learn_nodes; ZeroMQ: from the workers'
    /// messages); empty entries are unknown. Errors about a peer name its node with peer().
    std::vector<std::string> nodes;

    /// "strata-video: rank 3 (worker 1, node n2)".
    [[nodiscard]] std::string who() const;
    /// "rank 3 on node n2", or "rank 3" while its node is unknown.
    [[nodiscard]] std::string peer(int rank) const;
    /// Prints "<who>: error: <message>" to stderr and to --log-dir.
    void error(const std::string& message) const;
    /// Prints a line to --log-dir only (and to stderr with STRATA_VIDEO_VERBOSE=1).
    void note(const std::string& message) const;
    /// "strata-video: rank R (...): warning: message" on stderr and in the log.
    void warning(const std::string& message) const;
    /// Writes the stats (no-op without --stats).
    Result<void> write_stats(const std::string& extra_json = {}) const;
    [[nodiscard]] double elapsed() const;
    /// Notes "started, pid N" in --log-dir (tests find a rank's process there).
    void started() const;
    /// A worker's first frame arrived: records when in the stats and notes it in --log-dir
    /// (tests kill a worker only once it holds frames). Later calls do nothing.
    void first_frame();
    /// Notes "exiting with status N" in --log-dir, then ends the process (std::exit for 0, else
    /// std::_Exit: no destructor may wait for a failed peer). Tests read a rank's status there.
    [[noreturn]] void exit_now(int status) const;
};

/// The input's view of the frames each worker holds: a worker sent frames after its last message
/// and silent for --timeout-ms since the first of them is dead or cut off. Checked after every
/// message, so that the input names it while the other workers keep it busy, not only once it
/// runs out of frames (a worker behind a cut link was noticed only at the end, and the error
/// blamed the output).
class Holders {
public:
    explicit Holders(int workers)
        : unanswered_(static_cast<std::size_t>(workers), 0), since_(static_cast<std::size_t>(workers), 0) {}
    void sent(int worker);   ///< a frame went to `worker`
    void heard(int worker);  ///< a message came from `worker`
    /// peer_dead naming the first silent holder, its rank and node; `first_worker_rank`: worker 0's rank.
    [[nodiscard]] Result<void> check(const Context& ctx, int first_worker_rank) const;

private:
    std::vector<std::int64_t> unanswered_;
    std::vector<double> since_;
};

/// Seconds since an arbitrary epoch, monotonic.
double now_s();
/// Seconds since the Unix epoch (the same clock on every rank of one machine: the benchmark's job time).
double unix_s();

/// Kinds of control messages (MPI and ZeroMQ carry a Header; the frame bytes travel after it).
enum class Kind : std::uint32_t {
    ready = 1,     ///< worker -> input: one more frame can come (a credit)
    job = 2,       ///< input -> worker: frame `index` follows
    stop = 3,      ///< input -> worker: no more frames, the job is complete
    result = 4,    ///< worker -> output: filtered frame `index` follows
    info = 5,      ///< input -> output: the stream's size and rate; `count` frames expected (0: unknown)
    end = 6,       ///< input -> output: `count` frames in all
    complete = 7,  ///< output -> input: every frame is written
    abort = 8,     ///< anyone -> anyone: the job failed; `text` says why
    fin = 9,       ///< worker -> input: stopped, after `count` ready messages in all
};

struct Header {
    static constexpr std::uint32_t magic_value = 0x44495653;  // "SVID"
    std::uint32_t magic = magic_value;
    Kind kind = Kind::ready;
    std::int64_t index = -1;
    std::int64_t count = 0;
    std::int32_t width = 0;
    std::int32_t height = 0;
    std::int32_t rate_num = 0;
    std::int32_t rate_den = 0;
    std::int32_t from = -1;  ///< the sender's rank
    std::int32_t worker = -1;
    char text[200] = {};

    void set_text(const std::string& s) {
        std::memset(text, 0, sizeof text);
        std::memcpy(text, s.data(), std::min(s.size(), sizeof text - 1));
    }
    [[nodiscard]] std::string get_text() const { return std::string(text, strnlen(text, sizeof text)); }
};

const char* to_string(Kind kind);

/// The largest frame side a header may announce (H.264's limit in FFmpeg).
inline constexpr std::int32_t kMaxFrameSide = 16384;

/// Checks a control header that arrived from a peer before anything acts on
/// it (header.cpp): the magic number, a known kind, for info and job a frame
/// of 1..kMaxFrameSide per side, for job and result an index >= 0, for end,
/// fin and complete a count >= 0. corrupted, naming `what` (the channel).
Result<void> check_header(const Header& h, std::string_view what);
/// Checks a job's frame: `bytes` is its width x height, and once the stream's
/// frame size is known (`stream_bytes` > 0, a worker's buffers have it) that size.
Result<void> check_job(const Header& job, std::size_t bytes, std::size_t stream_bytes, std::string_view what);

}  // namespace strata::video
