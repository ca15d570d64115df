// SPDX-License-Identifier: MIT
// Tasks in separate mount and pid namespaces (as containers make them) that
// share only the segment directory share objects and ports. Each task is pid 1
// - and thread id 1 - of its own pid namespace, so two users of every lock
// have equal thread ids: the case where robust pthread mutexes go wrong.
#include <chrono>
#include <cstring>
#include <numeric>

#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <gtest/gtest.h>

#include "integration/shm_process.hpp"
#include "support/capability.hpp"
#include "unit/shm_test_support.hpp"

namespace strata {
namespace {

using namespace std::chrono_literals;

// How long a survivor waits on a killed peer: a hang bound, far beyond the
// 20 ms liveness tick and any delay load adds.
constexpr auto kPeerWait = std::chrono::seconds(20);

const std::filesystem::path kInside = "/dev/shm/strata-shared";

/// Runs `body(dir)` as pid 1 of new mount and pid namespaces where the host's
/// /dev/shm and /tmp are hidden and `shared` is visible only as kInside.
template <class Body>
pid_t spawn_container(const std::filesystem::path& shared, Body body) {
    return test::spawn([&shared, body]() -> int {
        if (::unshare(CLONE_NEWNS | CLONE_NEWPID) != 0) {
            std::perror("unshare");
            return 10;
        }
        STRATA_CHILD_CHECK(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0);
        const pid_t init = ::fork();
        if (init < 0) {
            return 11;
        }
        if (init == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getpid() != 1 || ::syscall(SYS_gettid) != 1) {
                std::fprintf(stderr, "not pid 1 of a new pid namespace\n");
                ::_exit(12);
            }
            // Bind the shared directory first, then hide every host path to it.
            if (::mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=16m") != 0 || ::mkdir(kInside.c_str(), 0700) != 0 ||
                ::mount(shared.c_str(), kInside.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
                ::mount("tmpfs", "/tmp", "tmpfs", 0, "size=16m") != 0) {
                std::perror("mount");
                ::_exit(13);
            }
            if (std::filesystem::exists(shared)) {
                std::fprintf(stderr, "the host path %s is still visible\n", shared.c_str());
                ::_exit(14);
            }
            int code = 126;
            try {
                code = body(kInside);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "exception: %s\n", e.what());
            }
            std::fflush(nullptr);
            ::_exit(code);
        }
        const auto status = test::wait_for_child(init);
        if (!status.succeeded()) {
            std::fprintf(stderr, "container init %s\n", status.describe().c_str());
        }
        return status.exited ? status.exit_code : 20;
    });
}

class ShmNamespaces : public ::testing::Test {
protected:
    void SetUp() override {
        STRATA_REQUIRE(test::is_root(), "root, to create mount and pid namespaces");
        STRATA_REQUIRE(::access("/dev/shm", W_OK) == 0, "/dev/shm");
    }
};

TEST_F(ShmNamespaces, two_containers_with_equal_thread_ids_share_objects_locks_and_a_port) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(host, f.open(SegmentMode::create_only, 32U << 20U));
    const std::size_t free_at_start = host.free_bytes();
    constexpr int kMessages = 2000;
    constexpr int kAllocations = 20000;

