// SPDX-License-Identifier: MIT
// What one rank of strata-workflow-task opens: its node's segment and the
// ports or MPI endpoints of its edges, each edge by the method the placement
// gives it (docs/workflow.md, "Placement").
#pragma once

#include <mpi.h>

#include <optional>
#include <string>

#include "strata/dsm.hpp"
#include "strata/shm.hpp"
#include "strata/workflow.hpp"
#include "task_loop.hpp"

namespace strata::workflow::detail {

/// One rank's view of the job: the workflow, where its tasks run, and which task this rank is.
struct Job {
    const Workflow& wf;
    const Placement& placement;
    int rank = 0;
    /// The tasks' ranks, rank i = task i (the world without the DSM's servers): the job's collectives.
    MPI_Comm comm = MPI_COMM_WORLD;
    /// This task's DSM membership when an edge runs dsm (Placement::across), else null.
    dsm::Node* dsm = nullptr;
};

/// Waits for `request`, as MPI_Wait would, but for a DSM job by MPI_Test with short sleeps: a thread
/// blocked inside MPICH holds its global lock nearly all the time, and the DSM's progress thread, which
/// must take that lock to answer the servers' pings, could then starve for seconds (the servers
/// declare a silent rank dead after 5 s). `what` names the wait in the error.
Result<void> wait_for(const Job& job, MPI_Request& request, const std::string& what);
/// MPI_Barrier on job.comm; for a DSM job an MPI_Ibarrier waited for as wait_for does.
Result<void> barrier(const Job& job, const std::string& what);
/// MPI_Reduce of `count` elements to rank 0 of job.comm; for a DSM job an MPI_Ireduce waited for as
/// wait_for does (rank 0 waits there for the last task to finish, its progress thread alive).
Result<void> reduce(const Job& job, const void* mine, void* all, int count, MPI_Datatype type, MPI_Op op,
                    const std::string& what);

/// The segment of this rank's node, when an edge within the node goes through one: the node's first
/// rank creates it, then (after a barrier every rank joins) the others open it. `base` names the run's
/// segments (node_segment_name).
Result<std::optional<Segment>> open_node_segment(const Job& job, const std::string& base);

/// This rank's inputs and output; `segment` is null when its node has none. The producers create their
/// ports before any consumer opens one (a barrier in between): Segment::port refuses an open while
/// another user constructs the port. Inputs by MPI come first, so a consumer waiting on a port has
/// already let MPI progress its messages of the iteration.
Result<TaskIo> plan(const Job& job, Segment* segment);

}  // namespace strata::workflow::detail
