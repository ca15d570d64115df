// SPDX-License-Identifier: MIT
// A producer or consumer task for the container tests (container_shm_test.cpp):
// run inside a crun container from /opt/strata/bin, it uses the default
// segment directory (/dev/shm/strata-<euid>), where the test's directory is bound.
//
//   strata_container_task produce SEGMENT PORT MESSAGES BYTES [--hold]
//   strata_container_task consume SEGMENT PORT MESSAGES BYTES [--hold]
//
// produce: creates (or opens) SEGMENT, sends one handle to a vector of BYTES
// pattern bytes, then MESSAGES messages of BYTES inline pattern bytes through
// PORT (MESSAGES 0: until an error). consume: receives and checks all of them.
// --hold: after the first message (consumer: while holding it) print "holding"
// and wait to be killed. Prints its pid namespace ("ns pid:[N]") first, then
// "sent N" / "received N ok", or "error: <what>" and exits 3.
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "strata/shm.hpp"

namespace {

using namespace strata;

constexpr std::size_t kSegmentBytes = 16U << 20U;

std::byte pattern(std::size_t message, std::size_t i) {
    return static_cast<std::byte>((message * 131U + i * 7U + 3U) & 0xffU);
}

int fail(const std::string& what) {
    std::printf("error: %s\n", what.c_str());
    std::fflush(stdout);
    return 3;
}

[[noreturn]] void hold() {
    std::printf("holding\n");
    std::fflush(stdout);
    for (;;) {
        ::pause();
    }
}

int produce(const std::string& name, const std::string& port_name, std::size_t messages, std::size_t bytes,
            bool hold_after) {
    auto seg = Segment::open(name, SegmentMode::open_or_create, kSegmentBytes);
    if (!seg) {
        return fail(seg.error().what());
    }
    auto port = seg->port(port_name, PortRole::producer, {.slots = 2, .slot_bytes = bytes, .consumers = 1});
    if (!port) {
        return fail(port.error().what());
    }
    auto object = seg->container<strata::vector<std::byte>>("payload", bytes);
    if (!object) {
        return fail(object.error().what());
    }
    for (std::size_t i = 0; i < bytes; ++i) {
        (**object)[i] = pattern(0, i);
    }
    if (auto sent = port->send(**object); !sent) {
        return fail(sent.error().what());
    }
    if (hold_after) {
        hold();
    }
    for (std::size_t m = 1; messages == 0 || m <= messages; ++m) {
        auto loan = port->loan();
        if (!loan) {
            return fail(loan.error().what());
        }
        for (std::size_t i = 0; i < bytes; ++i) {
            loan->bytes()[i] = pattern(m, i);
        }
        if (auto done = port->commit(std::move(*loan), bytes); !done) {
            return fail(done.error().what());
        }
    }
    std::printf("sent %zu\n", messages);
    std::fflush(stdout);
    return 0;
}

// The producer creates the segment; a consumer that starts first waits for it.
Result<Segment> open_when_there(const std::string& name) {
    for (;;) {
        auto seg = Segment::open(name, SegmentMode::open_only, 0);
        if (seg || seg.error().code != Errc::not_found) {
            return seg;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

int consume(const std::string& name, const std::string& port_name, std::size_t messages, std::size_t bytes,
            bool hold_after) {
    auto seg = open_when_there(name);
    if (!seg) {
        return fail(seg.error().what());
    }
    auto port = seg->port(port_name, PortRole::consumer, {.slots = 2, .slot_bytes = bytes, .consumers = 1});
    if (!port) {
        return fail(port.error().what());
    }
    {  // the handle's sample holds a slot until it goes
        auto object = port->recv<strata::vector<std::byte>>();
        if (!object) {
            return fail(object.error().what());
        }
        if ((*object)->size() != bytes) {
            return fail("the object by handle has " + std::to_string((*object)->size()) + " bytes");
        }
        for (std::size_t i = 0; i < bytes; ++i) {
            if ((**object)[i] != pattern(0, i)) {
                return fail("the object by handle differs at byte " + std::to_string(i));
            }
        }
        if (hold_after) {
            hold();
        }
    }
    for (std::size_t m = 1; m <= messages; ++m) {
        auto sample = port->recv();
        if (!sample) {
            return fail(sample.error().what());
        }
        if (sample->bytes().size() != bytes) {
            return fail("message " + std::to_string(m) + " has " + std::to_string(sample->bytes().size()) + " bytes");
        }
        for (std::size_t i = 0; i < bytes; ++i) {
            if (sample->bytes()[i] != pattern(m, i)) {
                return fail("message " + std::to_string(m) + " differs at byte " + std::to_string(i));
            }
        }
    }
    std::printf("received %zu ok\n", messages);
    std::fflush(stdout);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    // A test killed by its timeout takes crun with it (PR_SET_PDEATHSIG in the
    // test's child); the task, pid 1 of its container, follows crun.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (argc < 6 || (argc == 7 && std::strcmp(argv[6], "--hold") != 0) || argc > 7) {
        std::fprintf(stderr, "usage: %s produce|consume SEGMENT PORT MESSAGES BYTES [--hold]\n", argv[0]);
        return 2;
    }
    std::error_code ec;
    std::printf("ns %s\n", std::filesystem::read_symlink("/proc/self/ns/pid", ec).c_str());
    std::fflush(stdout);
    const std::string mode = argv[1];
    const std::size_t messages = std::stoul(argv[4]);
    const std::size_t bytes = std::stoul(argv[5]);
    const bool hold_after = argc == 7;
    if (mode == "produce") {
        return produce(argv[2], argv[3], messages, bytes, hold_after);
    }
    if (mode == "consume") {
        return consume(argv[2], argv[3], messages, bytes, hold_after);
    }
    std::fprintf(stderr, "%s: unknown mode '%s' (produce or consume)\n", argv[0], argv[1]);
    return 2;
}
