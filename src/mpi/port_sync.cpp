// SPDX-License-Identifier: MIT
// sync=mpi for shared-object ports (docs/shm.md "sync=mpi"): waiting on and
// waking with zero-byte MPI messages, lent to libstrata at load time.
//
// The wake-ups travel on a duplicate of MPI_COMM_WORLD made in MPI_Init /
// MPI_Init_thread (interposed here: a port opens without any collective
// call), so they never match the application's receives.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <sched.h>

#include "mpi/common.hpp"
#include "mpi/hints.hpp"
#include "mpi/remote_sync.hpp"
#include "shm/mpi_waiter.hpp"
#include "strata/mpi.h"

namespace {

MPI_Comm g_comm = MPI_COMM_NULL;
int g_tag_ub = 32767;

void make_comm() noexcept {
    MPI_Comm comm = MPI_COMM_NULL;
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) {
        return;
    }
    int* ub = nullptr;
    int flag = 0;
    if (PMPI_Comm_get_attr(comm, MPI_TAG_UB, static_cast<void*>(&ub), &flag) == MPI_SUCCESS && flag != 0 &&
        ub != nullptr) {
        g_tag_ub = *ub;
    }
    g_comm = comm;
}

int rank_of(char* why, std::size_t capacity) noexcept {
    int initialized = 0;
    int finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (initialized == 0) {
        std::snprintf(why, capacity, "MPI is not initialized: call MPI_Init before opening the port");
        return -1;
    }
    if (finalized != 0) {
        std::snprintf(why, capacity, "MPI is already finalized");
        return -1;
    }
    if (g_comm == MPI_COMM_NULL) {
        std::snprintf(why, capacity,
                      "MPI was initialized without libstrata-mpi's MPI_Init (link libstrata-mpi before the MPI "
                      "library, or preload it)");
        return -1;
    }
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

int tag_ub() noexcept {
    return g_tag_ub;
}

void notify(int rank, int tag) noexcept {
    if (g_comm == MPI_COMM_NULL) {
        return;  // after MPI_Finalize (a port closed late): peers find out by their liveness tick
    }
    // Zero bytes go eagerly; the request is freed at once, nothing waits for the peer.
    MPI_Request request = MPI_REQUEST_NULL;
    if (PMPI_Isend(nullptr, 0, MPI_BYTE, rank, tag, g_comm, &request) == MPI_SUCCESS) {
        PMPI_Request_free(&request);
    }
}

bool wait(int tag, long timeout_ns) noexcept {
    if (g_comm == MPI_COMM_NULL) {
        // After MPI_Finalize nothing can wake us: sleep out the (tick-bounded) wait.
        const timespec pause{timeout_ns / 1000000000L, timeout_ns % 1000000000L};
        nanosleep(&pause, nullptr);
        return false;
    }
    timespec start{};
    clock_gettime(CLOCK_MONOTONIC, &start);
    const long long deadline = start.tv_sec * 1000000000LL + start.tv_nsec + timeout_ns;
    bool got = false;
    for (unsigned polls = 0;; ++polls) {
        int flag = 0;
        MPI_Message message = MPI_MESSAGE_NULL;
        if (PMPI_Improbe(MPI_ANY_SOURCE, tag, g_comm, &flag, &message, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            return got;
        }
        if (flag != 0) {
            PMPI_Mrecv(nullptr, 0, MPI_BYTE, &message, MPI_STATUS_IGNORE);
            got = true;
            continue;  // drain every pending wake-up of this tag
        }
        if (got) {
            return true;
        }
        timespec now{};
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec * 1000000000LL + now.tv_nsec >= deadline) {
            return false;
        }
        // MPI progresses only while polled: poll hot first, then back off so
        // a long wait does not burn a core.
        if (polls > 2000) {
            const timespec pause{0, 50000};
            nanosleep(&pause, nullptr);
        } else if (polls % 64 == 63) {
            sched_yield();
        }
    }
}

/// The thread level to ask MPI for: MPI_THREAD_MULTIPLE if the environment
/// defaults ask for storage_alloc_remote_sync (whose agent thread calls MPI
/// while the program does), so an unmodified program gets it; else `required`.
int thread_level(int required) noexcept {
    try {
        const char* text = std::getenv("STRATA_MPI_WINDOW_HINTS");
        if (text == nullptr) {
            return required;
        }
        const auto hints = strata::mpi::parse_hint_list(text, "STRATA_MPI_WINDOW_HINTS");
        if (!hints) {
            return required;  // the first window reports the malformed variable
        }
        const auto parsed = strata::mpi::parse_hints(*hints);
        return parsed && parsed->storage && parsed->remote_sync ? MPI_THREAD_MULTIPLE : required;
    } catch (...) {
        return required;
    }
}

constexpr strata::shm_detail::MpiWaiterOps kOps{&rank_of, &tag_ub, &notify, &wait};

__attribute__((constructor)) void register_waiter() {
    strata::shm_detail::set_mpi_waiter(&kOps);
}

__attribute__((destructor)) void unregister_waiter() {
    strata::shm_detail::set_mpi_waiter(nullptr);
}

}  // namespace

extern "C" int MPI_Init(int* argc, char*** argv) {
    int provided = 0;
    const int level = thread_level(MPI_THREAD_SINGLE);
    const int rc = level == MPI_THREAD_SINGLE ? PMPI_Init(argc, argv) : PMPI_Init_thread(argc, argv, level, &provided);
    if (rc == MPI_SUCCESS) {
        make_comm();
    }
    return rc;
}

extern "C" int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
    const int rc = PMPI_Init_thread(argc, argv, std::max(required, thread_level(required)), provided);
    if (rc == MPI_SUCCESS) {
        make_comm();
    }
    return rc;
}

// Wake-ups nobody waited for are still queued: once every rank is here (and
// so done with its ports) they are received, so MPI does not warn about
// unmatched messages, and the communicator is freed.
extern "C" int MPI_Finalize(void) {
    if (g_comm != MPI_COMM_NULL) {
        PMPI_Barrier(g_comm);
        // No rank is in an MPI_Win_sync any more: no request can come.
        strata::mpi::stop_all_serving();
        for (;;) {
            int flag = 0;
            MPI_Message message = MPI_MESSAGE_NULL;
            if (PMPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, g_comm, &flag, &message, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
                flag == 0) {
                break;
            }
            PMPI_Mrecv(nullptr, 0, MPI_BYTE, &message, MPI_STATUS_IGNORE);
        }
        PMPI_Comm_free(&g_comm);
        g_comm = MPI_COMM_NULL;
    }
    strata::mpi::stop_all_serving();  // a no-op unless MPI was initialized around this library
    return PMPI_Finalize();
}

extern "C" __attribute__((visibility("default"))) int strata_mpi_port_sync_ready(void) {
    char why[8];
    return rank_of(why, sizeof why) >= 0 ? 1 : 0;
}
