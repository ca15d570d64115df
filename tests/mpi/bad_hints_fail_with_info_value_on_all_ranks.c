/* SPDX-License-Identifier: MIT */
/* Every bad hint value is MPI_ERR_INFO_VALUE, never a silent fallback to
 * memory: on every rank of MPI_Win_allocate and MPI_Win_allocate_shared (the
 * same message, naming rank 0 — the lowest failing rank —, the key and the
 * value), and from MPI_Alloc_mem. Nothing is left behind: no window, file or
 * descriptor. Unknown keys are ignored. Run with 3 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

struct bad_hint {
    const char* key;
    const char* value; /* NULL: the key is left out */
    const char* named; /* what the message must name, e.g. "storage_alloc_factor=1.5" */
};

static const struct bad_hint window_cases[] = {
    {STRATA_MPI_ALLOC_TYPE, "disk", "alloc_type=disk"},
    {STRATA_MPI_FILENAME, NULL, "storage_alloc_filename="},
    {STRATA_MPI_FILENAME, "", "storage_alloc_filename="},
    {STRATA_MPI_FILENAME, "/tmp/win-%q.dat", "storage_alloc_filename=/tmp/win-%q.dat"},
    {STRATA_MPI_FACTOR, "1.5", "storage_alloc_factor=1.5"},
    {STRATA_MPI_FACTOR, "-0.1", "storage_alloc_factor=-0.1"},
    {STRATA_MPI_FACTOR, "half", "storage_alloc_factor=half"},
    {STRATA_MPI_FACTOR, "", "storage_alloc_factor="},
    {STRATA_MPI_FACTOR, "nan", "storage_alloc_factor=nan"},
    {STRATA_MPI_OFFSET, "100", "storage_alloc_offset=100"},
    {STRATA_MPI_OFFSET, "-4096", "storage_alloc_offset=-4096"},
    {STRATA_MPI_OFFSET, "4k", "storage_alloc_offset=4k"},
    {STRATA_MPI_ORDER, "middle", "storage_alloc_order=middle"},
    {STRATA_MPI_UNLINK, "yes", "storage_alloc_unlink=yes"},
    {STRATA_MPI_DISCARD, "1", "storage_alloc_discard=1"},
    {STRATA_MPI_ALLOW_OTHER_OWNER, "yes", "storage_alloc_allow_other_owner=yes"},
    {STRATA_MPI_SYNC, "sometimes", "storage_alloc_sync=sometimes"},
    {STRATA_MPI_ACCESS_STYLE, "sideways", "access_style=sideways"},
    {STRATA_MPI_ACCESS_STYLE, "random,sideways", "access_style=random,sideways"},
    {STRATA_MPI_FILE_PERM, "0999", "file_perm=0999"},
    {STRATA_MPI_FILE_PERM, "rw-r--r--", "file_perm=rw-r--r--"},
    {STRATA_MPI_FILE_PERM, "17777", "file_perm=17777"},
    {STRATA_MPI_STRIPING_FACTOR, "0", "striping_factor=0"},
    {STRATA_MPI_STRIPING_UNIT, "-1", "striping_unit=-1"},
    {STRATA_MPI_SHARED_NONCONTIG, "maybe", "alloc_shared_noncontig=maybe"},
};

/* Valid for MPI_Win_allocate, refused for shared windows. */
static const struct bad_hint shared_cases[] = {
    {STRATA_MPI_FACTOR, "auto", "storage_alloc_factor=auto"},
};

static MPI_Info info_for(const char* dir, const struct bad_hint* c, int with_async_discard) {
    char path[300];
    snprintf(path, sizeof path, "%s/bad-%%r-%%w.dat", dir);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, "an_unknown_key", "is ignored", NULL);
    if (!(strcmp(c->key, STRATA_MPI_FILENAME) == 0)) MPI_Info_set(info, STRATA_MPI_FILENAME, path);
    if (c->value != NULL) MPI_Info_set(info, c->key, c->value);
    if (with_async_discard) {
        MPI_Info_set(info, STRATA_MPI_DISCARD, "true");
        MPI_Info_set(info, STRATA_MPI_SYNC, STRATA_MPI_SYNC_ASYNC);
    }
    return info;
}

