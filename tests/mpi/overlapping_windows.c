/* SPDX-License-Identifier: MIT */
/* Two windows over the same memory must see the same bytes (issue 31).
 * Written like an unmodified program (no strata header or library): the
 * driver windows_over_the_same_memory_see_the_same_bytes.sh runs it under
 * LD_PRELOAD=libstrata-mpi.so with storage and combined default hints.
 * Every mode makes MPI_Win_create windows over memory another window already
 * exposes, does RMA through one window, and checks the bytes by loads and
 * by RMA through the other:
 *   shared       MPI_Win_allocate_shared (segments of 4 + rank ints, so most
 *                start off 16-byte boundaries), then MPI_Win_create over each
 *                rank's segment, with displacement units 4 and 8
 *   alloc_mem    MPI_Alloc_mem, MPI_Win_create over all of it, then over a
 *                part of it that starts at a different byte on every rank
 *   mapped DIR   the same over a file the program maps itself (DIR/mapped-R.dat)
 * A mismatch names the window, the rank, the index and both values, and
 * aborts the job. */
#include "mpi_test.h"

#include <sys/mman.h>

static int rank, nranks;

static void lock_all(int count, MPI_Win* wins) {
    for (int i = 0; i < count; ++i) CHECK_MPI(MPI_Win_lock_all(0, wins[i]));
}

static void unlock_all(int count, MPI_Win* wins) {
    for (int i = 0; i < count; ++i) CHECK_MPI(MPI_Win_unlock_all(wins[i]));
}

/* Makes stores and completed RMA of every rank visible to every rank's loads. */
static void settle(MPI_Win win) {
    CHECK_MPI(MPI_Win_sync(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_sync(win));
}

static int get_int(MPI_Win win, int target, MPI_Aint disp) {
    int value = -1;
    CHECK_MPI(MPI_Get(&value, 1, MPI_INT, target, disp, 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_flush(target, win));
    return value;
}

static const char* context = ""; /* which memory the windows are over */

#define EXPECT(got, want, what)                                                        \
    do {                                                                               \
        int got_ = (got), want_ = (want);                                              \
        CHECK(got_ == want_, "%s%s: got %d, expected %d", context, what, got_, want_); \
    } while (0)

/* MPI_Win_get_attr reports the base and displacement unit the program gave. */
static void expect_attributes(MPI_Win win, const void* base, int disp_unit) {
    void* got_base = NULL;
    int* got_unit = NULL;
    int flag = 0;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &got_base, &flag));
    CHECK(flag && got_base == base, "%sMPI_WIN_BASE: %p, expected %p", context, got_base, base);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &got_unit, &flag));
    CHECK(flag && *got_unit == disp_unit, "%sMPI_WIN_DISP_UNIT: %d, expected %d", context, *got_unit, disp_unit);
}

