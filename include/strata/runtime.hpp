// SPDX-License-Identifier: MIT
// strata's task runtime (docs/runtime.md): one worker thread bound to each
// core of the allowed CPU set, Chase–Lev work-stealing deques, an unbound
// leader thread, and a pool of idle workers per core that keeps cores busy
// when tasks block in the kernel (User-Monitored Threads, seed 002).
//
// Scheduling points are task start, task end, task creation (spawn), wait()
// and yield(). At each one a worker asks the blocking monitor how many workers
// of its core are ready; with more than one it returns to its core's idle pool
// (oversubscription ends). When the monitor reports a core without a ready
// worker while runnable tasks exist, the leader wakes an idle worker bound to
// that core (a new one if the pool is empty).
//
// A worker woken to cover for a blocked one runs at the kernel's SCHED_IDLE
// policy while the blocked worker is away (CoverPriority::idle), so that the
// kernel itself runs the blocked worker as soon as it wakes, instead of
// time-sharing the core until one of them reaches a scheduling point; the
// cover gets the normal policy back when it becomes its core's only worker.
//
// Example:
//
//   auto rt = strata::runtime::Runtime::start({});
//   if (!rt) { fmt::print(stderr, "{}\n", rt.error().what()); return 1; }
//   strata::runtime::TaskGroup group;
//   for (int i = 0; i < 100; ++i) (*rt)->spawn([i] { work(i); }, &group);
//   (*rt)->wait(group);          // runs other tasks while it waits
//
// Thread safety: every member of Runtime may be called from any thread,
// inside tasks or outside; stop() and destruction from outside tasks only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "strata/error.hpp"

