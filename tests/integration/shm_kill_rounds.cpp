// SPDX-License-Identifier: MIT
// The parent of the kill rounds (shm_kill_rounds.hpp): starts the children,
// kills one, waits for the survivors and checks the accounting.
#include "integration/shm_kill_rounds.hpp"

#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "integration/shm_kill_control.hpp"
#include "strata/shm/segment.hpp"

namespace strata::test::kills {
namespace {

using namespace std::chrono_literals;

struct Unmap {
    void operator()(Control* c) const { ::munmap(c, sizeof(Control)); }
};

std::unique_ptr<Control, Unmap> map_control() {
    void* p = ::mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        return nullptr;
    }
    return std::unique_ptr<Control, Unmap>(::new (p) Control());
}

template <class Body>
pid_t fork_child(Body&& body) {
    std::fflush(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid != 0) {
        return pid;
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) {
        ::_exit(125);
    }
    const int code = body();
    std::fflush(nullptr);
    ::_exit(code);
}

/// One child of the round: its pid, role, report and how it ended.
struct Child {
    pid_t pid = -1;
    bool producer = true;
    unsigned index = 0;
    ChildReport* report = nullptr;
    bool killed = false;
    int status = -1;  ///< waitpid status once reaped
    [[nodiscard]] std::string name() const { return fmt::format("{} {}", producer ? "producer" : "consumer", index); }
};

/// Waits for `pid` until `deadline`; false when it is still running then.
bool reap(Child& c, std::int64_t deadline_ns) {
    for (;;) {
        int status = 0;
        const pid_t done = ::waitpid(c.pid, &status, WNOHANG);
        if (done == c.pid) {
            c.status = status;
            return true;
        }
        if (monotonic_ns() >= deadline_ns) {
            return false;
        }
        std::this_thread::sleep_for(1ms);
    }
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
    const std::int64_t deadline = monotonic_ns() + std::chrono::nanoseconds(limit).count();
    while (!done()) {
        if (monotonic_ns() >= deadline) {
            return false;
        }
        std::this_thread::sleep_for(200us);
    }
    return true;
}

std::string repaired_text(const std::string& error) {
    const auto begin = error.find("(repaired: ");
    if (begin == std::string::npos) {
        return {};
    }
    const auto end = error.find(')', begin);
    return error.substr(begin + 11, end == std::string::npos ? std::string::npos : end - begin - 11);
}

void fail(Round& r, const std::string& why) {
    r.failure += fmt::format("{}{}", r.failure.empty() ? "" : "; ", why);
}

/// The survivors' errors: named, broken, in the lock, the repair, the times.
void judge_errors(Round& r, const std::vector<Child>& children, std::int64_t killed_ns) {
    const std::string pid = fmt::format("pid {}", r.victim_pid);
    for (const Child& c : children) {
        if (c.killed) {
            continue;
        }
        ++r.survivors;
        const ChildReport& rep = *c.report;
        const std::string first(rep.first_error);
        r.broken |=
            rep.first_code == static_cast<int>(Errc::broken) || rep.unexpected_code == static_cast<int>(Errc::broken);
        if (rep.told.load() == 0) {
            fail(r, fmt::format("{} was never told of the death", c.name()));
            continue;
        }
        if (rep.first_code == static_cast<int>(Errc::peer_dead) && first.find(pid) != std::string::npos) {
            ++r.named;
        } else {
            fail(r, fmt::format("{}'s first error does not name {}: {}", c.name(), pid, first));
        }
        if (first.find("holding the port's lock") != std::string::npos) {
            r.in_lock = true;
            r.repaired = repaired_text(first);
        }
        const double ms = static_cast<double>(rep.told_ns.load() - killed_ns) / 1e6;
        r.first_error_ms = r.first_error_ms < 0 ? ms : std::min(r.first_error_ms, ms);
        r.last_error_ms = std::max(r.last_error_ms, ms);
        if (rep.unexpected[0] != '\0') {
            fail(r, fmt::format("{} stopped on {}", c.name(), rep.unexpected));
        }
    }
    if (r.broken) {
        fail(r, "a survivor saw the port broken");
    }
}

/// Every committed message exactly once at each surviving consumer, in order;
/// the victim's in-flight message at most once, at all of them or none.
void judge_messages(Round& r, const std::vector<Child>& children, const Control& control) {
    for (unsigned p = 0; p < r.config.producers; ++p) {
        const std::uint64_t committed = control.committed[p].load();
        const std::uint64_t attempted = control.attempted[p].load();
        const std::uint64_t in_flight = attempted > committed ? attempted : 0;
        r.committed += committed;
        unsigned in_flight_seen = 0;
        unsigned consumers = 0;
        for (const Child& c : children) {
            if (c.producer || c.killed) {
                continue;
            }
            ++consumers;
            const std::uint8_t* got = control.received[c.index][p];
            for (std::uint64_t n = 1; n < kMaxMessages; ++n) {
                r.delivered += got[n];
                r.duplicated += got[n] > 1 ? 1U : 0U;
                if (n <= committed) {
                    r.lost += got[n] == 0 ? 1U : 0U;
                } else if (n == in_flight) {
                    in_flight_seen += got[n] != 0 ? 1U : 0U;
                } else {
                    r.phantom += got[n] != 0 ? 1U : 0U;
                }
            }
        }
        if (in_flight_seen != 0 && in_flight_seen != consumers) {
            ++r.phantom;  // fan-out must give a message to every consumer or to none
        }
        r.in_flight_delivered += in_flight_seen == consumers && consumers > 0 ? in_flight_seen : 0;
    }
    for (const Child& c : children) {
        if (!c.producer && !c.killed) {
            r.out_of_order += control.out_of_order[c.index].load();
            r.phantom += control.phantom[c.index].load();
        }
    }
    if (r.lost + r.duplicated + r.out_of_order + r.phantom != 0) {
        fail(r, fmt::format("{} lost, {} duplicated, {} out of order, {} never sent", r.lost, r.duplicated,
                            r.out_of_order, r.phantom));
    }
}

std::vector<Child> start_children(const Options& options, const Round& r, Control& control) {
    std::vector<Child> children;
    // Consumers first: a message waits for a consumer index never joined, not for a replacement.
    for (unsigned i = 0; i < r.config.consumers; ++i) {
        Child c{.producer = false, .index = i, .report = &control.consumers[i]};
        c.pid = fork_child([&] { return run_consumer(options, r.config, r.widen, i, control); });
        children.push_back(c);
    }
    for (unsigned i = 0; i < r.config.producers; ++i) {
        Child c{.producer = true, .index = i, .report = &control.producers[i]};
        c.pid = fork_child([&] { return run_producer(options, r.config, r.widen, i, control); });
        children.push_back(c);
    }
    return children;
}

/// Kills and reaps every child still running (after a failure).
void end_children(std::vector<Child>& children) {
    for (Child& c : children) {
        if (c.status == -1 && c.pid > 0) {
            ::kill(c.pid, SIGKILL);
            (void)reap(c, monotonic_ns() + 5'000'000'000);
        }
    }
}

Round run_round(const Options& options, int index, std::mt19937_64& random) {
    const std::vector<Config> configs = all_configs();
    Round r;
    r.index = index;
    r.config = configs[static_cast<std::size_t>(index / 4) % configs.size()];
    r.widen = (index / 2) % 2 == 1;
    auto control = map_control();
    if (control == nullptr) {
        r.failure = "mmap of the control block failed";
        return r;
    }
    std::vector<Child> children = start_children(options, r, *control);
    const bool all_joined = wait_until(
        [&] {
            for (const Child& c : children) {
                if (c.report->joined.load() == 0 && c.report->unexpected[0] == '\0') {
                    return false;
                }
            }
            return true;
        },
        20s);
    for (const Child& c : children) {
        if (c.report->joined.load() == 0) {
            fail(r, fmt::format("{} did not join: {}", c.name(),
                                all_joined ? std::string(c.report->unexpected) : "timed out"));
        }
    }
    if (!r.failure.empty()) {
        end_children(children);
        return r;
    }
    const bool producer = index % 2 == 0;
    const unsigned count = producer ? r.config.producers : r.config.consumers;
    Child& victim = children[(producer ? r.config.consumers : 0) + static_cast<unsigned>(random() % count)];
    r.victim = victim.name();
    r.victim_pid = victim.pid;
    r.delay_us = static_cast<long>(random() % static_cast<std::uint64_t>(options.max_delay_us));
    control->go = 1;
    std::this_thread::sleep_for(std::chrono::microseconds(r.delay_us));
    const std::int64_t killed_ns = monotonic_ns();
    ::kill(victim.pid, SIGKILL);
    victim.killed = true;
    (void)reap(victim, monotonic_ns() + 5'000'000'000);

    // Each survivor's next call tells it; then they end their streams.
    (void)wait_until(
        [&] {
            for (const Child& c : children) {
                if (!c.killed && c.report->told.load() == 0 && c.report->unexpected[0] == '\0') {
                    return false;
                }
            }
            return true;
        },
        5s);
    control->stop = 1;
    const std::int64_t deadline = monotonic_ns() + 20'000'000'000;
    for (Child& c : children) {
        if (c.killed) {
            continue;
        }
        if (!reap(c, deadline)) {
            fail(r, fmt::format("{} hung (still running 20 s after the stop)", c.name()));
        } else if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) {
            fail(r, fmt::format("{} ended with status {:#x}", c.name(), c.status));
        }
    }
    end_children(children);
    judge_errors(r, children, killed_ns);
    judge_messages(r, children, *control);
    return r;
}

}  // namespace

std::string Config::name() const {
    return fmt::format("{}p{}c-{}slot{}-{}", producers, consumers, slots, slots == 1 ? "" : "s",
                       sync == PortSync::busy_poll ? "busy_poll" : "blocking");
}

std::vector<Config> all_configs() {
    std::vector<Config> out;
    for (const PortSync sync : {PortSync::blocking, PortSync::busy_poll}) {
        for (const unsigned slots : {1U, 4U}) {
            for (const unsigned consumers : {1U, 2U}) {
                for (const unsigned producers : {1U, 2U}) {
                    out.push_back({producers, consumers, slots, sync});
                }
            }
        }
    }
    return out;
}

std::vector<Round> run_rounds(const Options& options) {
    std::mt19937_64 random(options.seed);
    std::vector<Round> rounds;
    for (int i = 0; i < options.rounds; ++i) {
        rounds.push_back(run_round(options, i, random));
        if (options.on_round && !options.on_round(rounds.back())) {
            break;
        }
    }
    return rounds;
}

std::string check_ports_usable(const Options& options) {
    auto seg = Segment::open(options.segment, SegmentMode::open_only, 0, {.dir = options.dir});
    if (!seg) {
        return seg.error().what();
    }
    const std::vector<Config> configs = all_configs();
    const std::size_t used = std::min<std::size_t>(configs.size(), static_cast<std::size_t>(options.rounds + 3) / 4);
    for (std::size_t i = 0; i < used; ++i) {
        auto port = seg->port(port_name(configs[i]), PortRole::producer);
        if (!port) {
            return port.error().what();
        }
        if (auto closed = port->close(); !closed) {
            return closed.error().what();
        }
    }
    return {};
}

}  // namespace strata::test::kills
