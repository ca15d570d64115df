// SPDX-License-Identifier: MIT
// Workers' I/O priority (src/runtime/io_priority.hpp): a worker lowered to
// SCHED_IDLE, as a cover is, still does its I/O in the best-effort class (the
// kernel would otherwise derive the idle class from SCHED_IDLE, and a
// checkpoint written by a cover would wait behind every other request), and a
// class the process was given explicitly is kept.
#include <sched.h>
#include <unistd.h>

#include <atomic>

#include <gtest/gtest.h>

#include "runtime/io_priority.hpp"
#include "strata/runtime.hpp"
#include "support/result.hpp"

namespace strata::runtime {
namespace {

using detail::io_priority_class;
using detail::thread_io_priority;

Options one_worker() {
    Options options;
    options.monitor = no_monitor();
    options.cpus = {sched_getcpu()};
    return options;
}

// The I/O priority a task sees on its worker after lowering it to SCHED_IDLE.
int io_priority_at_sched_idle(Runtime& runtime) {
    std::atomic<int> seen{-2};
    TaskGroup group;
    runtime.spawn(
        [&seen] {
            const sched_param idle{};
            const sched_param normal{};
            if (::sched_setscheduler(0, SCHED_IDLE, &idle) != 0) {
                seen = -1;
                return;
            }
            seen = thread_io_priority();
            (void)::sched_setscheduler(0, SCHED_OTHER, &normal);
        },
        &group);
    runtime.wait(group);
    return seen.load();
}

TEST(RuntimeIoPriority, a_worker_at_sched_idle_keeps_the_best_effort_io_class) {
    STRATA_ASSERT_ASSIGN(sut, Runtime::start(one_worker()));
    const int prio = io_priority_at_sched_idle(*sut);
    sut->stop();
    ASSERT_GE(prio, 0) << "sched_setscheduler(SCHED_IDLE) or ioprio_get failed in the task";
    EXPECT_EQ(io_priority_class(prio), detail::kIoClassBestEffort)
        << "a worker at SCHED_IDLE does its I/O in class " << io_priority_class(prio)
        << " (0: none, which the kernel turns into idle under SCHED_IDLE; 3: idle)";
}

TEST(RuntimeIoPriority, a_class_the_process_was_given_is_kept_by_every_worker) {
    const int before = thread_io_priority();
    ASSERT_GE(before, 0);
    const int given = detail::io_priority_value(detail::kIoClassBestEffort, 6);
    ASSERT_EQ(detail::set_thread_io_priority(given), 0);
    auto started = Runtime::start(one_worker());
    (void)detail::set_thread_io_priority(before);  // the test thread as it was
    ASSERT_TRUE(started.has_value()) << started.error().what();
    const int prio = io_priority_at_sched_idle(**started);
    (*started)->stop();
    EXPECT_EQ(prio, given);
}

}  // namespace
}  // namespace strata::runtime
