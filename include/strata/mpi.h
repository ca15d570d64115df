/* SPDX-License-Identifier: MIT */
/* strata MPI storage windows: the hints of libstrata-mpi (docs/mpi-storage-windows.md).
 *
 * libstrata-mpi gives MPI one-sided windows whose memory is a mapped file or
 * block device. It works through the MPI profiling interface, so a program
 * needs no strata function: it passes these hints in the MPI_Info of
 * MPI_Win_allocate, MPI_Win_allocate_shared or MPI_Alloc_mem, or the user sets
 * default hints in the environment. Use it either way:
 *
 *   link:     mpicc app.c -lstrata-mpi            (before the MPI library)
 *   preload:  mpiexec -n 4 -genv LD_PRELOAD /path/to/libstrata-mpi.so ./app
 *
 * This header only names the hints; including it is optional.
 *
 *   MPI_Info info;
 *   MPI_Info_create(&info);
 *   MPI_Info_set(info, STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE);
 *   MPI_Info_set(info, STRATA_MPI_FILENAME, "/scratch/win-%r.dat");
 *   MPI_Win_allocate(size, 1, info, MPI_COMM_WORLD, &base, &win);
 *   ...                      // put, get, accumulate, load, store
 *   MPI_Win_sync(win);       // returns when this rank's changes are durable (and, with
 *                            // storage_alloc_remote_sync, the targets this rank wrote to)
 *   MPI_Win_free(&win);      // writes back, then releases the mapping
 *
 * Errors: collective calls agree on the outcome, so if one rank cannot set up
 * its storage every rank returns the same error class and message:
 *   MPI_ERR_INFO_VALUE   a hint value that cannot be honoured
 *   MPI_ERR_NO_SUCH_FILE, MPI_ERR_ACCESS, MPI_ERR_READ_ONLY, MPI_ERR_BAD_FILE,
 *   MPI_ERR_NO_SPACE, MPI_ERR_IO, MPI_ERR_FILE   the file could not be set up
 *   MPI_ERR_RMA_SHARED   a shared window over ranks of several nodes
 * MPI_Error_string gives "<routine>: rank <r> (<host>): <hint>=<value>: <cause>".
 *
 * Thread safety: every intercepted routine may be called under
 * MPI_THREAD_MULTIPLE, with MPI's own rules on concurrent use of one window.
 */
#ifndef STRATA_MPI_H
#define STRATA_MPI_H

/* --- Hints (MPI_Info keys) ------------------------------------------------ */

/* "memory" (default) or "storage". Give it on every rank of the communicator
 * or on none (values may differ per rank for MPI_Win_allocate). */
#define STRATA_MPI_ALLOC_TYPE "alloc_type"
#define STRATA_MPI_MEMORY "memory"
#define STRATA_MPI_STORAGE "storage"

/* Path of the file or block device; required with alloc_type=storage.
 * %r = rank in MPI_COMM_WORLD, %w = index of the window or allocation within
 * the process among those given storage hints (one counter for
 * MPI_Win_allocate, MPI_Win_allocate_shared and MPI_Alloc_mem), %k = the
 * routine that made it ("win", "shm" or "mem"), %j = job id (STRATA_JOB_ID, SLURM_JOB_ID, PBS_JOBID,
 * LSB_JOBID, FLUX_JOB_ID, COBALT_JOBID, JOB_ID; else the pid of rank 0 of the
 * window's communicator), %% = '%'. A file is created if absent and its space
 * is reserved at once (no SIGBUS on a full disk later). An existing file is
 * reused (restart), opened without following links: a symbolic link, and a
 * regular file owned by another user, fail with MPI_ERR_ACCESS (see
 * storage_alloc_allow_other_owner). */
#define STRATA_MPI_FILENAME "storage_alloc_filename"

/* "true": reuse an existing regular file even when another user owns it
 * (a file shared on purpose). Default "false": such a file is refused with
 * MPI_ERR_ACCESS naming its owner and mode, since its owner can read and
 * change the window's data. */
#define STRATA_MPI_ALLOW_OTHER_OWNER "storage_alloc_allow_other_owner"

/* Byte offset in the file or device where the window starts; a multiple of
 * the page size. Default 0. */
#define STRATA_MPI_OFFSET "storage_alloc_offset"

/* Share of the window's address range on storage, in [0, 1], or "auto":
 * keep in memory what fits in the memory this process may use (the cgroup
 * limit if lower than MemAvailable; divided among the ranks of the node that
 * ask for auto in the same call), the rest on storage. Default 1. */
