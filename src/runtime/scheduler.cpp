// SPDX-License-Identifier: MIT
// Runtime: start, spawn, wait, yield, stop (include/strata/runtime.hpp).
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <random>
#include <thread>

#include "core/log.hpp"
#include "cover.hpp"
#include "cpuset.hpp"
#include "io_priority.hpp"
#include "ownership.hpp"
#include "scheduler.hpp"

namespace strata::runtime {

namespace {

thread_local detail::Worker* tls_worker = nullptr;

// Options::workers above this is surely a mistake (a typo'd count), not a plan.
constexpr int max_workers = 4096;

class FunctionTask final : public Task {
public:
    explicit FunctionTask(std::function<void()> function) : function_(std::move(function)) {}
    void execute() override {
        function_();
        delete this;
    }

private:
    std::function<void()> function_;
};

}  // namespace

namespace detail {
detail::Worker*& current_worker() noexcept {
    return tls_worker;
}
}  // namespace detail

Result<void> Runtime::Impl::place_cores(Options opts) {
    auto found = opts.cpus.empty() ? allowed_cpus() : validate_cpus(opts.cpus);
    if (!found) {
        return std::unexpected(found.error());
    }
    if (opts.max_workers_per_core < 1) {
        return make_error(Errc::invalid_argument,
                          "Runtime::start: max_workers_per_core={}: at least one worker per core is needed",
                          opts.max_workers_per_core);
    }
    if (opts.workers < 0 || opts.workers > max_workers) {
        return make_error(Errc::invalid_argument, "Runtime::start: workers={}: expected 0 (one per CPU) to {}",
                          opts.workers, max_workers);
    }
    cpus = std::move(*found);
    const auto wanted = static_cast<std::size_t>(opts.workers);
    if (wanted > 0 && wanted < cpus.size()) {
        cpus.resize(wanted);
    }
    max_cpu = *std::max_element(cpus.begin(), cpus.end()) + 1;
    std::size_t slot_total = 0;
    for (std::size_t i = 0; i < cpus.size(); ++i) {
        auto core = std::make_unique<detail::Core>();
        core->index = static_cast<int>(i);
        core->cpu = cpus[i];
        // More workers than CPUs: the first cores take one more each.
        if (wanted > cpus.size()) {
            core->base = static_cast<int>(wanted / cpus.size() + (i < wanted % cpus.size() ? 1 : 0));
        }
        slot_total += static_cast<std::size_t>(core->base - 1 + opts.max_workers_per_core);
        cores.push_back(std::move(core));
    }
    slots = std::vector<std::atomic<detail::Worker*>>(slot_total);
    options = std::move(opts);
    return {};
}

Result<void> Runtime::Impl::start_monitor() {
    MonitorFactory factory = options.monitor ? options.monitor : monitor_from_env();
    // The monitor's thread is not a worker: it attends to the core at once
    // instead of waking the leader, one thread hop less.
    auto made = factory(max_cpu, [this](int cpu) {
        // Counted before monitor_ready is read, both seq_cst (as in stop()):
        // either stop() sees this event in flight and waits for it, or the
        // event sees monitor_ready cleared and leaves the monitor alone.
        monitor_events.fetch_add(1, std::memory_order_seq_cst);
        for (auto& core : cores) {
            if (core->cpu == cpu && monitor_ready.load(std::memory_order_seq_cst)) {
                attend(*core);
                // A dozing leader (leader.cpp) scans at its period again from the first event on.
                if (leader_dozing.load(std::memory_order_seq_cst)) {
                    notify_leader();
                }
                break;
            }
        }
        monitor_events.fetch_sub(1, std::memory_order_seq_cst);
    });
    if (!made) {
        return std::unexpected(made.error());
    }
    monitor = std::move(*made);
    monitored = monitor && monitor->backend() != "off";
    empty_cores_reported = monitored && monitor->reports_empty_cores();
    // Arming the wakeup event once, before any worker exists, is harmless:
    // it tells whether the monitor can report wakeups.
    const bool wakeups = monitored && !cpus.empty() && monitor->notify_when_woken(cpus.front());
    exact_counts = wakeups;
    // Read only when it can matter: auto with a monitor that reports wakeups.
    const auto owned = options.cover_priority == CoverPriority::automatic && wakeups
                           ? detail::owned_cores(detail::read_cpu_facts())
                           : std::nullopt;
    auto cover = detail::choose_cover_priority(options.cover_priority, monitored, wakeups, owned);
    if (!cover) {
        stop();
        return std::unexpected(cover.error());
    }
    cover_idle.store(cover->idle || cover->surrender, std::memory_order_release);
    cover_at_start = cover->idle;
    cover_surrender = cover->surrender;
    cover_suspend = cover->suspend;
    cover_standby = cover->standby;
    if (cover_suspend) {
        suspend_nice = detail::base_nice();  // read here: the signal handler only uses the copy
        install_suspend_handler();
    }
    cover_mode = cover->priority();
    cover_reason = std::move(cover->reason);
    monitor_ready.store(true, std::memory_order_release);
    return {};
}

Result<std::unique_ptr<Runtime>> Runtime::start(Options options) {
    auto impl = std::make_unique<Impl>();
    if (auto placed = impl->place_cores(std::move(options)); !placed) {
        return std::unexpected(placed.error());
    }
    std::unique_ptr<Runtime> runtime(new Runtime(std::move(impl)));
    Impl& rt = *runtime->impl_;
    rt.owner = runtime.get();
    rt.io_priority = detail::worker_io_priority();
    if (auto started = rt.start_monitor(); !started) {
        return std::unexpected(started.error());
    }
    if (rt.options.verbose) {
        fmt::print(stderr, "strata runtime: {} workers on CPUs {}; monitor {}: {}; cover priority {}\n",
                   runtime->workers(), describe_cpus(rt.cpus), runtime->monitor_backend(), runtime->monitor_reason(),
                   rt.cover_reason);
    }

    for (auto& core : rt.cores) {
        for (int i = 0; i < core->base; ++i) {
            if (auto worker = rt.add_worker(*core); !worker) {
                rt.stop();
                return std::unexpected(worker.error());
            }
        }
    }
    rt.leader = std::thread([&rt] { rt.leader_main(); });
    return runtime;
}

Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Runtime::~Runtime() {
    stop();
}

namespace {

// A task's code calls into the runtime: no suspension in here (suspend.cpp),
// where the thread may hold a runtime lock.
class OutOfBody {
public:
    explicit OutOfBody(detail::Worker* self) noexcept : self_(self) {
        if (self_ != nullptr) {
            saved_ = self_->in_body.exchange(0, std::memory_order_relaxed);
        }
    }
    ~OutOfBody() {
        if (self_ != nullptr) {
            self_->in_body.store(saved_, std::memory_order_relaxed);
        }
    }
    OutOfBody(const OutOfBody&) = delete;
    OutOfBody& operator=(const OutOfBody&) = delete;

private:
    detail::Worker* self_;
    int saved_ = 0;
};

}  // namespace

void Runtime::spawn(Task* task, TaskGroup* group) {
    const OutOfBody guard(tls_worker);
    RuntimeAccess::group(*task) = group;
    if (group != nullptr) {
        group->pending_.fetch_add(1, std::memory_order_relaxed);
    }
    impl_->push(task);
    if (detail::Worker* self = tls_worker; self != nullptr && self->rt == impl_.get()) {
        impl_->scheduling_point(*self);
    }
}

void Runtime::spawn(std::function<void()> function, TaskGroup* group) {
    auto* task = new FunctionTask(std::move(function));
    RuntimeAccess::owned(*task) = true;
    spawn(task, group);
}

void Runtime::spawn_prioritized(Task* task, std::uint64_t priority, TaskGroup* group) {
    const OutOfBody guard(tls_worker);
    RuntimeAccess::group(*task) = group;
    if (group != nullptr) {
        group->pending_.fetch_add(1, std::memory_order_relaxed);
    }
    impl_->push_prioritized(task, priority);
    if (detail::Worker* self = tls_worker; self != nullptr && self->rt == impl_.get()) {
        impl_->scheduling_point(*self);
    }
}

void Runtime::spawn_prioritized(std::function<void()> function, std::uint64_t priority, TaskGroup* group) {
    auto* task = new FunctionTask(std::move(function));
    RuntimeAccess::owned(*task) = true;
    spawn_prioritized(task, priority, group);
}

namespace {

// The heap's order: std::push_heap keeps its greatest element first, so the
// "less" one is the lower priority, or the later spawn among equals.
bool priority_order(const Runtime::Impl::Prioritized& a, const Runtime::Impl::Prioritized& b) {
    return a.priority != b.priority ? a.priority < b.priority : a.seq > b.seq;
}

}  // namespace

void Runtime::Impl::push_prioritized(Task* task, std::uint64_t priority) {
    queued.fetch_add(1, std::memory_order_seq_cst);
    {
        std::lock_guard lock(priority_mutex);
        prioritized.push_back({priority, priority_seq++, task});
        std::push_heap(prioritized.begin(), prioritized.end(), priority_order);
        prioritized_size.fetch_add(1, std::memory_order_release);
    }
    wake_for_spawn();
}

Task* Runtime::Impl::take_prioritized() {
    std::lock_guard lock(priority_mutex);
    if (prioritized.empty()) {
        return nullptr;
    }
    std::pop_heap(prioritized.begin(), prioritized.end(), priority_order);
    Task* task = prioritized.back().task;
    prioritized.pop_back();
    prioritized_size.fetch_sub(1, std::memory_order_release);
    return task;
}

void Runtime::Impl::push(Task* task) {
    queued.fetch_add(1, std::memory_order_seq_cst);
    if (detail::Worker* self = tls_worker; self != nullptr && self->rt == this) {
        self->deque.push(task);
    } else {
        std::lock_guard lock(inject_mutex);
        inject.push_back(task);
        inject_size.fetch_add(1, std::memory_order_release);
    }
    wake_for_spawn();
}

// A parked worker is woken for new work only where the core has fewer active
// workers than it keeps side by side (an active one finds the task itself;
// with several per core, each of them must be there to run tasks at once),
// or, with a monitor, where no worker is ready: the monitor reported that
// core when it emptied, maybe before this task existed, so nobody else would
// act before the next scan.
void Runtime::Impl::wake_for_spawn() {
    if (monitored) {
        for (auto& core : cores) {
            if (monitor->ready(core->cpu) == 0) {
                attend(*core);
            }
        }
    }
    if (sleepers.load(std::memory_order_seq_cst) == 0) {
        return;
    }
    for (auto& core : cores) {
        if (core->active.load(std::memory_order_acquire) < core->base && unpark_one(*core)) {
            return;
        }
    }
}

Task* Runtime::Impl::take_injected() {
    if (inject_size.load(std::memory_order_acquire) == 0) {
        return nullptr;
    }
    std::lock_guard lock(inject_mutex);
    if (inject.empty()) {
        return nullptr;
    }
    Task* task = inject.front();
    inject.pop_front();
    inject_size.fetch_sub(1, std::memory_order_release);
    return task;
}

Task* Runtime::Impl::find_task(detail::Worker& self) {
    // Every 8th look starts at the injection queue: otherwise a task spawned
    // from outside the workers (the external tasks' reactor) waits forever
    // behind workers that keep spawning into their own deques (8, not the 61
    // of Go and Tokio: EDTs run for milliseconds, so 61 looks are a long wait).
    constexpr unsigned inject_period = 8;
    // Prioritized tasks first: they start before every task without a priority.
    Task* task = prioritized_size.load(std::memory_order_acquire) > 0 ? take_prioritized() : nullptr;
    if (task == nullptr && ++self.looks % inject_period == 0) {
        task = take_injected();
    }
    if (task == nullptr) {
        task = self.deque.pop();
    }
    if (task == nullptr) {
        task = take_injected();
    }
    if (task == nullptr) {
        const int count = slot_count.load(std::memory_order_acquire);
        thread_local std::minstd_rand random(
            static_cast<unsigned>(std::hash<std::thread::id>{}(std::this_thread::get_id())));
        const int start = count > 0 ? static_cast<int>(random() % static_cast<unsigned>(count)) : 0;
        for (int i = 0; i < count && task == nullptr; ++i) {
            detail::Worker* victim =
                slots[static_cast<std::size_t>((start + i) % count)].load(std::memory_order_acquire);
            if (victim != nullptr && victim != &self) {
                task = victim->deque.steal();
            }
        }
        if (task != nullptr) {
            self.core->steals.fetch_add(1, std::memory_order_relaxed);
        }
    }
    if (task != nullptr) {
        queued.fetch_sub(1, std::memory_order_seq_cst);
    }
    return task;
}

void Runtime::Impl::execute(detail::Worker& self, Task* task) {
    TaskGroup* group = RuntimeAccess::group(*task);
    // The task is in hand from here on: a surrender at its start point parks
    // as "in a task", so the core hands back to this worker later.
    ++self.task_depth;
    scheduling_point(self);  // task start
    const int outer = self.in_body.exchange(1, std::memory_order_relaxed);
    task->execute();
    self.in_body.store(outer, std::memory_order_relaxed);
    --self.task_depth;
    self.core->tasks.fetch_add(1, std::memory_order_relaxed);
    if (group != nullptr) {
        group->pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
    scheduling_point(self);  // task end
}

void Runtime::wait(TaskGroup& group) {
    detail::Worker* self = tls_worker;
    const OutOfBody guard(self);
    if (self == nullptr || self->rt != impl_.get()) {
        auto pause = std::chrono::microseconds(5);
        while (group.pending() > 0) {
            std::this_thread::sleep_for(pause);
            pause = std::min(pause * 2, std::chrono::microseconds(500));
        }
        return;
    }
    while (group.pending() > 0 && !impl_->stopping.load(std::memory_order_acquire)) {
        impl_->scheduling_point(*self);
        if (Task* task = impl_->find_task(*self); task != nullptr) {
            impl_->execute(*self, task);
        } else {
            // Maybe waiting for the task of a cover it suspended: let it finish.
            if (impl_->cover_suspend && self->core->suspended.load(std::memory_order_acquire) != nullptr) {
                (void)impl_->release_suspended(*self->core);
            }
            std::this_thread::yield();
        }
    }
}

void Runtime::yield() {
    const OutOfBody guard(tls_worker);
    if (detail::Worker* self = tls_worker; self != nullptr && self->rt == impl_.get()) {
        impl_->scheduling_point(*self);
    }
}

void Runtime::stop() {
    impl_->stop();
}

void Runtime::Impl::stop() {
    if (detail::Worker* self = tls_worker; self != nullptr && self->rt == this) {
        // A worker cannot join itself: stop() belongs outside tasks.
        strata::detail::log().error("strata runtime: stop() called from a task; ignored");
        return;
    }
    if (stopped.exchange(true)) {
        return;
    }
    stopping.store(true, std::memory_order_seq_cst);
    release_all_suspended();
    notify_leader();
    if (leader.joinable()) {
        leader.join();
    }
    std::vector<detail::Worker*> all;
    {
        std::lock_guard lock(workers_mutex);
        for (auto& worker : workers) {
            all.push_back(worker.get());
        }
    }
    for (detail::Worker* worker : all) {
        wake(*worker);
    }
    for (detail::Worker* worker : all) {
        if (worker->thread.joinable()) {
            worker->thread.join();
        }
    }
    drop_queued();
    if (options.print_stats) {
        fmt::print(stderr, "{}", owner->stats_report());
    }
    monitor_ready.store(false, std::memory_order_seq_cst);
    while (monitor_events.load(std::memory_order_seq_cst) != 0) {
        std::this_thread::yield();
    }
    monitor.reset();
}

void Runtime::Impl::drop_queued() {
    auto drop = [](Task* task) {
        if (RuntimeAccess::owned(*task)) {
            delete task;
        }
    };
    for (auto& worker : workers) {
        while (Task* task = worker->deque.pop()) {
            drop(task);
        }
    }
    {
        std::lock_guard lock(inject_mutex);
        for (Task* task : inject) {
            drop(task);
        }
        inject.clear();
    }
    std::lock_guard lock(priority_mutex);
    for (const Prioritized& entry : prioritized) {
        drop(entry.task);
    }
    prioritized.clear();
    prioritized_size.store(0, std::memory_order_release);
}

const std::vector<int>& Runtime::cpus() const noexcept {
    return impl_->cpus;
}

int Runtime::workers() const noexcept {
    int count = 0;
    for (const auto& core : impl_->cores) {
        count += core->base;
    }
    return count;
}

void Runtime::set_idle_poller(IdlePoller* poller) noexcept {
    impl_->idle_poller.store(poller, std::memory_order_release);
}

bool Runtime::idle() const noexcept {
    if (impl_->queued.load(std::memory_order_acquire) > 0) {
        return false;
    }
    return std::ranges::all_of(impl_->cores,
                               [](const auto& core) { return core->active.load(std::memory_order_acquire) <= 0; });
}

std::string_view Runtime::monitor_backend() const noexcept {
    return impl_->monitor ? impl_->monitor->backend() : std::string_view("off");
}

std::string_view Runtime::monitor_reason() const noexcept {
    return impl_->monitor ? impl_->monitor->reason() : std::string_view("no monitor");
}

CoverPriority Runtime::cover_priority() const noexcept {
    return impl_->cover_idle.load(std::memory_order_acquire) ? impl_->cover_mode : CoverPriority::normal;
}

std::string_view Runtime::cover_reason() const noexcept {
    return impl_->cover_reason;
}

Runtime* Runtime::current() noexcept {
    return tls_worker != nullptr ? tls_worker->rt->owner : nullptr;
}

int Runtime::current_cpu() noexcept {
    return tls_worker != nullptr ? tls_worker->core->cpu : -1;
}

void Runtime::core_without_ready_worker(int cpu) {
    for (auto& core : impl_->cores) {
        if (core->cpu == cpu) {
            core->needs_attention.store(true, std::memory_order_release);
            impl_->notify_leader();
        }
    }
}

}  // namespace strata::runtime
