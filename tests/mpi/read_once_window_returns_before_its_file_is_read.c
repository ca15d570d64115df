/* SPDX-License-Identifier: MIT */
/* access_style=read_once returns before the file is read: the driver mounts
 * strata_test_eio_fs with STRATA_TEST_HOLD_WHILE=HOLD, a device that answers
 * no read while the file HOLD exists, and passes the two paths. Every rank's
 * MPI_Win_allocate must return while no byte of its window could have been
 * read, with strata_read_behind=true and strata_read_complete=false; once
 * rank 0 removed HOLD, every byte read through the window is the file's and
 * strata_read_complete turns true. The order of events is the point, so no
 * bound in time is asserted: a MPI_Win_allocate that waited for the file
 * returns only when the driver's hang guard removes HOLD (after 60 s), and
 * the test fails saying so; the loop waiting for completion is a hang guard
 * too. Where the process may not read behind (no userfaultfd for kernel
 * faults) the driver skips (with CI=true: a failure, a missing capability).
 * Run with 2 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>
#include <time.h>

enum { MIB = 1 << 20, WINDOW = 8 * MIB + 4096 + 77, SPACING = 9 * MIB };

static unsigned char pattern(int rank, size_t i) {
    return (unsigned char)(rank * 5 + (int)(i / 4096) * 3 + (int)(i % 251) + 1);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK(argc == 3, "usage: %s FILE HOLD (FILE on strata_test_eio_fs held while HOLD exists)", argv[0]);
    const char* path = argv[1];
    const char* hold = argv[2];
    CHECK(file_exists(hold), "rank %d: %s does not exist: the device would not be held", rank, hold);
    const long long at = (long long)rank * SPACING;
    unsigned char* data = malloc(WINDOW);
    CHECK(data != NULL, "malloc");
    for (size_t i = 0; i < WINDOW; ++i) data[i] = pattern(rank, i);
    /* Writes go to the daemon (held are reads only); each rank writes its own part. */
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    CHECK(pwrite(fd, data, WINDOW, at) == WINDOW, "pwrite %s: %s", path, strerror(errno));
    CHECK(close(fd) == 0, "close %s: %s", path, strerror(errno));
    MPI_Barrier(MPI_COMM_WORLD);

    char offset[32];
    snprintf(offset, sizeof offset, "%lld", at);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_OFFSET,
                              offset, STRATA_MPI_ACCESS_STYLE, "read_once", NULL);
    unsigned char* base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(WINDOW, 1, info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);
    /* Returned with the device held: nothing can have been read. (The driver
     * releases the device after 60 s, so that a call waiting for it returns.) */
    CHECK(file_exists(hold),
          "rank %d: MPI_Win_allocate returned only once the driver released the device: it waits "
          "for its file",
          rank);
    expect_info(win, STRATA_MPI_INFO_READ_BEHIND, "true");
    expect_info(win, STRATA_MPI_INFO_READ_COMPLETE, "false");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) CHECK(unlink(hold) == 0, "unlink %s: %s", hold, strerror(errno));
    MPI_Barrier(MPI_COMM_WORLD);

    for (size_t i = WINDOW; i-- > 0;) {
        CHECK(base[i] == pattern(rank, i), "rank %d: window byte %zu is %u, the file's is %u", rank, i, base[i],
              pattern(rank, i));
    }
    char complete[64] = "";
    for (int tries = 0; tries < 6000; ++tries) {
        info_text(win, STRATA_MPI_INFO_READ_COMPLETE, complete, sizeof complete);
        if (strcmp(complete, "true") == 0) break;
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
    CHECK(strcmp(complete, "true") == 0, "rank %d: strata_read_complete is still \"%s\" after every byte was read",
          rank, complete);
    CHECK_MPI(MPI_Win_free(&win));
    free(data);
    MPI_Finalize();
    return 0;
}
