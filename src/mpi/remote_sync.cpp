// SPDX-License-Identifier: MIT
#include "mpi/remote_sync.hpp"

#include <array>
#include <cstddef>
#include <cstring>
#include <ctime>

#include <poll.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mpi/registry.hpp"

namespace strata::mpi {

namespace {

std::atomic<int> g_live{0};  // RemoteSync objects not closed: the RMA fast path

constexpr int kRequestTag = 1;
constexpr int kReplyTag = 2;

/// A target's answer: MPI_SUCCESS, or the class and message of its failure.
struct Reply {
    int error_class = MPI_SUCCESS;
    std::array<char, MPI_MAX_ERROR_STRING> message{};
};

int open_pidfd(int pid) noexcept {
    return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

/// Every rank's string, in rank order (one Allgather of lengths, one Allgatherv).
std::optional<std::vector<std::string>> gather_strings(MPI_Comm comm, const std::string& mine) {
    int size = 0;
    PMPI_Comm_size(comm, &size);
    const auto n = static_cast<std::size_t>(size);
    int length = static_cast<int>(mine.size());
    std::vector<int> lengths(n);
    if (PMPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm) != MPI_SUCCESS) {
        return std::nullopt;
    }
    std::vector<int> offsets(n);
    int total = 0;
    for (std::size_t i = 0; i < n; ++i) {
        offsets[i] = total;
        total += lengths[i];
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    if (PMPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm) !=
        MPI_SUCCESS) {
        return std::nullopt;
    }
    std::vector<std::string> out(n);
    for (std::size_t i = 0; i < n; ++i) {
        out[i] = all.substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(lengths[i]));
    }
    return out;
}

}  // namespace

struct RemoteSync::Pending {
    std::vector<int> targets;
    std::vector<MPI_Request> sends;
    std::vector<MPI_Request> receives;
    std::vector<Reply> replies;
    std::uint64_t request = 0;  // the payload: carries nothing the target needs
};

std::expected<std::shared_ptr<RemoteSync>, Failure> RemoteSync::create(MPI_Comm comm, const std::string& path) {
    const int rank = comm_rank(comm);
    const auto failed = [&](std::string_view call) {
        return std::unexpected(make_failure(MPI_ERR_OTHER, "MPI_Win_allocate", rank, "storage_alloc_remote_sync",
                                            "true", fmt::format("{} failed while setting up the remote sync", call)));
    };
    MPI_Comm dup = MPI_COMM_NULL;
    if (PMPI_Comm_dup(comm, &dup) != MPI_SUCCESS) {
        return failed("MPI_Comm_dup");
    }
    auto hosts = gather_strings(dup, host_name());
    auto paths = hosts ? gather_strings(dup, path) : std::nullopt;
    int size = 0;
    PMPI_Comm_size(dup, &size);
    std::vector<int> pids(static_cast<std::size_t>(size));
    const int pid = static_cast<int>(::getpid());
    if (!paths || PMPI_Allgather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, dup) != MPI_SUCCESS) {
        PMPI_Comm_free(&dup);
        return failed("gathering the ranks' hosts, files and pids");
    }
    std::vector<Peer> peers(static_cast<std::size_t>(size));
    for (std::size_t i = 0; i < peers.size(); ++i) {
        Peer& peer = peers[i];
        peer.pid = pids[i];
        peer.host = std::move((*hosts)[i]);
        peer.path = std::move((*paths)[i]);
        peer.same_node = peer.host == host_name();
        if (peer.same_node && static_cast<int>(i) != rank) {
            peer.pidfd = open_pidfd(peer.pid);  // -1 (old kernel): no death check, MPI's own handling remains
        }
    }
    return std::shared_ptr<RemoteSync>(new RemoteSync(dup, rank, std::move(peers)));
}

RemoteSync::RemoteSync(MPI_Comm comm, int rank, std::vector<Peer> peers)
    : comm_(comm),
      rank_(rank),
      peers_(std::move(peers)),
      written_(new std::atomic<bool>[peers_.size()]),
      locks_(peers_.size(), 0) {
    for (std::size_t i = 0; i < peers_.size(); ++i) {
        written_[i].store(false, std::memory_order_relaxed);
    }
    g_live.fetch_add(1, std::memory_order_relaxed);
}

bool RemoteSync::any() noexcept {
    return g_live.load(std::memory_order_relaxed) > 0;
}

RemoteSync::~RemoteSync() {
    close();
}

void RemoteSync::close() noexcept {
    if (comm_ == MPI_COMM_NULL) {
        return;
    }
    for (Peer& peer : peers_) {
        if (peer.pidfd >= 0) {
            ::close(peer.pidfd);
            peer.pidfd = -1;
        }
    }
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (finalized == 0) {
        PMPI_Comm_free(&comm_);
    }
    comm_ = MPI_COMM_NULL;
    g_live.fetch_sub(1, std::memory_order_relaxed);
}

