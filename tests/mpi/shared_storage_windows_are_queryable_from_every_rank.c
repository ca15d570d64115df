/* SPDX-License-Identifier: MIT */
/* MPI_Win_allocate_shared on storage: one file for the node, segments laid
 * out contiguously (default) or on page boundaries (alloc_shared_noncontig),
 * MPI_Win_shared_query right for every rank from every rank (a zero-size
 * rank and MPI_PROC_NULL included), loads and stores of other ranks visible,
 * RMA working, the file holding every segment after MPI_Win_free, and only
 * rank 0 removing it with storage_alloc_unlink. Run with 4 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

static MPI_Aint size_of(int rank) {
    static const MPI_Aint sizes[] = {1000, 0, 4097, 123};
    return sizes[rank % 4];
}

static unsigned char pattern(int rank, MPI_Aint j) {
    return (unsigned char)(rank * 31 + j * 7 + 1);
}

/* Checks the layout seen from this rank; returns rank 0's base and the total size. */
static unsigned char* check_layout(MPI_Win win, int n, int noncontig, MPI_Aint* total) {
    unsigned char* first = NULL;
    MPI_Aint end = 0;
    for (int r = 0; r < n; ++r) {
        MPI_Aint size = -1;
        int disp_unit = -1;
        unsigned char* base = NULL;
        CHECK_MPI(MPI_Win_shared_query(win, r, &size, &disp_unit, &base));
        CHECK(size == size_of(r), "rank %d size %ld", r, (long)size);
        CHECK(disp_unit == r + 1, "rank %d disp_unit %d", r, disp_unit);
        if (noncontig) end = (end + page_size() - 1) / page_size() * page_size();
        if (r == 0) first = base;
        if (size == 0) /* as MPICH: no segment, no address */
            CHECK(base == NULL, "rank %d has no segment, yet its base is %p", r, (void*)base);
        else
            CHECK(base == first + end, "rank %d at offset %ld, expected %ld", r, (long)(base - first), (long)end);
        end += size;
        MPI_Aint size_c = -1, disp_unit_c = -1;
        unsigned char* base_c = NULL;
        CHECK_MPI(MPI_Win_shared_query_c(win, r, &size_c, &disp_unit_c, &base_c));
        CHECK(size_c == size && disp_unit_c == disp_unit && base_c == base, "MPI_Win_shared_query_c differs");
    }
    MPI_Aint size = -1;
    int disp_unit = -1;
    unsigned char* base = NULL;
    CHECK_MPI(MPI_Win_shared_query(win, MPI_PROC_NULL, &size, &disp_unit, &base));
    CHECK(size == size_of(0) && base == first, "MPI_PROC_NULL should give rank 0's segment");
    *total = end;
    return first;
}

