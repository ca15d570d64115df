// SPDX-License-Identifier: MIT
// The three tasks of the paper's application, independent of the transport:
// the input decodes frames, a worker filters one, the output puts results
// back in order and encodes them. Each adds its time to the rank's Stats.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "common.hpp"
#include "decoder.hpp"
#include "encoder.hpp"

namespace strata::video {

using Frame = std::vector<std::uint8_t>;

class InputTask {
public:
    /// Opens --input (errors name it).
    static Result<InputTask> open(Context& ctx);
    /// The decoder's stream, its frame count capped by --frames.
    [[nodiscard]] const StreamInfo& info() const { return info_; }
    /// Decodes the next frame (kept inside the decoder); false after the last one or after --frames.
    /// An input without frames is an error; a truncated one a warning (docs/video.md "Bad input").
    Result<bool> decode();
    /// Writes the decoded frame as grey into `into` (info().frame_bytes()).
    Result<void> convert(std::span<std::uint8_t> into);
    /// Frames decoded so far; the last decoded frame's index is decoded() - 1.
    [[nodiscard]] std::int64_t decoded() const { return decoded_; }

private:
    InputTask(Context& ctx, Decoder decoder);
    /// At the end of the input: no frame is an error; fewer than the container declares a warning
    /// (an error with --strict).
    Result<void> check_end() const;
    Context* ctx_;
    Decoder decoder_;
    StreamInfo info_;
    std::int64_t decoded_ = 0;
};

class OutputTask {
public:
    /// Creates --output (O_EXCL unless --overwrite); it is removed unless finish() succeeds.
    static Result<OutputTask> create(Context& ctx);
    Result<void> start(const StreamInfo& info);
    [[nodiscard]] bool started() const { return started_; }
    [[nodiscard]] const StreamInfo& info() const { return info_; }
    /// A buffer of one frame to receive into (reused after accept()).
    Frame take_buffer();
    /// Frame `index` arrived: written now if it is the next one, kept until then otherwise.
    Result<void> accept(std::int64_t index, Frame frame);
    /// The same for bytes the caller keeps (copied only when out of order).
    Result<void> accept_view(std::int64_t index, std::span<const std::uint8_t> bytes);
    /// The input's frame count; done() once that many were written.
    Result<void> set_total(std::int64_t total);
    [[nodiscard]] bool done() const { return total_ >= 0 && written_ == total_; }
    [[nodiscard]] std::int64_t written() const { return written_; }
    [[nodiscard]] std::int64_t total() const { return total_; }
    /// "frames 17, 18 of 40 missing" for error messages.
    [[nodiscard]] std::string missing() const;
    Result<void> finish();

private:
    OutputTask(Context& ctx, Encoder encoder) : ctx_(&ctx), encoder_(std::move(encoder)) {}
    Result<void> check_index(std::int64_t index) const;
    Result<void> write_ready();
    void show_progress() const;
    Context* ctx_;
    Encoder encoder_;
    StreamInfo info_;
    bool started_ = false;
    std::int64_t written_ = 0;
    std::int64_t total_ = -1;
    std::map<std::int64_t, Frame> pending_;
    std::vector<Frame> spare_;
};

/// The processing task: --kernel's 3×3 edge filter, timed.
class WorkerTask {
public:
    explicit WorkerTask(Context& ctx) : ctx_(&ctx) {}
    void process(std::span<const std::uint8_t> in, std::span<std::uint8_t> out, const StreamInfo& info);

private:
    Context* ctx_;
    Frame scratch_;  ///< --kernel-passes > 1: the passes' second buffer
};

}  // namespace strata::video
