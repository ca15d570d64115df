// SPDX-License-Identifier: MIT
// The output task's encoder: 8-bit grey frames into a file FFmpeg's muxers
// write (container from the file name: .mkv, .nut, .avi; .raw or .gray for
// bare bytes), with the rawvideo codec or the lossless FFV1.
//
// The Encoder writes an unnamed file in the output's directory (O_TMPFILE)
// and finish() links it under the output's name, so the name appears only for
// a finished file: a process killed at any moment leaves nothing. An existing
// output is an error at create() unless `overwrite` (a regular file only,
// replaced by rename at finish()). Where the file system has no O_TMPFILE the
// file is created under its name (O_CREAT|O_EXCL|O_NOFOLLOW) and a failed or
// abandoned encoding removes it.
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
    /// Checks the options and creates the (unnamed) file; nothing is written before start().
    static Result<Encoder> create(const EncoderOptions& options);

    Encoder(Encoder&&) noexcept;
    Encoder& operator=(Encoder&&) noexcept;
    /// Without finish(), the file goes (unnamed) or is removed.
    ~Encoder();

    /// Sets up the codec and writes the header for frames of `info`.
    Result<void> start(const StreamInfo& info);
    /// Encodes one frame (info.frame_bytes() bytes, rows packed).
    Result<void> write(std::span<const std::uint8_t> grey);
    /// Flushes the codec, writes the trailer and gives the file the output's name.
    Result<void> finish();
    [[nodiscard]] std::int64_t frames() const noexcept;
    /// The file already has the output's name (no O_TMPFILE): a dying rank must remove it.
    [[nodiscard]] bool named_before_finish() const noexcept;

    struct Impl;

private:
    explicit Encoder(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// The codec names --codec accepts.
bool known_codec(const std::string& codec);

}  // namespace strata::video