static void expect_info_value(int rc, const char* routine, const char* named, int collective) {
    CHECK(rc != MPI_SUCCESS, "%s accepted %s", routine, named);
    int error_class = -1, length = 0;
    MPI_Error_class(rc, &error_class);
    char text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_string(rc, text, &length);
    CHECK(error_class == MPI_ERR_INFO_VALUE, "%s with %s: class %d, message \"%s\"", routine, named, error_class, text);
    CHECK(strstr(text, routine) != NULL && strstr(text, named) != NULL, "message \"%s\" does not name %s and %s", text,
          routine, named);
    CHECK((int)strlen(text) == length, "MPI_Error_string length %d for \"%s\"", length, text);
    if (collective) {
        CHECK(strstr(text, "rank 0 (") != NULL, "message \"%s\" does not name rank 0", text);
        check_same_text(MPI_COMM_WORLD, text);
    }
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char dir[256];
    make_test_dir(MPI_COMM_WORLD, "badhints", dir, sizeof dir);
    const int fds = count_open_fds();
    const int cases = (int)(sizeof window_cases / sizeof window_cases[0]);
    void* base = NULL;
    MPI_Win win;

    for (int i = 0; i < cases; ++i) {
        const struct bad_hint* c = &window_cases[i];
        MPI_Info info = info_for(dir, c, 0);
        win = (MPI_Win)12345;
        const int shared = strcmp(c->key, STRATA_MPI_SHARED_NONCONTIG) == 0;
        int rc = shared ? MPI_Win_allocate_shared(4096, 1, info, MPI_COMM_WORLD, &base, &win)
                        : MPI_Win_allocate(4096, 1, info, MPI_COMM_WORLD, &base, &win);
        expect_info_value(rc, shared ? "MPI_Win_allocate_shared" : "MPI_Win_allocate", c->named, 1);
        CHECK(win == MPI_WIN_NULL, "a failed allocation must leave MPI_WIN_NULL");
        if (!shared) {
            rc = MPI_Alloc_mem(4096, info, &base);
            expect_info_value(rc, "MPI_Alloc_mem", c->named, 0);
        }
        MPI_Info_free(&info);
        CHECK(count_files(dir) == 0, "%s left %d files", c->named, count_files(dir));
    }
    for (size_t i = 0; i < sizeof shared_cases / sizeof shared_cases[0]; ++i) {
        MPI_Info info = info_for(dir, &shared_cases[i], 0);
        int rc = MPI_Win_allocate_shared(4096, 1, info, MPI_COMM_WORLD, &base, &win);
        expect_info_value(rc, "MPI_Win_allocate_shared", shared_cases[i].named, 1);
        MPI_Info_free(&info);
    }
    /* A combination: discard with background write-back. */
    const struct bad_hint async_discard = {STRATA_MPI_SYNC, NULL, "storage_alloc_sync=async"};
    MPI_Info info = info_for(dir, &async_discard, 1);
    expect_info_value(MPI_Win_allocate(4096, 1, info, MPI_COMM_WORLD, &base, &win), "MPI_Win_allocate",
                      async_discard.named, 1);
    MPI_Info_free(&info);
    CHECK(count_files(dir) == 0, "%d files left", count_files(dir));
    CHECK(count_open_fds() == fds, "%d descriptors open, %d before", count_open_fds(), fds);

    /* The communicator is still usable: a good window after all the failures. */
    const struct bad_hint none = {"an_unknown_key", "still ignored", ""};
    info = info_for(dir, &none, 0);
    int* good = NULL;
    CHECK_MPI(MPI_Win_allocate(4096, sizeof(int), info, MPI_COMM_WORLD, &good, &win));
    MPI_Info_free(&info);
    good[0] = 42;
    CHECK_MPI(MPI_Win_free(&win));
    remove_test_dir(MPI_COMM_WORLD, dir);
    MPI_Finalize();
    return 0;
}
