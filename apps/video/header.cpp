// SPDX-License-Identifier: MIT
// Control headers' kinds by name, and the checks of received headers (common.hpp): every transport
// copies a peer's bytes into a Header, then asks these before using a field.
#include "common.hpp"

#include "decoder.hpp"

namespace strata::video {

namespace {

bool frame_side_ok(std::int32_t side) {
    return side >= 1 && side <= kMaxFrameSide;
}

}  // namespace

const char* to_string(Kind kind) {
    switch (kind) {
        case Kind::ready: return "ready";
        case Kind::job: return "job";
        case Kind::stop: return "stop";
        case Kind::result: return "result";
        case Kind::info: return "info";
        case Kind::end: return "end";
        case Kind::complete: return "complete";
        case Kind::abort: return "abort";
        case Kind::fin: return "fin";
    }
    return "?";
}

Result<void> check_header(const Header& h, std::string_view what) {
    if (h.magic != Header::magic_value) {
        return make_error(Errc::corrupted, "{}: a control message without the pipeline's magic number", what);
    }
    const auto kind = static_cast<std::uint32_t>(h.kind);
    if (kind < static_cast<std::uint32_t>(Kind::ready) || kind > static_cast<std::uint32_t>(Kind::fin)) {
        return make_error(Errc::corrupted, "{}: a control message of unknown kind {}", what, kind);
    }
    // A frame's size sizes buffers and the kernel's loops: 1..kMaxFrameSide per side.
    if ((h.kind == Kind::info || h.kind == Kind::job) && (!frame_side_ok(h.width) || !frame_side_ok(h.height))) {
        return make_error(Errc::corrupted, "{}: a {} message announces a {}x{} frame (each side 1 to {})", what,
                          to_string(h.kind), h.width, h.height, kMaxFrameSide);
    }
    if ((h.kind == Kind::job || h.kind == Kind::result) && h.index < 0) {
        return make_error(Errc::corrupted, "{}: a {} message for frame {}", what, to_string(h.kind), h.index);
    }
    if ((h.kind == Kind::end || h.kind == Kind::fin || h.kind == Kind::complete) && h.count < 0) {
        return make_error(Errc::corrupted, "{}: a {} message counting {} frames", what, to_string(h.kind), h.count);
    }
    return {};
}

Result<void> check_job(const Header& job, std::size_t bytes, std::size_t stream_bytes, std::string_view what) {
    const StreamInfo info{job.width, job.height, 0, 0};
    if (bytes != info.frame_bytes()) {
        return make_error(Errc::corrupted, "{}: job {} carries {} bytes for a {}x{} frame", what, job.index, bytes,
                          job.width, job.height);
    }
    if (stream_bytes != 0 && bytes != stream_bytes) {
        return make_error(Errc::corrupted, "{}: job {} is a {}x{} frame of {} bytes, the stream's frames have {}", what,
                          job.index, job.width, job.height, bytes, stream_bytes);
    }
    return {};
}

}  // namespace strata::video
