// SPDX-License-Identifier: MIT
// Segments between processes that do not trust each other, that fork, and
// that die: a segment planted by another user is refused, a forked child is
// not a user, a dead consumer is noticed by a producer that never waits, and
// errors name the process that died.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "integration/shm_process.hpp"
#include "strata/shm/admin.hpp"
#include "unit/shm_test_support.hpp"

namespace strata {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// How long a survivor waits on a killed peer: a hang bound, far beyond the
// 20 ms liveness tick and any delay load adds.
constexpr auto kPeerWait = 20s;
using test::fails_with;

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

/// A pipe a child writes one byte to when it is ready.
struct Ready {
    int fds[2] = {-1, -1};
    Ready() { EXPECT_EQ(::pipe(fds), 0); }
    Ready(const Ready&) = delete;
    Ready& operator=(const Ready&) = delete;
    ~Ready() {
        ::close(fds[0]);
        ::close(fds[1]);
    }
    void notify() const { (void)!::write(fds[1], "x", 1); }
    bool wait() const {
        char c = 0;
        return ::read(fds[0], &c, 1) == 1;
    }
};

std::string file_content(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

unsigned users_alive(const test::ShmFixture& f) {
    auto listed = list_segments(f.dir.path());
    if (!listed || listed->size() != 1) {
        return 999;
    }
    return listed->front().users_alive;
}

/// A directory every user may create files in (sticky, like /dev/shm and /tmp).
struct SharedDir {
    test::TempDir dir;
    SharedDir() { EXPECT_EQ(::chmod(dir.path().c_str(), 01777), 0); }
};

bool require_root() {
    if (::geteuid() == 0) {
        return true;
    }
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string_view(ci) == "true") {
        ADD_FAILURE() << "planting files as another user needs root (CI=true)";
    }
    return false;
}

TEST(ShmTrust, files_planted_by_nobody_through_setpriv_are_refused_naming_owner_and_mode) {
    if (!require_root()) {
        GTEST_SKIP() << "needs root to run a planter as nobody";
    }
    SharedDir shared;
    const std::string name = test::unique_name("planted");
    const auto seg = shared.dir / ("strata." + name + ".seg");
    const auto lock = shared.dir / ("strata." + name + ".lock");
    const std::string plant =
        fmt::format("setpriv --reuid={} --regid={} --clear-groups sh -c 'umask 0; printf PLANTED > {}; : > {}'",
                    kNobody, kNogroup, seg.string(), lock.string());
    ASSERT_EQ(std::system(plant.c_str()), 0) << plant;
    struct stat st {};
    ASSERT_EQ(::stat(seg.c_str(), &st), 0);
    ASSERT_EQ(st.st_uid, kNobody) << "the planter really ran as nobody";

    const SegmentOptions options{.dir = shared.dir.path()};
    for (auto mode :
         {SegmentMode::open_or_create, SegmentMode::open_only, SegmentMode::read_only, SegmentMode::create_only}) {
        auto sut = Segment::open(name, mode, test::kSegmentBytes, options);
        EXPECT_TRUE(fails_with(sut, Errc::permission_denied, {lock.string(), "uid 65534 (nobody)", "mode 0666"}))
            << to_string(mode);
    }
    ASSERT_EQ(::unlink(lock.c_str()), 0);
    auto sut = Segment::open(name, SegmentMode::open_or_create, test::kSegmentBytes, options);
    EXPECT_TRUE(fails_with(sut, Errc::permission_denied, {seg.string(), "uid 65534 (nobody)", "mode 0666"}));
    EXPECT_EQ(file_content(seg), "PLANTED");
    EXPECT_FALSE(std::filesystem::exists(lock)) << "the refused call leaves no lock file of its own";
    ASSERT_EQ(::unlink(seg.c_str()), 0);
}

TEST(ShmTrust, a_working_segment_planted_by_another_user_never_receives_the_victim_s_data) {
    if (!require_root()) {
        GTEST_SKIP() << "needs root to run a planter as nobody";
    }
    SharedDir shared;
    const std::string name = test::unique_name("squat");
    const SegmentOptions options{.dir = shared.dir.path()};
    // The planter makes a real segment as nobody, opens it to everyone and
    // leaves without detaching, as an attacker who wants to read a victim's data would.
    const pid_t planter = test::spawn([&] {
        STRATA_CHILD_CHECK(::setresgid(kNogroup, kNogroup, kNogroup) == 0);
        STRATA_CHILD_CHECK(::setresuid(kNobody, kNobody, kNobody) == 0);
        auto s = Segment::open(name, SegmentMode::create_only, test::kSegmentBytes, options);
        STRATA_CHILD_CHECK_OK(s);
        STRATA_CHILD_CHECK(::chmod(s->path().c_str(), 0666) == 0);
        STRATA_CHILD_CHECK(::chmod((shared.dir / ("strata." + name + ".lock")).c_str(), 0666) == 0);
        ::_exit(0);
    });
    ASSERT_TRUE(test::wait_for_child(planter).succeeded());
    const auto seg_file = shared.dir / ("strata." + name + ".seg");
    ASSERT_TRUE(std::filesystem::exists(seg_file));

    auto sut = Segment::open(name, SegmentMode::open_or_create, test::kSegmentBytes, options);
    ASSERT_TRUE(fails_with(sut, Errc::permission_denied, {"uid 65534 (nobody)", "mode 0666"}));
    if (sut) {
        (void)sut->simple<std::array<char, 32>>("secret", std::array<char, 32>{"victim-secret-4711"});
    }
    EXPECT_EQ(file_content(seg_file).find("victim-secret-4711"), std::string::npos);
    std::filesystem::remove(seg_file);
    std::filesystem::remove(shared.dir / ("strata." + name + ".lock"));
}

TEST(ShmTrust, a_forked_child_that_closes_its_copy_leaves_the_parent_s_segment_attached) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only));
    STRATA_ASSERT_OK(seg.simple<int>("x", 7));
    STRATA_ASSERT_ASSIGN(out, seg.port("p", PortRole::producer));
    ASSERT_EQ(users_alive(f), 1U);
    const auto status = test::run_in_child([&] {
        // The child sees the memory, but is no user: calls fail, closing changes nothing.
        auto x = seg.find<int>("x");
        STRATA_CHILD_CHECK(!x && x.error().code == Errc::invalid_argument &&
                           x.error().message.find("forked") != std::string::npos);
        STRATA_CHILD_CHECK(!out.send(Handle{}).has_value());
        STRATA_CHILD_CHECK_OK(out.close());
        STRATA_CHILD_CHECK_OK(seg.close());
        return 0;
    });
    ASSERT_TRUE(status.succeeded()) << status.describe();
    EXPECT_TRUE(std::filesystem::exists(f.seg_file()));
    EXPECT_TRUE(std::filesystem::exists(f.lock_file()));
    EXPECT_EQ(users_alive(f), 1U) << "the child's close must not release the parent's lock byte";
    STRATA_ASSERT_ASSIGN(in, seg.port("p", PortRole::consumer));
    STRATA_ASSERT_ASSIGN(n, seg.make<int>(5));
    STRATA_ASSERT_OK(out.send(*n, 1s)) << "the child's close must not have closed the parent's producer";
    STRATA_ASSERT_ASSIGN(got, in.recv<int>(1s));
    EXPECT_EQ(*got.object, 5);
    STRATA_ASSERT_ASSIGN(other, f.open(SegmentMode::open_only, 0));
    STRATA_ASSERT_OK(other.close());
    EXPECT_TRUE(std::filesystem::exists(f.seg_file())) << "the parent is still a user";
}

