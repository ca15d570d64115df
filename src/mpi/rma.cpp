// SPDX-License-Identifier: MIT
// RMA calls on shared storage windows. Such a window is created over each
// rank's view of the whole file with disp_unit 1 (win_allocate_shared.cpp),
// so a displacement the program gives relative to a rank's segment becomes
// segment offset + disp * disp_unit. For every other window the displacement
// passes unchanged, after one relaxed atomic load while no shared storage
// window exists (Registry::target_displacement). The calls that write (all
// but Get, and Get_accumulate / Fetch_and_op with MPI_NO_OP) mark their
// target for the remote sync, after one relaxed atomic load while no window
// has storage_alloc_remote_sync.
#include "mpi/registry.hpp"

namespace {

MPI_Aint disp_for(MPI_Win win, int target, MPI_Aint disp) noexcept {
    try {
        return strata::mpi::Registry::instance().target_displacement(win, target, disp);
    } catch (...) {  // a failing lock: leave the displacement to MPI
        return disp;
    }
}

/// A call that writes to `target` returned: MPI_Win_sync of a window with
/// storage_alloc_remote_sync will have it sync (remote_sync.hpp).
void mark(MPI_Win win, int target) noexcept {
    strata::mpi::note_write(win, target);
}

}  // namespace

extern "C" int MPI_Put(const void* origin, int origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                       int target_count, MPI_Datatype target_type, MPI_Win win) {
    const int rc = PMPI_Put(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count,
                            target_type, win);
    if (rc == MPI_SUCCESS) {
        mark(win, target);
    }
    return rc;
}

extern "C" int MPI_Get(void* origin, int origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                       int target_count, MPI_Datatype target_type, MPI_Win win) {
    return PMPI_Get(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count, target_type,
                    win);
}

extern "C" int MPI_Accumulate(const void* origin, int origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                              int target_count, MPI_Datatype target_type, MPI_Op op, MPI_Win win) {
    const int rc = PMPI_Accumulate(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count,
                                   target_type, op, win);
    if (rc == MPI_SUCCESS) {
        mark(win, target);
    }
    return rc;
}

extern "C" int MPI_Get_accumulate(const void* origin, int origin_count, MPI_Datatype origin_type, void* result,
                                  int result_count, MPI_Datatype result_type, int target, MPI_Aint disp,
                                  int target_count, MPI_Datatype target_type, MPI_Op op, MPI_Win win) {
    const int rc = PMPI_Get_accumulate(origin, origin_count, origin_type, result, result_count, result_type, target,
                                       disp_for(win, target, disp), target_count, target_type, op, win);
    if (rc == MPI_SUCCESS) {
        if (op != MPI_NO_OP) {
            mark(win, target);
        }
    }
    return rc;
}

extern "C" int MPI_Fetch_and_op(const void* origin, void* result, MPI_Datatype type, int target, MPI_Aint disp,
                                MPI_Op op, MPI_Win win) {
    const int rc = PMPI_Fetch_and_op(origin, result, type, target, disp_for(win, target, disp), op, win);
    if (rc == MPI_SUCCESS) {
        if (op != MPI_NO_OP) {
            mark(win, target);
        }
    }
    return rc;
}

extern "C" int MPI_Compare_and_swap(const void* origin, const void* compare, void* result, MPI_Datatype type,
                                    int target, MPI_Aint disp, MPI_Win win) {
    const int rc = PMPI_Compare_and_swap(origin, compare, result, type, target, disp_for(win, target, disp), win);
    if (rc == MPI_SUCCESS) {
        mark(win, target);
    }
    return rc;
}

extern "C" int MPI_Rput(const void* origin, int origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                        int target_count, MPI_Datatype target_type, MPI_Win win, MPI_Request* request) {
    const int rc = PMPI_Rput(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count,
                             target_type, win, request);
    if (rc == MPI_SUCCESS) {
        mark(win, target);
    }
    return rc;
}

extern "C" int MPI_Rget(void* origin, int origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                        int target_count, MPI_Datatype target_type, MPI_Win win, MPI_Request* request) {
    return PMPI_Rget(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count, target_type,
                     win, request);
}

extern "C" int MPI_Raccumulate(const void* origin, int origin_count, MPI_Datatype origin_type, int target,
                               MPI_Aint disp, int target_count, MPI_Datatype target_type, MPI_Op op, MPI_Win win,
                               MPI_Request* request) {
    const int rc = PMPI_Raccumulate(origin, origin_count, origin_type, target, disp_for(win, target, disp),
                                    target_count, target_type, op, win, request);
    if (rc == MPI_SUCCESS) {
        mark(win, target);
    }
    return rc;
}

