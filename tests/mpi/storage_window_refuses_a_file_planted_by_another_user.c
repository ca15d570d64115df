/* SPDX-License-Identifier: MIT */
/* A storage window reuses an existing file (restart), but never one planted
 * by another user: a regular file owned by nobody, or a symbolic link, fails
 * with MPI_ERR_ACCESS on every rank, the message naming the file, its owner
 * and its mode, and the file keeps its content and size. With
 * storage_alloc_allow_other_owner=true the file is used, its data visible.
 * Needs root (to give the file to nobody): under CI=true a failure without
 * it, otherwise skipped (exit 77). Run with 2 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

enum { kBytes = 8192, kNobody = 65534 };

static void expect_access_denied(int rc, const char* what, const char* named) {
    CHECK(rc != MPI_SUCCESS, "%s: MPI_Win_allocate accepted %s", what, named);
    int error_class = -1, length = 0;
    char text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(rc, &error_class);
    MPI_Error_string(rc, text, &length);
    CHECK(error_class == MPI_ERR_ACCESS, "%s: class %d, message \"%s\"", what, error_class, text);
    CHECK(strstr(text, "storage_alloc_filename=") != NULL && strstr(text, named) != NULL,
          "%s: message \"%s\" does not name storage_alloc_filename and %s", what, text, named);
    check_same_text(MPI_COMM_WORLD, text);
}

static void plant(const char* path) {
    char content[kBytes];
    memset(content, 'P', sizeof content);
    write_file(path, content, sizeof content);
    CHECK(chmod(path, 0666) == 0, "chmod %s: %s", path, strerror(errno));
    CHECK(chown(path, kNobody, kNobody) == 0, "chown %s: %s", path, strerror(errno));
}

static void expect_untouched(const char* path) {
    char content[kBytes];
    CHECK(file_size(path) == kBytes, "%s: size %lld, planted %d", path, file_size(path), kBytes);
    read_file(path, 0, content, sizeof content);
    for (int i = 0; i < kBytes; ++i) CHECK(content[i] == 'P', "%s: byte %d changed to %d", path, i, content[i]);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (geteuid() != 0) {
        const char* ci = getenv("CI");
        const int in_ci = ci != NULL && (strcmp(ci, "true") == 0 || strcmp(ci, "1") == 0);
        if (check_rank() == 0) fprintf(stderr, "missing capability: root, to give a file to nobody\n");
        MPI_Finalize();
        return in_ci ? 1 : 77;
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char dir[256], tmpl[320], mine[320], target[320];
    make_test_dir(MPI_COMM_WORLD, "planted", dir, sizeof dir);
    snprintf(tmpl, sizeof tmpl, "%s/planted-%%r.dat", dir);
    snprintf(mine, sizeof mine, "%s/planted-%d.dat", dir, rank);
    snprintf(target, sizeof target, "%s/victim-%d.dat", dir, rank);
    void* base = NULL;
    MPI_Win win = MPI_WIN_NULL;

    /* Only rank 1's file is planted: every rank fails, naming rank 1's file. */
    if (rank == 1) plant(mine);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, tmpl, NULL);
    char named[400];
    snprintf(named, sizeof named, "%s/planted-1.dat", dir);
    int rc = MPI_Win_allocate(kBytes, 1, info, MPI_COMM_WORLD, &base, &win);
    expect_access_denied(rc, "a file of nobody", named);
    CHECK(win == MPI_WIN_NULL, "a failed allocation must leave MPI_WIN_NULL");
    int length = 0;
    char text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_string(rc, text, &length);
    CHECK(strstr(text, "uid 65534") != NULL && strstr(text, "mode 0666") != NULL,
          "message \"%s\" does not name the owner and mode", text);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) expect_untouched(mine);
    if (rank == 0) CHECK(!file_exists(mine), "rank 0's file %s, created by the failed call, is left behind", mine);

    /* A symbolic link planted as the file: refused, its target untouched. */
    if (rank == 1) {
        CHECK(unlink(mine) == 0, "unlink %s", mine);
        char content[kBytes];
        memset(content, 'P', sizeof content);
        write_file(target, content, sizeof content);
        CHECK(symlink(target, mine) == 0, "symlink %s: %s", mine, strerror(errno));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    rc = MPI_Win_allocate(kBytes, 1, info, MPI_COMM_WORLD, &base, &win);
    expect_access_denied(rc, "a symbolic link", "symbolic link");
    if (rank == 1) {
        expect_untouched(target);
        CHECK(unlink(mine) == 0 && unlink(target) == 0, "cleanup");
        plant(mine);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Allowed on purpose: the window maps nobody's file and sees its data. */
    MPI_Info_set(info, STRATA_MPI_ALLOW_OTHER_OWNER, "true");
    char* data = NULL;
    CHECK_MPI(MPI_Win_allocate(kBytes, 1, info, MPI_COMM_WORLD, &data, &win));
    if (rank == 1) {
        for (int i = 0; i < kBytes; ++i) CHECK(data[i] == 'P', "byte %d of the allowed file is %d", i, data[i]);
    }
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Info_free(&info);
    remove_test_dir(MPI_COMM_WORLD, dir);
    MPI_Finalize();
    return 0;
}
