/* SPDX-License-Identifier: MIT */
/* storage_alloc_remote_sync: bad values and combinations fail with
 * MPI_ERR_INFO_VALUE on every rank, naming the hint, the value and the
 * cause, and leave no file; a window that has it and is freed leaves no
 * thread and no descriptor behind (the sync agent and its pidfds).
 * Modes: "single": MPI_Init, no MPI_THREAD_MULTIPLE, which the hint needs;
 * "multiple": MPI_Init_thread(MPI_THREAD_MULTIPLE); "environment": MPI_Init
 * with the hint in STRATA_MPI_WINDOW_HINTS (set by the test), which makes
 * MPI_Init ask for MPI_THREAD_MULTIPLE, so an unmodified program gets remote
 * sync on a window allocated with MPI_INFO_NULL. Run with 2 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

static char dir[256] = "/var/tmp/strata-mpi-remote-hints-XXXXXX";

static int count_threads(void) {
    DIR* d = opendir("/proc/self/task");
    CHECK(d != NULL, "opendir /proc/self/task");
    int n = 0;
    for (struct dirent* e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* MPI_Win_allocate with the given remote sync value and access style must
 * fail with MPI_ERR_INFO_VALUE, its message holding every `needle`. */
static void expect_refused(const char* value, const char* style, const char* needle1, const char* needle2) {
    char path[320];
    snprintf(path, sizeof path, "%s/w-%%r.dat", dir);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path,
                              "storage_alloc_remote_sync", value, NULL);
    if (style != NULL) MPI_Info_set(info, STRATA_MPI_DISCARD, style);
    void* base = NULL;
    MPI_Win win = MPI_WIN_NULL;
    const int rc = MPI_Win_allocate(4096, 1, info, MPI_COMM_WORLD, &base, &win);
    MPI_Info_free(&info);
    int error_class = MPI_SUCCESS, length = 0;
    char text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(rc, &error_class);
    MPI_Error_string(rc, text, &length);
    CHECK(error_class == MPI_ERR_INFO_VALUE, "storage_alloc_remote_sync=%s: class %d, expected MPI_ERR_INFO_VALUE: %s",
          value, error_class, text);
    CHECK(win == MPI_WIN_NULL, "a refused window is not MPI_WIN_NULL");
    CHECK(strstr(text, needle1) != NULL && strstr(text, needle2) != NULL, "the message lacks '%s' or '%s': %s", needle1,
          needle2, text);
    check_same_text(MPI_COMM_WORLD, text);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(count_files(dir) == 0, "a refused window left %d files", count_files(dir));
}

int main(int argc, char** argv) {
    CHECK(argc == 2, "usage: %s single|multiple|environment", argv[0]);
    const int single = strcmp(argv[1], "single") == 0;
    if (strcmp(argv[1], "environment") == 0) {
        MPI_Init(&argc, &argv);
        int provided = 0;
        MPI_Query_thread(&provided);
        CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_Init under remote sync defaults provided level %d", provided);
        void* base = NULL;
        MPI_Win win;
        CHECK_MPI(MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
        expect_info(win, "storage_alloc_remote_sync", "true");
        CHECK(info_number(win, "strata_remote_syncs") == 0, "no sync was asked for yet");
        CHECK_MPI(MPI_Win_free(&win));
        /* The default does not fail allocations that cannot have it. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        void* memory = NULL;
        CHECK_MPI(MPI_Alloc_mem(4096, MPI_INFO_NULL, &memory));
        CHECK_MPI(MPI_Free_mem(memory));
        MPI_Finalize();
        return 0;
    }
    if (single) {
        MPI_Init(&argc, &argv);
    } else {
        int provided = 0;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (single) {
        expect_refused("true", NULL, "storage_alloc_remote_sync=true", "needs MPI_THREAD_MULTIPLE");
    } else {
        expect_refused("maybe", NULL, "storage_alloc_remote_sync=maybe", "expected true or false");
        expect_refused("true", "true", "storage_alloc_remote_sync=true", "storage_alloc_discard");
        { /* MPI_Alloc_mem has no remote sync: refused, not ignored. */
            char path[320];
            snprintf(path, sizeof path, "%s/m-%d.dat", dir, rank);
            MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path,
                                      STRATA_MPI_REMOTE_SYNC, "true", NULL);
            void* memory = NULL;
            const int rc = MPI_Alloc_mem(4096, info, &memory);
            MPI_Info_free(&info);
            int error_class = MPI_SUCCESS, length = 0;
            char text[MPI_MAX_ERROR_STRING] = "";
            MPI_Error_class(rc, &error_class);
            MPI_Error_string(rc, text, &length);
            CHECK(error_class == MPI_ERR_INFO_VALUE && strstr(text, "storage_alloc_remote_sync=true") != NULL &&
                      strstr(text, "only windows of MPI_Win_allocate") != NULL,
                  "MPI_Alloc_mem with remote sync: class %d: %s", error_class, text);
            CHECK(!file_exists(path), "a refused MPI_Alloc_mem left %s", path);
        }
        /* A good window, freed: no agent thread, no pidfd left. */
        const int threads = count_threads(), fds = count_open_fds();
        char path[320];
        snprintf(path, sizeof path, "%s/w-%%r.dat", dir);
        MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path,
                                  "storage_alloc_remote_sync", "true", STRATA_MPI_UNLINK, "true", NULL);
        void* base = NULL;
        MPI_Win win;
        CHECK_MPI(MPI_Win_allocate(4096, 1, info, MPI_COMM_WORLD, &base, &win));
        MPI_Info_free(&info);
        CHECK(count_threads() == threads + 1, "a remote sync window runs %d threads more, expected its agent only",
              count_threads() - threads);
        CHECK_MPI(MPI_Win_free(&win));
        CHECK(count_threads() == threads, "%d threads left after MPI_Win_free", count_threads() - threads);
        CHECK(count_open_fds() == fds, "%d descriptors left after MPI_Win_free", count_open_fds() - fds);
    }
    remove_test_dir(MPI_COMM_WORLD, dir);
    MPI_Finalize();
    return 0;
}
