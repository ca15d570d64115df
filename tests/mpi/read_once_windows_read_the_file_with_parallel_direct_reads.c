/* SPDX-License-Identifier: MIT */
/* access_style=read_once on a window over data the file already holds (a
 * restart), on a kernel that tracks stores (Linux 6.7+): the window starts as
 * process memory read from the file with parallel O_DIRECT reads
 * (MPI_Win_get_info says strata_read_direct=true, strata_writeback=direct).
 * Every byte must equal the file's, bytes past the end of the file read zero,
 * and the window stays a storage window: a store and a peer's put reach the
 * file at MPI_Win_sync, a store after it at MPI_Win_free, while pages nobody
 * stored to are not written back (a change made to them in the file behind
 * the window survives the sync). On older kernels strata_read_direct must be
 * "false" and the rest must hold alike. Run with 2 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>
#include <sys/utsname.h>

enum { MIB = 1 << 20, WINDOW = 8 * MIB + 4096 + 123, SHORT = 5000, PEER_PUT = 4096, UNTOUCHED = 100 * 4096 };

static unsigned char pattern(int tag, int rank, size_t i) {
    return (unsigned char)(tag * 31 + rank * 7 + (int)(i / 4096) * 3 + (int)(i % 251) + 1);
}

static int kernel_tracks_stores(void) {
    struct utsname u;
    int major = 0, minor = 0;
    CHECK(uname(&u) == 0, "uname: %s", strerror(errno));
    CHECK(sscanf(u.release, "%d.%d", &major, &minor) == 2, "uname release %s", u.release);
    return major > 6 || (major == 6 && minor >= 7);
}

static void write_at(const char* path, long long at, const unsigned char* data, size_t length) {
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    CHECK(pwrite(fd, data, length, at) == (ssize_t)length, "pwrite %s: %s", path, strerror(errno));
    CHECK(fsync(fd) == 0, "fsync %s: %s", path, strerror(errno));
    CHECK(close(fd) == 0, "close %s: %s", path, strerror(errno));
}

static int file_holds(const char* path, long long at, const unsigned char* expected, size_t length) {
    static unsigned char stored[WINDOW];
    read_file(path, at, stored, length);
    for (size_t i = 0; i < length; ++i) {
        if (stored[i] != expected[i]) {
            fprintf(stderr, "file byte %zu at %lld: %u, expected %u\n", i, at, stored[i], expected[i]);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* Not /dev/shm or another tmpfs: O_DIRECT needs a disk file system. */
    char dir[256] = "/var/tmp/strata-mpi-read-once-XXXXXX", path[300];
    if (rank == 0) CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "%s/checkpoint.dat", dir);
    const long long at = (long long)rank * 16 * MIB;
    /* The checkpoint: rank 0's part in full, rank 1's ends SHORT bytes
     * before its window does (the file ends there). */
    static unsigned char expected[WINDOW];
    const size_t held = rank == n - 1 ? WINDOW - SHORT : WINDOW;
    for (size_t i = 0; i < held; ++i) expected[i] = pattern(1, rank, i);
    write_at(path, at, expected, held);
    MPI_Barrier(MPI_COMM_WORLD);

    char offset[32];
    snprintf(offset, sizeof offset, "%lld", at);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_OFFSET,
                              offset, STRATA_MPI_ACCESS_STYLE, "read_once", NULL);
    unsigned char* base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(WINDOW, 1, info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);
    expect_info(win, STRATA_MPI_INFO_READ_DIRECT, kernel_tracks_stores() ? "true" : "false");
    expect_info(win, STRATA_MPI_INFO_WRITEBACK, "direct");

    for (size_t i = 0; i < WINDOW; ++i) {
        CHECK(base[i] == expected[i], "rank %d: window byte %zu is %u, the file's is %u", rank, i, base[i],
              expected[i]);
    }

    /* A page nobody stores to, changed in the file behind the window: the
     * sync must not write the window's (older) copy over it. */
    static unsigned char behind[4096];
    for (size_t i = 0; i < sizeof behind; ++i) behind[i] = pattern(4, rank, i);
    write_at(path, at + UNTOUCHED, behind, sizeof behind);
    memcpy(expected + UNTOUCHED, behind, sizeof behind);
    /* A store, and a peer's put: both must reach the file at the sync. */
    for (size_t i = 4096; i < 3 * 4096; ++i) expected[i] = base[i] = pattern(2, rank, i);
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
    CHECK(file_holds(path, at, expected, WINDOW), "rank %d: after MPI_Win_sync the file differs", rank);
    /* After the sync: one more store, in the part past the old end of file, written at free. */
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
