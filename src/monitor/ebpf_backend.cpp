// SPDX-License-Identifier: MIT
// Backend ebpf: bpf/monitor.bpf.c keeps the counts; this file loads it,
// mmaps the per-core array, registers workers in its hash map, and runs the
// thread that turns ring-buffer events into callbacks (after the threshold).
//
// Nothing is pinned: the skeleton's descriptors are the only references to
// the programs, links and maps, so destroying the skeleton — or the process
// dying — unloads everything.
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <deque>
#include <thread>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "backends.hpp"
#include "core/log.hpp"
#include "libbpf_log.hpp"
#include "monitor_bpf.skel.h"
#include "monitor_shared.h"

namespace strata::monitor::detail {

namespace {

constexpr char kPrivilegeFix[] = "run as root or grant CAP_BPF and CAP_PERFMON, or use STRATA_MONITOR=proc";

static_assert(sizeof(strata_monitor_core) == 128, "two cache lines per core");
static_assert(offsetof(strata_monitor_core, ready) == 0);

struct SkeletonDeleter {
    void operator()(monitor_bpf* skel) const noexcept { monitor_bpf__destroy(skel); }
};
using Skeleton = std::unique_ptr<monitor_bpf, SkeletonDeleter>;

// "<step>: Operation not permitted (EPERM); <how to get the privilege>", or
// for other causes the step, the errno and libbpf's first warning.
std::unexpected<Error> load_error(int err, const std::string& step, const CaptureLibbpfWarnings& warnings) {
    auto error = make_sys_error(err, "{}", step);
    if (error.error().code == Errc::permission_denied) {
        error.error().message += std::string("; ") + kPrivilegeFix;
    } else {
        error.error().message += warnings.suffix();
    }
    return error;
}

// Opens, sizes, loads and attaches the programs. Errors name the step.
Result<Skeleton> load_skeleton(int cores, const char* who) {
    const CaptureLibbpfWarnings warnings;
    Skeleton skel(monitor_bpf__open());
    if (!skel) {
        const int err = errno;
        return make_sys_error(err, "{}: open the BPF skeleton{}", who, warnings.suffix());
    }
    skel->rodata->target_tgid = static_cast<__u32>(::getpid());
    if (int err = bpf_map__set_max_entries(skel->maps.cores, static_cast<__u32>(cores)); err != 0) {
        return make_sys_error(-err, "{}: size the per-core map to {} cores", who, cores);
    }
    if (int err = monitor_bpf__load(skel.get()); err != 0) {
        return load_error(-err, fmt::format("{}: load the BPF program", who), warnings);
    }
    if (int err = monitor_bpf__attach(skel.get()); err != 0) {
        return load_error(-err, fmt::format("{}: attach to tp_btf/sched_switch and sched_wakeup", who), warnings);
    }
    return skel;
}

template <class T>
T atomic_read(const T& field) noexcept {
    return __atomic_load_n(&field, __ATOMIC_ACQUIRE);
}

class EbpfMonitor final : public Monitor {
public:
    EbpfMonitor(const Options& options, int cores, Callback callback, Callback settled, Skeleton skel,
                strata_monitor_core* slots, std::size_t mapped_bytes, int stop_fd)
        : Monitor(Backend::ebpf, options.reason, cores),
          threshold_ns_(static_cast<std::uint64_t>(options.threshold.count())),
          callback_(std::move(callback)),
          settled_(std::move(settled)),
          skel_(std::move(skel)),
          slots_(slots),
          mapped_bytes_(mapped_bytes),
          stop_fd_(stop_fd),
          callbacks_(std::make_unique<std::atomic<std::uint64_t>[]>(static_cast<std::size_t>(cores))),
          woken_events_(std::make_unique<std::atomic<std::uint64_t>[]>(static_cast<std::size_t>(cores))),
          woken_latency_ns_(std::make_unique<std::atomic<std::uint64_t>[]>(static_cast<std::size_t>(cores))) {
        set_ready_counters(reinterpret_cast<const std::atomic<std::int32_t>*>(&slots_[0].ready),
                           sizeof(strata_monitor_core) / sizeof(std::int32_t));
    }

