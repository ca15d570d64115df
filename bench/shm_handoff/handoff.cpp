// SPDX-License-Identifier: MIT
// Handoff latency between two processes: the time from the producer starting
// to hand over a message (commit; for touched payloads, from starting to
// write it) until the consumer holds it (for touched payloads, has read all of
// it). Both sides read CLOCK_MONOTONIC, which is system-wide.
//
// Methods, measured side by side in one run:
//   port/busy_poll, port/blocking   strata::Port with inline payload
//   baseline/cacheline              a sequence number in a shared cache line, spun on
//                                   (the physical limit of busy-poll handoff)
//   baseline/pipe                   8 bytes through a pipe (a blocking handoff the kernel does)
//
// System calls per handoff: each side counts its own (perf tracepoint
// raw_syscalls:sys_enter, src/core/syscall_counter.hpp) over the whole
// run - the consumer's receive loop and the producer's send loop - divided by
// the handoffs, and in the handoff call alone (recv / commit; read / write of
// the pipe's data), the median over the handoffs. The counter's reads lie
// outside the timed span. -1 where the kernel offers no such counter.
//
// Usage: strata-bench-shm-handoff [--iterations N] [--repeats R] [--sizes 64,4096,1048576,10485760]
// Prints one JSON document.
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/syscall_counter.hpp"
#include "strata/shm.hpp"

