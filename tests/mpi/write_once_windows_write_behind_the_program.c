/* SPDX-License-Identifier: MIT */
/* access_style=write_once with direct write-back on a kernel that tracks
 * stores (Linux 6.7+): a thread writes the pages the program has filled to
 * the file with O_DIRECT while the program still stores, before any
 * MPI_Win_sync (MPI_Win_get_info says strata_write_behind=true). A page
 * written behind and then stored to again reaches the file at the next sync,
 * and so does a peer's put into pages already written. On older kernels the
 * window must say strata_write_behind=false and still write everything at
 * the sync. Run with 2 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>
#include <sys/utsname.h>
#include <time.h>

enum { MIB = 1 << 20, WINDOW = 8 * MIB + 4096, FILLED = 6 * MIB, PEER_PUT = 4096 };

static unsigned char pattern(int tag, int rank, size_t i) {
    return (unsigned char)(tag * 31 + rank * 7 + (int)(i / 4096) * 3 + 1);
}

static int kernel_tracks_stores(void) {
    struct utsname u;
    int major = 0, minor = 0;
    CHECK(uname(&u) == 0, "uname: %s", strerror(errno));
    CHECK(sscanf(u.release, "%d.%d", &major, &minor) == 2, "uname release %s", u.release);
    return major > 6 || (major == 6 && minor >= 7);
}

static int file_holds(const char* path, long long at, const unsigned char* expected, size_t length) {
    static unsigned char stored[WINDOW];
    read_file(path, at, stored, length);
    return memcmp(stored, expected, length) == 0;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* Not /dev/shm or another tmpfs: O_DIRECT needs a disk file system. */
    char dir[256] = "/var/tmp/strata-mpi-write-behind-XXXXXX", path[300];
    if (rank == 0) CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "%s/checkpoint.dat", dir);
    const long long at = (long long)rank * 16 * MIB;
    char offset[32];
    snprintf(offset, sizeof offset, "%lld", at);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_OFFSET,
                              offset, STRATA_MPI_ACCESS_STYLE, "write_once", NULL);
    unsigned char* base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(WINDOW, 1, info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);

    const int tracks = kernel_tracks_stores();
    expect_info(win, STRATA_MPI_INFO_WRITE_BEHIND, tracks ? "true" : "false"); /* as this kernel allows */

    static unsigned char expected[WINDOW];
    /* Fill the first FILLED bytes and stop storing: the thread must write
     * the filled pages (all but the last huge page's worth, which a
     * sequential writer may still be filling) without any sync. */
    for (size_t i = 0; i < FILLED; ++i) expected[i] = base[i] = pattern(1, rank, i);
    if (tracks) {
        const size_t settled = FILLED - 2 * MIB;
        int seen = 0;
        /* Eventually, with no call of the program: 60 s is a hang guard, not a bound in time. */
        for (int tries = 0; tries < 6000 && !seen; ++tries) {
            seen = file_holds(path, at, expected, settled);
            if (!seen) nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
        }
        CHECK(seen, "rank %d: the first %zu stored bytes never reached the file without MPI_Win_sync (60 s)", rank,
              settled);
    }
    /* Store again into a page already written behind, and let the peer put
     * into another one: both must reach the file at the sync. */
    for (size_t i = 4096; i < 2 * 4096; ++i) expected[i] = base[i] = pattern(2, rank, i);
    for (size_t i = FILLED; i < WINDOW; ++i) expected[i] = base[i] = pattern(1, rank, i);
    MPI_Barrier(MPI_COMM_WORLD);
    static unsigned char incoming[PEER_PUT];
    const int target = (rank + 1) % n;
    for (size_t i = 0; i < PEER_PUT; ++i) incoming[i] = pattern(3, target, 8 * 4096 + i);
    MPI_Win_lock_all(0, win);
    CHECK_MPI(MPI_Put(incoming, PEER_PUT, MPI_BYTE, target, 8 * 4096, PEER_PUT, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_flush_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    for (size_t i = 0; i < PEER_PUT; ++i) expected[8 * 4096 + i] = pattern(3, rank, 8 * 4096 + i);
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Win_unlock_all(win);
    CHECK(memcmp(base, expected, WINDOW) == 0, "rank %d: the window changed at the sync", rank);
    CHECK(file_holds(path, at, expected, WINDOW), "rank %d: after MPI_Win_sync the file differs from the window", rank);
    /* After the sync: one more store, written at free. */
    expected[WINDOW - 1] = base[WINDOW - 1] = 0xAB;
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_free(&win));
    CHECK(file_holds(path, at, expected, WINDOW), "rank %d: after MPI_Win_free the file differs", rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK(unlink(path) == 0, "unlink %s: %s", path, strerror(errno));
        CHECK(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
    }
    MPI_Finalize();
    return 0;
}
