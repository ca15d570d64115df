/* SPDX-License-Identifier: MIT */
/* MPI_Win_allocate_shared on storage adds the ranks' sizes into one file:
 * a sum beyond what an MPI_Aint holds (wrapping past 2^64, or past 2^63 - 1,
 * or made so by page-aligning with alloc_shared_noncontig) is MPI_ERR_SIZE on
 * every rank with the same message, and nothing is created. Before the check
 * four ranks of 2^62 bytes wrapped to a window of 0 bytes that "succeeded".
 * Run with 4 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

static void expect_err_size(int rc, const char* what) {
    CHECK(rc != MPI_SUCCESS, "%s: MPI_Win_allocate_shared succeeded", what);
    int error_class = -1, length = 0;
    char text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(rc, &error_class);
    MPI_Error_string(rc, text, &length);
    CHECK(error_class == MPI_ERR_SIZE, "%s: class %d, message \"%s\"", what, error_class, text);
    CHECK(strstr(text, "MPI_Win_allocate_shared: rank 0 (") != NULL && strstr(text, "size=") != NULL &&
              strstr(text, "MPI_Aint") != NULL,
          "%s: message \"%s\" does not name the routine, rank 0, size= and the limit", what, text);
    check_same_text(MPI_COMM_WORLD, text);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(n == 4, "run with 4 ranks, not %d", n);
    char dir[256], path[320];
    make_test_dir(MPI_COMM_WORLD, "overflow", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/shared.dat", dir);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, NULL);
    const MPI_Aint quarter = (MPI_Aint)1 << 62;
    void* base = NULL;
    MPI_Win win = (MPI_Win)12345;

    /* 4 x 2^62 = 2^64: wraps to 0 in 64 bits. */
    expect_err_size(MPI_Win_allocate_shared(quarter, 1, info, MPI_COMM_WORLD, &base, &win), "4 x 2^62");
    CHECK(win == MPI_WIN_NULL, "a failed allocation must leave MPI_WIN_NULL");

    /* 2 x 2^62 = 2^63: fits a size_t, not an MPI_Aint. */
    expect_err_size(MPI_Win_allocate_shared(rank < 2 ? quarter : 0, 1, info, MPI_COMM_WORLD, &base, &win), "2 x 2^62");

    /* Page alignment makes it overflow: rank 0 just below the limit, rank 1 one byte. */
    const MPI_Aint huge = PTRDIFF_MAX - 10;
    MPI_Info noncontig = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path,
                                   STRATA_MPI_SHARED_NONCONTIG, "true", NULL);
    expect_err_size(MPI_Win_allocate_shared(rank == 0   ? huge
                                            : rank == 1 ? 1
                                                        : 0,
                                            1, noncontig, MPI_COMM_WORLD, &base, &win),
                    "noncontig rounding");
    MPI_Info_free(&noncontig);
    CHECK(count_files(dir) == 0, "the failed calls left %d files", count_files(dir));

    /* The communicator still works: a good shared window after the failures. */
    char* mine = NULL;
    CHECK_MPI(MPI_Win_allocate_shared(4096, 1, info, MPI_COMM_WORLD, &mine, &win));
    mine[0] = (char)rank;
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Info_free(&info);
    remove_test_dir(MPI_COMM_WORLD, dir);
    MPI_Finalize();
    return 0;
}