#define STRATA_MPI_FACTOR "storage_alloc_factor"
#define STRATA_MPI_FACTOR_AUTO "auto"

/* "memory_first" (default) or "storage_first": which part of a combined
 * window comes first in its address range. */
#define STRATA_MPI_ORDER "storage_alloc_order"
#define STRATA_MPI_MEMORY_FIRST "memory_first"
#define STRATA_MPI_STORAGE_FIRST "storage_first"

/* "true": remove the file at MPI_Win_free / MPI_Free_mem (rank 0 removes a
 * shared window's file). Not allowed for block devices. Default "false". */
#define STRATA_MPI_UNLINK "storage_alloc_unlink"

/* "true": changes made since the last MPI_Win_sync never reach the file;
 * MPI_Win_free drops them. Such windows are mapped privately, so unsynced
 * changes must fit in memory. Not for shared windows. Default "false". */
#define STRATA_MPI_DISCARD "storage_alloc_discard"

/* When changes are written back: "on_sync" (default: MPI_Win_sync and
 * MPI_Win_free), "async" (also in the background every
 * STRATA_MPI_FLUSH_INTERVAL_MS; MPI_Win_sync is still a durability barrier),
 * "on_free" (MPI_Win_sync only orders memory; MPI_Win_free writes back). */
#define STRATA_MPI_SYNC "storage_alloc_sync"
#define STRATA_MPI_SYNC_ON_SYNC "on_sync"
#define STRATA_MPI_SYNC_ASYNC "async"
#define STRATA_MPI_SYNC_ON_FREE "on_free"

/* "true" (MPI_Win_allocate): once a rank's MPI_Win_sync returns, every
 * target it wrote to since its previous MPI_Win_sync (MPI_Put,
 * MPI_Accumulate, MPI_Get_accumulate and MPI_Fetch_and_op other than
 * MPI_NO_OP, MPI_Compare_and_swap, their R and _c forms) has made those bytes
 * durable too; targets not written to are not asked. If any rank gives it,
 * the window has it. The origin flushes the targets it holds a passive-target
 * lock on, and each target syncs from a strata agent thread that polls MPI
 * between short sleeps, so targets that compute outside MPI answer and idle
 * ranks burn no core. Needs MPI_THREAD_MULTIPLE (MPI_ERR_INFO_VALUE
 * otherwise; given in STRATA_MPI_WINDOW_HINTS, MPI_Init asks for it); not
 * with storage_alloc_discard. A target whose sync fails, or that died (same
 * node), fails the origin's MPI_Win_sync naming the target rank and its file
 * (MPIX_ERR_PROC_FAILED for a dead one). Default "false": MPI_Win_sync makes
 * this rank's part durable only. MPI_Win_get_info reports
 * strata_remote_syncs, the syncs this rank made for others. */
#define STRATA_MPI_REMOTE_SYNC "storage_alloc_remote_sync"
#define STRATA_MPI_INFO_REMOTE_SYNCS "strata_remote_syncs"

/* MPI-IO reserved hints. access_style: comma-separated list of read_once,
 * write_once, read_mostly, write_mostly, sequential, reverse_sequential,
 * random (or normal); the first is given to the kernel as advice.
 * file_perm: octal mode of a created file (default 0600). striping_factor and
 * striping_unit: positive integers, accepted and reported by
 * MPI_Win_get_info under "strata_not_applied" (no striping is set). */
#define STRATA_MPI_ACCESS_STYLE "access_style"
#define STRATA_MPI_FILE_PERM "file_perm"
#define STRATA_MPI_STRIPING_FACTOR "striping_factor"
#define STRATA_MPI_STRIPING_UNIT "striping_unit"

/* MPI's own hint for MPI_Win_allocate_shared: "true" starts every rank's
 * segment on a page boundary; default "false" (segments are contiguous). */
#define STRATA_MPI_SHARED_NONCONTIG "alloc_shared_noncontig"

/* Keys MPI_Win_get_info adds for a storage window (besides the hints above,
 * with storage_alloc_filename expanded). */
#define STRATA_MPI_INFO_MEMORY_BYTES "strata_memory_bytes"
#define STRATA_MPI_INFO_STORAGE_BYTES "strata_storage_bytes"
/* How the storage part is written back: "kernel" (shared file mapping),
 * "explicit_sync" (storage_alloc_discard) or "direct" (access_style=write_once
 * on a window that fits in memory: anonymous memory written with O_DIRECT). */
#define STRATA_MPI_INFO_WRITEBACK "strata_writeback"
/* "true" if a thread writes the window's changed pages with O_DIRECT while the
 * program still stores (access_style=write_once with direct write-back where
 * the kernel tracks stores, Linux 6.7+), so MPI_Win_sync has only the rest to
 * write; "false" otherwise. */
