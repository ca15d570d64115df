// SPDX-License-Identifier: MIT
// Stopping a child at a named point of the shm layer (strata/shm/testing.hpp)
// so the test can SIGKILL it exactly there.
//
//   test::Signal at_point;
//   const pid_t victim = test::spawn([&] {
//       ...
//       test::arm(at_point, shm_testing::CrashPoint::port_lock_held);
//       (void)out->loan();  // stops inside, holding the port's lock
//       return 1;
//   });
//   ASSERT_TRUE(at_point.wait());
//   test::kill_child(victim);
#pragma once

#include <atomic>
#include <csignal>

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include "strata/shm/testing.hpp"
#include "support/process.hpp"

namespace strata::test {

/// A pipe on which a child says "I am at the point where I am to be killed".
struct Signal {
    int fds[2] = {-1, -1};
    Signal() {
        if (::pipe(fds) != 0) {
            ADD_FAILURE() << "pipe failed";
        }
    }
    Signal(const Signal&) = delete;
    Signal& operator=(const Signal&) = delete;
    ~Signal() {
        ::close(fds[0]);
        ::close(fds[1]);
    }
    void notify() const { (void)!::write(fds[1], "x", 1); }
    /// False when nothing came within 30 s (the child failed before its point).
    bool wait() const {
        pollfd p{.fd = fds[0], .events = POLLIN, .revents = 0};
        char c = 0;
        return ::poll(&p, 1, 30'000) == 1 && ::read(fds[0], &c, 1) == 1;
    }
};

namespace crash_detail {
inline int signal_fd = -1;
inline std::atomic<shm_testing::CrashPoint> armed{};
inline std::atomic<int> skip{0};

inline void stop_here(shm_testing::CrashPoint point) {
    if (armed.load() == point && skip.fetch_sub(1) <= 0) {
        (void)!::write(signal_fd, "x", 1);
        for (;;) {
            ::pause();
        }
    }
}
}  // namespace crash_detail

/// In a child: the `skip`+1-th time this process reaches `point`, it says so
/// on `at_point` and stops there for good (until it is killed).
inline void arm(const Signal& at_point, shm_testing::CrashPoint point, int skip = 0) {
    crash_detail::signal_fd = at_point.fds[1];
    crash_detail::skip = skip;
    shm_testing::set_crash_hook(&crash_detail::stop_here);
    crash_detail::armed = point;
}

/// Kills `pid` and reaps it.
inline void kill_child(pid_t pid) {
    ::kill(pid, SIGKILL);
    wait_for_child(pid);
}

}  // namespace strata::test
