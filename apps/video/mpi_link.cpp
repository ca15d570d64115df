// SPDX-License-Identifier: MIT
// MpiLink (mpi_link.hpp).
#include "mpi_link.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#include <fmt/format.h>

namespace strata::video {

std::string mpi_error_text(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    return std::string(text, static_cast<std::size_t>(len));
}

MpiLink::MpiLink(Context& ctx) : ctx_(ctx) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_dup(comm_, &failure_comm_);
}

void MpiLink::leave_together() {
    leave_together_on(failure_comm_);
}

MpiLink::~MpiLink() = default;  // the communicator is left to MPI_Finalize (freeing it could wait for a dead peer)

Result<MPI_Request> MpiLink::send_bytes(const void* data, std::size_t bytes, int dest, int tag) {
    MPI_Request r = MPI_REQUEST_NULL;
    if (int rc = MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, dest, tag, comm_, &r); rc != MPI_SUCCESS) {
        return make_error(Errc::io_error, "MPI_Isend of {} bytes to rank {}: {}", bytes, dest, mpi_error_text(rc));
    }
    ++ctx_.stats.messages_sent;
    ctx_.stats.bytes_sent += bytes;
    return r;
}

Result<MPI_Request> MpiLink::send_header(const Header& h, int dest) {
    reap();
    Owned o{std::make_unique<Header>(h), MPI_REQUEST_NULL, dest};
    o.header->from = ctx_.rank;
    auto r = send_bytes(o.header.get(), sizeof(Header), dest, tag_ctrl);
    if (!r) return r;
    o.request = *r;
    sent_.push_back(std::move(o));
    return *r;
}

Result<MPI_Request> MpiLink::recv_bytes(void* data, std::size_t bytes, int source, int tag) {
    MPI_Request r = MPI_REQUEST_NULL;
    if (int rc = MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, source, tag, comm_, &r); rc != MPI_SUCCESS) {
        return make_error(Errc::io_error, "MPI_Irecv of {} bytes from rank {}: {}", bytes, source, mpi_error_text(rc));
    }
    return r;
}

Result<MPI_Request> MpiLink::recv_header(Header& h, int source) {
    return recv_bytes(&h, sizeof h, source, tag_ctrl);
}

