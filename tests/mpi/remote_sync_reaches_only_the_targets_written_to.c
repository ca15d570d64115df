/* SPDX-License-Identifier: MIT */
/* storage_alloc_remote_sync: rank 0's MPI_Win_sync syncs exactly the targets
 * it wrote to since its previous sync, by every writing RMA call, in a
 * lock_all epoch and after a closed MPI_Win_lock or fence epoch; reads (Get,
 * Fetch_and_op and Get_accumulate with MPI_NO_OP) and writes to itself ask
 * no target. Each rank counts the syncs it made for others
 * (MPI_Win_get_info strata_remote_syncs), and rank 0 reads each target's
 * file right after its sync: the windows are write_mostly (direct
 * write-back), so a byte is in a file only once its own rank synced it.
 * Run with 3 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

enum { PAGE = 4096, WINDOW = 4 * PAGE };

static char dir[256] = "/var/tmp/strata-mpi-remote-targets-XXXXXX";

/* Rank 0: the long at byte `offset` of `target`'s file. */
static long file_long(int target, long long offset) {
    char path[320];
    snprintf(path, sizeof path, "%s/w-%d.dat", dir, target);
    long value = 0;
    read_file(path, offset, &value, sizeof value);
    return value;
}

/* Every rank: the syncs made for others equal expected[rank]. */
static void expect_syncs(MPI_Win win, int rank, const long expected[3], const char* when) {
    MPI_Barrier(MPI_COMM_WORLD);
    const long got = info_number(win, "strata_remote_syncs");
    CHECK(got == expected[rank], "%s: rank %d made %ld syncs for other ranks, expected %ld", when, rank, got,
          expected[rank]);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(n == 3, "run with 3 ranks, not %d", n);
    if (rank == 0) CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    char path[320];
    snprintf(path, sizeof path, "%s/w-%%r.dat", dir);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path,
                              STRATA_MPI_ACCESS_STYLE, "write_mostly", "storage_alloc_remote_sync", "true", NULL);
    long* base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(WINDOW, sizeof(long), info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);
    expect_info(win, "storage_alloc_remote_sync", "true");
    expect_info(win, STRATA_MPI_INFO_WRITEBACK, "direct");
    const long none[3] = {0, 0, 0};
    expect_syncs(win, rank, none, "after creation");

    long one = 1, result = 0, compare = 0, value = 0;
    MPI_Win_lock_all(0, win);
    if (rank == 0) {
        const long put = 4242;
        CHECK_MPI(MPI_Put(&put, 1, MPI_LONG, 1, 0, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Put(&put, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win)); /* itself: its own sync */
        CHECK_MPI(MPI_Get(&value, 1, MPI_LONG, 2, 0, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Fetch_and_op(&one, &result, MPI_LONG, 2, 1, MPI_NO_OP, win));
        CHECK_MPI(MPI_Get_accumulate(&one, 1, MPI_LONG, &result, 1, MPI_LONG, 2, 2, 1, MPI_LONG, MPI_NO_OP, win));
        CHECK_MPI(MPI_Win_sync(win));
        CHECK(file_long(1, 0) == 4242, "rank 1's file lacks the put after rank 0's sync");
        CHECK(file_long(0, 0) == 4242, "rank 0's file lacks its own put after its sync");
        CHECK_MPI(MPI_Win_sync(win)); /* nothing written since: no target asked */
    }
    const long first[3] = {0, 1, 0};
    expect_syncs(win, rank, first, "a put to rank 1 and reads of rank 2");

    if (rank == 0) {
        CHECK_MPI(MPI_Accumulate(&one, 1, MPI_LONG, 2, 8, 1, MPI_LONG, MPI_SUM, win));
        CHECK_MPI(MPI_Fetch_and_op(&one, &result, MPI_LONG, 2, 9, MPI_SUM, win));
        compare = 4242;
        const long swapped = 77;
        CHECK_MPI(MPI_Compare_and_swap(&swapped, &compare, &result, MPI_LONG, 1, 0, win));
        CHECK_MPI(MPI_Win_sync(win));
        CHECK(file_long(2, 8 * sizeof(long)) == 1, "rank 2's file lacks the accumulate");
        CHECK(file_long(2, 9 * sizeof(long)) == 1, "rank 2's file lacks the fetch-and-op");
        CHECK(file_long(1, 0) == 77, "rank 1's file lacks the compare-and-swap");
    }
    const long second[3] = {0, 2, 1};
    expect_syncs(win, rank, second, "accumulate and fetch-and-op to rank 2, compare-and-swap to rank 1");
    MPI_Win_unlock_all(win);

    /* A closed MPI_Win_lock epoch (Rput, Raccumulate) completed the writes:
     * the sync, in an epoch on another target, still has rank 2 sync them. */
    if (rank == 0) {
        MPI_Request requests[2];
        const long big = 99;
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 2, 0, win));
        CHECK_MPI(MPI_Rput(&big, 1, MPI_LONG, 2, 16, 1, MPI_LONG, win, &requests[0]));
        CHECK_MPI(MPI_Raccumulate(&one, 1, MPI_LONG, 2, 17, 1, MPI_LONG, MPI_SUM, win, &requests[1]));
        for (int i = 0; i < 2; ++i) CHECK_MPI(MPI_Wait(&requests[i], MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Win_unlock(2, win));
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win));
        CHECK_MPI(MPI_Win_sync(win));
        CHECK_MPI(MPI_Win_unlock(1, win));
        CHECK(file_long(2, 16 * sizeof(long)) == 99, "rank 2's file lacks the Rput");
        CHECK(file_long(2, 17 * sizeof(long)) == 1, "rank 2's file lacks the Raccumulate");
    }
    const long third[3] = {0, 2, 2};
    expect_syncs(win, rank, third, "Rput and Raccumulate to rank 2 in a closed lock epoch");

    /* A fence epoch: MPICH refuses MPI_Win_sync in it, so the sync comes in
     * a lock_all epoch after the closing fence, which completed the put. */
    const long fenced = 123;
    CHECK_MPI(MPI_Win_fence(0, win));
    if (rank == 0) CHECK_MPI(MPI_Put(&fenced, 1, MPI_LONG, 1, 24, 1, MPI_LONG, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    if (rank == 0) {
        CHECK_MPI(MPI_Win_lock_all(0, win));
        CHECK_MPI(MPI_Win_sync(win));
        CHECK_MPI(MPI_Win_unlock_all(win));
        CHECK(file_long(1, 24 * sizeof(long)) == 123, "rank 1's file lacks the put of the fence epoch");
    }
    const long fourth[3] = {0, 3, 2};
    expect_syncs(win, rank, fourth, "a put to rank 1 in a closed fence epoch");

    CHECK_MPI(MPI_Win_free(&win));
    MPI_Barrier(MPI_COMM_WORLD);
    char mine[320];
    snprintf(mine, sizeof mine, "%s/w-%d.dat", dir, rank);
    CHECK(unlink(mine) == 0, "unlink %s: %s", mine, strerror(errno));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) CHECK(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
    MPI_Finalize();
    return 0;
}
