/* SPDX-License-Identifier: MIT */
/* Started by full_file_system_fails_with_no_space.sh with a 1 MiB tmpfs:
 * the last rank asks for a 2 MiB window there, the others on a roomy file
 * system. Space is reserved at creation, so every rank gets MPI_ERR_NO_SPACE
 * from MPI_Win_allocate (never a SIGBUS on a later store), with the same
 * message, and no file remains on either file system.
 * Usage: storage_window_no_space SMALL_DIR ROOMY_DIR */
#include "mpi_test.h"

#include <strata/mpi.h>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    CHECK(argc == 3, "usage: %s SMALL_DIR ROOMY_DIR", argv[0]);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char path[400];
    snprintf(path, sizeof path, "%s/w-%d.dat", rank == n - 1 ? argv[1] : argv[2], rank);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, NULL);
    void* base = NULL;
    MPI_Win win;
    int rc = MPI_Win_allocate(2 << 20, 1, info, MPI_COMM_WORLD, &base, &win);
    MPI_Info_free(&info);
    int error_class = -1, length = 0;
    char text[MPI_MAX_ERROR_STRING] = "", rank_named[32];
    MPI_Error_class(rc, &error_class);
    MPI_Error_string(rc, text, &length);
    snprintf(rank_named, sizeof rank_named, "rank %d (", n - 1);
    CHECK(rc != MPI_SUCCESS && error_class == MPI_ERR_NO_SPACE, "class %d: \"%s\"", error_class, text);
    CHECK(strstr(text, rank_named) && strstr(text, "No space left on device"), "message \"%s\"", text);
    check_same_text(MPI_COMM_WORLD, text);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(count_files(argv[1]) == 0 && count_files(argv[2]) == 1, "files left: %d on the tmpfs, %d elsewhere",
          count_files(argv[1]), count_files(argv[2]));
    MPI_Finalize();
    return 0;
}