static void shared(void) {
    const int next = (rank + 1) % nranks, count = 4 + rank;
    int* mine = NULL;
    MPI_Win shm, by4, by8;
    CHECK_MPI(MPI_Win_allocate_shared(count * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mine,
                                      &shm));
    int** segment = calloc((size_t)nranks, sizeof *segment);
    for (int r = 0; r < nranks; ++r) {
        MPI_Aint size;
        int unit;
        CHECK_MPI(MPI_Win_shared_query(shm, r, &size, &unit, &segment[r]));
    }
    for (int i = 0; i < count; ++i) mine[i] = 7000 + 100 * rank + i;
    CHECK_MPI(MPI_Win_create(mine, count * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &by4));
    CHECK_MPI(MPI_Win_create(mine, count * (MPI_Aint)sizeof(int), 8, MPI_INFO_NULL, MPI_COMM_WORLD, &by8));
    expect_attributes(by4, mine, sizeof(int));
    expect_attributes(by8, mine, 8);
    MPI_Win wins[] = {shm, by4, by8};
    lock_all(3, wins);
    settle(shm);

    /* Through the created windows into the next rank's segment. */
    const int last = 3 + next, put = 100 * rank + 11, add = 5, swapped = 100 * rank + 33;
    int fetched = -1, compared = -1;
    EXPECT(get_int(by4, next, last), 7000 + 100 * next + last, "MPI_Get through MPI_Win_create, disp_unit 4");
    CHECK_MPI(MPI_Put(&put, 1, MPI_INT, next, last, 1, MPI_INT, by4));
    CHECK_MPI(MPI_Accumulate(&add, 1, MPI_INT, next, 1, 1, MPI_INT, MPI_SUM, by4));
    CHECK_MPI(MPI_Fetch_and_op(&add, &fetched, MPI_INT, next, 0, MPI_SUM, by4));
    const int old = 7000 + 100 * next + 2;
    CHECK_MPI(MPI_Compare_and_swap(&swapped, &old, &compared, MPI_INT, next, 2, by4));
    CHECK_MPI(MPI_Win_flush(next, by4));
    EXPECT(fetched, 7000 + 100 * next, "MPI_Fetch_and_op through MPI_Win_create");
    EXPECT(compared, old, "MPI_Compare_and_swap through MPI_Win_create");
    settle(shm);
    const int prev = (rank + nranks - 1) % nranks;
    EXPECT(mine[3 + rank], 100 * prev + 11, "load of a put through MPI_Win_create");
    EXPECT(mine[1], 7000 + 100 * rank + 1 + 5, "load of an accumulate through MPI_Win_create");
    EXPECT(mine[0], 7000 + 100 * rank + 5, "load of a fetch-and-op through MPI_Win_create");
    EXPECT(mine[2], 100 * prev + 33, "load of a compare-and-swap through MPI_Win_create");
    EXPECT(segment[next][last], put, "load through MPI_Win_shared_query of a put through MPI_Win_create");
    EXPECT(get_int(shm, next, last), put, "MPI_Get through the shared window of a put through MPI_Win_create");

    /* Every rank has checked its ints 0..3 before the next put lands on int 2. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* Displacement unit 8: byte 8 × disp of the segment. */
    const int eighth = 100 * rank + 88;
    CHECK_MPI(MPI_Put(&eighth, 1, MPI_INT, next, 1, 1, MPI_INT, by8));
    CHECK_MPI(MPI_Win_flush(next, by8));
    settle(shm);
    EXPECT(segment[next][2], eighth, "load of a put through MPI_Win_create, disp_unit 8");
    EXPECT(get_int(by8, next, 0), 7000 + 100 * next + 5, "MPI_Get through MPI_Win_create, disp_unit 8");

    /* Through the shared window, read back through the created one. */
    const int back = 100 * rank + 44;
    CHECK_MPI(MPI_Put(&back, 1, MPI_INT, next, 3, 1, MPI_INT, shm));
    CHECK_MPI(MPI_Win_flush(next, shm));
    settle(shm);
    EXPECT(get_int(by4, next, 3), back, "MPI_Get through MPI_Win_create of a put through the shared window");

    unlock_all(3, wins);
    CHECK_MPI(MPI_Win_free(&by8));
    CHECK_MPI(MPI_Win_free(&by4));
    CHECK_MPI(MPI_Win_free(&shm));
    free(segment);
}

enum { COUNT = 5 * 1024 + 3, PART = 64 }; /* ints: over five pages, so a combined allocation has both parts */

/* The part window of rank r starts at this int, just before the end of the
 * second page (where a combined allocation's memory part ends). */
static int part_start(int r) {
    return 2040 + r;
}