extern "C" int MPI_Rget_accumulate(const void* origin, int origin_count, MPI_Datatype origin_type, void* result,
                                   int result_count, MPI_Datatype result_type, int target, MPI_Aint disp,
                                   int target_count, MPI_Datatype target_type, MPI_Op op, MPI_Win win,
                                   MPI_Request* request) {
    const int rc = PMPI_Rget_accumulate(origin, origin_count, origin_type, result, result_count, result_type, target,
                                        disp_for(win, target, disp), target_count, target_type, op, win, request);
    if (rc == MPI_SUCCESS) {
        if (op != MPI_NO_OP) {
            mark(win, target);
        }
    }
    return rc;
}

extern "C" int MPI_Put_c(const void* origin, MPI_Count origin_count, MPI_Datatype origin_type, int target,
                         MPI_Aint disp, MPI_Count target_count, MPI_Datatype target_type, MPI_Win win) {
    const int rc = PMPI_Put_c(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count,
                              target_type, win);
    if (rc == MPI_SUCCESS) {
        mark(win, target);
    }
    return rc;
}

extern "C" int MPI_Get_c(void* origin, MPI_Count origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                         MPI_Count target_count, MPI_Datatype target_type, MPI_Win win) {
    return PMPI_Get_c(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count, target_type,
                      win);
}

extern "C" int MPI_Accumulate_c(const void* origin, MPI_Count origin_count, MPI_Datatype origin_type, int target,
                                MPI_Aint disp, MPI_Count target_count, MPI_Datatype target_type, MPI_Op op,
                                MPI_Win win) {
    const int rc = PMPI_Accumulate_c(origin, origin_count, origin_type, target, disp_for(win, target, disp),
                                     target_count, target_type, op, win);
    if (rc == MPI_SUCCESS) {
        mark(win, target);
    }
    return rc;
}

extern "C" int MPI_Get_accumulate_c(const void* origin, MPI_Count origin_count, MPI_Datatype origin_type, void* result,
                                    MPI_Count result_count, MPI_Datatype result_type, int target, MPI_Aint disp,
                                    MPI_Count target_count, MPI_Datatype target_type, MPI_Op op, MPI_Win win) {
    const int rc = PMPI_Get_accumulate_c(origin, origin_count, origin_type, result, result_count, result_type, target,
                                         disp_for(win, target, disp), target_count, target_type, op, win);
    if (rc == MPI_SUCCESS) {
        if (op != MPI_NO_OP) {
            mark(win, target);
        }
    }
    return rc;
}

extern "C" int MPI_Rput_c(const void* origin, MPI_Count origin_count, MPI_Datatype origin_type, int target,
                          MPI_Aint disp, MPI_Count target_count, MPI_Datatype target_type, MPI_Win win,
                          MPI_Request* request) {
    const int rc = PMPI_Rput_c(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count,
                               target_type, win, request);
    if (rc == MPI_SUCCESS) {
        mark(win, target);
    }
    return rc;
}

extern "C" int MPI_Rget_c(void* origin, MPI_Count origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                          MPI_Count target_count, MPI_Datatype target_type, MPI_Win win, MPI_Request* request) {
    return PMPI_Rget_c(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count,
                       target_type, win, request);
}

extern "C" int MPI_Raccumulate_c(const void* origin, MPI_Count origin_count, MPI_Datatype origin_type, int target,
                                 MPI_Aint disp, MPI_Count target_count, MPI_Datatype target_type, MPI_Op op,
                                 MPI_Win win, MPI_Request* request) {
    const int rc = PMPI_Raccumulate_c(origin, origin_count, origin_type, target, disp_for(win, target, disp),
                                      target_count, target_type, op, win, request);
    if (rc == MPI_SUCCESS) {
        mark(win, target);
    }
    return rc;
}

extern "C" int MPI_Rget_accumulate_c(const void* origin, MPI_Count origin_count, MPI_Datatype origin_type, void* result,
                                     MPI_Count result_count, MPI_Datatype result_type, int target, MPI_Aint disp,
                                     MPI_Count target_count, MPI_Datatype target_type, MPI_Op op, MPI_Win win,
                                     MPI_Request* request) {
    const int rc = PMPI_Rget_accumulate_c(origin, origin_count, origin_type, result, result_count, result_type, target,
                                          disp_for(win, target, disp), target_count, target_type, op, win, request);
    if (rc == MPI_SUCCESS) {
        if (op != MPI_NO_OP) {
            mark(win, target);
        }
    }
    return rc;
}
