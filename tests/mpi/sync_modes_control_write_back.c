/* SPDX-License-Identifier: MIT */
/* storage_alloc_sync: on_sync (default) — MPI_Win_sync leaves no dirty page;
 * on_free — MPI_Win_sync only orders memory (pages stay dirty) and
 * MPI_Win_free writes back; async — pages become clean in the background
 * without any MPI_Win_sync (STRATA_MPI_FLUSH_INTERVAL_MS=100 is set by the
 * test), and MPI_Win_sync is still a barrier. Dirty pages are read from
 * /proc/self/smaps. Run with 2 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>
#include <time.h>

enum { BYTES = 64 * 4096 };

static MPI_Win make_window(const char* dir, const char* mode, unsigned char** base, char* path, size_t size) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    snprintf(path, size, "%s/%s-%d.dat", dir, mode, rank);
    MPI_Info info =
        make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_SYNC, mode, NULL);
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(BYTES, 1, info, MPI_COMM_WORLD, base, &win));
    MPI_Info_free(&info);
    return win;
}

/* The peer puts `tag` everywhere; then this rank stores into the first page too. */
static void write_all(MPI_Win win, unsigned char* base, unsigned char tag) {
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    static unsigned char data[BYTES];
    memset(data, tag, sizeof data);
    MPI_Win_fence(0, win);
    CHECK_MPI(MPI_Put(data, BYTES, MPI_BYTE, (rank + 1) % n, 0, BYTES, MPI_BYTE, win));
    MPI_Win_fence(0, win);
    memset(base, tag, 4096);
}

static void win_sync(MPI_Win win) {
    MPI_Win_lock_all(0, win);
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Win_unlock_all(win);
}

static void check_file(const char* path, unsigned char tag) {
    static unsigned char stored[BYTES];
    read_file(path, 0, stored, sizeof stored);
    for (int i = 0; i < BYTES; ++i) CHECK(stored[i] == tag, "%s byte %d = %d, expected %d", path, i, stored[i], tag);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    char dir[256], path[300];
    make_test_dir(MPI_COMM_WORLD, "syncmodes", dir, sizeof dir);
    unsigned char* base = NULL;

    MPI_Win win = make_window(dir, STRATA_MPI_SYNC_ON_SYNC, &base, path, sizeof path);
    write_all(win, base, 1);
    CHECK(dirty_bytes(base, BYTES) > 0, "nothing dirty after writing");
    win_sync(win);
    CHECK(dirty_bytes(base, BYTES) == 0, "on_sync: %zu dirty bytes after MPI_Win_sync", dirty_bytes(base, BYTES));
    CHECK_MPI(MPI_Win_free(&win));
    check_file(path, 1);

    win = make_window(dir, STRATA_MPI_SYNC_ON_FREE, &base, path, sizeof path);
    write_all(win, base, 2);
    win_sync(win);
    CHECK(dirty_bytes(base, BYTES) >= BYTES / 2, "on_free: MPI_Win_sync wrote back (%zu dirty bytes left)",
          dirty_bytes(base, BYTES));
    CHECK_MPI(MPI_Win_free(&win));
    check_file(path, 2);

    win = make_window(dir, STRATA_MPI_SYNC_ASYNC, &base, path, sizeof path);
    write_all(win, base, 3);
    const struct timespec tick = {0, 50 * 1000 * 1000};
    int waited = 0;
    while (dirty_bytes(base, BYTES) > 0 && waited < 100) nanosleep(&tick, NULL), ++waited; /* 5 s at most */
    CHECK(dirty_bytes(base, BYTES) == 0, "async: %zu dirty bytes after %d ms without MPI_Win_sync",
          dirty_bytes(base, BYTES), waited * 50);
    write_all(win, base, 4);
    win_sync(win);
    CHECK(dirty_bytes(base, BYTES) == 0, "async: MPI_Win_sync left %zu dirty bytes", dirty_bytes(base, BYTES));
    CHECK_MPI(MPI_Win_free(&win));
    check_file(path, 4);

    remove_test_dir(MPI_COMM_WORLD, dir);
    MPI_Finalize();
    return 0;
}
