/* SPDX-License-Identifier: MIT */
/* Remote durability of MPI_Win_sync (storage_alloc_remote_sync=true), driven
 * by remote_sync_*.sh. Modes:
 *   kill DIR   2 ranks: rank 0 puts a page into rank 1's window and calls
 *              MPI_Win_sync while rank 1 computes (makes no MPI call); then
 *              rank 0 SIGKILLs rank 1 and prints "synced".
 *   dead DIR   2 ranks, under mpiexec -disable-auto-cleanup: rank 0 puts
 *              into rank 1, rank 1 SIGKILLs itself, and rank 0's MPI_Win_sync
 *              fails naming rank 1 and its file ("named: <message>"), unless
 *              MPICH ends the job first (see the driver).
 *   check DIR  no MPI: the page is in DIR/w-1.dat (exit 1 if not).
 * The window is write_mostly (direct write-back): bytes not synced live in
 * the process's anonymous memory and die with it, so only a sync made by
 * rank 1 on rank 0's behalf puts them in the file. */
#include "mpi_test.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>

#include <strata/mpi.h>

enum { PAGE = 4096, WINDOW = 16 * PAGE, OFFSET = 2 * PAGE };

static unsigned char pattern(size_t i) {
    return (unsigned char)(i * 7 + 3);
}

static int check(const char* dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/w-1.dat", dir);
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        printf("open %s: %s\n", path, strerror(errno));
        return 1;
    }
    unsigned char got[PAGE];
    const ssize_t n = pread(fd, got, PAGE, OFFSET);
    close(fd);
    if (n != PAGE) {
        printf("pread %s: %zd bytes\n", path, n);
        return 1;
    }
    for (size_t i = 0; i < PAGE; ++i) {
        if (got[i] != pattern(i)) {
            printf("%s: byte %zu of the put is %u, expected %u: the put never reached the file\n", path, OFFSET + i,
                   got[i], pattern(i));
            return 1;
        }
    }
    printf("%s holds the put\n", path);
    return 0;
}

/* Rank 1's computation: no MPI call, until it is killed (or a minute passes). */
static void compute(void) {
    volatile unsigned long sum = 0;
    const time_t end = time(NULL) + 60;
    while (time(NULL) < end)
        for (int i = 0; i < 1000000; ++i) sum += (unsigned long)i;
    fprintf(stderr, "rank 1 was not killed within a minute\n");
    _exit(2);
}

int main(int argc, char** argv) {
    if (argc == 3 && strcmp(argv[1], "check") == 0) return check(argv[2]);
    CHECK(argc == 3 && (strcmp(argv[1], "kill") == 0 || strcmp(argv[1], "dead") == 0), "usage: %s kill|dead|check DIR",
          argv[0]);
    const int dead = strcmp(argv[1], "dead") == 0;
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI provided thread level %d", provided);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(n == 2, "run with 2 ranks, not %d", n);
    char path[512];
    snprintf(path, sizeof path, "%s/w-%%r.dat", argv[2]);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path,
                              STRATA_MPI_ACCESS_STYLE, "write_mostly", "storage_alloc_remote_sync", "true", NULL);
    unsigned char* base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(WINDOW, 1, info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);
    expect_info(win, STRATA_MPI_INFO_WRITEBACK, "direct");
    int pids[2] = {0, 0};
    const int pid = (int)getpid();
    MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    if (rank == 1) {
        if (dead) {
            MPI_Barrier(MPI_COMM_WORLD); /* rank 0's put has landed */
            raise(SIGKILL);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        compute();
    }
    static unsigned char page[PAGE];
    for (size_t i = 0; i < PAGE; ++i) page[i] = pattern(i);
    if (dead) {
        CHECK_MPI(MPI_Put(page, PAGE, MPI_BYTE, 1, OFFSET, PAGE, MPI_BYTE, win));
        CHECK_MPI(MPI_Win_flush(1, win));
        MPI_Barrier(MPI_COMM_WORLD);
        /* Sync once rank 1 has died: MPICH 4.0.2 ends the job when MPI
         * polls a dead process's connection, so strata checks first. */
        const int pidfd = (int)syscall(SYS_pidfd_open, pids[1], 0);
        CHECK(pidfd >= 0, "pidfd_open %d: %s", pids[1], strerror(errno));
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        int ready;
        while ((ready = poll(&p, 1, 60000)) < 0 && errno == EINTR) continue;
        CHECK(ready == 1, "rank 1 did not die");
        MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        const int rc = MPI_Win_sync(win);
        char text[MPI_MAX_ERROR_STRING] = "";
        int length = 0, error_class = 0;
        MPI_Error_string(rc, text, &length);
        MPI_Error_class(rc, &error_class);
        printf("class %d (MPIX_ERR_PROC_FAILED is %d): %s\n", error_class, MPIX_ERR_PROC_FAILED, text);
        char file[512];
        snprintf(file, sizeof file, "%s/w-1.dat", argv[2]);
        printf("returned: %s\n", rc == MPI_SUCCESS ? "MPI_SUCCESS" : text);
        if (rc != MPI_SUCCESS && error_class == MPIX_ERR_PROC_FAILED && strstr(text, "rank 1") != NULL &&
            strstr(text, file) != NULL)
            printf("named: %s\n", text);
        fflush(stdout);
        _exit(0); /* MPI_Finalize would wait for the dead rank */
    }
    MPI_Barrier(MPI_COMM_WORLD); /* rank 1 computes from here on */
    CHECK_MPI(MPI_Put(page, PAGE, MPI_BYTE, 1, OFFSET, PAGE, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_sync(win));
    /* Said first: once rank 1 dies, mpiexec may kill this rank at any moment. */
    printf("synced\n");
    fflush(stdout);
    CHECK(kill((pid_t)pids[1], SIGKILL) == 0, "kill rank 1 (pid %d): %s", pids[1], strerror(errno));
    _exit(0); /* the job ends with rank 1's death */
}
