// SPDX-License-Identifier: MIT
// The scheduler's insides (include/strata/runtime.hpp): workers, cores with
// their idle pools, the injection queue and the leader.
#pragma once

#include <sys/types.h>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "deque.hpp"
#include "strata/runtime.hpp"

namespace strata::runtime {

struct RuntimeAccess {
    static TaskGroup*& group(Task& task) { return task.group_; }
    static bool& owned(Task& task) { return task.owned_; }
    static std::atomic<std::int64_t>& pending(TaskGroup& group) { return group.pending_; }
};

namespace detail {

struct Core;

/// One thread bound to one CPU. It is either active (looking for or running
/// tasks, or blocked in the kernel inside a task) or parked in its core's
/// idle pool.
struct Worker {
    Runtime::Impl* rt = nullptr;
    Core* core = nullptr;
    int slot = 0;  // index in Impl::slots_
    WorkDeque<Task> deque;
    std::thread thread;
    std::atomic<pid_t> tid{0};

    // Parking: guarded by core->mutex (parked) and wake_mutex (wake_flag).
    bool parked = false;
    bool parked_in_task = false;  // surrendered in the middle of a task
    std::mutex wake_mutex;
    std::condition_variable wake_cv;
    bool wake_flag = false;

    int task_depth = 0;    // nested wait() inside tasks; >0 means inside a task
    bool polling = false;  // inside the idle poller: no scheduling point parks it (it may hold the poller's locks)
    unsigned looks = 0;    // find_task() calls, to visit the injection queue now and then

    // Cover priority (cover.cpp): the kernel policy applied to this thread,
    // SCHED_IDLE while it covers for a blocked worker of its core. Written
    // under core->mutex; read without it at scheduling points.
    std::atomic<bool> idle_priority{false};
    bool cover_pending = false;  // woken to cover: lowers itself once it runs, if still needed (core->mutex)
    bool kicked = false;         // at nice 19 from a surrender request (core->mutex)

    // Suspension (suspend.cpp, idle+suspend): the futex word, odd while a
    // suspension is requested, bumped to the next even value on release, so a
    // signal that arrives after its release (or for an older request) finds it
    // even and does nothing. in_body: 1 while the thread runs a task's own
    // code, not the runtime's (only then may the handler suspend it: it holds
    // no runtime lock); written by this thread, read by its signal handler.
    std::atomic<std::uint32_t> suspend_word{0};
    std::atomic<int> in_body{0};
    // CLOCK_MONOTONIC ns at which suspend_cover sent the signal (the
    // handler's latency statistic).
    std::atomic<std::int64_t> suspend_sent_ns{0};
};

/// One CPU: its workers and idle pool.
struct Core {
    int index = 0;
    int cpu = 0;
    // Workers the core keeps ready side by side (its share of
    // Options::workers, usually 1): more are covers for blocked ones, and
    // fewer ready means the core can take a woken one.
    int base = 1;
    std::mutex mutex;
    std::vector<Worker*> idle;                 // parked workers, guarded by mutex
    std::vector<Worker*> members;              // every worker of this core, guarded by mutex
    int workers = 0;                           // created for this core, guarded by mutex
    std::atomic<int> active{0};                // workers not parked
    std::atomic<int> parked_in_task{0};        // parked workers holding an unfinished task
    std::atomic<bool> wake_in_flight{false};   // the leader woke a worker that has not run yet
    std::atomic<bool> needs_attention{false};  // the monitor said: no ready worker

    std::atomic<std::uint64_t> tasks{0}, steals{0}, surrenders{0}, wakes{0}, context_switches{0};
    std::atomic<std::uint64_t> covers{0}, restores{0}, cover_swaps{0};
    std::atomic<int> idle_covers{0};          // members at SCHED_IDLE now
    std::atomic<std::uint64_t> kicks{0};      // surrender requests made to a cover
    std::atomic<std::uint64_t> scans{0};      // the leader's periodic scan looked at this core
    Worker* cover = nullptr;                  // covering at full weight, to surrender on the wakeup event (mutex)
    std::atomic<Worker*> suspended{nullptr};  // idle+suspend: the cover asked to suspend, until released
    std::atomic<Worker*> standby{nullptr};    // idle+standby: the worker spinning in standby (set under mutex)
    std::atomic<std::uint64_t> standby_takeovers{0};
    std::atomic<std::uint64_t> suspend_requests{0}, suspends{0}, suspend_declined{0}, suspend_timeouts{0};
    std::atomic<std::uint64_t> suspend_handbacks{0};  // released at another worker's scheduling point
    // Nanoseconds: suspended (sum, longest), signal sent -> handler runs (sum, longest).
    std::atomic<std::int64_t> suspended_ns{0}, suspended_max_ns{0}, suspend_latency_ns{0}, suspend_latency_max_ns{0};
};

}  // namespace detail

struct Runtime::Impl {
    Runtime* owner = nullptr;
    Options options;
    std::vector<int> cpus;
    std::vector<std::unique_ptr<detail::Core>> cores;
    std::unique_ptr<CoreMonitor> monitor;
    bool monitored = false;                  // a real monitor: ready() is meaningful
    bool exact_counts = false;               // ready() follows every switch (ebpf: it reports wakeups)
    bool empty_cores_reported = false;       // it calls back when a core is left without a ready worker
    std::atomic<bool> monitor_ready{false};  // monitor and monitored are set: callbacks may act
    // Monitor callbacks inside attend(): stop() clears monitor_ready, then
    // waits for this to reach 0 before it destroys the monitor, whose event
    // thread would otherwise still call into it (seen: a null monitor in attend).
    std::atomic<int> monitor_events{0};
    int max_cpu = 0;  // CPU numbers are < max_cpu
    // Covering workers run at SCHED_IDLE (cover.cpp); cleared for good if the
    // kernel ever refuses a change.
    std::atomic<bool> cover_idle{false};
    bool cover_at_start = false;   // a cover lowers itself to SCHED_IDLE when it starts
    bool cover_surrender = false;  // the monitor's wakeup event makes a cover give up its core
    bool cover_suspend = false;    // ... by suspending it mid-task (suspend.cpp), not by nice 19
    bool cover_standby = false;    // a worker that would park stands by instead (worker.cpp, stand_by)
    int suspend_nice = 0;          // the nice a suspended cover returns to (the process's)
    CoverPriority cover_mode = CoverPriority::normal;
    std::string cover_reason;