TEST(ShmTrust, a_killed_parent_is_reported_dead_while_its_forked_child_lives_on) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only));
    STRATA_ASSERT_ASSIGN(in, seg.port("p", PortRole::consumer));
    Ready ready;
    Ready child_pid_pipe;
    const pid_t parent = test::spawn([&] {
        auto s = f.open(SegmentMode::open_only, 0);
        STRATA_CHILD_CHECK_OK(s);
        auto out = s->port("p", PortRole::producer);
        STRATA_CHILD_CHECK_OK(out);
        const pid_t child = ::fork();
        if (child == 0) {
            for (;;) {
                ::pause();
            }
        }
        (void)!::write(child_pid_pipe.fds[1], &child, sizeof child);
        ready.notify();
        for (;;) {
            ::pause();
        }
    });
    ASSERT_TRUE(ready.wait());
    pid_t child = 0;
    ASSERT_EQ(::read(child_pid_pipe.fds[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
    ::kill(parent, SIGKILL);
    test::wait_for_child(parent);
    const auto killed_at = Clock::now();
    auto error = in.recv(kPeerWait);
    const auto waited = Clock::now() - killed_at;
    ::kill(child, SIGKILL);
    EXPECT_TRUE(fails_with(error, Errc::peer_dead, {"producer", "died", fmt::format("pid {}", parent)}));
    EXPECT_LT(waited, kPeerWait / 2) << "noticed when the wait ran out, not by the liveness tick";
}

TEST(ShmTrust, a_producer_that_never_waits_learns_of_a_killed_consumer_and_a_replacement_takes_its_place) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only));
    STRATA_ASSERT_ASSIGN(out, seg.port("p", PortRole::producer, {.slots = 4}));
    Ready ready;
    const pid_t consumer = test::spawn([&] {
        auto s = f.open(SegmentMode::open_only, 0);
        STRATA_CHILD_CHECK_OK(s);
        auto in = s->port("p", PortRole::consumer);
        STRATA_CHILD_CHECK_OK(in);
        ready.notify();
        for (;;) {
            ::pause();
        }
    });
    ASSERT_TRUE(ready.wait());
    STRATA_ASSERT_ASSIGN(first, seg.make<int>(1));
    STRATA_ASSERT_OK(out.send(*first, 1s));
    ::kill(consumer, SIGKILL);
    test::wait_for_child(consumer);
    const auto killed_at = Clock::now();
    std::this_thread::sleep_for(50ms);  // more than a liveness tick (20 ms): never waiting is the point
    STRATA_ASSERT_ASSIGN(second, seg.make<int>(2));
    auto sent = out.send(*second, 0s);
    EXPECT_TRUE(fails_with(sent, Errc::peer_dead, {"consumer 0", fmt::format("pid {}", consumer), "released"}))
        << "a send to a consumer known to be dead must not succeed and be lost";
    EXPECT_LT(Clock::now() - killed_at, kPeerWait / 2) << "a send with a zero timeout waited";

    STRATA_ASSERT_ASSIGN(replacement, seg.port("p", PortRole::consumer));
    STRATA_ASSERT_ASSIGN(third, seg.make<int>(3));
    STRATA_ASSERT_OK(out.send(*third, 1s));
    STRATA_ASSERT_ASSIGN(got, replacement.recv<int>(1s));
    EXPECT_EQ(*got.object, 3) << "the replacement starts with the next message";
}