    // The ring buffer needs `this` as its context, so it is made after construction.
    Result<void> start_thread() {
        ring_ = ring_buffer__new(bpf_map__fd(skel_->maps.events), &EbpfMonitor::on_event, this, nullptr);
        if (ring_ == nullptr) {
            return make_sys_error(errno, "Monitor::start: backend=ebpf: open the ring buffer");
        }
        thread_ = std::thread([this] { run(); });
        return {};
    }

    ~EbpfMonitor() override {
        if (thread_.joinable()) {
            const std::uint64_t one = 1;
            (void)::write(stop_fd_, &one, sizeof(one));
            thread_.join();
        }
        if (ring_ != nullptr) {
            ring_buffer__free(ring_);
        }
        ::munmap(slots_, mapped_bytes_);
        ::close(stop_fd_);
    }

private:
    struct Pending {
        std::uint32_t core;
        std::uint64_t deadline_ns;
        std::uint64_t unblocks;
    };

    Result<void> do_register(pid_t tid, int core, bool blocked) override {
        const auto key = static_cast<__u32>(tid);
        const strata_monitor_worker value{static_cast<__u32>(core), blocked ? 1U : 0U, 0, 0};
        if (bpf_map_update_elem(bpf_map__fd(skel_->maps.workers), &key, &value, BPF_NOEXIST) != 0) {
            const int err = errno;
            if (err == EEXIST) {
                return make_error(Errc::already_exists, "Monitor::register_worker: tid={}: already registered", tid);
            }
            return make_sys_error(err, "Monitor::register_worker: tid={}: add to the BPF map", tid);
        }
        if (!blocked) {
            change_ready(static_cast<std::size_t>(core), +1);
        }
        return {};
    }

    void do_unregister(pid_t tid) override {
        const auto key = static_cast<__u32>(tid);
        strata_monitor_worker value{};
        if (bpf_map_lookup_and_delete_elem(bpf_map__fd(skel_->maps.workers), &key, &value) != 0) {
            return;
        }
        if (value.blocked == 0) {
            change_ready(value.core, -1);
        }
        if (value.waiting != 0) {
            __atomic_fetch_sub(&slots_[value.core].waiting, 1, __ATOMIC_ACQ_REL);
        }
    }

    // The user-space twin of change_ready in monitor.bpf.c: same atomics on
    // the same mmapped memory.
    void change_ready(std::size_t core, std::int32_t delta) noexcept {
        auto& slot = slots_[core];
        const auto now = monotonic_ns();
        const auto last = __atomic_exchange_n(&slot.last_change_ns, now, __ATOMIC_ACQ_REL);
        const auto before = __atomic_fetch_add(&slot.ready, delta, __ATOMIC_ACQ_REL);
        if (now > last) {
            if (before <= 0) {
                __atomic_fetch_add(&slot.no_ready_ns, now - last, __ATOMIC_RELAXED);
            }
            if (before > 1) {
                __atomic_fetch_add(&slot.oversub_ns, now - last, __ATOMIC_RELAXED);
            }
            if (before > 1 && __atomic_load_n(&slot.waiting, __ATOMIC_ACQUIRE) > 0) {
                __atomic_fetch_add(&slot.oversub_wait_ns, now - last, __ATOMIC_RELAXED);
            }
        }
    }

    CoreStats do_stats(int core) const override {
        const auto& slot = slots_[static_cast<std::size_t>(core)];
        CoreStats stats;
        stats.blocks = atomic_read(slot.blocks);
        stats.unblocks = atomic_read(slot.unblocks);
        stats.context_switches = atomic_read(slot.switches);
        stats.no_ready_ns = atomic_read(slot.no_ready_ns);
        stats.oversubscribed_ns = atomic_read(slot.oversub_ns);
        stats.oversubscribing_wakeups = atomic_read(slot.oversub_wakeups);
        stats.oversubscribed_wait_ns = atomic_read(slot.oversub_wait_ns);
        stats.callbacks = callbacks_[static_cast<std::size_t>(core)].load(std::memory_order_relaxed);
        stats.woken_events = woken_events_[static_cast<std::size_t>(core)].load(std::memory_order_relaxed);
        stats.woken_event_latency_ns =
            woken_latency_ns_[static_cast<std::size_t>(core)].load(std::memory_order_relaxed);
        const auto now = monotonic_ns();
        const auto last = atomic_read(slot.last_change_ns);
        const auto ready = atomic_read(slot.ready);
        if (now > last) {
            if (ready <= 0) {
                stats.no_ready_ns += now - last;
            }
            if (ready > 1) {
                stats.oversubscribed_ns += now - last;
            }
            if (ready > 1 && atomic_read(slot.waiting) > 0) {
                stats.oversubscribed_wait_ns += now - last;
            }
        }
        return stats;
    }

