/* SPDX-License-Identifier: MIT */
/* A failure on one rank inside a collective allocation: every rank returns
 * the same error class and message (naming that rank, the hint, its value
 * and the cause) within a bounded time; nothing is left behind on any rank —
 * files the call created are removed, a file it grew is shrunk back, no
 * descriptor stays open — and the communicator keeps working. Run with 4 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Runs one failing allocation; `failing` gets `bad_path`, the others a file in dir. */
static void expect_failure(const char* dir, int failing, const char* bad_path, int shared, int expected_class,
                           const char* cause) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[400];
    if (rank == failing)
        snprintf(path, sizeof path, "%s", bad_path);
    else
        snprintf(path, sizeof path, "%s/good-%d.dat", dir, rank);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, NULL);
    const int fds = count_open_fds();
    void* base = NULL;
    MPI_Win win;
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = now();
    int rc = shared ? MPI_Win_allocate_shared(1 << 20, 1, info, MPI_COMM_WORLD, &base, &win)
                    : MPI_Win_allocate(1 << 20, 1, info, MPI_COMM_WORLD, &base, &win);
    const double elapsed = now() - start;
    MPI_Info_free(&info);

    CHECK(rc != MPI_SUCCESS && win == MPI_WIN_NULL, "rank %d's failure did not fail this rank", failing);
    CHECK(elapsed < 10.0, "the failure took %.1f s to reach this rank", elapsed);
    int error_class = -1, length = 0;
    char text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(rc, &error_class);
    MPI_Error_string(rc, text, &length);
    CHECK(error_class == expected_class, "class %d, expected %d: \"%s\"", error_class, expected_class, text);
    char rank_named[32], hint_named[450];
    snprintf(rank_named, sizeof rank_named, "rank %d (", failing);
    snprintf(hint_named, sizeof hint_named, "storage_alloc_filename=%s", bad_path);
    CHECK(strstr(text, rank_named) && strstr(text, hint_named) && strstr(text, cause),
          "message \"%s\" should name %s, %s and \"%s\"", text, rank_named, hint_named, cause);
    check_same_text(MPI_COMM_WORLD, text);
    CHECK(count_open_fds() == fds, "%d descriptors open, %d before", count_open_fds(), fds);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(n == 4, "run with 4 ranks");
    char dir[256], missing[300], not_dir[300], existing[300];
    make_test_dir(MPI_COMM_WORLD, "onefails", dir, sizeof dir);
    snprintf(missing, sizeof missing, "%s/no-such-dir/w-1.dat", dir);
    snprintf(existing, sizeof existing, "%s/good-2.dat", dir);

    /* Rank 1's directory does not exist: ranks 0, 2, 3 made their files and must remove them. */
    expect_failure(dir, 1, missing, 0, MPI_ERR_NO_SUCH_FILE, "No such file or directory");
    CHECK(count_files(dir) == 0, "%d files left after rank 1 failed", count_files(dir));
    MPI_Barrier(MPI_COMM_WORLD); /* every rank has looked before rank 2 writes */

    /* Rank 2's file existed (100 bytes): it is grown for the window, then shrunk back intact. */
    char header[100];
    memset(header, 'x', sizeof header);
    if (rank == 2) write_file(existing, header, sizeof header);
    MPI_Barrier(MPI_COMM_WORLD);
    expect_failure(dir, 1, missing, 0, MPI_ERR_NO_SUCH_FILE, "No such file or directory");
    CHECK(count_files(dir) == 1 && file_size(existing) == 100, "the existing file was not restored");
    if (rank == 2) {
        char back[100];
        read_file(existing, 0, back, sizeof back);
        CHECK(memcmp(back, header, sizeof back) == 0, "the existing file's contents changed");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 2) unlink(existing);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Rank 3's path goes through a regular file. */
    snprintf(not_dir, sizeof not_dir, "%s/plain", dir);
    if (rank == 0) write_file(not_dir, header, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    strcat(not_dir, "/w-3.dat");
    expect_failure(dir, 3, not_dir, 0, MPI_ERR_BAD_FILE, "Not a directory");
    CHECK(count_files(dir) == 1, "%d files left after rank 3 failed", count_files(dir));
    MPI_Barrier(MPI_COMM_WORLD);

    /* Shared window: rank 0 creates the file for everyone; its failure fails all. */
    expect_failure(dir, 0, missing, 1, MPI_ERR_NO_SUCH_FILE, "No such file or directory");
    CHECK(count_files(dir) == 1, "%d files left after a shared failure", count_files(dir));

    /* The communicator still works: a window, data through it, freed. */
    char path[300];
    snprintf(path, sizeof path, "%s/after-%%r.dat", dir);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_UNLINK,
                              "true", NULL);
    int* base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);
    MPI_Win_fence(0, win);
    CHECK_MPI(MPI_Put(&rank, 1, MPI_INT, (rank + 1) % n, 0, 1, MPI_INT, win));
    MPI_Win_fence(0, win);
    CHECK(*base == (rank + n - 1) % n, "after the failures a put delivered %d", *base);
    CHECK_MPI(MPI_Win_free(&win));
    remove_test_dir(MPI_COMM_WORLD, dir);
    MPI_Finalize();
    return 0;
}