    // Every worker ever created; slots_ is read by thieves without a lock.
    std::mutex workers_mutex;
    std::vector<std::unique_ptr<detail::Worker>> workers;
    std::vector<std::atomic<detail::Worker*>> slots;
    std::atomic<int> slot_count{0};

    // Tasks spawned from threads that are not workers.
    std::mutex inject_mutex;
    std::deque<Task*> inject;
    std::atomic<std::int64_t> inject_size{0};

    // Tasks spawned with a priority: a heap, the highest priority first, then
    // the earliest spawn (priority_order). find_task looks here first; the
    // size lets it skip the lock when there are none.
    struct Prioritized {
        std::uint64_t priority = 0;
        std::uint64_t seq = 0;
        Task* task = nullptr;
    };
    std::mutex priority_mutex;
    std::vector<Prioritized> prioritized;  // guarded by priority_mutex
    std::uint64_t priority_seq = 0;        // guarded by priority_mutex
    std::atomic<std::int64_t> prioritized_size{0};

    std::atomic<std::int64_t> queued{0};  // tasks spawned and not yet taken
    std::atomic<int> sleepers{0};         // parked workers
    std::atomic<bool> stopping{false};
    std::atomic<bool> stopped{false};
    std::atomic<IdlePoller*> idle_poller{nullptr};  // Runtime::set_idle_poller
    int io_priority = 0;                            // every worker's (io_priority.hpp), set at start

    std::thread leader;
    std::mutex leader_mutex;
    std::condition_variable leader_cv;
    bool leader_flag = false;  // guarded by leader_mutex
    // The leader scans every leader_period only while some core has a blocked
    // worker or a cover (leader.cpp); otherwise it dozes, and the monitor's
    // callback wakes it on the first event.
    std::atomic<bool> leader_dozing{false};

    // scheduler.cpp
    Result<void> place_cores(Options opts);  // Runtime::start: the CPUs, cores and worker slots
    Result<void> start_monitor();            // Runtime::start: the monitor and the cover priority it allows
    void push(Task* task);
    void push_prioritized(Task* task, std::uint64_t priority);
    Task* take_prioritized();
    Task* find_task(detail::Worker& self);
    Task* take_injected();
    void execute(detail::Worker& self, Task* task);
    void wake_for_spawn();
    void stop();
    void drop_queued();

    // worker.cpp
    Result<detail::Worker*> add_worker(detail::Core& core, bool cover = false);
    void worker_main(detail::Worker& self);
    void scheduling_point(detail::Worker& self);
    bool park(detail::Worker& self, bool surrender);
    bool stand_by(detail::Worker& self, bool surrender);
    bool unpark_one(detail::Core& core, bool cover = false);
    void wake(detail::Worker& worker);

    // cover.cpp; each with core.mutex held.
    void set_priority(detail::Worker& worker, bool idle, bool kick = false);
    void surrender_cover(detail::Core& core);
    void cover_core(detail::Core& core, detail::Worker& cover);
    void settle_core(detail::Core& core);
    void leave_core(detail::Core& core);
    void check_cover(detail::Worker& self);      // takes core.mutex
    void start_cover(detail::Worker& self);      // takes core.mutex
    void take_cover_role(detail::Worker& self);  // takes core.mutex

    // suspend.cpp (idle+suspend). suspend_cover with core.mutex held;
    // release_suspended lock-free (also from the signal's waiters' side).
    static void install_suspend_handler();
    void suspend_cover(detail::Core& core, detail::Worker& cover);
    detail::Worker* release_suspended(detail::Core& core);
    void release_all_suspended();

    // leader.cpp
    void leader_main();
    void attend(detail::Core& core, bool scan = false);
    void notify_leader();
    bool cores_settled();
};

}  // namespace strata::runtime
