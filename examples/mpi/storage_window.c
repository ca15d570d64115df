/* SPDX-License-Identifier: MIT */
/* storage_window.c: an MPI window whose memory is a file, through strata.
 *
 * Build and run against an installed strata (docs/install.md; the library
 * must come before MPI on the link line, which strata-mpi.pc arranges):
 *   mpicc storage_window.c $(pkg-config --cflags --libs strata-mpi) -o storage_window
 *   mpiexec -n 4 ./storage_window /tmp
 * or build it without strata and preload the library instead:
 *   mpicc storage_window.c $(pkg-config --cflags strata-mpi) -o storage_window
 *   mpiexec -n 4 -genv LD_PRELOAD <prefix>/lib/libstrata-mpi.so.0 ./storage_window /tmp
 *
 * Every rank adds its rank to each element of rank 0's window; rank 0 makes
 * the result durable with MPI_Win_sync and MPI_Win_free writes it back to
 * DIR/counters-0.dat. Run it twice: the counters go on from the file. */
#include <mpi.h>
#include <stdio.h>
#include <strata/mpi.h> /* hint names only; no strata function is called */

enum { COUNT = 1024 };

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char* dir = argc > 1 ? argv[1] : ".";
    char path[4096];
    snprintf(path, sizeof path, "%s/counters-%%r.dat", dir);

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE);
    MPI_Info_set(info, STRATA_MPI_FILENAME, path); /* %r: one file per rank */
    long* counters;
    MPI_Win win;
    if (MPI_Win_allocate(COUNT * sizeof(long), sizeof(long), info, MPI_COMM_WORLD, &counters, &win) != MPI_SUCCESS)
        return 1; /* with the default error handler MPI aborts first, printing why */
    MPI_Info_free(&info);
    const long before = counters[0]; /* rank 0: what the previous run left in the file */
    MPI_Barrier(MPI_COMM_WORLD);     /* read before anyone adds */

    long mine[COUNT];
    for (int i = 0; i < COUNT; ++i) mine[i] = rank;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Accumulate(mine, COUNT, MPI_LONG, 0, 0, COUNT, MPI_LONG, MPI_SUM, win);
    MPI_Win_unlock(0, win);
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Win_sync(win); /* returns once the counters are on storage */
        const long expected = before + (long)size * (size - 1) / 2;
        for (int i = 0; i < COUNT; ++i)
            if (counters[i] != expected) {
                fprintf(stderr, "counter %d is %ld, expected %ld\n", i, counters[i], expected);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        printf("counters went from %ld to %ld and are stored in %s/counters-0.dat\n", before, expected, dir);
        MPI_Win_unlock(0, win);
    }
    MPI_Win_free(&win); /* writes back and unmaps; the files stay */
    MPI_Finalize();
    return 0;
}