namespace strata::runtime {

/// A unit of work. The runtime calls execute() once on some worker and never
/// touches the task afterwards; whoever spawned it owns its memory (a task may
/// delete itself at the end of execute()).
class TaskGroup;
class Task {
public:
    Task() = default;
    Task(const Task&) = delete;
    Task& operator=(const Task&) = delete;
    virtual ~Task() = default;
    virtual void execute() = 0;

private:
    friend class Runtime;
    friend struct RuntimeAccess;
    TaskGroup* group_ = nullptr;  // counted until execute() returned
    bool owned_ = false;          // allocated by spawn(function): deleted by the runtime
};

/// Counts spawned tasks not yet finished; wait() returns when it reaches zero.
class TaskGroup {
public:
    [[nodiscard]] std::int64_t pending() const noexcept { return pending_.load(std::memory_order_acquire); }

private:
    friend class Runtime;
    friend struct RuntimeAccess;
    std::atomic<std::int64_t> pending_{0};
};

/// Per-core counters of the blocking monitor (zeros when it is off).
struct MonitorCounters {
    std::uint64_t blocks = 0;                         ///< a worker of the core blocked in the kernel
    std::uint64_t unblocks = 0;                       ///< a blocked worker of the core was woken
    std::chrono::nanoseconds no_ready_time{0};        ///< time the core had no ready worker
    std::chrono::nanoseconds oversubscribed_time{0};  ///< time it had more than one ready worker
    std::uint64_t oversubscribing_wakeups = 0;        ///< wakeups that found another ready worker (ebpf)
    std::chrono::nanoseconds oversubscribed_wait{0};  ///< part of it with a woken worker not yet run (ebpf)
    std::uint64_t woken_events = 0;                   ///< wakeup events (notify_when_woken) handled (ebpf)
    std::chrono::nanoseconds woken_event_latency{0};  ///< their wakeup -> the monitor's thread, summed (ebpf)
};

/// What the scheduler needs from a blocking monitor (strata::monitor, or a
/// fake in tests). ready() is called at every scheduling point: it must not
/// make a system call.
class CoreMonitor {
public:
    virtual ~CoreMonitor() = default;
    /// Ready (running or runnable) registered workers on `core` right now.
    [[nodiscard]] virtual int ready(int core) const noexcept = 0;
    virtual Result<void> register_worker(pid_t tid, int core) = 0;
    virtual void unregister_worker(pid_t tid) = 0;
    /// "ebpf", "proc", "off" or a test's name.
    [[nodiscard]] virtual std::string_view backend() const noexcept = 0;
    /// Why this backend was chosen (one line).
    [[nodiscard]] virtual std::string_view reason() const noexcept = 0;
    [[nodiscard]] virtual MonitorCounters counters(int core) const = 0;
    /// Asks for one call of the factory's callback for `core` when a block
    /// next takes its ready count from two to one; false when the monitor
    /// cannot (then the runtime acts at once). No system call.
    virtual bool notify_when_one_ready(int /*core*/) noexcept { return false; }
    /// Asks for one call of the factory's callback for `core` when a wakeup
    /// next takes its ready count from one to two or more; false when the
    /// monitor cannot (CoverPriority::surrender then falls back to the
    /// workers' scheduling points). No system call.
    virtual bool notify_when_woken(int /*core*/) noexcept { return false; }
    /// Makes running worker `tid` the standby worker of `core` (tid 0 ends
    /// it): not counted in ready(core), and a block that empties the core
    /// calls no callback (the standby worker takes over). Called by `tid`
    /// itself. False when the monitor cannot (CoverPriority::idle_standby
    /// then is refused). No system call.
    virtual bool set_standby(int /*core*/, pid_t /*tid*/) noexcept { return false; }
    /// True when the factory's callback surely runs each time a core is left
    /// with no ready worker (the runtime then leaves waking to it).
    [[nodiscard]] virtual bool reports_empty_cores() const noexcept { return false; }
};

/// Makes the monitor for `cores` CPU numbers [0, cores); it calls
/// `on_core_without_ready_worker(core)` (from any thread) when a core is left
/// with no ready worker, and after notify_when_one_ready(core) when a block
/// leaves it with one.
using MonitorFactory = std::function<Result<std::unique_ptr<CoreMonitor>>(
    int cores, std::function<void(int core)> on_core_without_ready_worker)>;

/// The default factory: strata::monitor with STRATA_MONITOR (auto when unset).
MonitorFactory monitor_from_env();

/// A factory for no monitor at all (the `off` baseline).
MonitorFactory no_monitor();

/// The kernel policy of a worker woken to cover for a blocked worker of its core.
enum class CoverPriority {
    /// idle when this process may return a thread from SCHED_IDLE to normal
    /// (CAP_SYS_NICE or RLIMIT_NICE ≥ 20), else normal; idle_standby instead
    /// of idle when the monitor reports wakeups (ebpf) and the job owns its
    /// cores (its cpuset cgroup is exclusive, or its affinity is narrower than
    /// the online CPUs). The reason is logged with STRATA_VERBOSE=1 and given
    /// by Runtime::cover_reason().
    automatic,
    /// SCHED_IDLE while another worker of its core is blocked: when that
    /// worker wakes the kernel preempts the cover at once. With the ebpf
    /// monitor and one worker per core, a worker back from its block takes
    /// the cover role, between tasks, from a cover blocked in a task of its
    /// own (CoreStats::cover_swaps). start() fails with
    /// permission_denied when the process cannot return a thread to normal.
    idle,
    /// Same policy as every worker: a woken worker shares the core with its
    /// cover until one of them reaches a scheduling point (before issue 15).
    normal,
    /// The cover keeps the normal policy (its full weight against other
    /// processes) until the monitor's wakeup event says a worker it covers
    /// for is back; then the monitor's thread lowers it to SCHED_IDLE at nice
    /// 19, a priority change that makes the kernel reschedule the cover's CPU
    /// at once, even from another CPU. Needs the ebpf monitor (with another,
    /// covers stay normal until a scheduling point); start() fails with
    /// permission_denied as for idle.
    surrender,
    /// idle and surrender together: SCHED_IDLE while covering, and the same
    /// rescheduling request on the wakeup event.
    idle_surrender,
    /// Opt-in (issue 15): idle, and on the monitor's wakeup event the
    /// monitor's thread sends the cover a real-time signal whose handler
    /// suspends it in the middle of its task (a futex wait) until the woken
    /// worker reaches a scheduling point (it hands the core back and
    /// surrenders), blocks again, runs out of work or exits, or the runtime
    /// stops; then the cover continues its task. A suspension is bounded
    /// (100 ms) in case a release is lost. Needs the ebpf monitor, as
    /// surrender does. Not picked by auto: a system call that SA_RESTART does
    /// not restart (poll, nanosleep, ...) can return EINTR in a cover's task.
    idle_suspend,
    /// Issue 15 (auto picks it on owned cores): idle, and a worker that would park while another
    /// worker of its core is active stays runnable instead, at SCHED_IDLE,
    /// spinning on the monitor's ready count (one such standby worker per
    /// core). When the core's last ready worker blocks the kernel switches
    /// to it at once — no event, no monitor thread, no futex wake — and it
    /// takes a task as that worker's cover. While the core's workers run it
    /// gets SCHED_IDLE's share (weight 3 of 1027, about 0.3 %); while they
    /// are blocked with no task to take it spins, so the core shows busy.
    /// It parks when its core has no active worker left. Needs the ebpf
    /// monitor, as surrender does; start() fails with permission_denied as
    /// for idle.
    idle_standby,
};

/// Parses a worker count, 1 to 4096 (STRATA_WORKERS, `strata ocr --workers`);
/// errors name `param` and the value.
Result<int> parse_workers(std::string_view text, std::string_view param);

/// "auto", "idle", "normal".
std::string_view to_string(CoverPriority priority) noexcept;
/// Parses "auto", "idle", "normal", "surrender", "idle+surrender", "idle+suspend" or "idle+standby"; errors
/// name `param`, the value and the accepted ones.
Result<CoverPriority> parse_cover_priority(std::string_view text, std::string_view param);

struct Options {
    /// CPUs to run on; empty means every CPU of sched_getaffinity().
    std::vector<int> cpus;
    /// Worker threads that run tasks side by side (an OCR program's
    /// ocrNbWorkers()); 0 means one per CPU. Fewer than the CPUs: the first
    /// `workers` of them. More: spread over the CPUs in turn, so a core keeps
    /// that many workers ready at once and the kernel time-shares them; its
    /// blocking monitor then wakes a cover only when all of them are blocked,
    /// and a worker surrenders only while more than that many are ready.
    int workers = 0;
    /// Most workers bound to one core besides its share of `workers` (the
    /// first plus those woken for blocked ones).
    int max_workers_per_core = 16;
    /// The blocking monitor; empty means monitor_from_env().
    MonitorFactory monitor;
    /// Print per-core statistics on stderr at stop() (STRATA_STATS=1).
    bool print_stats = false;
    /// Log the monitor choice and why (STRATA_VERBOSE=1).
    bool verbose = false;
    /// Period of the leader's scan for cores without a ready worker, which
    /// catches notifications lost to the monitor's races (the paper's 1 ms scan).
    /// With a monitor that reports empty cores, the scan runs at this period
    /// only while some core has a blocked worker, a cover or a surrendered
    /// task; when every core has been settled for 10 periods the leader dozes
    /// (one scan per 50 periods) until the monitor's next event, so
    /// compute-only work is not interrupted 1000 times a second.
    std::chrono::microseconds leader_period{1000};
    /// The kernel policy of covering workers (STRATA_COVER_PRIORITY). Only
    /// acts with a monitor: without one no worker covers for another.
    CoverPriority cover_priority = CoverPriority::automatic;

