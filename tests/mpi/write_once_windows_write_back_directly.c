/* SPDX-License-Identifier: MIT */
/* access_style=write_once on a window that fits in memory: the window uses
 * direct write-back (MPI_Win_get_info says strata_writeback=direct).
 * MPI_Win_sync writes the stores and a peer's puts to the file, the window
 * still reads what it holds after the sync, and
 * stores after the last sync reach the file at MPI_Win_free. Over bytes the
 * file already holds, a write_once window shows them (it is a private file
 * mapping then, not fresh memory), and writes back only what changed.
 * The window ends inside a page: the tail goes through the page cache. A
 * shared window (MPI_Win_allocate_shared) keeps the shared mapping.
 * Run with 2 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

enum { COUNT = 64 * 1024 + 10 }; /* ints per rank: 64 pages and a bit */

static int value(int tag, int rank, int i) {
    return tag * 1000003 + rank * 100000 + i;
}

static void expect_writeback(MPI_Win win, const char* expected) {
    expect_info(win, STRATA_MPI_INFO_WRITEBACK, expected);
}

/* A shared window keeps the shared mapping (kernel write-back) even with
 * write_once: every rank sees the others' stores at once. */
static void shared_window_stays_shared(const char* path, int rank, int n) {
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path,
                              STRATA_MPI_ACCESS_STYLE, "write_once", NULL);
    int* mine = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate_shared(4096, sizeof(int), info, MPI_COMM_WORLD, &mine, &win));
    MPI_Info_free(&info);
    expect_writeback(win, "kernel");
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < 1024; ++i) mine[i] = value(4, rank, i);
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    const int peer = (rank + 1) % n;
    MPI_Aint size = 0;
    int unit = 0;
    int* theirs = NULL;
    CHECK_MPI(MPI_Win_shared_query(win, peer, &size, &unit, &theirs));
    for (int i = 0; i < 1024; ++i)
        CHECK(theirs[i] == value(4, peer, i), "rank %d's shared[%d] = %d, expected %d", peer, i, theirs[i],
              value(4, peer, i));
    MPI_Win_unlock_all(win);
    CHECK_MPI(MPI_Win_free(&win));
}

static MPI_Win make_window(const char* path, int rank, int** base) {
    char offset[32];
    /* Each rank's window starts 4 MiB apart in the shared file: no page-cache folio
     * (at most 2 MiB) holds bytes of two ranks, so each rank sees only its own pages. */
    snprintf(offset, sizeof offset, "%d", rank * 1024 * 4096);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_OFFSET,
                              offset, STRATA_MPI_ACCESS_STYLE, "write_once", NULL);
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(COUNT * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, base, &win));
    MPI_Info_free(&info);
    expect_writeback(win, "direct");
    return win;
}

/* Stores to the first half, a put from the peer to the second half. */
static void update(MPI_Win win, int* base, int tag, int rank, int n) {
    static int incoming[COUNT];
    const int target = (rank + 1) % n;
    for (int i = 0; i < COUNT; ++i) incoming[i] = value(tag, target, i);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < COUNT / 2; ++i) base[i] = value(tag, rank, i);
    CHECK_MPI(
        MPI_Put(incoming + COUNT / 2, COUNT - COUNT / 2, MPI_INT, target, COUNT / 2, COUNT - COUNT / 2, MPI_INT, win));
    CHECK_MPI(MPI_Win_flush_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void check_file(const char* path, int rank, const int* expected) {
    static int stored[COUNT];
    read_file(path, (long long)rank * 1024 * 4096, stored, sizeof stored);
    for (int i = 0; i < COUNT; ++i)
        CHECK(stored[i] == expected[i], "file[%d] = %d, expected %d", i, stored[i], expected[i]);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* Not /dev/shm or another tmpfs: O_DIRECT needs a disk file system. */
    char dir[256] = "/var/tmp/strata-mpi-write-once-XXXXXX", path[300];
    if (rank == 0) CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "%s/checkpoint.dat", dir);
    static int expected[COUNT];

    /* A new file: the window is fresh memory written with O_DIRECT. */
    int* base = NULL;
    MPI_Win win = make_window(path, rank, &base);
    for (int i = 0; i < COUNT; ++i) CHECK(base[i] == 0, "fresh window[%d] = %d", i, base[i]);
    update(win, base, 1, rank, n);
    for (int i = 0; i < COUNT; ++i) expected[i] = value(1, rank, i);
    for (int i = 0; i < COUNT; ++i)
        CHECK(base[i] == expected[i], "window[%d] = %d after the sync, expected %d", i, base[i], expected[i]);
    check_file(path, rank, expected);
    /* Changed after the last sync: written at free. */
    for (int i = 100; i < 200; ++i) expected[i] = base[i] = value(2, rank, i);
    CHECK_MPI(MPI_Win_free(&win));
    check_file(path, rank, expected);
    MPI_Barrier(MPI_COMM_WORLD);

    /* The file holds data now: the window shows it, and the changes reach the file. */
    win = make_window(path, rank, &base);
    for (int i = 0; i < COUNT; ++i)
        CHECK(base[i] == expected[i], "reopened window[%d] = %d, expected the file's %d", i, base[i], expected[i]);
    update(win, base, 3, rank, n);
    for (int i = 0; i < COUNT; ++i) expected[i] = value(3, rank, i);
    check_file(path, rank, expected);
    CHECK_MPI(MPI_Win_free(&win));
    check_file(path, rank, expected);

    MPI_Barrier(MPI_COMM_WORLD);
    char shared_path[320];
    snprintf(shared_path, sizeof shared_path, "%s/shared.dat", dir);
    shared_window_stays_shared(shared_path, rank, n);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK(unlink(shared_path) == 0, "unlink %s: %s", shared_path, strerror(errno));
        CHECK(unlink(path) == 0, "unlink %s: %s", path, strerror(errno));
        CHECK(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
    }
    MPI_Finalize();
    return 0;
}
