// SPDX-License-Identifier: MIT
// The reactor thread (reactor.hpp).
#include "reactor.hpp"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <thread>

#include "core/log.hpp"
#include "keeper.hpp"
#include "tree_kill.hpp"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace strata::external {

namespace {

using Clock = std::chrono::steady_clock;

// What the signal handler may touch: plain atomics, no locks, no allocation.
constexpr std::size_t max_groups = 4096;
std::array<std::atomic<pid_t>, max_groups> g_groups{};
std::atomic<int> g_wake_fd{-1};
std::atomic<int> g_signal{0};
struct sigaction g_old_int {};
struct sigaction g_old_term {};
std::atomic<bool> g_handlers{false};

std::atomic<bool> g_keeper{false};  // a keeper would finish what the handler leaves stopped

void signal_all_groups(int sig) noexcept {
    for (auto& slot : g_groups) {
        const pid_t group = slot.load(std::memory_order_acquire);
        if (group > 0) {
            ::kill(-group, sig);
        }
    }
}

// The handler only stops the programs: killing them here would orphan the
// children that left their groups before the reactor thread could find them
// in the tree (cancel_all: kill_trees). If this process dies first, the keeper
// kills the stopped trees; without a keeper, the handler kills the groups.
extern "C" void on_terminating_signal(int sig) {
    const int saved = errno;
    signal_all_groups(g_keeper.load(std::memory_order_acquire) ? SIGSTOP : SIGKILL);
    g_signal.store(sig, std::memory_order_release);
    if (const int fd = g_wake_fd.load(std::memory_order_acquire); fd >= 0) {
        const std::uint64_t one = 1;
        (void)!::write(fd, &one, sizeof one);
    }
    errno = saved;
}

void add_group(pid_t group) {
    for (auto& slot : g_groups) {
        pid_t empty = 0;
        if (slot.compare_exchange_strong(empty, group, std::memory_order_acq_rel)) {
            return;
        }
    }
    // Full: the reactor still kills it on stop(), only the handler cannot.
}

void remove_group(pid_t group) {
    for (auto& slot : g_groups) {
        pid_t expected = group;
        if (slot.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) {
            return;
        }
    }
}

void install_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_terminating_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = static_cast<int>(SA_RESETHAND | SA_RESTART);  // a second signal has the default effect
    struct sigaction current {};
    ::sigaction(SIGINT, nullptr, &current);
    if (current.sa_handler == SIG_DFL && ::sigaction(SIGINT, &sa, &g_old_int) != 0) {
        return;
    }
    ::sigaction(SIGTERM, nullptr, &current);
    if (current.sa_handler == SIG_DFL) {
        ::sigaction(SIGTERM, &sa, &g_old_term);
    }
    g_handlers.store(true);
}

void restore_handlers() {
    if (!g_handlers.exchange(false)) {
        return;
    }
    struct sigaction current {};
    ::sigaction(SIGINT, nullptr, &current);
    if (current.sa_handler == on_terminating_signal) {
        ::sigaction(SIGINT, &g_old_int, nullptr);
    }
    ::sigaction(SIGTERM, nullptr, &current);
    if (current.sa_handler == on_terminating_signal) {
        ::sigaction(SIGTERM, &g_old_term, nullptr);
    }
}

}  // namespace

struct Reactor::Impl {
    struct Watched {
        pid_t pid = -1;
        int pidfd = -1;
        Clock::time_point started;
        std::optional<Clock::time_point> deadline;
        bool timed_out = false;
        bool cancelled = false;
        OnExit on_exit;
    };

    int epoll_fd = -1;
    int wake_fd = -1;
    OnSignal on_signal;
    std::thread thread;
    std::unique_ptr<Keeper> keeper;  // kills the programs if this process dies of SIGKILL

    mutable std::mutex mutex;
    std::map<int, Watched> watched;  // by pidfd; guarded by mutex
    bool stopping = false;           // guarded by mutex
    bool joined = false;

    ~Impl() {
        if (epoll_fd >= 0) {
            ::close(epoll_fd);
        }
        if (wake_fd >= 0) {
            ::close(wake_fd);
        }
    }

