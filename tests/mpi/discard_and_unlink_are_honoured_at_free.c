/* SPDX-License-Identifier: MIT */
/* storage_alloc_discard=true: what MPI_Win_sync made durable stays, what
 * was stored after it never reaches the file (local stores and remote puts
 * alike). storage_alloc_unlink=true: the file is gone after MPI_Win_free,
 * with or without discard; without either hint the file holds the last data.
 * Run with 2 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

enum { COUNT = 3 * 4096 + 10 }; /* ints: the window ends inside a page */

static void fill(int* data, int tag) {
    for (int i = 0; i < COUNT; ++i) data[i] = tag * 100000 + i;
}

static MPI_Win make_window(const char* path, const char* discard, const char* unlink_file, int** base) {
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_DISCARD,
                              discard, STRATA_MPI_UNLINK, unlink_file, NULL);
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(COUNT * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, base, &win));
    MPI_Info_free(&info);
    return win;
}

/* Local stores to the first half, a put from the peer to the second half, then sync or not. */
static void update(MPI_Win win, int* base, int tag, int sync) {
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    static int incoming[COUNT];
    fill(incoming, tag);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < COUNT / 2; ++i) base[i] = tag * 100000 + i;
    CHECK_MPI(MPI_Put(incoming + COUNT / 2, COUNT - COUNT / 2, MPI_INT, (rank + 1) % n, COUNT / 2, COUNT - COUNT / 2,
                      MPI_INT, win));
    CHECK_MPI(MPI_Win_flush_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (sync) CHECK_MPI(MPI_Win_sync(win));
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void check_file(const char* path, int tag) {
    static int expected[COUNT], stored[COUNT];
    fill(expected, tag);
    CHECK(file_size(path) == (long long)sizeof stored, "%s has %lld bytes", path, file_size(path));
    read_file(path, 0, stored, sizeof stored);
    for (int i = 0; i < COUNT; ++i)
        CHECK(stored[i] == expected[i], "%s[%d] = %d, expected %d", path, i, stored[i], expected[i]);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char dir[256], path[300];
    make_test_dir(MPI_COMM_WORLD, "discard", dir, sizeof dir);
    static int data[COUNT];

    /* Discard: an existing file with tag 1; tag 2 synced; tag 3 dropped at free. */
    snprintf(path, sizeof path, "%s/discard-%d.dat", dir, rank);
    fill(data, 1);
    write_file(path, data, sizeof data);
    int* base = NULL;
    MPI_Win win = make_window(path, "true", "false", &base);
    struct mapping maps[2];
    CHECK(find_mappings(base, sizeof data, maps, 2) == 1 && strcmp(maps[0].perms, "rw-p") == 0,
          "a discard window must be a private mapping, is %s", maps[0].perms);
    for (int i = 0; i < COUNT; ++i) CHECK(base[i] == data[i], "window shows %d at %d, file %d", base[i], i, data[i]);
    update(win, base, 2, 1);
    check_file(path, 2);
    update(win, base, 3, 0);
    check_file(path, 2); /* not synced: still only in this process */
    CHECK_MPI(MPI_Win_free(&win));
    check_file(path, 2);

    /* Neither hint: tag 4 is written back at free, without any MPI_Win_sync. */
    snprintf(path, sizeof path, "%s/keep-%d.dat", dir, rank);
    win = make_window(path, "false", "false", &base);
    update(win, base, 4, 0);
    CHECK_MPI(MPI_Win_free(&win));
    check_file(path, 4);

    /* Unlink, alone and with discard: the file exists while the window does. */
    for (int with_discard = 0; with_discard <= 1; ++with_discard) {
        snprintf(path, sizeof path, "%s/temporary-%d-%d.dat", dir, with_discard, rank);
        win = make_window(path, with_discard ? "true" : "false", "true", &base);
        CHECK(file_exists(path), "%s missing while the window exists", path);
        update(win, base, 5, with_discard);
        CHECK_MPI(MPI_Win_free(&win));
        CHECK(!file_exists(path), "storage_alloc_unlink=true left %s", path);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(count_files(dir) == 4, "%d files, expected discard-* and keep-* only", count_files(dir));
    remove_test_dir(MPI_COMM_WORLD, dir);
    MPI_Finalize();
    return 0;
}
