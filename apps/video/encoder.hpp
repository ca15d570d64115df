// SPDX-License-Identifier: MIT
// The output task's encoder: 8-bit grey frames into a file FFmpeg's muxers
// write (container from the file name: .mkv, .nut, .avi; .raw or .gray for
// bare bytes), with the rawvideo codec or the lossless FFV1.
//
// The file is created by the Encoder itself with O_CREAT|O_EXCL|O_NOFOLLOW
// (an existing file is an error unless `overwrite`, which replaces a regular
// file only); a failed or abandoned encoding removes it.
//
// Errors name the parameter (--output, --codec), the value and the cause.
// Thread safety: one Encoder is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "decoder.hpp"
#include "strata/error.hpp"

namespace strata::video {

struct EncoderOptions {
    std::string path;
    std::string codec = "rawvideo";  ///< rawvideo | ffv1
    bool overwrite = false;
    int threads = 1;  ///< FFV1 slice threads
};

class Encoder {
public:
    /// Checks the options and creates the file (nothing is written before start()).
    static Result<Encoder> create(const EncoderOptions& options);

    Encoder(Encoder&&) noexcept;
    Encoder& operator=(Encoder&&) noexcept;
    /// Without finish(), removes the file.
    ~Encoder();

    /// Sets up the codec and writes the header for frames of `info`.
    Result<void> start(const StreamInfo& info);
    /// Encodes one frame (info.frame_bytes() bytes, rows packed).
    Result<void> write(std::span<const std::uint8_t> grey);
    /// Flushes the codec, writes the trailer, closes the file (kept).
    Result<void> finish();
    [[nodiscard]] std::int64_t frames() const noexcept;

    struct Impl;

private:
    explicit Encoder(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// The codec names --codec accepts.
bool known_codec(const std::string& codec);

}  // namespace strata::video
