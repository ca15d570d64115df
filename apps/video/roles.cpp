// SPDX-License-Identifier: MIT
// InputTask, OutputTask, WorkerTask (roles.hpp).
#include "roles.hpp"

#include <thread>

#include <fmt/format.h>

#include "hydra_notice.hpp"
#include "kernel.hpp"

namespace strata::video {

Result<InputTask> InputTask::open(Context& ctx) {
    auto decoder = Decoder::open(ctx.options.input, "--input", ctx.options.decode_threads);
    if (!decoder) return std::unexpected(decoder.error());
    return InputTask(ctx, std::move(*decoder));
}

InputTask::InputTask(Context& ctx, Decoder decoder) : ctx_(&ctx), decoder_(std::move(decoder)), info_(decoder_.info()) {
    const std::int64_t limit = ctx.options.frames;
    if (limit > 0 && (info_.frames == 0 || info_.frames > limit)) info_.frames = limit;
}

Result<void> InputTask::check_end() const {
    const std::string& input = ctx_->options.input;
    if (decoded_ == 0) {
        return make_error(Errc::invalid_argument,
                          "--input={}: no frames: its video stream holds no decodable frame (no output is written: a "
                          "video without frames cannot be opened)",
                          input);
    }
    // The container's own count (or its duration in frames); 0 when it declares none.
    std::int64_t expected = decoder_.info().frames;
    if (ctx_->options.frames > 0 && expected > ctx_->options.frames) expected = ctx_->options.frames;
    if (decoded_ >= expected) return {};
    if (ctx_->options.strict) {
        return make_error(Errc::corrupted, "--input={}: truncated: {} of {} frames the container declares (--strict)",
                          input, decoded_, expected);
    }
    ctx_->warning(
        fmt::format("--input={}: truncated: {} of {} frames the container declares; the output holds the {} "
                    "(--strict makes this an error)",
                    input, decoded_, expected, decoded_));
    return {};
}

Result<bool> InputTask::decode() {
    if (ctx_->options.frames > 0 && decoded_ >= ctx_->options.frames) return false;
    if (decoded_ == 0) ctx_->stats.first_decode_unix = unix_s();
    const double t0 = now_s();
    auto got = decoder_.decode();
    ctx_->stats.busy_s += now_s() - t0;
    if (got && *got) {
        ++decoded_;
        ctx_->stats.frames = decoded_;
    }
    if (got && !*got) {
        if (auto end = check_end(); !end) return std::unexpected(end.error());
    }
    return got;
}

Result<void> InputTask::convert(std::span<std::uint8_t> into) {
    const double t0 = now_s();
    auto r = decoder_.convert(into);
    ctx_->stats.busy_s += now_s() - t0;
    return r;
}

Result<OutputTask> OutputTask::create(Context& ctx) {
    auto encoder = Encoder::create({.path = ctx.options.output,
                                    .codec = ctx.options.codec,
                                    .overwrite = ctx.options.overwrite,
                                    .threads = ctx.options.encode_threads});
    if (!encoder) return std::unexpected(encoder.error());
    if (encoder->named_before_finish()) {
        remove_on_hydra_notice(ctx.options.output);  // a rank ended by hydra's notice leaves no partial file
    }
    return OutputTask(ctx, std::move(*encoder));
}

Result<void> OutputTask::start(const StreamInfo& info) {
    info_ = info;
    started_ = true;
    // The output knows which frames are done, in order: it draws the progress line (docs/cli.md#progress).
    ctx_->progress = std::make_unique<progress::Line>(
        progress::Options{.enabled = !ctx_->options.quiet, .prefix = "strata-video", .through_mpiexec = true});
    return encoder_.start(info);
}

void OutputTask::show_progress() const {
    if (ctx_->progress == nullptr) return;
    const std::int64_t total = total_ >= 0 ? total_ : info_.frames;
    ctx_->progress->show(static_cast<std::uint64_t>(written_), static_cast<std::uint64_t>(total), "frames");
}

Frame OutputTask::take_buffer() {
    if (!spare_.empty()) {
        Frame f = std::move(spare_.back());
        spare_.pop_back();
        return f;
    }
    return Frame(info_.frame_bytes());
}

Result<void> OutputTask::check_index(std::int64_t index) const {
    if (index < written_ || pending_.contains(index) || (total_ >= 0 && index >= total_) || index < 0) {
        return make_error(Errc::corrupted, "frame {} arrived twice or beyond the end ({} written, total {})", index,
                          written_, total_);
    }
    return {};
}

Result<void> OutputTask::write_ready() {
    for (auto it = pending_.begin(); it != pending_.end() && it->first == written_; it = pending_.begin()) {
        const double t0 = now_s();
        auto w = encoder_.write(it->second);
        ctx_->stats.busy_s += now_s() - t0;
        if (!w) return w;
        ++written_;
        ctx_->stats.frames = written_;
        show_progress();
        spare_.push_back(std::move(it->second));
        pending_.erase(it);
    }
    return {};
}

Result<void> OutputTask::accept(std::int64_t index, Frame frame) {
    if (auto c = check_index(index); !c) return c;
    if (frame.size() != info_.frame_bytes()) {
        return make_error(Errc::corrupted, "frame {} has {} bytes, a {}x{} frame {}", index, frame.size(), info_.width,
                          info_.height, info_.frame_bytes());
    }
    pending_.emplace(index, std::move(frame));
    return write_ready();
}

Result<void> OutputTask::accept_view(std::int64_t index, std::span<const std::uint8_t> bytes) {
    if (auto c = check_index(index); !c) return c;
    if (bytes.size() != info_.frame_bytes()) {
        return make_error(Errc::corrupted, "frame {} has {} bytes, a {}x{} frame {}", index, bytes.size(), info_.width,
                          info_.height, info_.frame_bytes());
    }
    if (index == written_) {
        const double t0 = now_s();
        auto w = encoder_.write(bytes);
        ctx_->stats.busy_s += now_s() - t0;
        if (!w) return w;
        ++written_;
        ctx_->stats.frames = written_;
        show_progress();
        return write_ready();
    }
    Frame copy = take_buffer();
    std::copy(bytes.begin(), bytes.end(), copy.begin());
    pending_.emplace(index, std::move(copy));
    return {};
}

Result<void> OutputTask::set_total(std::int64_t total) {
    if (total < written_ || (!pending_.empty() && pending_.rbegin()->first >= total)) {
        return make_error(Errc::corrupted, "the input counts {} frames, more arrived", total);
    }
    total_ = total;
    return {};
}

std::string OutputTask::missing() const {
    std::string list;
    int shown = 0;
    const std::int64_t end = total_ >= 0 ? total_ : (pending_.empty() ? written_ + 1 : pending_.rbegin()->first);
    std::int64_t count = 0;
    for (std::int64_t i = written_; i < end; ++i) {
        if (pending_.contains(i)) continue;
        ++count;
        if (shown < 8) {
            list += fmt::format("{}{}", shown == 0 ? "" : ", ", i);
            ++shown;
        }
    }
    if (count > shown) list += ", ...";
    return fmt::format("{} written, frame{} {} missing (of {})", written_, count == 1 ? "" : "s", list,
                       total_ >= 0 ? fmt::format("{}", total_) : std::string("an unknown total"));
}

Result<void> OutputTask::finish() {
    const double t0 = now_s();
    auto r = encoder_.finish();
    ctx_->stats.busy_s += now_s() - t0;
    ctx_->stats.done_unix = unix_s();
    ctx_->progress.reset();
    if (r) keep_on_hydra_notice();
    return r;
}

void WorkerTask::process(std::span<const std::uint8_t> in, std::span<std::uint8_t> out, const StreamInfo& info) {
    const double t0 = now_s();
    edge_filter_passes(in, out, info.width, info.height, ctx_->options.kernel == "scalar", ctx_->options.kernel_passes,
                       scratch_);
    if (ctx_->options.worker_sleep_ms > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(ctx_->options.worker_sleep_ms));
    }
    ctx_->stats.busy_s += now_s() - t0;
    ++ctx_->stats.frames;
}

}  // namespace strata::video
