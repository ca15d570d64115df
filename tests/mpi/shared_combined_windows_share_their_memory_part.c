/* SPDX-License-Identifier: MIT */
/* storage_alloc_factor below 1 on a shared window (MPI_Win_allocate_shared): the window's first
 * part lives in a tmpfs file every rank maps shared, the rest in the window's file, so the ranks
 * see each other's stores in both parts; a segment may straddle the two. MPI_Win_get_info gives
 * each rank's bytes in memory and on storage; after every rank's MPI_Win_sync the file holds the
 * storage part's bytes (and only those); the memory part's name is gone once the window exists,
 * and nothing of it is left after MPI_Win_free. auto, and a factor below 1 with discard, are
 * refused on every rank. Run with 3 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

enum { COUNT = 3 * 1024 + 7 }; /* ints per rank: segments end inside pages */

static int value(int rank, int i) {
    return 1000000 + rank * 10000 + i % 10000;
}

/* Files in dir whose name starts with prefix. */
static int count_prefixed(const char* dir, const char* prefix) {
    DIR* d = opendir(dir);
    CHECK(d != NULL, "opendir %s", dir);
    int n = 0;
    for (struct dirent* e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.' && strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static long info_long(MPI_Win win, const char* key) {
    MPI_Info info;
    CHECK_MPI(MPI_Win_get_info(win, &info));
    char text[64] = "";
    int flag = 0;
    CHECK_MPI(MPI_Info_get(info, key, (int)sizeof text - 1, text, &flag));
    MPI_Info_free(&info);
    CHECK(flag, "MPI_Win_get_info has no %s", key);
    return atol(text);
}

static void expect_refused(const char* dir, const char* factor, const char* discard, const char* named) {
    char path[400];
    snprintf(path, sizeof path, "%s/refused.dat", dir);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_FACTOR,
                              factor, STRATA_MPI_DISCARD, discard, NULL);
    int* base = NULL;
    MPI_Win win;
    const int rc = MPI_Win_allocate_shared(COUNT * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &base, &win);
    MPI_Info_free(&info);
    int error_class = -1, length = 0;
    char text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(rc, &error_class);
    MPI_Error_string(rc, text, &length);
    CHECK(rc != MPI_SUCCESS && error_class == MPI_ERR_INFO_VALUE && strstr(text, named) != NULL,
          "factor %s with discard %s: class %d, \"%s\"", factor, discard, error_class, text);
    CHECK(!file_exists(path), "a refused window left %s", path);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char dir[256], path[300], shm[300];
    make_test_dir(MPI_COMM_WORLD, "shared-combined", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/combined.dat", dir);
    snprintf(shm, sizeof shm, "%s/shm", dir);
    if (rank == 0) CHECK(mkdir(shm, 0700) == 0, "mkdir %s", shm);
    setenv("STRATA_SHM_DIR", shm, 1); /* where the memory part's file is made */
    MPI_Barrier(MPI_COMM_WORLD);

    expect_refused(dir, "auto", "false", "storage_alloc_factor=auto");
    expect_refused(dir, "0.5", "true", "storage_alloc_factor=0.5");

    MPI_Info info =
        make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_FACTOR, "0.5", NULL);
    int* mine = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate_shared(COUNT * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &mine, &win));
    MPI_Info_free(&info);
    const size_t total = (size_t)n * COUNT * sizeof(int);
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t memory = total / 2 / page * page; /* floor(0.5 x size) rounded down to pages */

    /* The memory part's name is gone; each rank's split is where its segment lies. */
    if (rank == 0) CHECK(count_prefixed(shm, "mpi-shared-") == 0, "the memory part's name was left in %s", shm);
    const size_t begin = (size_t)rank * COUNT * sizeof(int), end = begin + COUNT * sizeof(int);
    const size_t in_memory = end <= memory ? end - begin : begin >= memory ? 0 : memory - begin;
    CHECK(info_long(win, "strata_memory_bytes") == (long)in_memory, "rank %d: strata_memory_bytes %ld, expected %zu",
          rank, info_long(win, "strata_memory_bytes"), in_memory);
    CHECK(info_long(win, "strata_storage_bytes") == (long)(end - begin - in_memory),
          "rank %d: strata_storage_bytes %ld", rank, info_long(win, "strata_storage_bytes"));

    /* Two shared mappings side by side: the memory part's file (deleted) and the window's file. */
    int* first = NULL;
    MPI_Aint size = 0;
    int unit = 0;
    CHECK_MPI(MPI_Win_shared_query(win, 0, &size, &unit, &first));
    struct mapping maps[4];
    const int found = find_mappings(first, total, maps, 4);
    CHECK(found == 2 && strcmp(maps[0].perms, "rw-s") == 0 && strcmp(maps[1].perms, "rw-s") == 0 &&
              strstr(maps[0].path, "mpi-shared-") != NULL && strcmp(maps[1].path, path) == 0,
          "rank %d: %d mappings, first %s %s", rank, found, found > 0 ? maps[0].perms : "",
          found > 0 ? maps[0].path : "");

    /* Stores of every rank into its own segment, seen by every rank in both parts. */
    CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    for (int i = 0; i < COUNT; ++i) mine[i] = value(rank, i);
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_sync(win));
    for (int r = 0; r < n; ++r) {
        int* seg = NULL;
        CHECK_MPI(MPI_Win_shared_query(win, r, &size, &unit, &seg));
        for (int i = 0; i < COUNT; ++i)
            CHECK(seg[i] == value(r, i), "rank %d sees rank %d's [%d] = %d", rank, r, i, seg[i]);
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* The file holds the storage part: the window's bytes from `memory` on. */
    if (rank == 0) {
        CHECK(file_size(path) == (long long)(total - memory), "%s has %lld bytes, the storage part %zu", path,
              file_size(path), total - memory);
        unsigned char* stored = malloc(total - memory);
        CHECK(stored != NULL, "malloc");
        read_file(path, 0, stored, total - memory);
        CHECK(memcmp(stored, (unsigned char*)first + memory, total - memory) == 0,
              "the file differs from the window's storage part");
        free(stored);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_free(&win));
    if (rank == 0) {
        CHECK(count_prefixed(shm, "") == 0, "%d files left in %s", count_prefixed(shm, ""), shm);
        CHECK(file_size(path) == (long long)(total - memory), "%s changed size at free", path);
        CHECK(rmdir(shm) == 0, "rmdir %s", shm);
    }
    remove_test_dir(MPI_COMM_WORLD, dir);
    if (rank == 0) printf("combined shared windows: memory part shared, storage part in the file, nothing left\n");
    MPI_Finalize();
    return 0;
}
