// SPDX-License-Identifier: MIT
// One task of the containers benchmark (paper 001 Fig. 7): the same program runs
// as a plain process or in a crun container (bench/containers/bench.py decides).
//
//   bench_containers_stage SEGMENT SEGMENT_BYTES ITERATIONS BYTES IN IN_CONSUMERS PER_ITERATION OUT OUT_CONSUMERS TASKS
//
// IN "-": a source that writes ITERATIONS messages of BYTES (uint64 words all
// equal to the iteration, 1-based) to port OUT; else it receives PER_ITERATION
// messages per iteration from port IN, checks that each holds one value in
// 1..ITERATIONS, and (OUT not "-") copies each into a message of OUT — a relay
// of a pipeline or a worker of a scatter-gather. *_CONSUMERS is each port's
// fan-out, the same from both sides (whichever opens a port first shapes it).
// The source starts once TASKS users are attached to the segment, so container
// start-up is not timed. The sink (OUT "-") prints
// {"messages": M, "bytes": B, "seconds": S, "value_sum": V} on stdout, timed
// from its first message to its last; the driver checks V.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "strata/shm.hpp"

namespace {

using namespace strata;

constexpr unsigned kSlots = 4;

int fail(const char* what, const Error& e) {
    std::fprintf(stderr, "bench_containers_stage: %s: %s\n", what, e.what().c_str());
    return 1;
}

// Two users may open one port at once: the second waits while the first builds it.
Result<Port> open_port(Segment& seg, const std::string& name, PortRole role, std::size_t bytes, unsigned consumers) {
    for (;;) {
        auto port = seg.port(name, role, {.slots = kSlots, .slot_bytes = bytes, .consumers = consumers});
        if (port || port.error().code != Errc::busy) {
            return port;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

// The value every word of the message holds, or 0 when they differ.
std::uint64_t uniform_value(std::span<const std::byte> bytes) {
    std::uint64_t first = 0;
    std::memcpy(&first, bytes.data(), sizeof first);
    for (std::size_t at = 0; at + sizeof first <= bytes.size(); at += sizeof first) {
        std::uint64_t word = 0;
        std::memcpy(&word, bytes.data() + at, sizeof word);
        if (word != first) {
            return 0;
        }
    }
    return first;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 11) {
        std::fprintf(stderr,
                     "usage: %s SEGMENT SEGMENT_BYTES ITERATIONS BYTES IN IN_CONSUMERS PER_ITERATION OUT "
                     "OUT_CONSUMERS TASKS\n",
                     argv[0]);
        return 2;
    }
    const std::string in = argv[5];
    const std::string out = argv[8];
    const std::uint64_t iterations = std::stoull(argv[3]);
    const std::size_t bytes = std::stoull(argv[4]) / 8 * 8;
    const auto in_consumers = static_cast<unsigned>(std::stoul(argv[6]));
    const auto per_iteration = static_cast<unsigned>(std::stoul(argv[7]));
    const auto out_consumers = static_cast<unsigned>(std::stoul(argv[9]));
    auto seg = Segment::open(argv[1], SegmentMode::open_or_create, std::stoull(argv[2]));
    if (!seg) {
        return fail("segment", seg.error());
    }
    std::optional<Port> input;
    std::optional<Port> output;
    if (out != "-") {
        auto port = open_port(*seg, out, PortRole::producer, bytes, out_consumers);
        if (!port) {
            return fail("output port", port.error());
        }
        output.emplace(std::move(*port));
    }
    if (in != "-") {
        auto port = open_port(*seg, in, PortRole::consumer, bytes, in_consumers);
        if (!port) {
            return fail("input port", port.error());
        }
        input.emplace(std::move(*port));
    }
    if (!input) {
        const auto tasks = static_cast<unsigned>(std::stoul(argv[10]));
        for (;;) {
            auto segments = list_segments();
            if (!segments) {
                return fail("list_segments", segments.error());
            }
            unsigned alive = 0;
            for (const auto& info : *segments) {
                alive = info.name == argv[1] ? info.users_alive : alive;
            }
            if (alive >= tasks) {
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    std::uint64_t value_sum = 0;
    std::uint64_t messages = 0;
    auto first = std::chrono::steady_clock::now();
    for (std::uint64_t i = 1; i <= iterations; ++i) {
        for (unsigned k = 0; k < (input ? per_iteration : 1U); ++k) {
            std::optional<Sample> sample;
            std::uint64_t value = i;
            if (input) {
                auto got = input->recv();
                if (!got) {
                    return fail("recv", got.error());
                }
                if (messages++ == 0) {
                    first = std::chrono::steady_clock::now();
                }
                value = uniform_value(got->bytes());
                if (value == 0 || value > iterations) {
                    std::fprintf(stderr, "bench_containers_stage: message %llu is corrupt\n",
                                 static_cast<unsigned long long>(messages));
                    return 1;
                }
                value_sum += value;
                sample.emplace(std::move(*got));
            }
            if (!output) {
                continue;
            }
            auto loan = output->loan();
            if (!loan) {
                return fail("loan", loan.error());
            }
            if (sample) {
                std::memcpy(loan->bytes().data(), sample->bytes().data(), bytes);
            } else {
                for (std::size_t at = 0; at < bytes; at += sizeof value) {
                    std::memcpy(loan->bytes().data() + at, &value, sizeof value);
                }
            }
            if (auto done = output->commit(std::move(*loan), bytes); !done) {
                return fail("commit", done.error());
            }
        }
    }
    if (!output) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - first).count();
        std::printf("{\"messages\": %llu, \"bytes\": %llu, \"seconds\": %.6f, \"value_sum\": %llu}\n",
                    static_cast<unsigned long long>(messages), static_cast<unsigned long long>(messages * bytes),
                    seconds, static_cast<unsigned long long>(value_sum));
    }
    return 0;
}
