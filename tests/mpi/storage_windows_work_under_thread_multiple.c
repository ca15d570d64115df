/* SPDX-License-Identifier: MIT */
/* MPI_THREAD_MULTIPLE: 4 threads per rank, each on its own duplicate of
 * MPI_COMM_WORLD, create and free storage windows (async write-back on odd
 * rounds), shared storage windows and storage allocations at the same time,
 * moving data with RMA and checking it. Ends with an exact accounting: every
 * round of every thread of every rank verified, no file, no descriptor left.
 * Run with 2 ranks. */
#include "mpi_test.h"

#include <pthread.h>
#include <strata/mpi.h>

enum { THREADS = 4, ROUNDS = 6, COUNT = 4096 };

struct worker {
    int id;
    MPI_Comm comm;
    const char* dir;
    int verified;
};

static long value(int thread, int round, int owner, int i) {
    return ((long)thread * 100 + round) * 1000000L + owner * 10000L + i;
}

static void window_round(struct worker* w, int round) {
    int rank, n;
    MPI_Comm_rank(w->comm, &rank);
    MPI_Comm_size(w->comm, &n);
    char path[300];
    snprintf(path, sizeof path, "%s/t%d-r%d-%d.dat", w->dir, w->id, round, rank);
    MPI_Info info =
        make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_UNLINK, "true",
                  STRATA_MPI_SYNC, round % 2 ? STRATA_MPI_SYNC_ASYNC : STRATA_MPI_SYNC_ON_SYNC, NULL);
    long* base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(COUNT * sizeof(long), sizeof(long), info, w->comm, &base, &win));
    MPI_Info_free(&info);
    long data[COUNT];
    const int next = (rank + 1) % n;
    for (int i = 0; i < COUNT; ++i) data[i] = value(w->id, round, next, i);
    MPI_Win_fence(0, win);
    CHECK_MPI(MPI_Put(data, COUNT, MPI_LONG, next, 0, COUNT, MPI_LONG, win));
    MPI_Win_fence(0, win);
    int good = 1;
    for (int i = 0; i < COUNT; ++i) good &= base[i] == value(w->id, round, rank, i);
    CHECK(good, "thread %d round %d: wrong data in the window", w->id, round);
    MPI_Win_lock_all(0, win);
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Win_unlock_all(win);
    CHECK_MPI(MPI_Win_free(&win));
    CHECK(!file_exists(path), "%s left behind", path);

    /* A local storage allocation, concurrently with the other threads' windows. */
    snprintf(path, sizeof path, "%s/t%d-mem-%%r-%%w.dat", w->dir, w->id);
    info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_UNLINK, "true",
                     NULL);
    long* memory = NULL;
    CHECK_MPI(MPI_Alloc_mem(COUNT * sizeof(long), info, &memory));
    MPI_Info_free(&info);
    for (int i = 0; i < COUNT; ++i) memory[i] = i;
    CHECK_MPI(MPI_Free_mem(memory));
    ++w->verified;
}

static void shared_round(struct worker* w) {
    int rank, n;
    MPI_Comm_rank(w->comm, &rank);
    MPI_Comm_size(w->comm, &n);
    char path[300];
    snprintf(path, sizeof path, "%s/shared-t%d.dat", w->dir, w->id);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_UNLINK,
                              "true", NULL);
    int* base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate_shared(3 * sizeof(int), sizeof(int), info, w->comm, &base, &win));
    MPI_Info_free(&info);
    base[0] = base[1] = base[2] = 0;
    MPI_Win_lock_all(0, win);
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Barrier(w->comm);
    const int one = 1;
    for (int r = 0; r < n; ++r) CHECK_MPI(MPI_Accumulate(&one, 1, MPI_INT, r, 1, 1, MPI_INT, MPI_SUM, win));
    CHECK_MPI(MPI_Win_flush_all(win));
    MPI_Barrier(w->comm);
    CHECK_MPI(MPI_Win_sync(win));
    CHECK(base[0] == 0 && base[1] == n && base[2] == 0, "thread %d shared window: %d %d %d", w->id, base[0], base[1],
          base[2]);
    MPI_Win_unlock_all(win);
    CHECK_MPI(MPI_Win_free(&win));
    ++w->verified;
}

static void* run(void* arg) {
    struct worker* w = arg;
    for (int round = 0; round < ROUNDS; ++round) window_round(w, round);
    shared_round(w);
    return NULL;
}

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI provides thread level %d", provided);
    char dir[256];
    make_test_dir(MPI_COMM_WORLD, "threads", dir, sizeof dir);
    const int fds = count_open_fds();
    struct worker workers[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; ++t) {
        workers[t] = (struct worker){.id = t, .dir = dir, .verified = 0};
        MPI_Comm_dup(MPI_COMM_WORLD, &workers[t].comm);
    }
    for (int t = 0; t < THREADS; ++t) CHECK(pthread_create(&threads[t], NULL, run, &workers[t]) == 0, "pthread");
    int verified = 0;
    for (int t = 0; t < THREADS; ++t) {
        pthread_join(threads[t], NULL);
        verified += workers[t].verified;
        MPI_Comm_free(&workers[t].comm);
    }
    int n, total = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Allreduce(&verified, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == n * THREADS * (ROUNDS + 1), "%d rounds verified, expected %d", total, n * THREADS * (ROUNDS + 1));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(count_files(dir) == 0, "%d files left", count_files(dir));
    CHECK(count_open_fds() == fds, "%d descriptors open, %d before", count_open_fds(), fds);
    remove_test_dir(MPI_COMM_WORLD, dir);
    MPI_Finalize();
    return 0;
}
