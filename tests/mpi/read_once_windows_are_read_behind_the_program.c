/* SPDX-License-Identifier: MIT */
/* access_style=read_once on a window over data the file holds, where the
 * process may handle missing pages with a userfaultfd (Linux 6.7+, root or
 * vm.unprivileged_userfaultfd=1): the file is read behind the program
 * (MPI_Win_get_info says strata_read_behind=true; that MPI_Win_allocate
 * returns before the read ends is read_once_window_returns_before_its_file_is_read),
 * and every byte read through the window is the file's — with two threads
 * reading every page from the last to the first at once, bytes past the end
 * of the file reading zero. strata_read_complete turns "true" once
 * everything was read. A child forked right after MPI_Win_allocate has every
 * byte and does not hang; MPI_Win_free while the fill runs returns and leaves
 * the file as it was. Where the process may not, strata_read_behind must be
 * "false" (with CI=true that is a failure: a missing capability) and the
 * values must hold alike. Run with 2 ranks. */
#include "mpi_test.h"

#include <pthread.h>
#include <strata/mpi.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

enum { MIB = 1 << 20, WINDOW = 256 * MIB + 4096 + 77, SHORT = 6000, SPACING = 288 * MIB };

static unsigned char pattern(int rank, size_t i) {
    return (unsigned char)(rank * 7 + (int)(i / 4096) * 3 + (int)(i % 251) + 1);
}

static int may_fill_behind(void) {
    struct utsname u;
    int major = 0, minor = 0;
    CHECK(uname(&u) == 0, "uname: %s", strerror(errno));
    CHECK(sscanf(u.release, "%d.%d", &major, &minor) == 2, "uname release %s", u.release);
    if (!(major > 6 || (major == 6 && minor >= 7))) return 0;
    if (geteuid() == 0) return 1;
    FILE* f = fopen("/proc/sys/vm/unprivileged_userfaultfd", "r");
    int allowed = 0;
    if (f != NULL) {
        allowed = fscanf(f, "%d", &allowed) == 1 && allowed == 1;
        fclose(f);
    }
    return allowed;
}

static int rank_, held_;
static const unsigned char* expected_byte(size_t i) {
    static unsigned char zero = 0;
    static unsigned char value;
    if ((int)i >= held_) return &zero;
    value = pattern(rank_, i);
    return &value;
}

/* Reads every page from the last to the first; returns the first wrong byte's index + 1, or 0. */
static void* read_backwards(void* arg) {
    const unsigned char* base = arg;
    for (size_t page = (WINDOW + 4095) / 4096; page-- > 0;) {
        const size_t end = page * 4096 + 4096 < WINDOW ? page * 4096 + 4096 : WINDOW;
        for (size_t i = page * 4096; i < end; ++i) {
            const unsigned char want = (int)i < held_ ? pattern(rank_, i) : 0;
            if (base[i] != want) return (void*)(i + 1);
        }
    }
    return NULL;
}

static MPI_Win open_window(const char* path, long long at, unsigned char** base) {
    char offset[32];
    snprintf(offset, sizeof offset, "%lld", at);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_OFFSET,
                              offset, STRATA_MPI_ACCESS_STYLE, "read_once", NULL);
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(WINDOW, 1, info, MPI_COMM_WORLD, base, &win));
    MPI_Info_free(&info);
    return win;
}