void RemoteSync::note_write(int target) noexcept {
    if (target >= 0 && static_cast<std::size_t>(target) < peers_.size() && target != rank_) {
        written_[static_cast<std::size_t>(target)].store(true, std::memory_order_relaxed);
    }
}

void RemoteSync::note_lock(int target, bool locked) noexcept {
    if (target < 0 || static_cast<std::size_t>(target) >= locks_.size()) {
        return;
    }
    const std::lock_guard lock(epoch_mutex_);
    locks_[static_cast<std::size_t>(target)] += locked ? 1 : -1;
}

void RemoteSync::note_lock_all(bool locked) noexcept {
    const std::lock_guard lock(epoch_mutex_);
    locked_all_ = locked;
}

Failure RemoteSync::target_failure(int error_class, int target, std::string_view cause) const {
    const Peer& peer = peers_[static_cast<std::size_t>(target)];
    const std::string file = peer.path.empty() ? std::string("no file (a memory window)") : peer.path;
    return make_target_failure(error_class, "MPI_Win_sync", rank_, target, peer.host, file, cause);
}

std::expected<std::size_t, Failure> RemoteSync::start(MPI_Win win) {
    origin_mutex_.lock();  // until finish()
    auto pending = std::make_unique<Pending>();
    for (std::size_t t = 0; t < peers_.size(); ++t) {
        if (written_[t].exchange(false, std::memory_order_relaxed)) {
            pending->targets.push_back(static_cast<int>(t));
        }
    }
    // MPICH 4.0.2 ends the job once it polls a connection to a dead process:
    // a target found dead here is reported before MPI touches it.
    for (const int t : pending->targets) {
        if (died(t)) {
            origin_mutex_.unlock();
            return std::unexpected(dead_target(t));
        }
    }
    {
        // Writes in a passive epoch still open are complete at the target
        // only after a flush; an unlock (or a closed fence or PSCW epoch)
        // completed the others already.
        const std::lock_guard lock(epoch_mutex_);
        for (const int t : pending->targets) {
            if (locked_all_ || locks_[static_cast<std::size_t>(t)] > 0) {
                if (const int rc = PMPI_Win_flush(t, win); rc != MPI_SUCCESS) {
                    origin_mutex_.unlock();
                    int error_class = MPI_ERR_OTHER;
                    PMPI_Error_class(rc, &error_class);
                    return std::unexpected(target_failure(error_class, t, "MPI_Win_flush failed"));
                }
            }
        }
    }
    const std::size_t n = pending->targets.size();
    pending->sends.assign(n, MPI_REQUEST_NULL);
    pending->receives.assign(n, MPI_REQUEST_NULL);
    pending->replies.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        const int t = pending->targets[i];
        PMPI_Irecv(&pending->replies[i], sizeof(Reply), MPI_BYTE, t, kReplyTag, comm_, &pending->receives[i]);
        PMPI_Isend(&pending->request, 1, MPI_UINT64_T, t, kRequestTag, comm_, &pending->sends[i]);
    }
    pending_ = std::move(pending);
    return n;
}

Failure RemoteSync::dead_target(int target) const {
    return target_failure(MPIX_ERR_PROC_FAILED, target,
                          "the process ended before it made the bytes this rank wrote there durable");
}

bool RemoteSync::died(int target) const noexcept {
    const int fd = peers_[static_cast<std::size_t>(target)].pidfd;
    if (fd < 0) {
        return false;
    }
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    return ::poll(&p, 1, 0) > 0;
}

