// SPDX-License-Identifier: MIT
// The input task's decoder: any video FFmpeg reads (libavformat, libavcodec),
// each frame converted to 8-bit grey (libswscale), one byte per pixel, rows
// packed, as the paper's processing tasks take it.
//
// Errors: open() names the path and FFmpeg's reason (no such file, no video
// stream, no decoder); next() names the frame it failed on.
// Thread safety: one Decoder is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "strata/error.hpp"

namespace strata::video {

/// What the output needs to encode the frames as the input had them.
struct StreamInfo {
    int width = 0;
    int height = 0;
    int rate_num = 25;  ///< frame rate as a fraction
    int rate_den = 1;
    /// Frames the container announces (or its duration implies): the progress line's total. 0: unknown.
    std::int64_t frames = 0;
    [[nodiscard]] std::size_t frame_bytes() const {
        return static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
    }
};

class Decoder {
public:
    /// Opens `path` (`parameter` is the option that named it, for errors) with `threads` decoding threads.
    static Result<Decoder> open(const std::string& path, const std::string& parameter, int threads);

    Decoder(Decoder&&) noexcept;
    Decoder& operator=(Decoder&&) noexcept;
    ~Decoder();

    [[nodiscard]] const StreamInfo& info() const noexcept;
    /// Decodes the next frame into the decoder's own frame; false at the end of the stream.
    Result<bool> decode();
    /// Writes the frame decode() produced into `grey` (info().frame_bytes() bytes) as 8-bit grey.
    Result<void> convert(std::span<std::uint8_t> grey);
    /// decode() then convert().
    Result<bool> next(std::span<std::uint8_t> grey);

    struct Impl;

private:
    explicit Decoder(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// FFmpeg's text for an error code ("No such file or directory").
std::string av_error_text(int code);

}  // namespace strata::video