#define STRATA_MPI_INFO_WRITE_BEHIND "strata_write_behind"
/* "true" if the window's data was read from the file at creation into process
 * memory with several O_DIRECT reads in flight (access_style=read_once on a
 * window over data the file holds that fits in half the memory budget, where
 * the kernel tracks stores, Linux 6.7+; later stores are written back with
 * O_DIRECT at MPI_Win_sync); "false" otherwise. */
#define STRATA_MPI_INFO_READ_DIRECT "strata_read_direct"
/* "true" if that read runs behind the program: MPI_Win_allocate returned as
 * soon as the reads were started, and an access to a page not read yet waits
 * for its 2 MiB chunk only, which is read next (userfaultfd; needs
 * CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1, else the window is read
 * before MPI_Win_allocate returns and this is "false"). A failed read makes
 * the pages not read raise SIGBUS, and MPI_Win_sync and MPI_Win_free return
 * an error (MPI_ERR_IO for EIO) naming the file and the offset, and write
 * nothing back. fork() waits until the read ends, so a child has every byte. */
#define STRATA_MPI_INFO_READ_BEHIND "strata_read_behind"
/* "true" once the read behind the program has ended (or if there is none),
 * "false" while it runs: the value at the time of MPI_Win_get_info. */
#define STRATA_MPI_INFO_READ_COMPLETE "strata_read_complete"
#define STRATA_MPI_INFO_NOT_APPLIED "strata_not_applied"

/* --- Environment ----------------------------------------------------------- */

/* Default hints for windows and MPI_Alloc_mem allocations made without any
 * alloc_type or storage_alloc_* key, e.g.
 *   STRATA_MPI_WINDOW_HINTS="alloc_type=storage,storage_alloc_filename=/data/%k-%r-%w.dat"
 * Entries are key=value separated by commas (values cannot contain commas);
 * a key this library does not read is an error (MPI_ERR_INFO_VALUE naming it
 * and the known keys). Read once, at the first call in scope. MPI_Win_create
 * over a storage MPI_Alloc_mem allocation is a storage window. A
 * storage_alloc_factor below 1 puts shared windows wholly on storage (said
 * once on stderr). STRATA_LOG=info prints where each window's bytes went. */
#define STRATA_MPI_WINDOW_HINTS_ENV "STRATA_MPI_WINDOW_HINTS"
/* Which routines the defaults apply to: a comma list of win_allocate,
 * win_allocate_shared, alloc_mem, alloc_mem>=SIZE (K, M, G suffixes), all,
 * none. Default all. */
#define STRATA_MPI_WINDOW_HINTS_SCOPE_ENV "STRATA_MPI_WINDOW_HINTS_SCOPE"
/* Period of the background write-back of storage_alloc_sync=async, in
 * milliseconds (default 1000). */
#define STRATA_MPI_FLUSH_INTERVAL_ENV "STRATA_MPI_FLUSH_INTERVAL_MS"
/* The job id %j expands to, ahead of the batch systems' variables. */
#define STRATA_MPI_JOB_ID_ENV "STRATA_JOB_ID"

/* --- Shared-object handles (docs/shm.md) ---------------------------------- */

/* A strata::Handle as C sees it: 32 bytes, the same layout. */
#include <mpi.h>
#include <stdint.h>

/* NOLINTNEXTLINE(modernize-use-using,readability-identifier-naming): a C header */
typedef struct strata_handle {
    uint64_t segment;    /* id of the segment that holds the object */
    uint64_t generation; /* the object's generation */
    uint64_t offset;     /* byte offset from the segment's start */
    uint64_t type;       /* strata::type_id<T>() */
} strata_handle;

#ifdef __cplusplus
extern "C" {
#endif
/* The MPI datatype of one handle (four MPI_UINT64_T), committed on first use
 * after MPI_Init and valid until MPI_Finalize; do not free it. Thread-safe. */
MPI_Datatype strata_mpi_handle_type(void);
/* 1 when ports may be opened with sync=mpi in this process (libstrata-mpi is
 * loaded and MPI initialized through its MPI_Init), else 0. */
int strata_mpi_port_sync_ready(void);
#ifdef __cplusplus
}
#endif

/* Send handles, not data: MPI_Send(&h, 1, STRATA_MPI_HANDLE, dest, tag, comm). */
#define STRATA_MPI_HANDLE (strata_mpi_handle_type())

#endif /* STRATA_MPI_H */