/* `whole` exposes all COUNT ints of `data`; windows over a part of it are made here. */
static void over_a_part(int* data, MPI_Win whole) {
    const int next = (rank + 1) % nranks, start = part_start(rank), next_start = part_start(next);
    int* part = data + start;
    for (int i = 0; i < COUNT; ++i) data[i] = 9000 + i;
    MPI_Win by4, by8;
    CHECK_MPI(MPI_Win_create(part, PART * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &by4));
    CHECK_MPI(MPI_Win_create(part, PART * (MPI_Aint)sizeof(int), 8, MPI_INFO_NULL, MPI_COMM_WORLD, &by8));
    expect_attributes(whole, data, sizeof(int));
    expect_attributes(by4, part, sizeof(int));
    expect_attributes(by8, part, 8);
    MPI_Win wins[] = {whole, by4, by8};
    lock_all(3, wins);
    settle(whole);

    const int put = 100 * rank + 11, add = 5, eighth = 100 * rank + 88;
    EXPECT(get_int(by4, next, 7), 9000 + next_start + 7, "MPI_Get through the part window");
    CHECK_MPI(MPI_Put(&put, 1, MPI_INT, next, PART - 1, 1, MPI_INT, by4));
    CHECK_MPI(MPI_Accumulate(&add, 1, MPI_INT, next, 9, 1, MPI_INT, MPI_SUM, by4));
    CHECK_MPI(MPI_Put(&eighth, 1, MPI_INT, next, 2, 1, MPI_INT, by8));
    CHECK_MPI(MPI_Win_flush(next, by4));
    CHECK_MPI(MPI_Win_flush(next, by8));
    settle(whole);
    const int prev = (rank + nranks - 1) % nranks;
    EXPECT(part[PART - 1], 100 * prev + 11, "load of a put through the part window");
    EXPECT(part[9], 9000 + start + 9 + 5, "load of an accumulate through the part window");
    EXPECT(part[4], 100 * prev + 88, "load of a put through the part window, disp_unit 8");
    EXPECT(data[0], 9000, "load of the whole window's first int (no put may land there)");
    EXPECT(get_int(whole, next, next_start + PART - 1), put, "MPI_Get through the whole window");

    const int back = 100 * rank + 44;
    CHECK_MPI(MPI_Put(&back, 1, MPI_INT, next, next_start + 5, 1, MPI_INT, whole));
    CHECK_MPI(MPI_Win_flush(next, whole));
    settle(whole);
    EXPECT(get_int(by4, next, 5), back, "MPI_Get through the part window of a put through the whole");

    unlock_all(3, wins);
    CHECK_MPI(MPI_Win_free(&by8));
    CHECK_MPI(MPI_Win_free(&by4));
}

static void alloc_mem(void) {
    int* data = NULL;
    MPI_Win whole;
    CHECK_MPI(MPI_Alloc_mem(COUNT * (MPI_Aint)sizeof(int), MPI_INFO_NULL, &data));
    CHECK_MPI(MPI_Win_create(data, COUNT * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &whole));
    context = "MPI_Alloc_mem: ";
    over_a_part(data, whole);
    CHECK_MPI(MPI_Win_free(&whole));
    CHECK_MPI(MPI_Free_mem(data));
}

static void mapped(const char* dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/mapped-%d.dat", dir, rank);
    const size_t bytes = COUNT * sizeof(int);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)bytes) == 0, "%s: %s", path, strerror(errno));
    int* data = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(data != MAP_FAILED, "mmap %s: %s", path, strerror(errno));
    close(fd);
    MPI_Win whole;
    CHECK_MPI(MPI_Win_create(data, (MPI_Aint)bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &whole));
    context = "a mapping of the program: ";
    over_a_part(data, whole);
    CHECK_MPI(MPI_Win_free(&whole));
    munmap(data, bytes);
    unlink(path);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    CHECK(argc >= 2, "usage: overlapping_windows shared|alloc_mem|mapped DIR");
    if (strcmp(argv[1], "shared") == 0) {
        shared();
    } else if (strcmp(argv[1], "alloc_mem") == 0) {
        alloc_mem();
    } else if (strcmp(argv[1], "mapped") == 0 && argc == 3) {
        mapped(argv[2]);
    } else {
        CHECK(0, "unknown mode '%s'", argv[1]);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("%s: every window saw the same bytes\n", argv[1]);
    MPI_Finalize();
    return 0;
}
