/* SPDX-License-Identifier: MIT */
/* storage_alloc_discard=true on a shared window (MPI_Win_allocate_shared): the ranks see each
 * other's stores at once, the window starts with the bytes the file held, what each rank's
 * MPI_Win_sync made durable of its own segment is in the file, and what was stored after it
 * never reaches the file, before or after MPI_Win_free. The working copy the ranks share leaves
 * no name behind; with storage_alloc_unlink=true the file is gone after the free.
 * Run with 3 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

/* Ints per rank: segments follow each other byte for byte and end inside pages. */
enum { COUNT = 3 * 1024 + 7 };

static int value(int tag, int rank, int i) {
    return tag * 1000000 + rank * 10000 + i % 10000;
}

static MPI_Win make_window(const char* path, const char* unlink_file, int** base) {
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_DISCARD,
                              "true", STRATA_MPI_UNLINK, unlink_file, NULL);
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate_shared(COUNT * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, base, &win));
    MPI_Info_free(&info);
    return win;
}

/* Every rank's segment, as this rank sees it through the shared window, holds `tag`. */
static void check_window(MPI_Win win, int n, int tag) {
    for (int r = 0; r < n; ++r) {
        MPI_Aint size = 0;
        int unit = 0;
        int* seg = NULL;
        CHECK_MPI(MPI_Win_shared_query(win, r, &size, &unit, &seg));
        CHECK(size == COUNT * (MPI_Aint)sizeof(int), "rank %d segment of %ld bytes", r, (long)size);
        for (int i = 0; i < COUNT; ++i)
            CHECK(seg[i] == value(tag, r, i), "rank %d's segment [%d] = %d, expected tag %d", r, i, seg[i], tag);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* before anyone stores again */
}

/* The file holds `tag` in every rank's segment. */
static void check_file(const char* path, int n, int tag) {
    static int stored[COUNT];
    CHECK(file_size(path) == (long long)n * COUNT * (long long)sizeof(int), "%s has %lld bytes", path, file_size(path));
    for (int r = 0; r < n; ++r) {
        read_file(path, (long long)r * COUNT * (long long)sizeof(int), stored, sizeof stored);
        for (int i = 0; i < COUNT; ++i)
            CHECK(stored[i] == value(tag, r, i), "%s: rank %d's segment [%d] = %d, expected tag %d", path, r, i,
                  stored[i], tag);
    }
}

/* Each rank stores `tag` into its own segment; with `sync`, makes it durable in a passive epoch. */
static void store(MPI_Win win, int* mine, int rank, int tag, int sync) {
    CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    for (int i = 0; i < COUNT; ++i) mine[i] = value(tag, rank, i);
    if (sync) CHECK_MPI(MPI_Win_sync(win));
    CHECK_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char dir[256], path[300];
    make_test_dir(MPI_COMM_WORLD, "shared-discard", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/shared.dat", dir);

    /* The file already holds tag 1 for every rank. */
    if (rank == 0) {
        int* data = malloc((size_t)n * COUNT * sizeof(int));
        CHECK(data != NULL, "malloc");
        for (int r = 0; r < n; ++r)
            for (int i = 0; i < COUNT; ++i) data[r * COUNT + i] = value(1, r, i);
        write_file(path, data, (size_t)n * COUNT * sizeof(int));
        free(data);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    int* mine = NULL;
    MPI_Win win = make_window(path, "false", &mine);
    check_window(win, n, 1); /* the window starts as the file */
    if (rank == 0)
        CHECK(count_files(dir) == 1, "%d files in %s: the working copy's name was left", count_files(dir), dir);

    store(win, mine, rank, 2, 1); /* tag 2 synced by every rank */
    check_window(win, n, 2);      /* every rank sees the others' stores */
    if (rank == 0) check_file(path, n, 2);
    MPI_Barrier(MPI_COMM_WORLD);

    store(win, mine, rank, 3, 0); /* tag 3 never synced */
    check_window(win, n, 3);
    if (rank == 0) check_file(path, n, 2);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_free(&win));
    if (rank == 0) {
        check_file(path, n, 2); /* dropped at free */
        CHECK(count_files(dir) == 1, "%d files in %s after the free", count_files(dir), dir);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* With unlink, the file is gone after the free. */
    snprintf(path, sizeof path, "%s/unlinked.dat", dir);
    win = make_window(path, "true", &mine);
    store(win, mine, rank, 4, 1);
    check_window(win, n, 4);
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) CHECK(!file_exists(path), "%s still exists after MPI_Win_free with unlink", path);

    remove_test_dir(MPI_COMM_WORLD, dir);
    if (rank == 0) printf("shared discard windows: synced stores kept, later ones dropped, nothing left\n");
    MPI_Finalize();
    return 0;
}