namespace {

using strata::PortRole;
using strata::PortSync;

std::int64_t now_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

void pin(std::size_t cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    ::sched_setaffinity(0, sizeof set, &set);
}

struct Config {
    std::string method;
    std::size_t size;
    bool touched;
};

/// The cache-line baseline's shared words.
struct Shared {
    std::atomic<std::uint64_t> seq{0};
    std::atomic<std::uint64_t> ack{0};
    std::int64_t stamp = 0;
};

/// System calls of one side: over its whole loop, and in its handoff call alone.
struct Calls {
    double whole = -1;  ///< per handoff, the whole loop (slot waits, liveness checks, acks included)
    double call = -1;   ///< median over handoffs of the calls in the handoff call (recv/commit, read/write)
};

/// One run: the consumer's latencies and both sides' system calls.
struct Run {
    std::vector<std::int64_t> latencies;
    Calls consumer;
    Calls producer;
};

/// Counts the calling thread's system calls from construction on, and within
/// begin()/end() windows around each handoff call (its own reads excluded).
class CallCount {
public:
    CallCount() {
        std::string why;
        counter_ = strata::core::SyscallCounter::open("raw_syscalls/sys_enter", &why);
        start_ = counter_ ? counter_->read() : 0;
    }
    void begin() {
        if (counter_) {
            mark_ = counter_->read();
        }
    }
    void end() {
        if (counter_) {
            const std::uint64_t calls = counter_->read() - mark_ - 1;
            ++histogram_[std::min<std::uint64_t>(calls, histogram_.size() - 1)];
            ++windows_;
        }
    }
    [[nodiscard]] Calls per(int handoffs) const {
        if (!counter_) {
            return {};
        }
        // Every read counts itself: the last one here, and two per window.
        const std::uint64_t whole = counter_->read() - start_ - 1 - 2 * windows_;
        double median = -1;
        std::uint64_t seen = 0;
        for (std::size_t k = 0; k < histogram_.size() && windows_ > 0; ++k) {
            seen += histogram_[k];
            if (2 * seen >= windows_) {
                median = static_cast<double>(k);
                break;
            }
        }
        return {static_cast<double>(whole) / handoffs, median};
    }

private:
    std::optional<strata::core::SyscallCounter> counter_;
    std::uint64_t start_ = 0;
    std::uint64_t mark_ = 0;
    std::uint64_t windows_ = 0;
    std::array<std::uint64_t, 8> histogram_{};
};

/// The producer child's counts, handed to the parent through shared memory.
struct ChildCalls {
    Calls* value = nullptr;
    ChildCalls() {
        void* mem = ::mmap(nullptr, sizeof(Calls), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        value = mem == MAP_FAILED ? nullptr : ::new (mem) Calls();
    }
    ChildCalls(const ChildCalls&) = delete;
    ChildCalls& operator=(const ChildCalls&) = delete;
    ~ChildCalls() {
        if (value != nullptr) {
            ::munmap(value, sizeof(Calls));
        }
    }
    void set(const Calls& v) const {
        if (value != nullptr) {
            *value = v;
        }
    }
    [[nodiscard]] Calls get() const { return value == nullptr ? Calls{} : *value; }
};

std::uint64_t touch_read(const std::byte* p, std::size_t n) {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < n; i += 64) {
        sum += static_cast<std::uint64_t>(p[i]);
    }
    return sum;
}

void touch_write(std::byte* p, std::size_t n, std::uint64_t round) {
    std::memset(p, static_cast<int>(round & 0xFFU), n);
}

Run run_port(const Config& c, int iterations) {
    const std::string name = fmt::format("bench-handoff-{}", ::getpid());
    auto seg = strata::Segment::open(name, strata::SegmentMode::recreate, c.size * 4 + (8U << 20U));
    if (!seg) {
        throw std::runtime_error(seg.error().what());
    }
    const PortSync sync = c.method == "port/busy_poll" ? PortSync::busy_poll : PortSync::blocking;
    const strata::PortOptions shape{
        .slots = 2, .slot_bytes = std::max<std::size_t>(c.size, 16), .consumers = 1, .sync = sync};
    auto in = seg->port("h", PortRole::consumer, shape);
    if (!in) {
        throw std::runtime_error(in.error().what());
    }
    const ChildCalls child_calls;
    std::fflush(nullptr);
    const pid_t producer = ::fork();
    if (producer == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        pin(0);
        auto s = strata::Segment::open(name, strata::SegmentMode::open_only);
        auto out = s ? s->port("h", PortRole::producer, {.sync = sync}) : std::unexpected(s.error());
        if (!out) {
            std::fprintf(stderr, "producer: %s\n", out.error().what().c_str());
            ::_exit(1);
        }
        CallCount calls;
        for (int i = 0; i < iterations; ++i) {
            auto loan = out->loan();
            if (!loan) {
                ::_exit(2);
            }
            // Pace: let the consumer get back to waiting, as in a real handoff.
            const std::int64_t pace = now_ns() + 20'000;
            while (now_ns() < pace) {
            }
            calls.begin();  // before the stamp: the counter's own read is not timed
            const std::int64_t start = now_ns();
            if (c.touched) {
                touch_write(loan->bytes().data(), c.size, static_cast<std::uint64_t>(i));
            }
            std::memcpy(loan->bytes().data(), &start, sizeof start);
            if (!out->commit(std::move(*loan))) {
                ::_exit(3);
            }
            calls.end();
        }
        child_calls.set(calls.per(iterations));
        ::_exit(0);
    }
    pin(1);
    Run run;
    std::vector<std::int64_t>& latencies = run.latencies;
    latencies.reserve(static_cast<std::size_t>(iterations));
    volatile std::uint64_t sink = 0;
    CallCount calls;
    for (int i = 0; i < iterations; ++i) {
        calls.begin();
        auto sample = in->recv();
        if (!sample) {
            throw std::runtime_error(sample.error().what());
        }
        std::int64_t start = 0;
        std::memcpy(&start, sample->bytes().data(), sizeof start);
        if (c.touched) {
            sink = sink + touch_read(sample->bytes().data(), c.size);
        }
        latencies.push_back(now_ns() - start);
        calls.end();  // after the stamp; the release (when `sample` goes) is not in the window
    }
    run.consumer = calls.per(iterations);
    int status = 0;
    ::waitpid(producer, &status, 0);
    run.producer = child_calls.get();
    return run;
}

Run run_cacheline(const Config& c, int iterations) {
    // Shared anonymous memory: the sequence line and a payload of c.size bytes.
    const std::size_t bytes = sizeof(Shared) + 64 + c.size;
    void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    auto* shared = ::new (mem) Shared();
    auto* payload = static_cast<std::byte*>(mem) + sizeof(Shared) + 64;
    const ChildCalls child_calls;
    std::fflush(nullptr);
    const pid_t producer = ::fork();
    if (producer == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        pin(0);
        CallCount calls;
        for (std::uint64_t i = 1; i <= static_cast<std::uint64_t>(iterations); ++i) {
            while (shared->ack.load(std::memory_order_acquire) != i - 1) {
            }
            const std::int64_t pace = now_ns() + 20'000;
            while (now_ns() < pace) {
            }
            const std::int64_t start = now_ns();
            if (c.touched) {
                touch_write(payload, c.size, i);
            }
            shared->stamp = start;
            shared->seq.store(i, std::memory_order_release);
        }
        child_calls.set(calls.per(iterations));
        ::_exit(0);
    }
    pin(1);
    Run run;
    std::vector<std::int64_t>& latencies = run.latencies;
    volatile std::uint64_t sink = 0;
    CallCount calls;
    for (std::uint64_t i = 1; i <= static_cast<std::uint64_t>(iterations); ++i) {
        while (shared->seq.load(std::memory_order_acquire) != i) {
        }
        const std::int64_t start = shared->stamp;
        if (c.touched) {
            sink = sink + touch_read(payload, c.size);
        }
        latencies.push_back(now_ns() - start);
        shared->ack.store(i, std::memory_order_release);
    }
    run.consumer = calls.per(iterations);
    int status = 0;
    ::waitpid(producer, &status, 0);
    run.producer = child_calls.get();
    ::munmap(mem, bytes);
    return run;
}

Run run_pipe(const Config& c, int iterations) {
    int data[2];
    int ack[2];
    if (::pipe(data) != 0 || ::pipe(ack) != 0) {
        throw std::runtime_error("pipe");
    }
    const std::size_t bytes = 64 + c.size;
    void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    auto* payload = static_cast<std::byte*>(mem) + 64;
    const ChildCalls child_calls;
    std::fflush(nullptr);
    const pid_t producer = ::fork();
    if (producer == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        pin(0);
        char token = 0;
        CallCount calls;
        for (int i = 0; i < iterations; ++i) {
            const std::int64_t pace = now_ns() + 20'000;
            while (now_ns() < pace) {
            }
            calls.begin();
            const std::int64_t start = now_ns();
            if (c.touched) {
                touch_write(payload, c.size, static_cast<std::uint64_t>(i));
            }
            if (::write(data[1], &start, sizeof start) != sizeof start) {
                ::_exit(1);
            }
            calls.end();
            if (::read(ack[0], &token, 1) != 1) {
                ::_exit(1);
            }
        }
        child_calls.set(calls.per(iterations));
        ::_exit(0);
    }
    pin(1);
    Run run;
    std::vector<std::int64_t>& latencies = run.latencies;
    volatile std::uint64_t sink = 0;
    CallCount calls;
    for (int i = 0; i < iterations; ++i) {
        std::int64_t start = 0;
        calls.begin();
        if (::read(data[0], &start, sizeof start) != sizeof start) {
            break;
        }
        if (c.touched) {
            sink = sink + touch_read(payload, c.size);
        }
        latencies.push_back(now_ns() - start);
        calls.end();
        if (::write(ack[1], "k", 1) != 1) {
            break;
        }
    }
    run.consumer = calls.per(iterations);
    int status = 0;
    ::waitpid(producer, &status, 0);
    run.producer = child_calls.get();
    for (const int fd : {data[0], data[1], ack[0], ack[1]}) {
        ::close(fd);
    }
    ::munmap(mem, bytes);
    return run;
}

double percentile(std::vector<std::int64_t> v, double p) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    const auto index = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1));
    return static_cast<double>(v[index]) / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
    int iterations = 20000;
    int repeats = 3;
    std::vector<std::size_t> sizes = {64, 4096, 1U << 20U, 10U << 20U};
    for (int i = 1; i < argc; i += 2) {
        const std::string arg = argv[i];
        if (arg == "-h" || arg == "--help" || i + 1 == argc) {
            // --help, or an option without its value: usage, and no run.
            std::fprintf(arg == "-h" || arg == "--help" ? stdout : stderr,
                         "usage: %s [--iterations N] [--repeats R] [--sizes a,b,c]\n", argv[0]);
            return arg == "-h" || arg == "--help" ? 0 : 2;
        }
        if (arg == "--iterations") {
            iterations = std::stoi(argv[i + 1]);
        } else if (arg == "--repeats") {
            repeats = std::stoi(argv[i + 1]);
        } else if (arg == "--sizes") {
            sizes.clear();
            std::string list = argv[i + 1];
            for (std::size_t pos = 0; pos < list.size();) {
                const std::size_t comma = std::min(list.find(',', pos), list.size());
                sizes.push_back(std::stoull(list.substr(pos, comma - pos)));
                pos = comma + 1;
            }
        } else {
            std::fprintf(stderr, "usage: %s [--iterations N] [--repeats R] [--sizes a,b,c]\n", argv[0]);
            return 2;
        }
    }
    nlohmann::json out = {{"iterations", iterations}, {"repeats", repeats}, {"results", nlohmann::json::array()}};
    for (const std::size_t size : sizes) {
        for (const bool touched : {false, true}) {
            for (const std::string method :
                 {"port/busy_poll", "baseline/cacheline", "port/blocking", "baseline/pipe"}) {
                const Config c{method, size, touched};
                std::vector<double> p50s;
                std::vector<double> p90s;
                std::vector<double> p99s;
                std::vector<double> p999s;
                std::vector<double> consumer_calls;
                std::vector<double> producer_calls;
                std::vector<double> consumer_call;
                std::vector<double> producer_call;
                for (int r = 0; r < repeats; ++r) {
                    Run run;
                    if (method.starts_with("port/")) {
                        run = run_port(c, iterations);
                    } else if (method == "baseline/cacheline") {
                        run = run_cacheline(c, iterations);
                    } else {
                        run = run_pipe(c, iterations);
                    }
                    consumer_calls.push_back(run.consumer.whole);
                    producer_calls.push_back(run.producer.whole);
                    consumer_call.push_back(run.consumer.call);
                    producer_call.push_back(run.producer.call);
                    std::vector<std::int64_t>& lat = run.latencies;
                    // Drop the first 5% as warm-up.
                    lat.erase(lat.begin(), lat.begin() + static_cast<std::ptrdiff_t>(lat.size() / 20));
                    p50s.push_back(percentile(lat, 50));
                    p90s.push_back(percentile(lat, 90));
                    p99s.push_back(percentile(lat, 99));
                    p999s.push_back(percentile(lat, 99.9));
                }
                auto median = [](std::vector<double> v) {
                    std::sort(v.begin(), v.end());
                    return v[v.size() / 2];
                };
                out["results"].push_back({{"method", method},
                                          {"size", size},
                                          {"touched", touched},
                                          {"p50_us", median(p50s)},
                                          {"p90_us", median(p90s)},
                                          {"p99_us", median(p99s)},
                                          {"p999_us", median(p999s)},
                                          {"p50_us_per_repeat", p50s},
                                          {"consumer_syscalls_per_handoff", median(consumer_calls)},
                                          {"producer_syscalls_per_handoff", median(producer_calls)},
                                          {"consumer_syscalls_in_handoff_call", median(consumer_call)},
                                          {"producer_syscalls_in_handoff_call", median(producer_call)}});
                std::fprintf(stderr,
                             "%-20s size %8zu %-9s p50 %8.2f us  p99 %8.2f us  calls/handoff %.2f + %.2f "
                             "(in the call %.0f + %.0f)\n",
                             method.c_str(), size, touched ? "touched" : "untouched", median(p50s), median(p99s),
                             median(consumer_calls), median(producer_calls), median(consumer_call),
                             median(producer_call));
            }
        }
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
}