void MpiLink::reap() {
    while (!sent_.empty()) {
        int done = 0;
        if (sent_.front().request != MPI_REQUEST_NULL) {
            if (MPI_Test(&sent_.front().request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done == 0) return;
        }
        sent_.pop_front();
    }
}

Result<void> MpiLink::check_interrupts() {
    int flag = 0;
    MPI_Status status;
    if (int rc = MPI_Iprobe(MPI_ANY_SOURCE, tag_abort, comm_, &flag, &status); rc != MPI_SUCCESS) {
        return make_error(Errc::peer_dead, "MPI_Iprobe: {}", mpi_error_text(rc));
    }
    if (flag != 0) {
        Header h;
        MPI_Recv(&h, sizeof h, MPI_BYTE, status.MPI_SOURCE, tag_abort, comm_, MPI_STATUS_IGNORE);
        aborted_by_peer_ = true;
        return make_error(Errc::peer_dead, "the job was aborted by {}: {}", ctx_.peer(status.MPI_SOURCE), h.get_text());
    }
    return {};
}

Result<void> MpiLink::poll(const std::function<Result<bool>()>& done, const std::string& what, int patience) {
    const double start = now_s();
    const double timeout = patience * ctx_.options.timeout_ms / 1000.0;
    // Spin while the peer is likely to be moving data (MPI progresses only in
    // calls), then back off to short sleeps so that an idle rank costs little.
    for (std::uint64_t round = 0;; ++round) {
        auto d = done();
        if (!d) return std::unexpected(d.error());
        if (*d) {
            ctx_.stats.wait_s += now_s() - start;
            return {};
        }
        if (auto i = check_interrupts(); !i) {
            const std::string more = describe_wait ? describe_wait() : std::string();
            if (more.empty()) return i;
            return make_error(i.error().code, "{}; {}", i.error().message, more);
        }
        const double waited = now_s() - start;
        if (waited > timeout) {
            std::string more = describe_wait ? describe_wait() : std::string();
            return make_error(Errc::timeout, "waited {} ms for {}: the peer is dead or stopped answering{}{}",
                              patience * ctx_.options.timeout_ms, what, more.empty() ? "" : "; ", more);
        }
        if (waited > 0.002) {
            std::this_thread::sleep_for(std::chrono::microseconds(waited > 0.05 ? 200 : 20));
        } else if (round % 64 == 63) {
            std::this_thread::yield();
        }
    }
}

Result<bool> MpiLink::test(MPI_Request& request) {
    int flag = 0;
    MPI_Status status;
    if (int rc = MPI_Test(&request, &flag, &status); rc != MPI_SUCCESS) {
        return make_error(Errc::peer_dead, "MPI_Test: {}", mpi_error_text(rc));
    }
    return flag != 0;
}

Result<void> MpiLink::wait(MPI_Request& request, const std::string& what) {
    if (request == MPI_REQUEST_NULL) return {};
    return poll([&]() -> Result<bool> { return test(request); }, what);
}

Result<void> MpiLink::wait_all(std::vector<MPI_Request>& requests, const std::string& what) {
    return poll(
        [&]() -> Result<bool> {
            int flag = 0;
            if (int rc = MPI_Testall(static_cast<int>(requests.size()), requests.data(), &flag, MPI_STATUSES_IGNORE);
                rc != MPI_SUCCESS) {
                return make_error(Errc::peer_dead, "MPI_Testall: {}", mpi_error_text(rc));
            }
            return flag != 0;
        },
        what);
}

Result<Header> MpiLink::next_header(int source, const std::string& what, int patience) {
    Header h;
    bool got = false;
    auto r = poll(
        [&]() -> Result<bool> {
            int flag = 0;
            MPI_Message message;
            MPI_Status status;
            if (int rc = MPI_Improbe(source, tag_ctrl, comm_, &flag, &message, &status); rc != MPI_SUCCESS) {
                return make_error(Errc::peer_dead, "MPI_Improbe: {}", mpi_error_text(rc));
            }
            if (flag == 0) return false;
            if (int rc = MPI_Mrecv(&h, sizeof h, MPI_BYTE, &message, &status); rc != MPI_SUCCESS) {
                return make_error(Errc::peer_dead, "MPI_Mrecv from rank {}: {}", status.MPI_SOURCE, mpi_error_text(rc));
            }
            got = true;
            return true;
        },
        what, patience);
    if (!r) return std::unexpected(r.error());
    if (auto c = check_header(h, what); !c) return std::unexpected(c.error());
    ++ctx_.stats.messages_received;
    ctx_.stats.bytes_received += sizeof h;
    return h;
}

Result<void> MpiLink::flush() {
    for (auto& o : sent_) {
        if (auto w = wait(o.request, fmt::format("the {} message to {} to complete", to_string(o.header->kind),
                                                 ctx_.peer(o.dest)));
            !w) {
            return w;
        }
    }
    sent_.clear();
    return {};
}

void MpiLink::cancel(MPI_Request& request) {
    if (request == MPI_REQUEST_NULL) return;
    MPI_Cancel(&request);
    (void)wait(request, "a cancelled receive");
}

void leave_together_on(MPI_Comm comm) {
    MPI_Request barrier = MPI_REQUEST_NULL;
    if (MPI_Ibarrier(comm, &barrier) != MPI_SUCCESS) return;
    const double until = now_s() + 1.0;
    while (now_s() < until) {
        int done = 0;
        if (MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done != 0) return;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

void MpiLink::abort_all(const std::string& why) {
    static Header h;  // outlives the sends, which are never waited for past the grace period
    h.kind = Kind::abort;
    h.from = ctx_.rank;
    h.set_text(fmt::format("rank {} ({}, node {}): {}", ctx_.rank, to_string(ctx_.role), ctx_.options.node, why));
    std::vector<MPI_Request> requests;
    for (int r = 0; r < ctx_.size; ++r) {
        if (r == ctx_.rank) continue;
        MPI_Request q = MPI_REQUEST_NULL;
        if (MPI_Isend(&h, sizeof h, MPI_BYTE, r, tag_abort, comm_, &q) == MPI_SUCCESS) requests.push_back(q);
    }
    const double until = now_s() + 0.3;
    while (now_s() < until) {
        int flag = 0;
        if (MPI_Testall(static_cast<int>(requests.size()), requests.data(), &flag, MPI_STATUSES_IGNORE) !=
                MPI_SUCCESS ||
            flag != 0) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

namespace {

/// Runs `call`; if it has not returned after --timeout-ms, runs `on_timeout`
/// (on the watchdog's thread; it must end the process).
template <class Call, class OnTimeout>
void under_watchdog(Context& ctx, Call call, OnTimeout on_timeout) {
    std::atomic<bool> done{false};
    std::thread watchdog([&] {
        const double until = now_s() + ctx.options.timeout_ms / 1000.0;
        while (!done.load() && now_s() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (!done.load()) on_timeout();
    });
    call();
    done = true;
    watchdog.join();
}

/// Runs `call`; if it has not returned after --timeout-ms, reports `what` and exits 1.
template <class Call>
void under_watchdog(Context& ctx, const char* what, Call call) {
    under_watchdog(ctx, call, [&] {
        ctx.error(fmt::format("{} did not return within {} ms", what, ctx.options.timeout_ms));
        ctx.exit_now(1);
    });
}

}  // namespace

bool spans_nodes(Context& ctx) {
    int local = 0;
    under_watchdog(ctx, "MPI_Comm_split_type (finding the ranks of this node)", [&] {
        MPI_Comm node = MPI_COMM_NULL;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    });
    return local < ctx.size;
}

void learn_nodes(Context& ctx) {
    constexpr int kName = 64;
    std::array<char, kName> mine{};
    std::memcpy(mine.data(), ctx.options.node.data(), std::min<std::size_t>(ctx.options.node.size(), kName - 1));
    std::vector<char> all(static_cast<std::size_t>(kName) * static_cast<std::size_t>(ctx.size));
    under_watchdog(ctx, "MPI_Allgather (every rank's node name)",
                   [&] { MPI_Allgather(mine.data(), kName, MPI_CHAR, all.data(), kName, MPI_CHAR, MPI_COMM_WORLD); });
    ctx.nodes.clear();
    for (int r = 0; r < ctx.size; ++r) {
        const char* name = all.data() + static_cast<std::size_t>(kName) * static_cast<std::size_t>(r);
        ctx.nodes.emplace_back(name, strnlen(name, kName - 1));
    }
}

void finish_rank(Context& ctx, MPI_Comm comm, bool across_nodes) {
    MPI_Request barrier = MPI_REQUEST_NULL;
    MPI_Ibarrier(comm, &barrier);
    const double until = now_s() + ctx.options.timeout_ms / 1000.0;
    for (;;) {
        int done = 0;
        if (MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || (done == 0 && now_s() > until)) {
            ctx.error(
                fmt::format("waited {} ms for every rank to finish: a rank of the job failed or stopped "
                            "answering",
                            ctx.options.timeout_ms));
            ctx.exit_now(1);
        }
        if (done != 0) break;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (across_nodes) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        // MPICH 4.0.2's ch4:ucx finalize can still deadlock across nodes (each
        // rank disconnects its endpoints, then waits in a PMI barrier; fixed
        // upstream by MPICH PR #6596), rarely, after the quiet above. Every
        // rank has passed the bounded barrier, so the job's work is complete:
        // a finalize that does not return is reported, and the rank ends
        // with success rather than hanging or failing a finished job.
        under_watchdog(
            ctx, [] { MPI_Finalize(); },
            [&] {
                const std::string message = fmt::format(
                    "MPI_Finalize did not return within {} ms after every rank finished (the MPICH 4.0.2 ch4:ucx "
                    "finalize deadlock across nodes); the job's work is complete",
                    ctx.options.timeout_ms);
                std::fprintf(stderr, "%s: warning: %s\n", ctx.who().c_str(), message.c_str());
                ctx.note(message);
                ctx.note("exiting with status 0");
                std::fflush(nullptr);
                std::_Exit(0);  // not std::exit: the main thread is inside MPI_Finalize
            });
        ctx.exit_now(0);
    }
    under_watchdog(ctx, "MPI_Finalize", [] { MPI_Finalize(); });
    ctx.exit_now(0);
}

}  // namespace strata::video
