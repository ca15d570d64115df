// SPDX-License-Identifier: MIT
// bench_shared_objects_handoff: the handoff-latency microbenchmark of
// `strata bench shared-objects`, on the slots the workflow's shm method uses
// (strata::Port of the shm layer, via src/workflow/shm_ports.hpp), between
// two processes (fork).
//
//   latency:    one-way handoff latency (producer's publish to the consumer's
//               receive), payload untouched or touched (the producer writes
//               it, the consumer reads it), busy-poll or blocking; one message
//               in flight, with a gap between messages so a blocking consumer
//               really sleeps.
//   throughput: 100 MB payloads written and read through 2 slots, against
//               the same work without strata in the same run: the same two
//               processes, two 100 MB slots of one shared mapping, the same
//               fill and verify, a sequence number in shared memory as the
//               only handoff (busy-poll). A one-thread memcpy of 100 MB is
//               reported for scale only: a two-core pipeline is not bounded
//               by it, and it reuses one buffer.
//
// Prints one JSON document.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "shm_ports.hpp"

namespace {

using namespace strata;
using namespace strata::workflow;
using namespace strata::workflow::detail;

void spin_for(std::int64_t ns) {
    const std::int64_t until = now_ns() + ns;
    while (now_ns() < until) {
    }
}

struct Case {
    std::string name;
    Wait wait;
    bool touched;
    std::size_t bytes;
    std::uint32_t slots;
    std::uint64_t messages;
    std::int64_t gap_ns;       // between messages
    std::uint64_t warmup = 0;  // messages before the clock starts (first touch of the slots' pages)
};

// Runs one case; returns the consumer's latencies (ns) and the wall time.
struct Outcome {
    std::vector<double> latency_ns;
    double seconds = 0;
};

// Writes all of `bytes` to `fd` (a pipe).
bool write_all(int fd, const void* data, std::size_t bytes) {
    const auto* p = static_cast<const char*>(data);
    while (bytes > 0) {
        const ssize_t n = ::write(fd, p, bytes);
        if (n <= 0) {
            return false;
        }
        p += n;
        bytes -= static_cast<std::size_t>(n);
    }
    return true;
}

bool read_all(int fd, void* data, std::size_t bytes) {
    auto* p = static_cast<char*>(data);
    while (bytes > 0) {
        const ssize_t n = ::read(fd, p, bytes);
        if (n <= 0) {
            return false;
        }
        p += n;
        bytes -= static_cast<std::size_t>(n);
    }
    return true;
}

Result<Outcome> run_case(const Case& c) {
    const std::string name = fmt::format("strata-bench-handoff-{}", ::getpid());
    const PortOptions shape{.slots = c.slots,
                            .slot_bytes = port_slot_bytes(c.bytes),
                            .consumers = 1,
                            .sync = PortSync::blocking};  // busy-poll: zero-timeout calls (shm_ports.hpp)
    auto segment = Segment::open(name, SegmentMode::create_only, c.slots * (c.bytes + 4096) + (4U << 20));
    if (!segment) {
        return std::unexpected(segment.error());
    }
    auto port = segment->port("handoff", PortRole::producer, shape);
    if (!port) {
        return std::unexpected(port.error());
    }
    int to_parent[2];
    if (::pipe(to_parent) != 0) {
        return make_sys_error(errno, "pipe");
    }
    const Port::Timeout timeout = std::chrono::seconds(30);
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(to_parent[0]);
        auto seg = Segment::open(name, SegmentMode::open_only);
        if (!seg) {
            ::_exit(1);
        }
        auto in_port = seg->port("handoff", PortRole::consumer, shape);
        if (!in_port) {
            ::_exit(1);
        }
        PortInput in(std::move(*in_port), c.bytes, false, timeout, c.wait == Wait::busy_poll);
        const char ready = 1;
        (void)write_all(to_parent[1], &ready, 1);
        std::vector<double> lat;
        lat.reserve(c.messages);
        for (std::uint64_t it = 0; it < c.messages; ++it) {
            std::int64_t stamp = 0;
            auto words = in.receive(it, stamp);
            if (!words) {
                ::_exit(2);
            }
            lat.push_back(static_cast<double>(now_ns() - stamp));
            if (c.touched && !verify(*words, 0, it)) {
                ::_exit(3);
            }
            if (!in.release(it)) {
                ::_exit(4);
            }
        }
        const std::uint64_t n = lat.size();
        (void)write_all(to_parent[1], &n, sizeof n);
        (void)write_all(to_parent[1], lat.data(), n * sizeof(double));
        ::_exit(0);
    }
    ::close(to_parent[1]);
    char ready = 0;
    if (!read_all(to_parent[0], &ready, 1)) {
        ::close(to_parent[0]);
        ::waitpid(child, nullptr, 0);
        return make_error(Errc::internal, "case {}: the consumer did not start", c.name);
    }
    PortOutput out(std::move(*port), c.bytes, false, timeout, c.wait == Wait::busy_poll);
    std::int64_t start = now_ns();
    for (std::uint64_t it = 0; it < c.messages; ++it) {
        if (it == c.warmup) {
            start = now_ns();
        }
        auto words = out.buffer(it);
        if (!words) {
            ::kill(child, SIGKILL);
            ::waitpid(child, nullptr, 0);
            ::close(to_parent[0]);
            return std::unexpected(words.error());
        }
        if (c.touched) {
            fill(*words, 0, it);
        }
        if (auto r = out.publish(it); !r) {
            ::kill(child, SIGKILL);
            ::waitpid(child, nullptr, 0);
            ::close(to_parent[0]);
            return std::unexpected(r.error());
        }
        if (c.gap_ns > 0) {
            if (c.wait == Wait::blocking) {
                ::usleep(static_cast<useconds_t>(c.gap_ns / 1000));
            } else {
                spin_for(c.gap_ns);
            }
        }
    }
    Outcome o;
    std::uint64_t n = 0;
    const bool got = read_all(to_parent[0], &n, sizeof n) && n <= c.messages;
    if (got) {
        o.latency_ns.resize(n);
        (void)read_all(to_parent[0], o.latency_ns.data(), n * sizeof(double));
    }
    o.seconds = static_cast<double>(now_ns() - start) / 1e9;
    ::close(to_parent[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        return make_error(Errc::internal, "case {}: the consumer failed (status {})", c.name, status);
    }
    std::ranges::sort(o.latency_ns);
    return o;
}

double percentile(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) {
        return 0;
    }
    return sorted[std::min(sorted.size() - 1, static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1)))];
}