static void run(MPI_Comm comm, const char* dir, int noncontig) {
    int rank, n;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    char path[300];
    snprintf(path, sizeof path, "%s/%s.dat", dir, noncontig ? "noncontig" : "contig");
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path,
                              STRATA_MPI_SHARED_NONCONTIG, noncontig ? "true" : "false", STRATA_MPI_UNLINK,
                              noncontig ? "true" : "false", STRATA_MPI_OFFSET, noncontig ? "8192" : "0", NULL);
    unsigned char* mine = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate_shared(size_of(rank), rank + 1, info, comm, &mine, &win));
    MPI_Info_free(&info);
    int* flavor = NULL;
    int flag = 0;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_SHARED, "flavor %d", *flavor);

    MPI_Aint total = 0;
    unsigned char* first = check_layout(win, n, noncontig, &total);
    MPI_Aint mine_size = -1;
    int unit = 0;
    unsigned char* mine_query = NULL;
    CHECK_MPI(MPI_Win_shared_query(win, rank, &mine_size, &unit, &mine_query));
    CHECK(mine == mine_query, "MPI_Win_allocate_shared gave %p, query %p", (void*)mine, (void*)mine_query);
    struct mapping maps[4];
    CHECK(find_mappings(first, (size_t)total, maps, 4) == 1 && strcmp(maps[0].path, path) == 0 &&
              strcmp(maps[0].perms, "rw-s") == 0,
          "the window is not one shared mapping of %s", path);

    /* Each rank stores into its own segment; everyone loads everything. */
    MPI_Win_lock_all(0, win);
    for (MPI_Aint j = 0; j < size_of(rank); ++j) mine[j] = pattern(rank, j);
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Barrier(comm);
    CHECK_MPI(MPI_Win_sync(win));
    for (int r = 0; r < n; ++r) {
        MPI_Aint size;
        int disp_unit;
        unsigned char* base;
        MPI_Win_shared_query(win, r, &size, &disp_unit, &base);
        for (MPI_Aint j = 0; j < size; ++j)
            CHECK(base[j] == pattern(r, j), "rank %d byte %ld = %d", r, (long)j, base[j]);
    }
    /* RMA into rank 2's segment (disp_unit 3): byte 3 * 5 = 15. */
    MPI_Barrier(comm);
    unsigned char marker = 0xAB;
    if (rank == n - 1) {
        CHECK_MPI(MPI_Put(&marker, 1, MPI_BYTE, 2, 5, 1, MPI_BYTE, win));
        CHECK_MPI(MPI_Win_flush(2, win));
    }
    MPI_Barrier(comm);
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Aint size2;
    int unit2;
    unsigned char* base2;
    MPI_Win_shared_query(win, 2, &size2, &unit2, &base2);
    CHECK(base2[15] == marker, "put at rank 2 displacement 5 not seen: %d", base2[15]);
    /* Every rank adds its rank + 1 to the int at displacement 2 of rank 3
     * (disp_unit 4: bytes 8..11 of a segment that starts at an odd offset). */
    MPI_Aint size3;
    int unit3;
    unsigned char* base3;
    MPI_Win_shared_query(win, 3, &size3, &unit3, &base3);
    if (rank == 3) memset(base3 + 8, 0, sizeof(int));
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Barrier(comm);
    const int addend = rank + 1;
    CHECK_MPI(MPI_Accumulate(&addend, 1, MPI_INT, 3, 2, 1, MPI_INT, MPI_SUM, win));
    CHECK_MPI(MPI_Win_flush(3, win));
    MPI_Barrier(comm);
    CHECK_MPI(MPI_Win_sync(win));
    int sum;
    memcpy(&sum, base3 + 8, sizeof sum);
    CHECK(sum == n * (n + 1) / 2, "accumulate into rank 3 gave %d", sum);
    MPI_Win_unlock_all(win);

    /* The window attributes describe this rank's segment. */
    void* attr_base = NULL;
    MPI_Aint* attr_size = NULL;
    int* attr_unit = NULL;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &attr_base, &flag));
    CHECK(flag && attr_base == mine, "MPI_WIN_BASE %p, segment %p", attr_base, (void*)mine);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_SIZE, &attr_size, &flag));
    CHECK(flag && *attr_size == size_of(rank), "MPI_WIN_SIZE %ld", (long)*attr_size);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &attr_unit, &flag));
    CHECK(flag && *attr_unit == rank + 1, "MPI_WIN_DISP_UNIT %d", *attr_unit);

    /* The whole window is written back from the mapping every rank shares. */
    unsigned char* expected = malloc((size_t)total + 1);
    memcpy(expected, first, (size_t)total);
    MPI_Barrier(comm);
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Barrier(comm);
    if (noncontig) {
        CHECK(!file_exists(path), "rank 0 should have removed %s", path);
    } else {
        CHECK(file_size(path) == total, "file size %lld, window %ld", file_size(path), (long)total);
        unsigned char* stored = malloc((size_t)total);
        read_file(path, 0, stored, (size_t)total);
        CHECK(memcmp(stored, expected, (size_t)total) == 0, "file differs from the window");
        free(stored);
    }
    free(expected);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(n == 4, "run with 4 ranks");
    char dir[256];
    make_test_dir(MPI_COMM_WORLD, "shared", dir, sizeof dir);
    const int fds = count_open_fds();
    run(MPI_COMM_WORLD, dir, 0);
    run(MPI_COMM_WORLD, dir, 1);
    CHECK(count_open_fds() == fds, "%d descriptors open, %d before", count_open_fds(), fds);

    /* Without hints: MPI's own shared memory window. */
    int* base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate_shared(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    MPI_Aint size;
    int unit;
    int* other;
    CHECK_MPI(MPI_Win_shared_query(win, 3, &size, &unit, &other));
    CHECK(size == 64 && unit == 1, "memory shared window query: %ld %d", (long)size, unit);
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(count_files(dir) == 1, "%d files, expected contig.dat only", count_files(dir));
    remove_test_dir(MPI_COMM_WORLD, dir);
    MPI_Finalize();
    return 0;
}
