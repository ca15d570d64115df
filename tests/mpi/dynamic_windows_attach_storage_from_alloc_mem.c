/* SPDX-License-Identifier: MIT */
/* Dynamic windows on storage: MPI_Alloc_mem with storage hints, attached to
 * a window made by MPI_Win_create_dynamic, filled by MPI_Put from another
 * rank; MPI_Win_sync then leaves no dirty page in the attached storage, and a
 * detached allocation is no longer synced by it. MPI_Free_mem writes back
 * (or removes the file with storage_alloc_unlink). %w counts allocations.
 * Run with 3 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

enum { COUNT = 5000 }; /* longs: ~10 pages */

static long value(int owner, int buffer, int i) {
    return owner * 1000000L + buffer * 100000L + i;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const int previous = (rank + n - 1) % n, next = (rank + 1) % n;
    char dir[256], templ[300], path[2][300];
    make_test_dir(MPI_COMM_WORLD, "dynamic", dir, sizeof dir);
    snprintf(templ, sizeof templ, "%s/dyn-%%r-%%w.dat", dir);
    const int fds = count_open_fds();

    /* Two storage allocations (%w = 0, 1; the second combined), one in memory. */
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, templ, NULL);
    MPI_Info combined = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, templ,
                                  STRATA_MPI_FACTOR, "0.5", NULL);
    long* buffer[3];
    CHECK_MPI(MPI_Alloc_mem(COUNT * sizeof(long), info, &buffer[0]));
    CHECK_MPI(MPI_Alloc_mem(COUNT * sizeof(long), combined, &buffer[1]));
    CHECK_MPI(MPI_Alloc_mem(COUNT * sizeof(long), MPI_INFO_NULL, &buffer[2]));
    MPI_Info_free(&info);
    MPI_Info_free(&combined);
    for (int b = 0; b < 2; ++b) {
        snprintf(path[b], sizeof path[b], "%s/dyn-%d-%d.dat", dir, rank, b);
        CHECK(file_exists(path[b]), "MPI_Alloc_mem did not create %s", path[b]);
    }
    struct mapping maps[2];
    CHECK(find_mappings(buffer[0], COUNT * sizeof(long), maps, 2) == 1 && strcmp(maps[0].path, path[0]) == 0,
          "allocation 0 is not a mapping of %s", path[0]);

    MPI_Win win;
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    int* flavor;
    int flag;
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_DYNAMIC, "flavor %d", *flavor);
    MPI_Aint mine[3], theirs[3];
    for (int b = 0; b < 3; ++b) {
        CHECK_MPI(MPI_Win_attach(win, buffer[b], COUNT * sizeof(long)));
        MPI_Get_address(buffer[b], &mine[b]);
    }
    /* Displacements of the next rank's buffers. */
    MPI_Sendrecv(mine, 3, MPI_AINT, previous, 0, theirs, 3, MPI_AINT, next, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    static long data[COUNT];
    MPI_Win_lock_all(0, win);
    for (int b = 0; b < 3; ++b) {
        for (int i = 0; i < COUNT; ++i) data[i] = value(next, b, i);
        CHECK_MPI(MPI_Put(data, COUNT, MPI_LONG, next, theirs[b], COUNT, MPI_LONG, win));
        CHECK_MPI(MPI_Win_flush(next, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_sync(win));
    for (int b = 0; b < 3; ++b)
        for (int i = 0; i < COUNT; ++i)
            CHECK(buffer[b][i] == value(rank, b, i), "buffer %d [%d] = %ld", b, i, buffer[b][i]);
    CHECK(dirty_bytes(buffer[0], COUNT * sizeof(long)) == 0, "%zu dirty bytes in allocation 0 after MPI_Win_sync",
          dirty_bytes(buffer[0], COUNT * sizeof(long)));
    MPI_Win_unlock_all(win);
    long stored[COUNT];
    read_file(path[0], 0, stored, sizeof stored);
    for (int i = 0; i < COUNT; ++i) CHECK(stored[i] == value(rank, 0, i), "file 0 [%d] = %ld", i, stored[i]);

    /* Detached: MPI_Win_sync no longer writes allocation 0 back. */
    CHECK_MPI(MPI_Win_detach(win, buffer[0]));
    for (int i = 0; i < COUNT; ++i) buffer[0][i] = -i;
    MPI_Win_lock_all(0, win);
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Win_unlock_all(win);
    CHECK(dirty_bytes(buffer[0], COUNT * sizeof(long)) > 0, "a detached allocation was synced");
    CHECK_MPI(MPI_Win_detach(win, buffer[1]));
    CHECK_MPI(MPI_Win_detach(win, buffer[2]));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_free(&win));

    /* Free_mem writes back what is left. */
    for (int b = 0; b < 3; ++b) CHECK_MPI(MPI_Free_mem(buffer[b]));
    read_file(path[0], 0, stored, sizeof stored);
    for (int i = 0; i < COUNT; ++i) CHECK(stored[i] == -i, "file 0 after MPI_Free_mem [%d] = %ld", i, stored[i]);
    /* The combined allocation: half (rounded down to pages) in memory first, the rest in the file. */
    const size_t bytes = COUNT * sizeof(long), memory = bytes / 2 / (size_t)page_size() * (size_t)page_size();
    CHECK(file_size(path[1]) == (long long)(bytes - memory), "combined allocation file %lld bytes", file_size(path[1]));
    read_file(path[1], 0, stored, bytes - memory);
    for (size_t i = 0; i < (bytes - memory) / sizeof(long); ++i)
        CHECK(stored[i] == value(rank, 1, (int)(memory / sizeof(long) + i)), "file 1 [%zu] = %ld", i, stored[i]);

    /* storage_alloc_unlink: the file lives as long as the allocation. */
    snprintf(templ, sizeof templ, "%s/scratch-%%r-%%w.dat", dir);
    info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, templ, STRATA_MPI_UNLINK, "true",
                     NULL);
    CHECK_MPI(MPI_Alloc_mem(4096, info, &buffer[0]));
    MPI_Info_free(&info);
    snprintf(path[0], sizeof path[0], "%s/scratch-%d-2.dat", dir, rank);
    CHECK(file_exists(path[0]), "%s missing (allocation index 2)", path[0]);
    CHECK_MPI(MPI_Free_mem(buffer[0]));
    CHECK(!file_exists(path[0]), "storage_alloc_unlink=true left %s", path[0]);
    CHECK(count_open_fds() == fds, "%d descriptors open, %d before", count_open_fds(), fds);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(count_files(dir) == 2 * n, "%d files, expected %d", count_files(dir), 2 * n);
    remove_test_dir(MPI_COMM_WORLD, dir);
    MPI_Finalize();
    return 0;
}