    const pid_t producer = spawn_container(f.dir.path(), [&](const std::filesystem::path& dir) {
        auto seg = Segment::open(f.name, SegmentMode::open_only, 0, {.dir = dir});
        STRATA_CHILD_CHECK_OK(seg);
        auto out = seg->port("p", PortRole::producer, {.slots = 4, .slot_bytes = 8, .consumers = 1});
        STRATA_CHILD_CHECK_OK(out);
        for (int i = 0; i < kMessages; ++i) {
            // Allocator lock, name index lock and port lock, all contended by another pid 1.
            for (int k = 0; k < kAllocations / kMessages; ++k) {
                auto scratch = seg->make<strata::vector<int>>(std::size_t{64});
                STRATA_CHILD_CHECK_OK(scratch);
                STRATA_CHILD_CHECK_OK(seg->destroy(*scratch));
            }
            auto v = seg->make<strata::vector<int>>(std::size_t{100}, i);
            STRATA_CHILD_CHECK_OK(v);
            auto loan = out->loan(10s);
            STRATA_CHILD_CHECK_OK(loan);
            auto h = seg->save(**v);
            STRATA_CHILD_CHECK_OK(h);
            loan->set_handle(*h);
            std::memcpy(loan->bytes().data(), &i, sizeof i);
            STRATA_CHILD_CHECK_OK(out->commit(std::move(*loan)));
        }
        return 0;
    });
    const pid_t consumer = spawn_container(f.dir.path(), [&](const std::filesystem::path& dir) {
        auto seg = Segment::open(f.name, SegmentMode::open_only, 0, {.dir = dir});
        STRATA_CHILD_CHECK_OK(seg);
        auto in = seg->port("p", PortRole::consumer, {.slots = 4, .slot_bytes = 8, .consumers = 1});
        STRATA_CHILD_CHECK_OK(in);
        for (int i = 0; i < kMessages; ++i) {
            for (int k = 0; k < kAllocations / kMessages; ++k) {
                auto scratch = seg->make<strata::vector<int>>(std::size_t{64});
                STRATA_CHILD_CHECK_OK(scratch);
                STRATA_CHILD_CHECK_OK(seg->destroy(*scratch));
            }
            auto v = in->recv<strata::vector<int>>(10s);
            STRATA_CHILD_CHECK_OK(v);
            int index = -1;
            std::memcpy(&index, v->sample.bytes().data(), sizeof index);
            STRATA_CHILD_CHECK(index == i);
            STRATA_CHILD_CHECK(v->object->size() == 100U);
            STRATA_CHILD_CHECK(std::accumulate(v->object->begin(), v->object->end(), 0LL) == 100LL * i);
            STRATA_CHILD_CHECK_OK(seg->destroy(v->object));
        }
        return 0;
    });
    const auto producer_status = test::wait_for_child(producer);
    const auto consumer_status = test::wait_for_child(consumer);
    EXPECT_TRUE(producer_status.succeeded()) << producer_status.describe();
    EXPECT_TRUE(consumer_status.succeeded()) << consumer_status.describe();
    EXPECT_EQ(host.broken_reason(), "");
    STRATA_ASSERT_OK(host.remove_port("p"));
    EXPECT_EQ(host.free_bytes(), free_at_start) << "every allocation of both containers was freed exactly once";
}

TEST_F(ShmNamespaces, a_killed_container_is_reported_dead_to_a_container_whose_pid_is_the_same) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(host, f.open(SegmentMode::create_only));
    int at_point[2];
    ASSERT_EQ(::pipe(at_point), 0);
    const pid_t victim = spawn_container(f.dir.path(), [&](const std::filesystem::path& dir) {
        auto seg = Segment::open(f.name, SegmentMode::open_only, 0, {.dir = dir});
        STRATA_CHILD_CHECK_OK(seg);
        auto out = seg->port("p", PortRole::producer);
        STRATA_CHILD_CHECK_OK(out);
        auto loan = out->loan(10s);
        STRATA_CHILD_CHECK_OK(loan);
        STRATA_CHILD_CHECK(::write(at_point[1], "x", 1) == 1);
        for (;;) {
            ::pause();
        }
    });
    const pid_t survivor = spawn_container(f.dir.path(), [&](const std::filesystem::path& dir) {
        auto seg = Segment::open(f.name, SegmentMode::open_only, 0, {.dir = dir});
        STRATA_CHILD_CHECK_OK(seg);
        auto in = seg->port("p", PortRole::consumer);
        STRATA_CHILD_CHECK_OK(in);
        STRATA_CHILD_CHECK(::write(at_point[1], "y", 1) == 1);
        auto error = in->recv(kPeerWait);
        STRATA_CHILD_CHECK(!error.has_value());
        std::fprintf(stderr, "survivor (pid %d) got: %s\n", ::getpid(), error.error().what().c_str());
        STRATA_CHILD_CHECK(error.error().code == Errc::peer_dead);
        STRATA_CHILD_CHECK(error.error().message.find("pid 1 ") != std::string::npos);
        return 0;
    });
    char c = 0;
    ASSERT_EQ(::read(at_point[0], &c, 1), 1);
    ASSERT_EQ(::read(at_point[0], &c, 1), 1);
    ::kill(victim, SIGKILL);  // its container's init dies with it (parent-death signal)
    const auto killed_at = std::chrono::steady_clock::now();
    const auto status = test::wait_for_child(survivor);
    EXPECT_TRUE(status.succeeded()) << status.describe();
    // Noticed by the liveness tick while the survivor waited, not when its wait ran out.
    EXPECT_LT(std::chrono::steady_clock::now() - killed_at, kPeerWait / 2);
    test::wait_for_child(victim);
    ::close(at_point[0]);
    ::close(at_point[1]);
}

}  // namespace
}  // namespace strata
