/* SPDX-License-Identifier: MIT */
/* Every RMA operation between ranks on storage windows, with exact values:
 * put, get, accumulate, get_accumulate, fetch_and_op, compare_and_swap and
 * local load/store; the window is a shared file mapping (no exec), reports
 * the allocate flavor, and its file holds the final data after MPI_Win_free.
 * A window without hints stays plain memory. Run with 2..4 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

enum { COUNT = 65536 + 7 }; /* not a page multiple: the last page is partial */
enum { GOT = 0, PUT = 2000, ACC = 5000, FOP = 6000, CAS = 7000, GACC = 8000 };

static int initial(int rank, int i) {
    return rank * 1000000 + i;
}

static void check_info(MPI_Win win, const char* key, const char* expected) {
    MPI_Info info;
    CHECK_MPI(MPI_Win_get_info(win, &info));
    char value[MPI_MAX_INFO_VAL + 1] = "";
    int length = MPI_MAX_INFO_VAL, flag = 0;
    MPI_Info_get_string(info, key, &length, value, &flag);
    if (expected == NULL)
        CHECK(!flag, "info has %s=%s", key, value);
    else
        CHECK(flag && strcmp(value, expected) == 0, "info %s=\"%s\" (flag %d), expected \"%s\"", key, value, flag,
              expected);
    MPI_Info_free(&info);
}