    // The BPF program reads the flag on the block that takes the core from two
    // ready workers to one, and clears it when it sends the event.
    bool do_notify_when_one_ready(int core) noexcept override {
        __atomic_store_n(&slots_[static_cast<std::size_t>(core)].settle_armed, 1U, __ATOMIC_RELEASE);
        return true;
    }

    // Armed by the runtime for the wakeup that gives the core a second ready
    // worker (monitor.bpf.c, stmon_wakeup); one event per arming.
    bool do_notify_when_woken(int core) noexcept override {
        __atomic_store_n(&slots_[static_cast<std::size_t>(core)].woken_armed, 1U, __ATOMIC_RELEASE);
        return true;
    }

    // The standby mark is set before the worker leaves the count and cleared
    // before it enters it again: a block in between (a page fault) is then
    // either ignored while it is uncounted or counted by the BPF program like
    // any other, never ignored while it counts.
    bool do_set_standby(int core, pid_t tid) noexcept override {
        auto& slot = slots_[static_cast<std::size_t>(core)];
        if (tid != 0) {
            __atomic_store_n(&slot.standby_tid, static_cast<__u32>(tid), __ATOMIC_RELEASE);
            change_ready(static_cast<std::size_t>(core), -1);
        } else {
            __atomic_store_n(&slot.standby_tid, 0U, __ATOMIC_RELEASE);
            change_ready(static_cast<std::size_t>(core), +1);
        }
        return true;
    }

    static int on_event(void* context, void* data, std::size_t size) {
        auto* self = static_cast<EbpfMonitor*>(context);
        if (size < sizeof(strata_monitor_event)) {
            return 0;
        }
        strata_monitor_event event{};
        std::memcpy(&event, data, sizeof(event));
        if (event.core >= static_cast<std::uint32_t>(self->cores())) {
            return 0;
        }
        if (event.kind == STRATA_MONITOR_EVENT_WOKEN) {
            // From the BPF program's wakeup to this thread (the same clock).
            const auto now = monotonic_ns();
            self->woken_events_[event.core].fetch_add(1, std::memory_order_relaxed);
            self->woken_latency_ns_[event.core].fetch_add(now > event.time_ns ? now - event.time_ns : 0,
                                                          std::memory_order_relaxed);
        }
        if (event.kind == STRATA_MONITOR_EVENT_SETTLED || event.kind == STRATA_MONITOR_EVENT_WOKEN) {
            // No threshold: the runtime asked for exactly this moment.
            self->settled_(static_cast<int>(event.core));
            return 0;
        }
        self->pending_.push_back({event.core, event.time_ns + self->threshold_ns_, event.unblocks});
        return 0;
    }

    // Calls back for every pending event whose deadline has passed, if the
    // core is still empty and no worker of it woke in between; returns the
    // nanoseconds until the next deadline (-1: none).
    long long dispatch_due() {
        const auto now = monotonic_ns();
        while (!pending_.empty() && pending_.front().deadline_ns <= now) {
            const auto event = pending_.front();
            pending_.pop_front();
            const auto& slot = slots_[event.core];
            const bool still_empty = atomic_read(slot.ready) <= 0;
            const bool no_wakeup = threshold_ns_ == 0 || atomic_read(slot.unblocks) == event.unblocks;
            if (still_empty && no_wakeup) {
                callbacks_[event.core].fetch_add(1, std::memory_order_relaxed);
                callback_(static_cast<int>(event.core));
            }
        }
        if (pending_.empty()) {
            return -1;
        }
        return static_cast<long long>(pending_.front().deadline_ns - now);
    }

