// SPDX-License-Identifier: MIT
// A rank of the job died (docs/runtime.md, "Failures").
//
// Found four ways: the process of a rank on this machine ended (a pidfd of it,
// opened at hello, is readable), a send to it fails (UCX over TCP says so at
// once), Hydra's notice (SIGUSR1 to every survivor under mpiexec
// -disable-auto-cleanup) and then its silence, or its silence alone (pings
// after `heartbeat`, dead after STRATA_OCR_PEER_TIMEOUT_MS). The pidfd comes
// first: a live rank whose communication thread waits (on the dead one, say)
// is silent too, and a survivor that timed it out first named the wrong rank.
// The survivor that finds it prints an error naming it and tells the others,
// who print it too. Every survivor then removes its files (its shared data
// blocks, its storage directory) and those the dead rank left on its host,
// tells the others, and exits 1 once every live peer said so too, or after
// clean_up_wait: MPICH 4.0.2's mpiexec may SIGKILL the remaining ranks of a
// proxy as soon as one of them exits, so nobody exits before the others
// cleaned up. MPI_Finalize is not called: it would wait for the dead rank.
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "../db_shared.hpp"
#include "cluster.hpp"
#include "cpuset.hpp"
#include "strata/shm/admin.hpp"
#include "strata/shm/segment.hpp"