int main(int argc, char** argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const int behind = may_fill_behind();
    const char* ci = getenv("CI");
    CHECK(behind || ci == NULL || strcmp(ci, "true") != 0,
          "missing capability (a failure in CI): a userfaultfd that handles kernel faults (Linux 6.7+, root)");
    /* Not /dev/shm or another tmpfs: O_DIRECT needs a disk file system. */
    char dir[256] = "/var/tmp/strata-mpi-read-behind-XXXXXX", path[300];
    if (rank_ == 0) CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "%s/checkpoint.dat", dir);
    const long long at = (long long)rank_ * SPACING;
    /* The checkpoint: the last rank's part ends SHORT bytes before its window does. */
    held_ = rank_ == n - 1 ? WINDOW - SHORT : WINDOW;
    unsigned char* data = malloc(WINDOW);
    CHECK(data != NULL, "malloc");
    for (int i = 0; i < held_; ++i) data[i] = pattern(rank_, (size_t)i);
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    CHECK(pwrite(fd, data, (size_t)held_, at) == held_, "pwrite %s: %s", path, strerror(errno));
    CHECK(fsync(fd) == 0 && close(fd) == 0, "fsync %s: %s", path, strerror(errno));
    /* MPICH over UCX sets up its RMA paths at the first window made over
     * memory the program gives (tens of ms here, enough to read the file):
     * one such window first. */
    static unsigned char warm[4096];
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(warm, sizeof warm, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* Window 1: two threads read backwards at once, while the fill may still
     * run. That MPI_Win_allocate returns before the file is read is shown by
     * read_once_window_returns_before_its_file_is_read, on a device that
     * answers only when that test says: here a loaded machine may delay
     * MPI_Win_allocate's collectives past the whole read. */
    unsigned char* base = NULL;
    win = open_window(path, at, &base);
    expect_info(win, STRATA_MPI_INFO_READ_DIRECT, behind ? "true" : "false");
    expect_info(win, STRATA_MPI_INFO_READ_BEHIND, behind ? "true" : "false");
    pthread_t threads[2];
    for (int t = 0; t < 2; ++t) CHECK(pthread_create(&threads[t], NULL, read_backwards, base) == 0, "pthread_create");
    for (int t = 0; t < 2; ++t) {
        void* wrong = NULL;
        CHECK(pthread_join(threads[t], &wrong) == 0, "pthread_join");
        const size_t i = (size_t)wrong - 1;
        CHECK(wrong == NULL, "rank %d thread %d: window byte %zu is %u, the file's is %u", rank_, t, i, base[i],
              *expected_byte(i));
    }
    char complete[64] = "";
    for (int tries = 0; tries < 6000; ++tries) { /* a hang guard, not a bound in time */
        info_text(win, STRATA_MPI_INFO_READ_COMPLETE, complete, sizeof complete);
        if (strcmp(complete, "true") == 0) break;
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
    CHECK(strcmp(complete, "true") == 0, "strata_read_complete is still \"%s\" after every byte was read", complete);
    CHECK_MPI(MPI_Win_free(&win));

    /* Window 2: a child forked at once has every byte (fork waits for the fill). */
    win = open_window(path, at, &base);
    const pid_t child = fork();
    CHECK(child >= 0, "fork: %s", strerror(errno));
    if (child == 0) {
        alarm(60); /* a child waiting on the parent's userfaultfd would hang */
        _exit(read_backwards(base) == NULL ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child, "waitpid: %s", strerror(errno));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank %d: the forked child saw other bytes (status %d)", rank_,
          status);
    CHECK(read_backwards(base) == NULL, "rank %d: window 2 differs from the file", rank_);
    CHECK_MPI(MPI_Win_free(&win));

    /* Window 3: freed while the fill runs; the file stays as it was. */
    win = open_window(path, at, &base);
    CHECK(base[WINDOW / 2] == *expected_byte(WINDOW / 2), "rank %d: window 3 byte %d", rank_, WINDOW / 2);
    CHECK_MPI(MPI_Win_free(&win));
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    CHECK(pread(fd, data, (size_t)held_, at) == held_, "pread %s: %s", path, strerror(errno));
    close(fd);
    for (int i = 0; i < held_; ++i) {
        CHECK(data[i] == pattern(rank_, (size_t)i), "rank %d: file byte %d changed after MPI_Win_free", rank_, i);
    }
    free(data);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_ == 0) {
        CHECK(unlink(path) == 0, "unlink %s: %s", path, strerror(errno));
        CHECK(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
    }
    MPI_Finalize();
    return 0;
}
