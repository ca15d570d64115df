// SPDX-License-Identifier: MIT
// The shared-objects section of `strata demo` (docs/shm.md): a vector in a
// segment, handed by handle to another process through a port without a copy;
// a producer SIGKILLed between loan and commit reported to the consumer; a
// handle loaded as the wrong type refused; the segment gone after the last user.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "sections.hpp"
#include "strata/shm.hpp"

namespace strata::cli {
namespace {

using namespace std::chrono_literals;

/// Forks a child running body (its exit code); the child dies with the demo.
template <class Body>
pid_t fork_child(Body body) {
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        ::_exit(body());
    }
    return pid;
}

int exit_code_of(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

void tour_shm(Tour& tour, const std::filesystem::path& dir) {
    const std::string section = "Shared objects: segments, containers, handles and ports (docs/shm.md)";
    const std::filesystem::path seg_dir = dir / "shm";
    std::error_code ignored;
    std::filesystem::create_directories(seg_dir, ignored);
    const std::string name = fmt::format("demo-{}", ::getpid());
    const SegmentOptions options{.dir = seg_dir};
    std::optional<Segment> seg;

    tour.run(section, "a 64 MiB segment holds a strata::vector<double> of 1M elements", [&]() -> Result<std::string> {
        auto s = Segment::open(name, SegmentMode::create_only, 64U << 20U, options);
        if (!s) return std::unexpected(s.error());
        seg.emplace(std::move(*s));
        auto v = seg->container<strata::vector<double>>("field", std::size_t{1} << 20U, 0.5);
        if (!v) return std::unexpected(v.error());
        return fmt::format("{} ({} bytes free of {})", seg->path().string(), seg->free_bytes(), seg->size());
    });
    if (!seg && !tour.planning()) {
        return;
    }

    tour.run(section, "another process receives 100 vectors by handle through a port and sums them in place",
             [&]() -> Result<std::string> {
                 auto in = seg->port("vectors", PortRole::consumer, {.slots = 4});
                 if (!in) return std::unexpected(in.error());
                 const pid_t producer = fork_child([&] {
                     auto s = Segment::open(name, SegmentMode::open_only, 0, options);
                     if (!s) return 1;
                     auto out = s->port("vectors", PortRole::producer);
                     if (!out) return 2;
                     for (int i = 0; i < 100; ++i) {
                         auto v = s->make<strata::vector<double>>(std::size_t{10000}, static_cast<double>(i));
                         if (!v || !out->send(**v, 5s)) return 3;
                     }
                     return 0;
                 });
                 double total = 0;
                 const auto start = std::chrono::steady_clock::now();
                 for (int i = 0; i < 100; ++i) {
                     auto v = in->recv<strata::vector<double>>(5s);
                     if (!v) return std::unexpected(v.error());
                     total += std::accumulate(v->object->begin(), v->object->end(), 0.0);
                     if (auto freed = seg->destroy(v->object); !freed) return std::unexpected(freed.error());
                 }
                 const double us =
                     std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
                 if (const int code = exit_code_of(producer); code != 0) {
                     return make_error(Errc::internal, "the producer exited with {}", code);
                 }
                 const double expected = 10000.0 * 99 * 100 / 2;
                 if (total != expected) {
                     return make_error(Errc::internal, "sum {} != {}", total, expected);
                 }
                 return fmt::format("sum {} as expected, {:.0f} us for 100 handoffs of 80 KB", total, us);
             });

    tour.run(section, "a producer SIGKILLed between loan and commit is reported to the consumer",
             [&]() -> Result<std::string> {
                 auto in = seg->port("crash", PortRole::consumer);
                 if (!in) return std::unexpected(in.error());
                 int ready[2];
                 if (::pipe(ready) != 0) return make_error(Errc::internal, "pipe failed");
                 const pid_t victim = fork_child([&] {
                     auto s = Segment::open(name, SegmentMode::open_only, 0, options);
                     if (!s) return 1;
                     auto out = s->port("crash", PortRole::producer);
                     if (!out) return 2;
                     auto loan = out->loan();
                     if (!loan || ::write(ready[1], "x", 1) != 1) return 3;
                     for (;;) {
                         ::pause();
                     }
                 });
                 char c = 0;
                 const bool got = ::read(ready[0], &c, 1) == 1;
                 ::close(ready[0]);
                 ::close(ready[1]);
                 ::kill(victim, SIGKILL);
                 exit_code_of(victim);
                 if (!got) return make_error(Errc::internal, "the producer never loaned");
                 const auto start = std::chrono::steady_clock::now();
                 auto r = in->recv(5s);
                 const double ms =
                     std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
                 if (r || r.error().code != Errc::peer_dead) {
                     return make_error(Errc::internal, "expected peer_dead, got {}",
                                       r ? "a message" : r.error().what());
                 }
                 return fmt::format("after {:.0f} ms: {}", ms, r.error().message);
             });

    tour.run(section, "a handle loaded as the wrong type is refused", [&]() -> Result<std::string> {
        auto v = seg->find<strata::vector<double>>("field");
        if (!v) return std::unexpected(v.error());
        auto h = seg->save(**v);
        if (!h) return std::unexpected(h.error());
        auto wrong = seg->load<strata::vector<float>>(*h);
        if (wrong) return make_error(Errc::internal, "a vector<double> loaded as vector<float>");
        return wrong.error().what();
    });

    tour.run(section, "strata shm ls sees the segment; it is gone when its last user detaches",
             [&]() -> Result<std::string> {
                 auto before = list_segments(seg_dir);
                 if (!before) return std::unexpected(before.error());
                 if (before->size() != 1 || before->front().users_alive != 1) {
                     return make_error(Errc::internal, "expected one segment with one user alive, found {}",
                                       before->size());
                 }
                 if (auto closed = seg->close(); !closed) return std::unexpected(closed.error());
                 auto after = list_segments(seg_dir);
                 if (!after) return std::unexpected(after.error());
                 if (!after->empty()) return make_error(Errc::internal, "{} segment(s) left", after->size());
                 return fmt::format("{} ({}, {} user alive) listed, then removed", before->front().name,
                                    before->front().size, before->front().users_alive);
             });
}

}  // namespace strata::cli