namespace strata::ocr::dist {

namespace {

using namespace std::chrono_literals;

constexpr auto heartbeat = 500ms;
constexpr auto notice_heartbeat = 100ms;
// After the notice, a live peer's communication thread answers within
// milliseconds: silence this long names the dead one.
constexpr auto notice_timeout = 2000ms;
constexpr auto clean_up_wait = 3000ms;
constexpr auto ended_grace = 200ms;

std::atomic<bool> g_hydra_notice{false};

void on_hydra_notice(int /*signal*/) {
    g_hydra_notice.store(true);
}

std::chrono::milliseconds peer_timeout() {
    const char* text = std::getenv("STRATA_OCR_PEER_TIMEOUT_MS");
    const long ms = text != nullptr ? std::strtol(text, nullptr, 10) : 0;
    return std::chrono::milliseconds(ms > 0 ? ms : 3000);
}

// An MPI error stack in one line: its first line, without the stack's
// heading, and whether UCX said its endpoint timed out.
std::string short_reason(const std::string& why) {
    std::string first = why.substr(0, why.find('\n'));
    if (first.starts_with("strata-ocr: ")) {
        first.erase(0, 12);
    }
    if (const auto stack = first.find(": Other MPI error"); stack != std::string::npos) {
        first = first.substr(0, stack) + " failed";
    }
    if (why.find("Endpoint timeout") != std::string::npos) {
        first += " (UCX: endpoint timeout)";
    }
    return first;
}

}  // namespace

namespace {

std::string read_line(const char* path) {
    std::string text;
    if (FILE* f = std::fopen(path, "r")) {
        char line[256] = {};
        if (std::fgets(line, sizeof line, f) != nullptr) {
            text = line;
        }
        std::fclose(f);
    }
    while (!text.empty() && text.back() == '\n') {
        text.pop_back();
    }
    return text;
}

std::string namespace_of(const char* kind) {
    char target[128] = {};
    const std::string link = fmt::format("/proc/self/ns/{}", kind);
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    return n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

Place this_place(std::string_view job) {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    const std::string boot = read_line("/proc/sys/kernel/random/boot_id");
    // The file system of /dev/shm, not the mount namespace: `ip netns exec`
    // (emulated nodes) makes a mount namespace of its own with the same /dev/shm.
    struct stat shm {};
    ::stat("/dev/shm", &shm);
    Place place;
    place.pid = static_cast<long>(::getpid());
    place.machine = fmt::format("{} {} {}", name, boot, static_cast<unsigned long>(shm.st_dev));
    place.network = fmt::format("{} {}", place.machine, namespace_of("net"));
    place.segment_dir = default_segment_dir().string();
    place.segment_prefix = shared_block_prefix(job);
    const char* node = std::getenv("STRATA_NODE");
    place.node = node != nullptr && *node != '\0' ? std::string(node) : std::string(name);
    place.processes = fmt::format("{} {}", place.machine, namespace_of("pid"));
    if (auto cpus = runtime::allowed_cpus()) {
        place.cpus = std::move(*cpus);
    }
    return place;
}

void watch_hydra_notice() {
    struct sigaction action {};
    action.sa_handler = on_hydra_notice;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(SIGUSR1, &action, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
}

void Cluster::watch_process(int rank, const Place& place) {
    if (place.pid <= 0 || place.processes.empty()) {
        return;
    }
    std::lock_guard lock(peers_mutex_);
    auto& fd = pidfds_[static_cast<std::size_t>(rank)];
    if (fd >= 0 || place.processes != peers_[static_cast<std::size_t>(rank_)].processes) {
        return;
    }
    // Opened while the rank runs (its hello just came): a pid reused since can
    // only be one that is not the rank, which then is gone.
    fd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(place.pid), 0));
}

bool Cluster::process_ended(int rank) {
    std::lock_guard lock(peers_mutex_);
    const int fd = pidfds_[static_cast<std::size_t>(rank)];
    if (fd < 0) {
        return false;
    }
    pollfd ended{.fd = fd, .events = POLLIN, .revents = 0};
    return ::poll(&ended, 1, 0) == 1 && (ended.revents & POLLIN) != 0;
}

void Cluster::check_peers() {
    const bool notice = g_hydra_notice.load();
    if (notice && notice_at_ == std::chrono::steady_clock::time_point{}) {
        notice_at_ = std::chrono::steady_clock::now();
    }
    std::vector<int> live;
    for (int r = 0; r < size_; ++r) {
        if (r == rank_ || wire_->is_dead(r)) {
            continue;
        }
        std::lock_guard lock(dispatch_mutex_);
        if (!said_bye_[static_cast<std::size_t>(r)]) {
            live.push_back(r);
        }
    }
    // Every ended process before any silence: the silent one may only wait on it.
    // A rank that ends on purpose sends its bye first: what it sent just before
    // its end is given ended_grace to arrive.
    const auto now = std::chrono::steady_clock::now();
    bool confirming = false;
    for (const int r : live) {
        auto& seen = ended_seen_[static_cast<std::size_t>(r)];
        if (seen == std::chrono::steady_clock::time_point{} && process_ended(r)) {
            seen = now;
        }
        if (seen == std::chrono::steady_clock::time_point{}) {
            continue;
        }
        if (now - seen < ended_grace) {
            confirming = true;  // no silence is judged meanwhile: it may be that rank's doing
            continue;
        }
        long pid = 0;
        {
            std::lock_guard lock(peers_mutex_);
            pid = peers_[static_cast<std::size_t>(r)].pid;
        }
        peer_died(r, fmt::format("its process (pid {}) ended", pid));
    }
    if (confirming) {
        return;
    }
    const auto timeout = peer_timeout();
    for (const int r : live) {
        if (wire_->is_dead(r)) {
            continue;
        }
        if (notice) {
            // Silent since the notice (or before it) for notice_timeout: the dead one.
            const auto since = std::max(wire_->last_heard(r), notice_at_);
            (void)wire_->check_alive(r, notice_heartbeat, timeout);
            if (std::chrono::steady_clock::now() - since > notice_timeout) {
                peer_died(r, fmt::format("mpiexec reported a dead rank (SIGUSR1 from hydra) and rank {} did not "
                                         "answer for {} ms since",
                                         r, notice_timeout.count()));
            }
        } else if (!wire_->check_alive(r, heartbeat, timeout)) {
            peer_died(r, fmt::format("it stopped answering (nothing heard for {} ms)", timeout.count()));
        }
    }
}

void Cluster::peer_died(int rank, const std::string& why, bool told) {
    wire_->mark_dead(rank);
    calls_cv_.notify_all();
    if (died_.exchange(true)) {
        return;
    }
    const std::string reason = told ? why : short_reason(why);
    {
        std::lock_guard lock(state_.print_mutex);
        std::fflush(stdout);
        std::string node;
        {
            std::lock_guard peers(peers_mutex_);
            node = peers_[static_cast<std::size_t>(rank)].node;
        }
        fmt::print(stderr, "strata-ocr: rank {}: peer_dead: rank {} (node {}) of {} died: {}\n", rank_, rank,
                   node.empty() ? "unknown" : node, size_, reason);
    }
    for (int r = 0; r < size_ && !told; ++r) {
        if (r == rank_ || wire_->is_dead(r)) {
            continue;
        }
        Writer dead(Msg::dead);
        dead.u32(static_cast<std::uint32_t>(rank)).str(reason);
        send(r, dead);
    }
    // Not on the calling thread: it may be the communication thread, which must
    // go on receiving the others' word that they cleaned up.
    std::thread([this, rank] { end_after_death(rank); }).detach();
}

void Cluster::on_dead(int source, Reader& in) {
    const auto rank = static_cast<int>(in.u32());
    const std::string why = in.str();
    if (rank >= 0 && rank < size_ && rank != rank_) {
        peer_died(rank, fmt::format("{} (found by rank {})", why, source), true);
    }
}

void Cluster::on_cleaned(int source) {
    std::lock_guard lock(peers_mutex_);
    cleaned_[static_cast<std::size_t>(source)] = true;
}

void Cluster::end_after_death(int dead) {
    clean_up_after(dead);
    // This rank's blocks are never destroyed now: their files go at once, and
    // those EDTs still make as soon as made.
    remove_shared_blocks();
    state_.close_db_dir();
    for (int r = 0; r < size_; ++r) {
        if (r == rank_ || wire_->is_dead(r)) {
            continue;
        }
        Writer cleaned(Msg::cleaned);
        send(r, cleaned);
    }
    const auto until = std::chrono::steady_clock::now() + clean_up_wait;
    for (bool all = false; !all && std::chrono::steady_clock::now() < until;) {
        std::this_thread::sleep_for(5ms);
        std::lock_guard lock(peers_mutex_);
        all = true;
        for (int r = 0; r < size_; ++r) {
            if (r != rank_ && !wire_->is_dead(r) && !cleaned_[static_cast<std::size_t>(r)]) {
                all = false;
            }
        }
    }
    std::shared_ptr<RunExtension> extension;
    {
        std::lock_guard lock(state_.extension_mutex);
        extension = state_.extension;
    }
    if (extension) {
        extension->stop();  // external programs of this rank end too
    }
    std::fflush(nullptr);
    // Not finish(): the launcher's proxy may be gone with the dead rank's node, and waiting for
    // its answer would keep this rank alive; exit 1 is a failure either way.
    ::_exit(1);
}

// The files a dead rank of this host left: the segments of its shared data
// blocks (those nobody uses any more: their users' locks are free) and its
// storage directory (its lock is free, its pid gone).
void Cluster::clean_up_after(int rank) {
    Place peer;
    {
        std::lock_guard lock(peers_mutex_);
        peer = peers_[static_cast<std::size_t>(rank)];
    }
    if (!peer.segment_prefix.empty() && peer.machine == peers_[static_cast<std::size_t>(rank_)].machine) {
        (void)collect_segments(peer.segment_dir, peer.segment_prefix);
    }
    (void)collect_db_dirs(state_.options().db_dir);
}

}  // namespace strata::ocr::dist
