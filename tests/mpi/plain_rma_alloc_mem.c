/* SPDX-License-Identifier: MIT */
/* An RMA program that knows nothing of strata (no strata header or library),
 * written like most existing RMA codes: memory from
 * MPI_Alloc_mem(MPI_INFO_NULL) exposed with MPI_Win_create. The drivers
 * (unmodified_rma_program_*.sh and friends) run it with
 * LD_PRELOAD=libstrata-mpi.so and STRATA_MPI_WINDOW_HINTS, then check the files.
 *   run      window 0: MPI_Alloc_mem + MPI_Win_create; rank r puts value(next, i)
 *            into the next rank's window (fence), and every rank adds rank+1 to
 *            the last element of every window (MPI_Accumulate, lock/unlock);
 *            then a 64-byte MPI_Alloc_mem scratch buffer; then window 1:
 *            MPI_Win_allocate, stored locally with the same values. Each window
 *            prints what MPI_Win_get_info says of storage_alloc_filename.
 *   shared   MPI_Win_allocate_shared: each rank stores its segment, then reads
 *            its neighbour's through MPI_Win_shared_query.
 *   check FILE OWNER N   FILE holds OWNER's window of a run on N ranks (no MPI).
 *   check-shared FILE N  FILE holds the shared window of N ranks (no MPI). */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { COUNT = 20000 }; /* longs, ~40 pages */

static long value(int owner, int i) {
    return owner * 1000000L + i;
}

static int fail(const char* what, long got, long expected) {
    fprintf(stderr, "plain_rma_alloc_mem: %s: %ld, expected %ld\n", what, got, expected);
    return 1;
}

static int check_window(const long* data, int owner, int n) {
    for (int i = 0; i < COUNT - 1; ++i)
        if (data[i] != value(owner, i)) return fail("window element", data[i], value(owner, i));
    if (data[COUNT - 1] != (long)n * (n + 1) / 2) return fail("accumulated counter", data[COUNT - 1], n * (n + 1) / 2);
    return 0;
}

static int check_file(const char* path, int owner, int n) {
    static long data[COUNT + 1];
    FILE* f = fopen(path, "rb");
    if (f == NULL) return fail(path, 0, 1);
    size_t got = fread(data, sizeof(long), COUNT + 1, f);
    fclose(f);
    if (got < COUNT) return fail("longs in the window file", (long)got, COUNT);
    if (check_window(data, owner, n) != 0) return fail(path, 0, 1);
    printf("plain_rma_alloc_mem: %s holds rank %d's window\n", path, owner);
    return 0;
}

static int check_shared_file(const char* path, int n) {
    FILE* f = fopen(path, "rb");
    if (f == NULL) return fail(path, 0, 1);
    static long data[COUNT];
    for (int r = 0; r < n; ++r) {
        if (fread(data, sizeof(long), COUNT, f) != COUNT) return fail("segments in the shared file", r, n);
        for (int i = 0; i < COUNT; ++i)
            if (data[i] != value(r, i)) return fail("shared window element", data[i], value(r, i));
    }
    const int extra = fgetc(f);
    fclose(f);
    if (extra != EOF) return fail("bytes after the segments", 1, 0);
    printf("plain_rma_alloc_mem: %s holds the segments of %d ranks\n", path, n);
    return 0;
}

static void print_placement(MPI_Win win, int rank, int which) {
    MPI_Info info;
    char file[MPI_MAX_INFO_VAL + 1] = "";
    int flag = 0, length = MPI_MAX_INFO_VAL;
    MPI_Win_get_info(win, &info);
    MPI_Info_get_string(info, "storage_alloc_filename", &length, file, &flag);
    MPI_Info_free(&info);
    printf("rank %d: window %d: %s\n", rank, which, flag ? file : "memory");
}

static void accumulate_everywhere(MPI_Win win, int rank, int n) {
    long mine = rank + 1;
    for (int target = 0; target < n; ++target) {
        MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
        MPI_Accumulate(&mine, 1, MPI_LONG, target, COUNT - 1, 1, MPI_LONG, MPI_SUM, win);
        MPI_Win_unlock(target, win);
    }
}

static int run(int rank, int n) {
    const int next = (rank + 1) % n;
    static long data[COUNT];
    for (int i = 0; i < COUNT; ++i) data[i] = value(next, i);

    long* base = NULL;
    MPI_Win win;
    MPI_Alloc_mem(COUNT * sizeof(long), MPI_INFO_NULL, &base);
    base[COUNT - 1] = 0;
    MPI_Win_create(base, COUNT * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    MPI_Put(data, COUNT - 1, MPI_LONG, next, 0, COUNT - 1, MPI_LONG, win);
    MPI_Win_fence(0, win);
    accumulate_everywhere(win, rank, n);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    MPI_Win_sync(win);
    MPI_Win_unlock(rank, win);
    if (check_window(base, rank, n) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
    print_placement(win, rank, 0);
    MPI_Win_free(&win);
    MPI_Free_mem(base);

    char* scratch = NULL;
    MPI_Alloc_mem(64, MPI_INFO_NULL, &scratch);
    memset(scratch, rank, 64);
    MPI_Free_mem(scratch);

    MPI_Win_allocate(COUNT * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    for (int i = 0; i < COUNT - 1; ++i) base[i] = value(rank, i);
    base[COUNT - 1] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    accumulate_everywhere(win, rank, n);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    MPI_Win_sync(win);
    MPI_Win_unlock(rank, win);
    if (check_window(base, rank, n) != 0) MPI_Abort(MPI_COMM_WORLD, 3);
    print_placement(win, rank, 1);
    MPI_Win_free(&win);
    return 0;
}

static int shared(int rank, int n) {
    long* base = NULL;
    MPI_Win win;
    MPI_Win_allocate_shared(COUNT * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < COUNT; ++i) base[i] = value(rank, i);
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    const int next = (rank + 1) % n;
    MPI_Aint size = 0;
    int unit = 0;
    long* theirs = NULL;
    MPI_Win_shared_query(win, next, &size, &unit, &theirs);
    if (size != COUNT * (MPI_Aint)sizeof(long)) MPI_Abort(MPI_COMM_WORLD, fail("neighbour's size", (long)size, COUNT));
    for (int i = 0; i < COUNT; ++i)
        if (theirs[i] != value(next, i))
            MPI_Abort(MPI_COMM_WORLD, fail("neighbour's segment", theirs[i], value(next, i)));
    MPI_Win_unlock_all(win);
    print_placement(win, rank, 0);
    MPI_Win_free(&win);
    return 0;
}

int main(int argc, char** argv) {
    if (argc >= 5 && strcmp(argv[1], "check") == 0) return check_file(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc >= 4 && strcmp(argv[1], "check-shared") == 0) return check_shared_file(argv[2], atoi(argv[3]));
    if (argc < 2 || (strcmp(argv[1], "run") != 0 && strcmp(argv[1], "shared") != 0)) {
        fprintf(stderr, "usage: plain_rma_alloc_mem run|shared|check FILE OWNER N\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const int rc = strcmp(argv[1], "run") == 0 ? run(rank, n) : shared(rank, n);
    MPI_Finalize();
    return rc;
}
