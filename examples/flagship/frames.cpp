// SPDX-License-Identifier: MIT
// The C side of the flagship's frame handoff (frames.h): one producer of the port "frames" of
// the analysis's segment, kept for the run by the frame EDTs of rank 0.
#include "frames.h"

#include <cstdio>
#include <optional>
#include <strata/shm.hpp>

struct flagship_frames {
    strata::Segment segment;
    std::optional<strata::Port> port;
    strata::vector<double>* frame = nullptr;
};

namespace {

// Called by chained frame EDTs only, one at a time (frames.h): a plain static is enough.
std::optional<flagship_frames> frames_of_run;

int fail(const char* segment, const char* what, const strata::Error& error) {
    std::fprintf(stderr, "heat: frames segment %s: %s: %s\n", segment, what, error.what().c_str());
    return -1;
}

}  // namespace

extern "C" flagship_frames* flagship_frames_open(const char* segment) {
    if (frames_of_run) {
        return &*frames_of_run;
    }
    auto seg = strata::Segment::open(segment, strata::SegmentMode::open_only);
    if (!seg) {
        fail(segment, "open (start analysis.py first)", seg.error());
        return nullptr;
    }
    auto port = seg->port("frames", strata::PortRole::producer);
    if (!port) {
        fail(segment, "port frames", port.error());
        return nullptr;
    }
    frames_of_run.emplace(flagship_frames{std::move(*seg), std::move(*port), nullptr});
    return &*frames_of_run;
}

extern "C" double* flagship_frames_field(flagship_frames* frames, uint64_t step, uint64_t n) {
    auto made = frames->segment.make<strata::vector<double>>(n * n + 2);
    if (!made) {
        fail(frames->segment.name().c_str(), "a frame", made.error());
        return nullptr;
    }
    frames->frame = *made;
    (**made)[0] = static_cast<double>(step);
    (**made)[1] = static_cast<double>(n);
    return (*made)->data() + 2;
}

extern "C" int flagship_frames_send(flagship_frames* frames, int last) {
    const std::string name = frames->segment.name();
    if (auto sent = frames->port->send(*frames->frame); !sent) {
        return fail(name.c_str(), "send", sent.error());
    }
    if (last != 0) {
        auto closed = frames->port->close();
        frames_of_run.reset();  // detaches; the analysis, still attached, keeps the segment
        if (!closed) {
            return fail(name.c_str(), "close", closed.error());
        }
    }
    return 0;
}