    /// Defaults overridden by STRATA_CPUS (e.g. "0-3,6"), STRATA_WORKERS (a
    /// count, 1 to 4096), STRATA_STATS, STRATA_VERBOSE, STRATA_COVER_PRIORITY
    /// (auto, idle, normal, ...).
    static Result<Options> from_env();
};

/// Per-core statistics (Runtime::stats()).
struct CoreStats {
    int cpu = 0;
    std::uint64_t tasks = 0;             ///< tasks executed by workers of this core
    std::uint64_t steals = 0;            ///< tasks taken from another worker's deque
    std::uint64_t surrenders = 0;        ///< a worker left for the idle pool because the core had >1 ready
    std::uint64_t wakes = 0;             ///< the leader woke an idle worker because no worker was ready
    std::uint64_t workers = 0;           ///< worker threads created for the core
    std::uint64_t context_switches = 0;  ///< voluntary + involuntary, summed over its workers (at stop)
    std::uint64_t covers = 0;            ///< a worker was set to SCHED_IDLE to cover for a blocked one
    std::uint64_t restores = 0;          ///< a covering worker got the normal policy back
    /// a worker back from its block took the cover role, between tasks, from
    /// a cover blocked in its own task (which gets the normal policy back)
    std::uint64_t cover_swaps = 0;
    std::uint64_t kicks = 0;             ///< surrender requests: a cover set to nice 19 on the wakeup event
    std::uint64_t suspend_requests = 0;  ///< idle+suspend: signals sent to a cover on the wakeup event
    std::uint64_t suspends = 0;          ///< idle+suspend: covers suspended by the signal on the wakeup event
    std::uint64_t suspend_declined = 0;  ///< idle+suspend: signals that found the cover inside the runtime
    std::uint64_t suspend_timeouts = 0;  ///< idle+suspend: suspensions that ended by their 100 ms bound
    /// idle+suspend: requests or suspensions ended because another worker of
    /// the core reached a scheduling point (it hands the core back).
    std::uint64_t suspend_handbacks = 0;
    /// idle+suspend: time covers spent suspended, summed and the longest one.
    std::chrono::nanoseconds suspended_time{0}, suspended_max{0};
    /// idle+suspend: from the signal sent to the cover's handler running (the
    /// wake-to-suspend latency), summed over suspensions and the longest one.
    std::chrono::nanoseconds suspend_latency{0}, suspend_latency_max{0};
    std::uint64_t scans = 0;              ///< the leader's periodic scans of the core
    std::uint64_t standby_takeovers = 0;  ///< idle+standby: the standby worker took over its emptied core
    MonitorCounters monitor;
};

/// The task runtime. Start one per process (several work, but compete for cores).
/// Work an idle worker does itself before it spins or parks (distributed
/// OCR's network: the message an idle rank waits for is then handled on the
/// worker that will run what it makes ready, with no hand-over between
/// threads). Called outside any task, on any worker, several at once: an
/// implementation serializes itself (try_lock) and never blocks.
class IdlePoller {
public:
    virtual ~IdlePoller() = default;
    /// Does one small piece of work; true when it did some (the worker then
    /// looks for tasks again at once).
    virtual bool poll() noexcept = 0;
    /// True while more work for poll() is likely soon: the worker then keeps
    /// polling (yielding between polls) instead of parking.
    [[nodiscard]] virtual bool expecting() const noexcept = 0;
};

class Runtime {
public:
    /// Starts the workers (one per CPU, bound), the leader and the monitor.
    /// Errors: invalid_argument for an empty or foreign CPU list; the monitor's
    /// error when an explicitly requested backend is not available.
    static Result<std::unique_ptr<Runtime>> start(Options options);

    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;
    /// stop().
    ~Runtime();

