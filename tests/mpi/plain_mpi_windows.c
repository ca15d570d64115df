/* SPDX-License-Identifier: MIT */
/* An MPI program that knows nothing of strata: no strata header, no strata
 * library. unmodified_program_uses_storage_under_ld_preload.sh runs it with
 * LD_PRELOAD=libstrata-mpi.so and STRATA_MPI_WINDOW_HINTS, then checks the
 * files with `plain_mpi_windows check DIR NP` (no MPI, no preload).
 *   run          window 0: MPI_Win_allocate, filled by MPI_Put from the next
 *                rank; window 1: MPI_Win_allocate_shared, each rank stores
 *                its segment. Both report the flavor asked for.
 *   check DIR N [PREFIX]  PREFIXwin-<r>-0.dat holds rank r's window for
 *                r < N, and PREFIXwin-0-1.dat the shared window (named by rank 0). */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { COUNT = 10000, SHARED = 1000 };

static int value(int owner, int i) {
    return owner * 100000 + i;
}

static int fail(const char* what, long a, long b) {
    fprintf(stderr, "plain_mpi_windows: %s: %ld, expected %ld\n", what, a, b);
    return 1;
}

static int check(const char* dir, int n, const char* prefix) {
    char path[512];
    int* data = malloc(COUNT * sizeof(int));
    for (int r = 0; r < n; ++r) {
        snprintf(path, sizeof path, "%s/%swin-%d-0.dat", dir, prefix, r);
        FILE* f = fopen(path, "rb");
        if (f == NULL) return fail(path, 0, 1);
        size_t got = fread(data, sizeof(int), COUNT + 1, f);
        fclose(f);
        if (got != COUNT) return fail("ints in the window file", (long)got, COUNT);
        for (int i = 0; i < COUNT; ++i)
            if (data[i] != value(r, i)) return fail(path, data[i], value(r, i));
    }
    snprintf(path, sizeof path, "%s/%swin-0-1.dat", dir, prefix);
    FILE* f = fopen(path, "rb");
    if (f == NULL) return fail(path, 0, 1);
    size_t got = fread(data, sizeof(int), COUNT, f);
    fclose(f);
    if (got != (size_t)(SHARED * n)) return fail("ints in the shared file", (long)got, SHARED * n);
    for (int i = 0; i < SHARED * n; ++i)
        if (data[i] != value(i / SHARED, i % SHARED)) return fail(path, data[i], value(i / SHARED, i % SHARED));
    free(data);
    printf("plain_mpi_windows: files of %d ranks hold the data\n", n);
    return 0;
}

static int flavor(MPI_Win win) {
    int* value = NULL;
    int flag = 0;
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &value, &flag);
    return flag ? *value : -1;
}

int main(int argc, char** argv) {
    if (argc >= 4 && strcmp(argv[1], "check") == 0) return check(argv[2], atoi(argv[3]), argc > 4 ? argv[4] : "");
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int* base = NULL;
    MPI_Win win;
    MPI_Win_allocate(COUNT * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    if (flavor(win) != MPI_WIN_FLAVOR_ALLOCATE) MPI_Abort(MPI_COMM_WORLD, fail("flavor", flavor(win), 2));
    int* data = malloc(COUNT * sizeof(int));
    const int next = (rank + 1) % n;
    for (int i = 0; i < COUNT; ++i) data[i] = value(next, i);
    MPI_Win_fence(0, win);
    MPI_Put(data, COUNT, MPI_INT, next, 0, COUNT, MPI_INT, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < COUNT; ++i)
        if (base[i] != value(rank, i)) MPI_Abort(MPI_COMM_WORLD, fail("window", base[i], value(rank, i)));
    MPI_Win_free(&win);

    MPI_Win_allocate_shared(SHARED * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    if (flavor(win) != MPI_WIN_FLAVOR_SHARED) MPI_Abort(MPI_COMM_WORLD, fail("flavor", flavor(win), 4));
    for (int i = 0; i < SHARED; ++i) base[i] = value(rank, i);
    MPI_Win_free(&win);
    free(data);
    MPI_Finalize();
    return 0;
}