    // The callback's latency is the point of this thread, and on a loaded
    // machine a normal thread can wait milliseconds for a CPU. It sleeps in
    // ppoll and runs only a short callback, so where permitted it takes the
    // lowest real-time priority; otherwise it stays a normal thread. Reset on
    // fork: the callback may create threads (the runtime's workers, for a
    // core whose workers all blocked), and they must not inherit SCHED_FIFO.
    static void raise_priority() noexcept {
        sched_param param{};
        param.sched_priority = 1;
        if (::sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) != 0) {
            strata::detail::log().debug("monitor: ebpf event thread stays SCHED_OTHER: {}", describe_errno(errno));
        }
    }

    void run() {
        (void)::pthread_setname_np(::pthread_self(), "strata-monitor");
        raise_priority();
        std::array<pollfd, 2> fds{pollfd{ring_buffer__epoll_fd(ring_), POLLIN, 0}, pollfd{stop_fd_, POLLIN, 0}};
        for (;;) {
            const auto wait_ns = dispatch_due();
            timespec timeout{};
            timespec* timeout_ptr = nullptr;
            if (wait_ns >= 0) {
                timeout.tv_sec = wait_ns / 1'000'000'000LL;
                timeout.tv_nsec = wait_ns % 1'000'000'000LL;
                timeout_ptr = &timeout;
            }
            const int n = ::ppoll(fds.data(), fds.size(), timeout_ptr, nullptr);
            if (n < 0 && errno != EINTR) {
                return;
            }
            if (fds[1].revents != 0) {
                return;
            }
            if (fds[0].revents != 0) {
                ring_buffer__consume(ring_);
            }
        }
    }

    std::uint64_t threshold_ns_;
    Callback callback_;
    Callback settled_;
    Skeleton skel_;
    strata_monitor_core* slots_;
    std::size_t mapped_bytes_;
    int stop_fd_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> callbacks_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> woken_events_;      // wakeup events (notify_when_woken) received
    std::unique_ptr<std::atomic<std::uint64_t>[]> woken_latency_ns_;  // their wakeup -> this thread, summed
    ring_buffer* ring_ = nullptr;
    std::deque<Pending> pending_;  // only the monitor thread touches it
    std::thread thread_;
};

std::string kernel_release() {
    utsname uts{};
    ::uname(&uts);
    return uts.release;
}

}  // namespace

Result<std::unique_ptr<Monitor>> start_ebpf(const Options& options, int cores, Monitor::Callback callback,
                                            Monitor::Callback settled) {
    auto skel = load_skeleton(cores, "Monitor::start: backend=ebpf");
    if (!skel) {
        return std::unexpected(skel.error());
    }

    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const auto bytes = (sizeof(strata_monitor_core) * static_cast<std::size_t>(cores) + page - 1) / page * page;
    void* mapped = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd((*skel)->maps.cores), 0);
    if (mapped == MAP_FAILED) {
        return make_sys_error(errno, "Monitor::start: backend=ebpf: mmap the per-core map ({} cores)", cores);
    }
    auto* slots = static_cast<strata_monitor_core*>(mapped);
    const auto now = monotonic_ns();
    for (int c = 0; c < cores; ++c) {
        __atomic_store_n(&slots[c].last_change_ns, now, __ATOMIC_RELEASE);
    }

    const int stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd < 0) {
        const int err = errno;
        ::munmap(mapped, bytes);
        return make_sys_error(err, "Monitor::start: backend=ebpf: eventfd");
    }
    auto monitor = std::make_unique<EbpfMonitor>(options, cores, std::move(callback), std::move(settled),
                                                 std::move(*skel), slots, bytes, stop_fd);
    if (auto started = monitor->start_thread(); !started) {
        return std::unexpected(started.error());
    }
    return monitor;
}

Result<std::string> probe_ebpf() {
    auto skel = load_skeleton(1, "ebpf");
    if (!skel) {
        return std::unexpected(skel.error());
    }
    return fmt::format("the BPF monitor loads and attaches to tp_btf/sched_switch and sched_wakeup (kernel {})",
                       kernel_release());
}

}  // namespace strata::monitor::detail