    /// Makes `task` runnable (a scheduling point when called from a task).
    /// With a group, the group counts it until it finished.
    void spawn(Task* task, TaskGroup* group = nullptr);
    /// Runs `function` as a task (allocated and freed by the runtime).
    void spawn(std::function<void()> function, TaskGroup* group = nullptr);
    /// Like spawn(), ordered among the queued tasks: a task spawned with a
    /// priority starts before every queued task spawned without one; among
    /// them a higher `priority` first, equal ones in spawn order. They wait
    /// in one heap shared by all workers (a lock per spawn and take); tasks
    /// without a priority never touch it (one atomic load per look).
    void spawn_prioritized(Task* task, std::uint64_t priority, TaskGroup* group = nullptr);
    void spawn_prioritized(std::function<void()> function, std::uint64_t priority, TaskGroup* group = nullptr);
    /// Returns when every task of `group` has finished. Inside a task it runs
    /// other tasks meanwhile (a scheduling point); outside it sleeps.
    void wait(TaskGroup& group);
    /// A scheduling point: a worker of an oversubscribed core goes idle here
    /// until its core needs it again. No-op outside tasks.
    void yield();

    /// Stops after the tasks already running; queued tasks are dropped.
    /// Joins every thread and prints the statistics if asked. Idempotent.
    void stop();

    /// CPU numbers the workers are bound to, in order.
    [[nodiscard]] const std::vector<int>& cpus() const noexcept;
    /// Workers that run tasks side by side (Options::workers, or one per CPU),
    /// covers for blocked workers not counted.
    [[nodiscard]] int workers() const noexcept;
    [[nodiscard]] std::string_view monitor_backend() const noexcept;
    [[nodiscard]] std::string_view monitor_reason() const noexcept;
    /// True when no task is queued and no worker is active (each one parked
    /// or standing by): nothing runs a task or is about to. A snapshot, for a
    /// thread beside the workers that decides whether it may use the cores
    /// (distributed OCR's communication thread polls without sleeping then).
    [[nodiscard]] bool idle() const noexcept;
    /// The cover priority in effect (never automatic).
    [[nodiscard]] CoverPriority cover_priority() const noexcept;
    /// Why (one line), e.g. "auto: normal, because ... (EPERM)".
    [[nodiscard]] std::string_view cover_reason() const noexcept;
    /// A snapshot of the statistics of every core (context switches are summed at stop()).
    [[nodiscard]] std::vector<CoreStats> stats() const;
    /// The statistics table printed by STRATA_STATS=1.
    [[nodiscard]] std::string stats_report() const;

    /// The runtime the calling thread works for; nullptr outside workers.
    static Runtime* current() noexcept;
    /// The CPU the calling worker is bound to; -1 outside workers.
    static int current_cpu() noexcept;

    /// For monitors and tests: the monitor says `cpu` has no ready worker.
    void core_without_ready_worker(int cpu);

    /// Idle workers call `poller` (nullptr: none) from now on. It must stay
    /// valid until stop() returned or another one was set and every worker
    /// went through a task or a park since (in practice: set it once, before
    /// the work that needs it, and stop() before it goes).
    void set_idle_poller(IdlePoller* poller) noexcept;

    struct Impl;

private:
    explicit Runtime(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace strata::runtime