    void wake() const {
        const std::uint64_t one = 1;
        (void)!::write(wake_fd, &one, sizeof one);
    }

    // The program ended: kill the rest of its group while the zombie pins the
    // group id, then reap it.
    void reap(int pidfd) {
        Watched w;
        {
            std::lock_guard lock(mutex);
            auto it = watched.find(pidfd);
            if (it == watched.end()) {
                return;
            }
            w = std::move(it->second);
            watched.erase(it);
        }
        siginfo_t info{};
        ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, WEXITED | WNOWAIT);
        ::kill(-w.pid, SIGKILL);
        remove_group(w.pid);
        if (keeper) {
            keeper->remove(w.pid);  // while the zombie still pins the id
        }
        siginfo_t reaped{};
        while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &reaped, WEXITED) != 0 &&
               errno == EINTR) {
        }
        ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, pidfd, nullptr);
        ::close(pidfd);
        ExitInfo exit;
        exit.exited = info.si_code == CLD_EXITED;
        exit.code = exit.exited ? info.si_status : -1;
        exit.signal = exit.exited ? 0 : info.si_status;
        exit.timed_out = w.timed_out;
        exit.cancelled = w.cancelled;
        exit.elapsed = Clock::now() - w.started;
        if (w.on_exit) {
            try {
                w.on_exit(exit);
            } catch (const std::exception& e) {
                strata::detail::log().error("strata-external: an exit handler threw: {}", e.what());
            }
        }
    }

    int next_timeout_ms() {
        std::lock_guard lock(mutex);
        std::optional<Clock::time_point> first;
        for (const auto& [fd, w] : watched) {
            if (w.deadline && !w.timed_out && (!first || *w.deadline < *first)) {
                first = w.deadline;
            }
        }
        if (!first) {
            return -1;
        }
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(*first - Clock::now()).count();
        return left <= 0 ? 0 : static_cast<int>(std::min<std::int64_t>(left, 60'000));
    }

    // Kills the trees of `groups` (their programs and what left their groups).
    static void kill_groups(const std::vector<pid_t>& groups) {
        if (!groups.empty()) {
            kill_trees(groups.data(), groups.size());
        }
    }

    void kill_overdue() {
        std::vector<pid_t> overdue;
        std::lock_guard lock(mutex);
        const auto now = Clock::now();
        for (auto& [fd, w] : watched) {
            if (w.deadline && !w.timed_out && *w.deadline <= now) {
                w.timed_out = true;
                overdue.push_back(w.pid);
            }
        }
        kill_groups(overdue);
    }

    // After SIGINT/SIGTERM: every group the handler stopped, this reactor's
    // and any other's in the process (they share the handler's table).
    void cancel_all() {
        std::vector<pid_t> all;
        for (auto& slot : g_groups) {
            if (const pid_t group = slot.load(std::memory_order_acquire); group > 0) {
                all.push_back(group);
            }
        }
        std::lock_guard lock(mutex);
        for (auto& [fd, w] : watched) {
            w.cancelled = true;
            all.push_back(w.pid);
        }
        kill_groups(all);
    }

    void loop() {
        std::array<epoll_event, 64> events{};
        while (true) {
            const int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), next_timeout_ms());
            if (n < 0 && errno != EINTR) {
                strata::detail::log().error("strata-external: epoll_wait: {}", describe_errno(errno));
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            for (int i = 0; i < n; ++i) {
                if (events[static_cast<std::size_t>(i)].data.fd == wake_fd) {
                    std::uint64_t count = 0;
                    (void)!::read(wake_fd, &count, sizeof count);
                } else {
                    reap(events[static_cast<std::size_t>(i)].data.fd);
                }
            }
            kill_overdue();
            if (const int sig = g_signal.exchange(0); sig != 0) {
                cancel_all();
                if (on_signal) {
                    on_signal(sig);
                }
            }
            std::lock_guard lock(mutex);
            if (stopping && watched.empty()) {
                return;
            }
            if (stopping) {
                std::vector<pid_t> left;
                for (auto& [fd, w] : watched) {
                    if (!w.cancelled) {
                        w.cancelled = true;
                        left.push_back(w.pid);
                    }
                }
                kill_groups(left);
            }
        }
    }
};

