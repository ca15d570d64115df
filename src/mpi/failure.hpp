// SPDX-License-Identifier: MIT
// Errors of libstrata-mpi: one message format, MPI error classes, and the
// agreement that makes a collective call fail the same way on every rank.
//
// Message: "<routine>: rank <r> (<host>): <key>=<value>: <cause>", e.g.
//   MPI_Win_allocate: rank 1 (node7): storage_alloc_filename=/no/such/dir/w.dat:
//   cannot create the file: No such file or directory (ENOENT)
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "mpi/common.hpp"
#include "mpi/hints.hpp"
#include "strata/error.hpp"

namespace strata::mpi {

/// A failure on one rank: an MPI error class and the full message.
struct Failure {
    int error_class = MPI_ERR_OTHER;
    std::string message;
    /// For a failure agreed on by agree(): the lowest rank whose error
    /// handler is fatal, which alone prints the message and aborts the job
    /// (-1: no rank's handler is fatal, or the failure is local).
    int printer = -1;
};

/// A rejected hint: class MPI_ERR_INFO_VALUE.
Failure hint_failure(const char* routine, int rank, const HintError& error);
/// A failure of the region layer while setting up or releasing storage; the
/// class follows errno (ENOENT -> MPI_ERR_NO_SUCH_FILE, ENOSPC -> MPI_ERR_NO_SPACE, ...).
Failure region_failure(const char* routine, int rank, const Error& error);
/// The same for a window's or an allocation's file failing after creation
/// (MPI_Win_sync, MPI_Win_free, MPI_Free_mem: a read behind the program, a
/// write-back): no hint is at
/// fault, so unless the region names a parameter the message names none
/// (the cause names the file).
Failure file_failure(const char* routine, int rank, const Error& error);
/// A target of an origin's remote sync failed (storage_alloc_remote_sync):
/// "<routine>: rank <r> (<host>): target rank <t> (<host>): <file>: <cause>".
Failure make_target_failure(int error_class, const char* routine, int rank, int target, std::string_view target_host,
                            std::string_view file, std::string_view cause);
/// Any other failure with an explicit class.
Failure make_failure(int error_class, const char* routine, int rank, std::string_view key, std::string_view value,
                     std::string_view cause);

/// The MPI error class for a region-layer error.
int error_class_of(const Error& error) noexcept;

/// Collective over `comm`: every rank passes its own outcome; every rank gets
/// the failure of the lowest failing rank (class and message broadcast from
/// it), or nullopt if all succeeded. The same reduction finds the rank that
/// will print the message if the communicator's error handler is fatal. `min_values` are reduced with MPI_MIN in
/// the same call, so callers can agree on more than success for free.
std::optional<Failure> agree(MPI_Comm comm, const std::optional<Failure>& mine, std::span<int> min_values = {});

/// Makes an MPI error code of the failure's class carrying its message,
/// calls the communicator's error handler and returns the code. An agreed
/// failure (printer >= 0) is raised collectively: after a barrier (every
/// rank has undone its setup by then), the printer alone prints the message
/// and aborts the job; the other fatal ranks wait for that abort instead of
/// racing it (their own abort could end the job before the message is out).
int raise_on_comm(MPI_Comm comm, const Failure& failure);
/// The same for a window's error handler.
int raise_on_win(MPI_Win win, const Failure& failure);
/// The same for a routine whose window no longer exists (MPI_Win_free):
/// returns the code if `handler` is MPI_ERRORS_RETURN, else raises on MPI_COMM_SELF.
int raise_after_free(MPI_Errhandler handler, const Failure& failure);

}  // namespace strata::mpi