static int flavor_of(MPI_Win win) {
    int* flavor = NULL;
    int flag = 0;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && flavor != NULL, "no create flavor attribute");
    return *flavor;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char dir[256], templ[300], path[300];
    make_test_dir(MPI_COMM_WORLD, "rma", dir, sizeof dir);
    snprintf(templ, sizeof templ, "%s/rma-%%r.dat", dir);
    snprintf(path, sizeof path, "%s/rma-%d.dat", dir, rank);
    const int fds_before = count_open_fds();

    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, templ, NULL);
    int* base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(COUNT * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);

    struct mapping maps[4];
    CHECK(find_mappings(base, COUNT * sizeof(int), maps, 4) == 1, "the window is not one mapping");
    CHECK(strcmp(maps[0].path, path) == 0, "window maps \"%s\", expected %s", maps[0].path, path);
    CHECK(strcmp(maps[0].perms, "rw-s") == 0, "window mapped %s, expected rw-s", maps[0].perms);
    CHECK(flavor_of(win) == MPI_WIN_FLAVOR_ALLOCATE, "flavor %d", flavor_of(win));
    int* attr_base = NULL;
    MPI_Aint* attr_size = NULL;
    int flag = 0;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &attr_base, &flag));
    CHECK(flag && attr_base == base, "MPI_WIN_BASE %p, window at %p", (void*)attr_base, (void*)base);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_SIZE, &attr_size, &flag));
    CHECK(flag && *attr_size == (MPI_Aint)(COUNT * sizeof(int)), "MPI_WIN_SIZE %ld", (long)*attr_size);
    check_info(win, STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE);
    check_info(win, STRATA_MPI_FILENAME, path);
    char bytes[32];
    snprintf(bytes, sizeof bytes, "%zu", COUNT * sizeof(int));
    check_info(win, STRATA_MPI_INFO_STORAGE_BYTES, bytes);

    for (int i = 0; i < COUNT; ++i) base[i] = initial(rank, i);
    base[ACC] = base[FOP] = base[GACC] = 0;
    base[CAS] = -1;

    /* Active target: get from and put to the next rank. */
    const int next = (rank + 1) % n, previous = (rank + n - 1) % n;
    int got[1000], put[1000];
    for (int j = 0; j < 1000; ++j) put[j] = rank * 7 + j;
    MPI_Win_fence(0, win);
    CHECK_MPI(MPI_Get(got, 1000, MPI_INT, next, GOT, 1000, MPI_INT, win));
    CHECK_MPI(MPI_Put(put, 1000, MPI_INT, next, PUT, 1000, MPI_INT, win));
    MPI_Win_fence(0, win);
    for (int j = 0; j < 1000; ++j) {
        CHECK(got[j] == initial(next, GOT + j), "got[%d] = %d", j, got[j]);
        CHECK(base[PUT + j] == previous * 7 + j, "base[%d] = %d", PUT + j, base[PUT + j]);
    }

    /* Passive target: atomics on rank 0 and rank 1. */
    const int one = 1, mine = rank, minus_one = -1, target_max = n > 1 ? 1 : 0;
    int old = -2, swapped = -2, fetched = -2;
    MPI_Win_lock_all(0, win);
    CHECK_MPI(MPI_Accumulate(&one, 1, MPI_INT, 0, ACC, 1, MPI_INT, MPI_SUM, win));
    CHECK_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT, 0, FOP, MPI_SUM, win));
    CHECK_MPI(MPI_Compare_and_swap(&mine, &minus_one, &swapped, MPI_INT, 0, CAS, win));
    CHECK_MPI(MPI_Get_accumulate(&mine, 1, MPI_INT, &fetched, 1, MPI_INT, target_max, GACC, 1, MPI_INT, MPI_MAX, win));
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    int* olds = malloc(sizeof(int) * (size_t)n);
    int* swaps = malloc(sizeof(int) * (size_t)n);
    MPI_Allgather(&old, 1, MPI_INT, olds, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgather(&swapped, 1, MPI_INT, swaps, 1, MPI_INT, MPI_COMM_WORLD);
    int seen = 0, winners = 0, winner = -1;
    for (int r = 0; r < n; ++r) {
        CHECK(olds[r] >= 0 && olds[r] < n && !(seen & (1 << olds[r])), "fetch_and_op returned %d", olds[r]);
        seen |= 1 << olds[r];
        if (swaps[r] == -1)
            ++winners, winner = r;
        else
            CHECK(swaps[r] >= 0 && swaps[r] < n, "compare_and_swap returned %d", swaps[r]);
    }
    CHECK(winners == 1, "%d ranks won the compare_and_swap", winners);
    CHECK(fetched >= 0 && fetched < n, "get_accumulate fetched %d", fetched);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    if (rank == 0) {
        CHECK(base[ACC] == n, "accumulate: %d, expected %d", base[ACC], n);
        CHECK(base[FOP] == n, "fetch_and_op: %d, expected %d", base[FOP], n);
        CHECK(base[CAS] == winner, "compare_and_swap: %d, expected %d", base[CAS], winner);
    }
    if (rank == target_max) CHECK(base[GACC] == n - 1, "get_accumulate max: %d", base[GACC]);
    MPI_Win_unlock(rank, win);

    /* Win_sync (inside a passive epoch, as MPI requires) leaves nothing
     * dirty; Win_free leaves the data in the file. */
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Win_unlock(rank, win);
    CHECK(dirty_bytes(base, COUNT * sizeof(int)) == 0, "%zu dirty bytes after MPI_Win_sync",
          dirty_bytes(base, COUNT * sizeof(int)));
    int* expected = malloc(COUNT * sizeof(int));
    memcpy(expected, base, COUNT * sizeof(int));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "window handle not reset");
    CHECK(file_size(path) == (long long)(COUNT * sizeof(int)), "file size %lld", file_size(path));
    int* stored = malloc(COUNT * sizeof(int));
    read_file(path, 0, stored, COUNT * sizeof(int));
    CHECK(memcmp(stored, expected, COUNT * sizeof(int)) == 0, "file differs from the window");
    CHECK(count_open_fds() == fds_before, "%d descriptors open, %d before", count_open_fds(), fds_before);

    /* The large-count entry point takes the same path. */
    snprintf(templ, sizeof templ, "%s/large-%%r.dat", dir);
    info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, templ, NULL);
    long long* large = NULL;
    CHECK_MPI(MPI_Win_allocate_c(8 * (MPI_Aint)sizeof(long long), (MPI_Aint)sizeof(long long), info, MPI_COMM_WORLD,
                                 &large, &win));
    MPI_Info_free(&info);
    CHECK(flavor_of(win) == MPI_WIN_FLAVOR_ALLOCATE, "flavor %d", flavor_of(win));
    long long value = 1000 + rank;
    MPI_Win_fence(0, win);
    CHECK_MPI(MPI_Put(&value, 1, MPI_LONG_LONG, next, 3, 1, MPI_LONG_LONG, win));
    MPI_Win_fence(0, win);
    CHECK(large[3] == 1000 + previous, "large[3] = %lld", large[3]);
    CHECK_MPI(MPI_Win_free(&win));
    snprintf(path, sizeof path, "%s/large-%d.dat", dir, rank);
    read_file(path, 3 * sizeof(long long), &value, sizeof value);
    CHECK(value == 1000 + previous, "large file holds %lld", value);

    /* No hints: MPI's own memory window, untouched. */
    int* memory = NULL;
    CHECK_MPI(MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &memory, &win));
    CHECK(find_mappings(memory, 4096, maps, 4) >= 1 && strstr(maps[0].path, dir) == NULL, "a memory window maps %s",
          maps[0].path);
    check_info(win, STRATA_MPI_ALLOC_TYPE, NULL);
    CHECK(flavor_of(win) == MPI_WIN_FLAVOR_ALLOCATE, "flavor %d", flavor_of(win));
    CHECK_MPI(MPI_Win_free(&win));

    free(olds), free(swaps), free(expected), free(stored);
    remove_test_dir(MPI_COMM_WORLD, dir);
    MPI_Finalize();
    return 0;
}
