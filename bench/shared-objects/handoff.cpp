// bench_shared_objects_handoff: the handoff-latency microbenchmark of
// `strata bench shared-objects`, on the slots the workflow's shm method uses
// (src/workflow/segment_ports.hpp), between two processes (fork).
//
//   latency:    one-way handoff latency (producer's publish to the consumer's
//               receive), payload untouched or touched (the producer writes
//               it, the consumer reads it), busy-poll or blocking; one message
//               in flight, with a gap between messages so a blocking consumer
//               really sleeps.
//   throughput: 100 MB payloads written and read through 2 slots, against
//               memcpy of 100 MB in the same run (the physical limit).
//
// Prints one JSON document.
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "segment_ports.hpp"
#include "strata/region.hpp"

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

Result<Outcome> run_case(const Case& c) {
    const std::string name = fmt::format("strata-bench-handoff-{}", ::getpid());
    const std::size_t size = outbox_bytes(c.bytes, c.slots) + kPage;
    auto region = Region::shared(size, {.name = name, .mode = OpenMode::create_only});
    if (!region) {
        return std::unexpected(region.error());
    }
    auto* results = reinterpret_cast<double*>(region->data() + outbox_bytes(c.bytes, c.slots));
    OutboxView box{region->data(), c.bytes, c.slots, c.wait, 30'000};
    const std::size_t keep = std::min<std::uint64_t>(c.messages, (kPage / sizeof(double)) - 1);
    const pid_t child = ::fork();
    if (child == 0) {
        SegmentInput in(box, false);
        std::vector<double> lat;
        lat.reserve(c.messages);
        for (std::uint64_t it = 0; it < c.messages; ++it) {
            std::int64_t stamp = 0;
            auto words = in.receive(it, stamp);
            if (!words) {
                ::_exit(1);
            }
            lat.push_back(static_cast<double>(now_ns() - stamp));
            if (c.touched && !verify(*words, 0, it)) {
                ::_exit(2);
            }
            in.release(it);
        }
        // Hand back the median and a sample of latencies through the segment's last page.
        std::ranges::sort(lat);
        const std::size_t step = std::max<std::size_t>(1, lat.size() / keep);
        std::size_t n = 0;
        for (std::size_t i = 0; i < lat.size() && n < keep; i += step) {
            results[1 + n++] = lat[i];
        }
        results[0] = static_cast<double>(n);
        ::_exit(0);
    }
    SegmentOutput out(box, 1, false);
    std::int64_t start = now_ns();
    for (std::uint64_t it = 0; it < c.messages; ++it) {
        if (it == c.warmup) {
            start = now_ns();
        }
        auto words = out.buffer(it);
        if (!words) {
            ::kill(child, SIGKILL);
            ::waitpid(child, nullptr, 0);
            return std::unexpected(words.error());
        }
        if (c.touched) {
            fill(*words, 0, it);
        }
        if (auto r = out.publish(it); !r) {
            ::kill(child, SIGKILL);
            ::waitpid(child, nullptr, 0);
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
    int status = 0;
    ::waitpid(child, &status, 0);
    Outcome o;
    o.seconds = static_cast<double>(now_ns() - start) / 1e9;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        (void)region->close({.unlink = true});
        return make_error(Errc::internal, "case {}: the consumer failed (status {})", c.name, status);
    }
    const auto n = static_cast<std::size_t>(results[0]);
    o.latency_ns.assign(results + 1, results + 1 + n);
    (void)region->close({.unlink = true});
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
    for (const Wait wait : {Wait::busy_poll, Wait::blocking}) {
        const std::uint64_t n = quick ? 8 : 40;
        const std::uint64_t warm = 4;
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
                                     {"memcpy_over_this", doc["memcpy_100MB_mb_s"].get<double>() / mb_s}});
    }
    fmt::print("{}\n", doc.dump(2));
    return 0;
}
