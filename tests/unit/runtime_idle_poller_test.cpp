// SPDX-License-Identifier: MIT
// Runtime::set_idle_poller: an idle worker does the poller's work itself, and
// runs the task that work made ready on the same thread, without a wake-up
// (distributed OCR's network, polled by the worker that will run the EDT a
// message makes ready).
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "runtime_fake_monitor.hpp"
#include "strata/runtime.hpp"
#include "support/result.hpp"

namespace strata::runtime {
namespace {

using namespace std::chrono_literals;

pid_t this_thread_id() {
    return static_cast<pid_t>(::syscall(SYS_gettid));
}

// Spawns one task on its first poll (as a message's dispatch makes an EDT
// ready) and records which thread polled and which ran the task.
class SpawningPoller final : public IdlePoller {
public:
    explicit SpawningPoller(Runtime& runtime) : runtime_(runtime) {}

    bool poll() noexcept override {
        polls_.fetch_add(1);
        if (spawned_.exchange(true)) {
            return false;
        }
        poller_tid_.store(this_thread_id());
        runtime_.spawn([this] { runner_tid_.store(this_thread_id()); });
        return true;
    }
    [[nodiscard]] bool expecting() const noexcept override { return expecting_.load(); }

    Runtime& runtime_;
    std::atomic<int> polls_{0};
    std::atomic<bool> spawned_{false};
    std::atomic<bool> expecting_{false};
    std::atomic<pid_t> poller_tid_{0};
    std::atomic<pid_t> runner_tid_{0};
};

bool wait_until(const std::atomic<pid_t>& value, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (value.load() == 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(1ms);
    }
    return value.load() != 0;
}

// Clears the poller and stops the runtime when a test ends, also after a
// failed ASSERT: declared after the poller, it goes first.
struct StopAtEnd {
    explicit StopAtEnd(Runtime& r) : runtime(r) {}
    Runtime& runtime;
    StopAtEnd(const StopAtEnd&) = delete;
    StopAtEnd& operator=(const StopAtEnd&) = delete;
    ~StopAtEnd() {
        runtime.set_idle_poller(nullptr);
        runtime.stop();
    }
};

Options one_worker() {
    Options options;
    options.monitor = no_monitor();
    options.cpus = {sched_getcpu()};
    options.workers = 1;
    return options;
}

TEST(RuntimeIdlePoller, an_idle_worker_polls_and_runs_what_its_poll_made_ready_itself) {
    STRATA_ASSERT_ASSIGN(sut, Runtime::start(one_worker()));
    SpawningPoller poller(*sut);
    const StopAtEnd stop_at_end(*sut);
    sut->set_idle_poller(&poller);
    // An idle worker may be parked already: a task wakes it, and it polls once that task ended.
    TaskGroup group;
    sut->spawn([] {}, &group);
    sut->wait(group);
    ASSERT_TRUE(wait_until(poller.runner_tid_, 20s)) << "the task the poll spawned never ran";
    EXPECT_EQ(poller.runner_tid_.load(), poller.poller_tid_.load())
        << "the task ran on another thread than the worker whose poll made it ready";
}

TEST(RuntimeIdlePoller, a_worker_keeps_polling_while_the_poller_expects_work) {
    STRATA_ASSERT_ASSIGN(sut, Runtime::start(one_worker()));
    SpawningPoller poller(*sut);
    const StopAtEnd stop_at_end(*sut);
    poller.spawned_ = true;  // its polls find nothing
    poller.expecting_ = true;
    sut->set_idle_poller(&poller);
    TaskGroup group;
    sut->spawn([] {}, &group);
    sut->wait(group);
    // Expecting: the worker does not park, so its polls go on without any task to wake it.
    const int before = poller.polls_.load();
    std::this_thread::sleep_for(200ms);
    EXPECT_GT(poller.polls_.load(), before) << "the worker stopped polling while the poller expected work";
    // Not expecting: it parks, and the polls stop.
    poller.expecting_ = false;
    std::this_thread::sleep_for(200ms);
    const int parked = poller.polls_.load();
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(poller.polls_.load(), parked) << "a worker with nothing to expect went on polling instead of parking";
}

TEST(RuntimeIdlePoller, no_worker_polls_once_the_poller_is_cleared) {
    STRATA_ASSERT_ASSIGN(sut, Runtime::start(one_worker()));
    SpawningPoller poller(*sut);
    const StopAtEnd stop_at_end(*sut);
    poller.spawned_ = true;
    poller.expecting_ = true;
    sut->set_idle_poller(&poller);
    TaskGroup group;
    sut->spawn([] {}, &group);
    sut->wait(group);
    std::this_thread::sleep_for(50ms);
    sut->set_idle_poller(nullptr);
    std::this_thread::sleep_for(50ms);  // a poll under way when it was cleared ends
    const int after = poller.polls_.load();
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(poller.polls_.load(), after) << "a worker polled a cleared poller";
    EXPECT_GT(after, 0) << "the worker never polled while the poller was set";
}

}  // namespace
}  // namespace strata::runtime
