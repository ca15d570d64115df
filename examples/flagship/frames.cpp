// SPDX-License-Identifier: MIT
// The C side of the flagship's frame handoff (frames.h): the producer end of the port
// "frames" and the consumer end of the port "steer" of the analysis's segment, kept for the
// run by the frame EDTs of rank 0.
#include "frames.h"

#include <cstdio>
#include <cstring>
#include <optional>
#include <strata/shm.hpp>

struct flagship_frames {
    strata::Segment segment;
    strata::Port frames;
    std::optional<strata::Port> steer;
    strata::vector<double>* frame = nullptr;
};

namespace {

// Used by chained frame EDTs only, one at a time (frames.h): a plain static is enough.
std::optional<flagship_frames> frames_of_run;

int fail(const std::string& segment, const char* what, const strata::Error& error) {
    std::fprintf(stderr, "heat: frames segment %s: %s: %s\n", segment.c_str(), what, error.what().c_str());
    return -1;
}

}  // namespace

extern "C" flagship_frames* flagship_frames_open(const char* segment, int steer) {
    if (frames_of_run) {
        return &*frames_of_run;
    }
    auto seg = strata::Segment::open(segment, strata::SegmentMode::open_only);
    if (!seg) {
        fail(segment, "open (start analysis.py first)", seg.error());
        return nullptr;
    }
    auto frames = seg->port("frames", strata::PortRole::producer);
    if (!frames) {
        fail(segment, "port frames", frames.error());
        return nullptr;
    }
    std::optional<strata::Port> answers;
    if (steer != 0) {
        auto port = seg->port("steer", strata::PortRole::consumer);
        if (!port) {
            fail(segment, "port steer (start steer first)", port.error());
            return nullptr;
        }
        answers.emplace(std::move(*port));
    }
    frames_of_run.emplace(flagship_frames{std::move(*seg), std::move(*frames), std::move(answers), nullptr});
    return &*frames_of_run;
}

extern "C" double* flagship_frames_field(flagship_frames* frames, uint64_t step, uint64_t n) {
    auto made = frames->segment.make<strata::vector<double>>(n * n + 2);
    if (!made) {
        fail(frames->segment.name(), "a frame", made.error());
        return nullptr;
    }
    frames->frame = *made;
    (**made)[0] = static_cast<double>(step);
    (**made)[1] = static_cast<double>(n);
    return (*made)->data() + 2;
}

extern "C" int flagship_frames_send(flagship_frames* frames) {
    if (auto sent = frames->frames.send(*frames->frame); !sent) {
        return fail(frames->segment.name(), "send to port frames", sent.error());
    }
    return 0;
}

extern "C" int flagship_frames_steer(flagship_frames* frames, uint64_t frame, double* alpha) {
    if (!frames->steer) {
        std::fprintf(stderr, "heat: frames segment %s: no port steer\n", frames->segment.name().c_str());
        return -1;
    }
    auto sample = frames->steer->recv();
    if (!sample) {
        return fail(frames->segment.name(), "receive from port steer", sample.error());
    }
    flagship_steer_message answer{};
    if (sample->bytes().size() != sizeof answer) {
        std::fprintf(stderr, "heat: port steer: a message of %zu bytes, expected %zu\n", sample->bytes().size(),
                     sizeof answer);
        return -1;
    }
    std::memcpy(&answer, sample->bytes().data(), sizeof answer);
    if (answer.frame != frame) {
        std::fprintf(stderr, "heat: port steer: an answer to frame %llu, expected frame %llu\n",
                     static_cast<unsigned long long>(answer.frame), static_cast<unsigned long long>(frame));
        return -1;
    }
    *alpha = answer.alpha;
    return 0;
}

extern "C" int flagship_frames_close(flagship_frames* frames) {
    const std::string name = frames->segment.name();
    auto closed = frames->frames.close();
    if (frames->steer) {
        (void)frames->steer->close();  // the stream is over; only the frames port's close matters
    }
    frames_of_run.reset();  // detaches; the analysis, still attached, keeps the segment
    return closed ? 0 : fail(name, "close port frames", closed.error());
}
