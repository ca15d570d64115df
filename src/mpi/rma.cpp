// SPDX-License-Identifier: MIT
// RMA calls on shared storage windows. Such a window is created over each
// rank's view of the whole file with disp_unit 1 (win_allocate_shared.cpp),
// so a displacement the program gives relative to a rank's segment becomes
// segment offset + disp * disp_unit. For every other window the displacement
// passes unchanged, after one relaxed atomic load while no shared storage
// window exists (Registry::target_displacement).
#include "mpi/registry.hpp"

namespace {

MPI_Aint disp_for(MPI_Win win, int target, MPI_Aint disp) noexcept {
    try {
        return strata::mpi::Registry::instance().target_displacement(win, target, disp);
    } catch (...) {  // a failing lock: leave the displacement to MPI
        return disp;
    }
}

}  // namespace

extern "C" int MPI_Put(const void* origin, int origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                       int target_count, MPI_Datatype target_type, MPI_Win win) {
    return PMPI_Put(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count, target_type,
                    win);
}

extern "C" int MPI_Get(void* origin, int origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                       int target_count, MPI_Datatype target_type, MPI_Win win) {
    return PMPI_Get(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count, target_type,
                    win);
}

extern "C" int MPI_Accumulate(const void* origin, int origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                              int target_count, MPI_Datatype target_type, MPI_Op op, MPI_Win win) {
    return PMPI_Accumulate(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count,
                           target_type, op, win);
}

extern "C" int MPI_Get_accumulate(const void* origin, int origin_count, MPI_Datatype origin_type, void* result,
                                  int result_count, MPI_Datatype result_type, int target, MPI_Aint disp,
                                  int target_count, MPI_Datatype target_type, MPI_Op op, MPI_Win win) {
    return PMPI_Get_accumulate(origin, origin_count, origin_type, result, result_count, result_type, target,
                               disp_for(win, target, disp), target_count, target_type, op, win);
}

extern "C" int MPI_Fetch_and_op(const void* origin, void* result, MPI_Datatype type, int target, MPI_Aint disp,
                                MPI_Op op, MPI_Win win) {
    return PMPI_Fetch_and_op(origin, result, type, target, disp_for(win, target, disp), op, win);
}

extern "C" int MPI_Compare_and_swap(const void* origin, const void* compare, void* result, MPI_Datatype type,
                                    int target, MPI_Aint disp, MPI_Win win) {
    return PMPI_Compare_and_swap(origin, compare, result, type, target, disp_for(win, target, disp), win);
}

extern "C" int MPI_Rput(const void* origin, int origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                        int target_count, MPI_Datatype target_type, MPI_Win win, MPI_Request* request) {
    return PMPI_Rput(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count, target_type,
                     win, request);
}

extern "C" int MPI_Rget(void* origin, int origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                        int target_count, MPI_Datatype target_type, MPI_Win win, MPI_Request* request) {
    return PMPI_Rget(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count, target_type,
                     win, request);
}

extern "C" int MPI_Raccumulate(const void* origin, int origin_count, MPI_Datatype origin_type, int target,
                               MPI_Aint disp, int target_count, MPI_Datatype target_type, MPI_Op op, MPI_Win win,
                               MPI_Request* request) {
    return PMPI_Raccumulate(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count,
                            target_type, op, win, request);
}

extern "C" int MPI_Rget_accumulate(const void* origin, int origin_count, MPI_Datatype origin_type, void* result,
                                   int result_count, MPI_Datatype result_type, int target, MPI_Aint disp,
                                   int target_count, MPI_Datatype target_type, MPI_Op op, MPI_Win win,
                                   MPI_Request* request) {
    return PMPI_Rget_accumulate(origin, origin_count, origin_type, result, result_count, result_type, target,
                                disp_for(win, target, disp), target_count, target_type, op, win, request);
}

extern "C" int MPI_Put_c(const void* origin, MPI_Count origin_count, MPI_Datatype origin_type, int target,
                         MPI_Aint disp, MPI_Count target_count, MPI_Datatype target_type, MPI_Win win) {
    return PMPI_Put_c(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count, target_type,
                      win);
}

extern "C" int MPI_Get_c(void* origin, MPI_Count origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                         MPI_Count target_count, MPI_Datatype target_type, MPI_Win win) {
    return PMPI_Get_c(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count, target_type,
                      win);
}

extern "C" int MPI_Accumulate_c(const void* origin, MPI_Count origin_count, MPI_Datatype origin_type, int target,
                                MPI_Aint disp, MPI_Count target_count, MPI_Datatype target_type, MPI_Op op,
                                MPI_Win win) {
    return PMPI_Accumulate_c(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count,
                             target_type, op, win);
}

extern "C" int MPI_Get_accumulate_c(const void* origin, MPI_Count origin_count, MPI_Datatype origin_type, void* result,
                                    MPI_Count result_count, MPI_Datatype result_type, int target, MPI_Aint disp,
                                    MPI_Count target_count, MPI_Datatype target_type, MPI_Op op, MPI_Win win) {
    return PMPI_Get_accumulate_c(origin, origin_count, origin_type, result, result_count, result_type, target,
                                 disp_for(win, target, disp), target_count, target_type, op, win);
}

extern "C" int MPI_Rput_c(const void* origin, MPI_Count origin_count, MPI_Datatype origin_type, int target,
                          MPI_Aint disp, MPI_Count target_count, MPI_Datatype target_type, MPI_Win win,
                          MPI_Request* request) {
    return PMPI_Rput_c(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count,
                       target_type, win, request);
}

extern "C" int MPI_Rget_c(void* origin, MPI_Count origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                          MPI_Count target_count, MPI_Datatype target_type, MPI_Win win, MPI_Request* request) {
    return PMPI_Rget_c(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count,
                       target_type, win, request);
}

extern "C" int MPI_Raccumulate_c(const void* origin, MPI_Count origin_count, MPI_Datatype origin_type, int target,
                                 MPI_Aint disp, MPI_Count target_count, MPI_Datatype target_type, MPI_Op op,
                                 MPI_Win win, MPI_Request* request) {
    return PMPI_Raccumulate_c(origin, origin_count, origin_type, target, disp_for(win, target, disp), target_count,
                              target_type, op, win, request);
}

extern "C" int MPI_Rget_accumulate_c(const void* origin, MPI_Count origin_count, MPI_Datatype origin_type, void* result,
                                     MPI_Count result_count, MPI_Datatype result_type, int target, MPI_Aint disp,
                                     MPI_Count target_count, MPI_Datatype target_type, MPI_Op op, MPI_Win win,
                                     MPI_Request* request) {
    return PMPI_Rget_accumulate_c(origin, origin_count, origin_type, result, result_count, result_type, target,
                                  disp_for(win, target, disp), target_count, target_type, op, win, request);
}
