/* SPDX-License-Identifier: MIT */
/* access_style=write_mostly on a window that fits in memory: direct
 * write-back without write-behind (MPI_Win_get_info: strata_writeback=direct,
 * strata_write_behind=false). The window is rewritten in part between syncs,
 * as a solver or mSTREAM does: each MPI_Win_sync puts exactly the current
 * contents in the file (pages changed since the last sync, including a
 * peer's put, and none of the others lost), and the window keeps its
 * contents across syncs. Run with 2 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

enum { PAGES = 1024 + 3, WINDOW = PAGES * 4096 };

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* Not /dev/shm or another tmpfs: O_DIRECT needs a disk file system. */
    char dir[256] = "/var/tmp/strata-mpi-write-mostly-XXXXXX", path[300];
    if (rank == 0) CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "%s/state-%%r.dat", dir);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path,
                              STRATA_MPI_ACCESS_STYLE, "write_mostly", NULL);
    unsigned char* base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(WINDOW, 1, info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);
    expect_info(win, STRATA_MPI_INFO_WRITEBACK, "direct");
    expect_info(win, STRATA_MPI_INFO_WRITE_BEHIND, "false");
    char mine[320];
    snprintf(mine, sizeof mine, "%s/state-%d.dat", dir, rank);

    static unsigned char expected[WINDOW], stored[WINDOW], incoming[4096];
    const int target = (rank + 1) % n;
    for (int round = 1; round <= 4; ++round) {
        /* Round r rewrites every r-th page, and the peer puts one page. */
        for (size_t page = 0; page < PAGES; page += (size_t)round) {
            memset(base + page * 4096, round * 16 + rank, 4096);
            memset(expected + page * 4096, round * 16 + rank, 4096);
        }
        const size_t put_page = (size_t)(100 + round);
        memset(incoming, 0xC0 + round, sizeof incoming);
        memset(expected + put_page * 4096, 0xC0 + round, 4096);
        MPI_Win_lock_all(0, win);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_MPI(MPI_Put(incoming, 4096, MPI_BYTE, target, (MPI_Aint)(put_page * 4096), 4096, MPI_BYTE, win));
        CHECK_MPI(MPI_Win_flush_all(win));
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_MPI(MPI_Win_sync(win));
        MPI_Win_unlock_all(win);
        CHECK(memcmp(base, expected, WINDOW) == 0, "rank %d round %d: the window changed at the sync", rank, round);
        read_file(mine, 0, stored, WINDOW);
        for (size_t i = 0; i < WINDOW; i += 512)
            CHECK(stored[i] == expected[i], "rank %d round %d: file byte %zu is %u, expected %u", rank, round, i,
                  stored[i], expected[i]);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    CHECK_MPI(MPI_Win_free(&win));
    read_file(mine, 0, stored, WINDOW);
    CHECK(memcmp(stored, expected, WINDOW) == 0, "rank %d: after MPI_Win_free the file differs", rank);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(unlink(mine) == 0, "unlink %s: %s", mine, strerror(errno));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) CHECK(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
    MPI_Finalize();
    return 0;
}