TEST(ShmTrust, a_replacement_consumer_opens_the_port_of_a_killed_one_before_any_send) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only));
    STRATA_ASSERT_ASSIGN(out, seg.port("p", PortRole::producer));
    Ready ready;
    const pid_t consumer = test::spawn([&] {
        auto s = f.open(SegmentMode::open_only, 0);
        STRATA_CHILD_CHECK_OK(s);
        auto in = s->port("p", PortRole::consumer);
        STRATA_CHILD_CHECK_OK(in);
        ready.notify();
        for (;;) {
            ::pause();
        }
    });
    ASSERT_TRUE(ready.wait());
    ::kill(consumer, SIGKILL);
    test::wait_for_child(consumer);
    STRATA_EXPECT_OK(seg.port("p", PortRole::consumer));
}

TEST(ShmTrust, the_error_names_the_dead_user_even_after_a_later_attacher_took_its_slot) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only));
    STRATA_ASSERT_ASSIGN(in, seg.port("p", PortRole::consumer));
    Ready ready;
    const pid_t victim = test::spawn([&] {
        auto s = f.open(SegmentMode::open_only, 0);
        STRATA_CHILD_CHECK_OK(s);
        auto out = s->port("p", PortRole::producer);
        STRATA_CHILD_CHECK_OK(out);
        auto loan = out->loan();
        STRATA_CHILD_CHECK_OK(loan);
        ready.notify();
        for (;;) {
            ::pause();
        }
    });
    ASSERT_TRUE(ready.wait());
    ::kill(victim, SIGKILL);
    test::wait_for_child(victim);
    // This process attaches again and gets the victim's free slot before anyone noticed the death.
    STRATA_ASSERT_ASSIGN(later, f.open(SegmentMode::open_only, 0));
    ASSERT_EQ(later.user_slot(), 2U);
    auto error = in.recv(5s);
    ASSERT_TRUE(fails_with(error, Errc::peer_dead, {"producer 0", fmt::format("pid {}", victim)}));
    EXPECT_EQ(error.error().message.find(fmt::format("(pid {} ", ::getpid())), std::string::npos)
        << "names the survivor instead of the dead user: " << error.error().message;
}

}  // namespace
}  // namespace strata
