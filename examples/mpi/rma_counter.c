/* SPDX-License-Identifier: MIT */
/* rma_counter.c: a plain MPI program that knows nothing about strata.
 *
 * It allocates its window memory the way most RMA codes do, MPI_Alloc_mem
 * followed by MPI_Win_create, and every rank adds 1 to each of rank 0's
 * counters with MPI_Accumulate. Built with mpicc alone:
 *   mpicc rma_counter.c -o rma_counter
 *   mpiexec -n 2 ./rma_counter [COUNTERS]     (default 4096 counters of 8 bytes per rank)
 * Put on storage windows without a rebuild: preload libstrata-mpi into the
 * ranks and name the files in one environment variable (README.md,
 * docs/getting-started/mpi.md):
 *   STRATA_MPI_WINDOW_HINTS="alloc_type=storage,storage_alloc_filename=$DIR/%k-%r.dat" \
 *     mpiexec -n 2 -genv LD_PRELOAD <prefix>/lib/libstrata-mpi.so.0 ./rma_counter
 * Each rank's window is then the file $DIR/mem-<rank>.dat (%k: the routine,
 * here MPI_Alloc_mem; %r: the rank), and the counters are in it after the run. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PIECE = 4096 }; /* counters added per MPI_Accumulate */

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long count = argc > 1 ? atol(argv[1]) : PIECE;
    if (count < 1) {
        if (rank == 0) fprintf(stderr, "rma_counter: COUNTERS=%s: not a number above 0\n", argv[1]);
        MPI_Finalize();
        return 2;
    }

    long* counters;
    MPI_Alloc_mem(count * (MPI_Aint)sizeof(long), MPI_INFO_NULL, &counters);
    memset(counters, 0, count * (MPI_Aint)sizeof(long));
    MPI_Win win;
    MPI_Win_create(counters, count * (MPI_Aint)sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Barrier(MPI_COMM_WORLD); /* every window is zeroed before anyone adds */

    long ones[PIECE];
    for (int i = 0; i < PIECE; ++i) ones[i] = 1;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    for (long first = 0; first < count; first += PIECE) {
        const int n = count - first < PIECE ? (int)(count - first) : PIECE;
        MPI_Accumulate(ones, n, MPI_LONG, 0, first, n, MPI_LONG, MPI_SUM, win);
        if (first / PIECE % 64 == 63) MPI_Win_flush(0, win); /* bounds what MPI queues */
    }
    MPI_Win_unlock(0, win);
    MPI_Barrier(MPI_COMM_WORLD);

    int status = 0;
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Win_sync(win); /* a memory barrier in MPI; on a storage window also a write-back to its file */
        for (long i = 0; i < count && status == 0; ++i)
            if (counters[i] != size) {
                fprintf(stderr, "counter %ld is %ld, expected %d\n", i, counters[i], size);
                status = 1;
            }
        MPI_Win_unlock(0, win);
        if (status == 0) printf("%d ranks: each of rank 0's %ld counters is %d\n", size, count, size);
    }
    MPI_Win_free(&win);
    MPI_Free_mem(counters);
    MPI_Finalize();
    return status;
}
