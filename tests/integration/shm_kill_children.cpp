// SPDX-License-Identifier: MIT
// The producers and consumers of a kill round (shm_kill_rounds.hpp).
#include <cstring>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <time.h>

#include "integration/shm_kill_control.hpp"
#include "strata/shm/segment.hpp"
#include "strata/shm/testing.hpp"

namespace strata::test::kills {
namespace {

using namespace std::chrono_literals;

/// A message: who sent it and its number.
struct Payload {
    std::uint64_t producer = 0;
    std::uint64_t number = 0;
};

void copy_text(char* out, std::size_t capacity, const std::string& text) {
    const std::size_t n = std::min(capacity - 1, text.size());
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
}

/// Records the first error a survivor gets (the one that must name the victim).
void tell(ChildReport& report, const Error& error) {
    if (report.told.load() != 0) {
        return;
    }
    report.first_code = static_cast<int>(error.code);
    copy_text(report.first_error, sizeof report.first_error, error.what());
    report.told_ns = monotonic_ns();
    report.told = 1;
}

int give_up(ChildReport& report, const Error& error) {
    tell(report, error);
    report.unexpected_code = static_cast<int>(error.code);
    copy_text(report.unexpected, sizeof report.unexpected, error.what());
    return 1;
}

// With widening on: a pause of 0-100 us at each point inside a port's
// critical sections, so a kill lands there more often.
void widen_hook(shm_testing::CrashPoint point) {
    if (point == shm_testing::CrashPoint::allocator_lock_held) {
        return;
    }
    thread_local std::minstd_rand random(static_cast<unsigned>(::getpid()));
    const std::int64_t until = monotonic_ns() + static_cast<std::int64_t>(random() % 100'000);
    while (monotonic_ns() < until) {
    }
}

struct Joined {
    Segment seg;
    Port port;
};

Result<Joined> join(const Options& options, const Config& config, bool widen, PortRole role) {
    auto seg = Segment::open(options.segment, SegmentMode::open_only, 0, {.dir = options.dir});
    if (!seg) {
        return std::unexpected(seg.error());
    }
    const PortOptions shape{
        .slots = config.slots, .slot_bytes = sizeof(Payload), .consumers = config.consumers, .sync = config.sync};
    auto port = seg->port(port_name(config), role, shape);
    if (!port) {
        return std::unexpected(port.error());
    }
    if (widen) {
        shm_testing::set_crash_hook(&widen_hook);
    }
    return Joined{std::move(*seg), std::move(*port)};
}

void wait_for_go(const Control& control) {
    while (control.go.load() == 0) {
        std::this_thread::sleep_for(50us);
    }
}

}  // namespace

std::int64_t monotonic_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string port_name(const Config& config) {
    return "kills." + config.name();
}

int run_producer(const Options& options, const Config& config, bool widen, unsigned index, Control& control) {
    ChildReport& report = control.producers[index];
    auto joined = join(options, config, widen, PortRole::producer);
    if (!joined) {
        return give_up(report, joined.error());
    }
    Port& out = joined->port;
    report.joined = 1;
    wait_for_go(control);
    for (std::uint64_t n = 1; control.stop.load() == 0;) {
        if (n >= kMaxMessages) {
            std::this_thread::sleep_for(1ms);
            continue;
        }
        auto loan = out.loan(100ms);
        if (!loan) {
            if (loan.error().code == Errc::timeout) {
                continue;  // every slot in use: a consumer is slow or dead and not yet recovered
            }
            if (loan.error().code != Errc::peer_dead) {
                return give_up(report, loan.error());
            }
            tell(report, loan.error());
            continue;
        }
        const Payload payload{index, n};
        std::memcpy(loan->bytes().data(), &payload, sizeof payload);
        control.attempted[index] = n;
        if (auto ok = out.commit(std::move(*loan)); !ok) {
            return give_up(report, ok.error());
        }
        control.committed[index] = n++;
    }
    if (auto closed = out.close(); !closed) {
        return give_up(report, closed.error());
    }
    return 0;
}

int run_consumer(const Options& options, const Config& config, bool widen, unsigned index, Control& control) {
    ChildReport& report = control.consumers[index];
    auto joined = join(options, config, widen, PortRole::consumer);
    if (!joined) {
        return give_up(report, joined.error());
    }
    Port& in = joined->port;
    report.joined = 1;
    wait_for_go(control);
    std::uint64_t last[kMaxProducers] = {};
    for (;;) {
        auto sample = in.recv(100ms);
        if (sample) {
            Payload p;
            std::memcpy(&p, sample->bytes().data(), sizeof p);
            if (p.producer >= config.producers || p.number == 0 || p.number >= kMaxMessages) {
                ++control.phantom[index];
                continue;
            }
            std::uint8_t& count = control.received[index][p.producer][p.number];
            count = count == 255 ? count : static_cast<std::uint8_t>(count + 1);
            if (p.number <= last[p.producer]) {
                ++control.out_of_order[index];
            }
            last[p.producer] = p.number;
            continue;
        }
        const Error& e = sample.error();
        if (e.code == Errc::timeout) {
            continue;
        }
        const bool end = e.code == Errc::not_found ||
                         (e.code == Errc::peer_dead && e.message.find("every producer has gone") != std::string::npos);
        if (end) {
            break;
        }
        if (e.code != Errc::peer_dead) {
            return give_up(report, e);
        }
        tell(report, e);
    }
    return 0;
}

}  // namespace strata::test::kills