Reactor::Reactor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Reactor::~Reactor() {
    stop();
}

Result<std::unique_ptr<Reactor>> Reactor::start(OnSignal on_signal) {
    auto impl = std::make_unique<Impl>();
    impl->on_signal = std::move(on_signal);
    impl->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (impl->epoll_fd < 0) {
        return make_sys_error(errno, "external reactor: epoll_create1");
    }
    impl->wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (impl->wake_fd < 0) {
        return make_sys_error(errno, "external reactor: eventfd");
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = impl->wake_fd;
    if (::epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, impl->wake_fd, &ev) != 0) {
        return make_sys_error(errno, "external reactor: epoll_ctl");
    }
    if (auto keeper = Keeper::start()) {
        impl->keeper = std::move(*keeper);
    } else {
        strata::detail::log().warn(
            "strata-external: no keeper process ({}): external programs would outlive a "
            "SIGKILL of this process",
            keeper.error().message);
    }
    int expected = -1;
    if (g_wake_fd.compare_exchange_strong(expected, impl->wake_fd)) {
        g_keeper.store(impl->keeper != nullptr, std::memory_order_release);
        install_handlers();
    }
    std::unique_ptr<Reactor> reactor(new Reactor(std::move(impl)));
    Impl* raw = reactor->impl_.get();
    reactor->impl_->thread = std::thread([raw] { raw->loop(); });
    return reactor;
}

Result<void> Reactor::watch(Child child, std::optional<std::chrono::milliseconds> timeout, OnExit on_exit) {
    Impl& r = *impl_;
    {
        std::lock_guard lock(r.mutex);
        if (!r.stopping) {
            add_group(child.pid);
            if (r.keeper) {
                r.keeper->add(child.pid);
            }
            Impl::Watched w;
            w.pid = child.pid;
            w.pidfd = child.pidfd;
            w.started = Clock::now();
            if (timeout) {
                w.deadline = w.started + *timeout;
            }
            w.on_exit = std::move(on_exit);
            r.watched.emplace(child.pidfd, std::move(w));
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.fd = child.pidfd;
            if (::epoll_ctl(r.epoll_fd, EPOLL_CTL_ADD, child.pidfd, &ev) == 0) {
                if (timeout) {
                    r.wake();  // the loop's wait must include the new deadline
                }
                return {};
            }
            const int err = errno;
            r.watched.erase(child.pidfd);
            remove_group(child.pid);
            if (r.keeper) {
                r.keeper->remove(child.pid);
            }
            ::kill(-child.pid, SIGKILL);
            ::waitpid(child.pid, nullptr, 0);
            ::close(child.pidfd);
            return make_sys_error(err, "external reactor: epoll_ctl(pidfd of pid {})", child.pid);
        }
    }
    ::kill(-child.pid, SIGKILL);
    ::waitpid(child.pid, nullptr, 0);
    ::close(child.pidfd);
    return make_error(Errc::busy, "external reactor: stopping: pid {} was killed", child.pid);
}

std::size_t Reactor::running() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->watched.size();
}

void Reactor::stop() noexcept {
    if (!impl_ || impl_->joined) {
        return;
    }
    {
        std::lock_guard lock(impl_->mutex);
        impl_->stopping = true;
    }
    impl_->wake();
    if (impl_->thread.joinable()) {
        impl_->thread.join();
    }
    int mine = impl_->wake_fd;
    const bool owned_handlers = g_wake_fd.load() == mine;
    if (owned_handlers) {
        g_keeper.store(false, std::memory_order_release);
    }
    impl_->keeper.reset();  // every program is reaped: the keeper exits and is reaped
    impl_->joined = true;
    if (g_wake_fd.compare_exchange_strong(mine, -1)) {
        restore_handlers();
    }
}

}  // namespace strata::external