double memcpy_seconds(std::size_t bytes, int repeats) {
    std::vector<char> a(bytes, 1);
    std::vector<char> b(bytes, 2);
    std::vector<double> times;
    for (int i = 0; i < repeats; ++i) {
        const std::int64_t t0 = now_ns();
        std::memcpy(b.data(), a.data(), bytes);
        times.push_back(static_cast<double>(now_ns() - t0) / 1e9);
        a[static_cast<std::size_t>(i) % bytes] = b[0];  // keep the copies observable
    }
    std::ranges::sort(times);
    return times[times.size() / 2];
}

// The same work as the 100 MB port case without strata: MB/s, or a negative value on failure.
double raw_slots_mb_s(std::size_t bytes, std::uint64_t messages, std::uint64_t warmup) {
    struct Control {
        alignas(64) std::atomic<std::uint64_t> published{0};  // messages written
        alignas(64) std::atomic<std::uint64_t> released{0};   // messages read and checked
    };
    const std::size_t words = bytes / sizeof(std::uint64_t);
    const std::size_t length = 4096 + 2 * words * sizeof(std::uint64_t);
    void* map = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
        return -1;
    }
    auto* control = new (map) Control;
    auto* data = reinterpret_cast<std::uint64_t*>(static_cast<char*>(map) + 4096);
    const auto slot = [&](std::uint64_t it) { return std::span<std::uint64_t>(data + (it % 2) * words, words); };
    const pid_t child = ::fork();
    if (child == 0) {
        for (std::uint64_t it = 0; it < messages; ++it) {
            while (control->published.load(std::memory_order_acquire) <= it) {
            }
            if (!verify(slot(it), 0, it)) {
                ::_exit(3);
            }
            control->released.store(it + 1, std::memory_order_release);
        }
        ::_exit(0);
    }
    std::int64_t start = now_ns();
    for (std::uint64_t it = 0; it < messages; ++it) {
        if (it == warmup) {
            start = now_ns();
        }
        while (it >= 2 && control->released.load(std::memory_order_acquire) < it - 1) {
        }
        fill(slot(it), 0, it);
        control->published.store(it + 1, std::memory_order_release);
    }
    while (control->released.load(std::memory_order_acquire) < messages) {
    }
    const double seconds = static_cast<double>(now_ns() - start) / 1e9;
    int status = 0;
    ::waitpid(child, &status, 0);
    ::munmap(map, length);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        return -1;
    }
    return static_cast<double>(bytes) * static_cast<double>(messages - warmup) / seconds / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
    const std::uint64_t messages = quick ? 2000 : 20000;
    nlohmann::json doc;
    doc["latency"] = nlohmann::json::array();
    for (const Wait wait : {Wait::busy_poll, Wait::blocking}) {
        for (const bool touched : {false, true}) {
            const Case c{fmt::format("{} {}", to_string(wait), touched ? "touched" : "untouched"),
                         wait,
                         touched,
                         4096,
                         1,
                         messages,
                         wait == Wait::blocking ? 50'000 : 2'000};
            auto o = run_case(c);
            if (!o) {
                fmt::print(stderr, "bench_shared_objects_handoff: {}\n", o.error().what());
                return 1;
            }
            doc["latency"].push_back({{"wait", to_string(wait)},
                                      {"payload", touched ? "touched" : "untouched"},
                                      {"payload_bytes", c.bytes},
                                      {"messages", c.messages},
                                      {"p50_ns", percentile(o->latency_ns, 0.5)},
                                      {"p90_ns", percentile(o->latency_ns, 0.9)},
                                      {"p99_ns", percentile(o->latency_ns, 0.99)}});
        }
    }
    const std::size_t big = 100'000'000;
    const double copy = memcpy_seconds(big, quick ? 3 : 9);
    doc["memcpy_100MB_mb_s"] = static_cast<double>(big) / copy / 1e6;
    doc["throughput"] = nlohmann::json::array();
    const std::uint64_t n = quick ? 8 : 40;
    const std::uint64_t warm = 4;
    const double raw = raw_slots_mb_s(big, n + warm, warm);
    if (raw <= 0) {
        fmt::print(stderr, "bench_shared_objects_handoff: the raw-slots baseline failed\n");
        return 1;
    }
    doc["raw_slots_100MB_mb_s"] = raw;
    for (const Wait wait : {Wait::busy_poll, Wait::blocking}) {
        auto o = run_case({"throughput", wait, true, big, 2, n + warm, 0, warm});
        if (!o) {
            fmt::print(stderr, "bench_shared_objects_handoff: {}\n", o.error().what());
            return 1;
        }
        const double mb_s = static_cast<double>(big) * static_cast<double>(n) / o->seconds / 1e6;
        doc["throughput"].push_back({{"wait", to_string(wait)},
                                     {"payload_bytes", big},
                                     {"messages", n},
                                     {"mb_s", mb_s},
                                     {"memcpy_over_this", doc["memcpy_100MB_mb_s"].get<double>() / mb_s},
                                     {"raw_slots_over_this", raw / mb_s}});
    }
    fmt::print("{}\n", doc.dump(2));
    return 0;
}