std::optional<Failure> RemoteSync::finish() {
    const std::unique_ptr<Pending> pending = std::move(pending_);
    const std::lock_guard unlock_at_return(origin_mutex_, std::adopt_lock);
    auto& receives = pending->receives;
    int dead = -1;
    for (unsigned polls = 0;; ++polls) {
        int done = 0;
        PMPI_Testall(static_cast<int>(receives.size()), receives.data(), &done, MPI_STATUSES_IGNORE);
        if (done != 0) {
            break;
        }
        if (polls % 16 == 15) {
            for (std::size_t i = 0; i < receives.size() && dead < 0; ++i) {
                if (receives[i] != MPI_REQUEST_NULL && died(pending->targets[i])) {
                    dead = pending->targets[i];
                }
            }
            if (dead >= 0) {
                break;
            }
        }
        // The target's agent needs a core to answer: poll hot briefly, then
        // yield, then sleep between polls (a sync of a large window takes long).
        if (polls > 4096) {
            const timespec pause{0, 20'000};
            nanosleep(&pause, nullptr);
        } else if (polls % 64 == 63) {
            sched_yield();
        }
    }
    if (dead >= 0) {
        for (MPI_Request& r : receives) {
            if (r != MPI_REQUEST_NULL) {
                PMPI_Cancel(&r);
                PMPI_Request_free(&r);
            }
        }
        for (MPI_Request& s : pending->sends) {
            if (s != MPI_REQUEST_NULL) {
                PMPI_Request_free(&s);  // eager and tiny: nothing waits for the dead process
            }
        }
        return dead_target(dead);
    }
    PMPI_Waitall(static_cast<int>(pending->sends.size()), pending->sends.data(), MPI_STATUSES_IGNORE);
    for (std::size_t i = 0; i < pending->replies.size(); ++i) {
        Reply& reply = pending->replies[i];
        if (reply.error_class != MPI_SUCCESS) {
            reply.message.back() = '\0';
            return target_failure(reply.error_class, pending->targets[i], reply.message.data());
        }
    }
    return std::nullopt;
}

bool RemoteSync::serve(const WindowRecord& record) {
    bool any = false;
    for (;;) {
        int flag = 0;
        MPI_Message message = MPI_MESSAGE_NULL;
        MPI_Status status;
        if (PMPI_Improbe(MPI_ANY_SOURCE, kRequestTag, comm_, &flag, &message, &status) != MPI_SUCCESS || flag == 0) {
            return any;
        }
        std::uint64_t request = 0;
        PMPI_Mrecv(&request, 1, MPI_UINT64_T, &message, MPI_STATUS_IGNORE);
        Reply reply;
        for (const Segment& segment : record.segments()) {
            if (auto synced = segment.part->sync(segment.offset, segment.length); !synced) {
                const Failure failure = file_failure("MPI_Win_sync", record.rank, synced.error());
                reply.error_class = failure.error_class;
                std::strncpy(reply.message.data(), failure.message.c_str(), reply.message.size() - 1);
                break;
            }
        }
        const auto length = offsetof(Reply, message) + std::strlen(reply.message.data()) + 1;
        PMPI_Send(&reply, static_cast<int>(length), MPI_BYTE, status.MPI_SOURCE, kReplyTag, comm_);
        served_.fetch_add(1, std::memory_order_relaxed);
        detail::log().debug("MPI_Win_sync: rank {}: synced its window for rank {}{}", record.rank, status.MPI_SOURCE,
                            reply.error_class == MPI_SUCCESS ? "" : " (failed)");
        any = true;
    }
}

void note_write(MPI_Win win, int target) noexcept {
    if (!RemoteSync::any()) {
        return;
    }
    try {
        if (const auto record = Registry::instance().find_window(win); record && record->remote) {
            record->remote->note_write(target);
        }
    } catch (...) {  // a failing lock: the sync misses this target, which MPI_Win_free still writes back
        detail::log().warn("rank {}: a write to target {} is not tracked for the remote sync",
                           comm_rank(MPI_COMM_WORLD), target);
    }
}

}  // namespace strata::mpi

namespace {

template <class Note>
void note_epoch(MPI_Win win, Note&& note) noexcept {
    if (!strata::mpi::RemoteSync::any()) {
        return;
    }
    try {
        if (const auto record = strata::mpi::Registry::instance().find_window(win); record && record->remote) {
            note(*record->remote);
        }
    } catch (...) {  // a failing lock: a later sync then skips the flush, as outside an epoch
        strata::detail::log().warn("an RMA epoch of a window with remote sync is not tracked");
    }
}

}  // namespace

extern "C" int MPI_Win_lock(int lock_type, int rank, int assert_, MPI_Win win) {
    const int rc = PMPI_Win_lock(lock_type, rank, assert_, win);
    if (rc == MPI_SUCCESS) {
        note_epoch(win, [&](strata::mpi::RemoteSync& r) { r.note_lock(rank, true); });
    }
    return rc;
}

extern "C" int MPI_Win_unlock(int rank, MPI_Win win) {
    const int rc = PMPI_Win_unlock(rank, win);
    if (rc == MPI_SUCCESS) {
        note_epoch(win, [&](strata::mpi::RemoteSync& r) { r.note_lock(rank, false); });
    }
    return rc;
}

extern "C" int MPI_Win_lock_all(int assert_, MPI_Win win) {
    const int rc = PMPI_Win_lock_all(assert_, win);
    if (rc == MPI_SUCCESS) {
        note_epoch(win, [](strata::mpi::RemoteSync& r) { r.note_lock_all(true); });
    }
    return rc;
}

extern "C" int MPI_Win_unlock_all(MPI_Win win) {
    const int rc = PMPI_Win_unlock_all(win);
    if (rc == MPI_SUCCESS) {
        note_epoch(win, [](strata::mpi::RemoteSync& r) { r.note_lock_all(false); });
    }
    return rc;
}
