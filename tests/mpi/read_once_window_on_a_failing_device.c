/* SPDX-License-Identifier: MIT */
/* access_style=read_once over a file whose device fails: the driver mounts a
 * FUSE file system whose reads return EIO from 4 MiB on (a real I/O error
 * from the kernel) and passes the file's path. MPI_Win_allocate returns (the
 * file is read behind the program: strata_read_behind=true); once the read
 * ended (strata_read_complete=true) MPI_Win_sync returns MPI_ERR_IO with a
 * message naming the file, the offset and EIO, and
 * MPI_Win_free returns MPI_ERR_IO too, frees the window and writes nothing
 * back. Where the process may not read behind (no userfaultfd for kernel
 * faults) MPI_Win_allocate itself must fail so; with CI=true that is a
 * failure (a missing capability). The same hints on MPI_Alloc_mem: either
 * it fails so, or MPI_Free_mem does once the read ended, naming itself and
 * no hint (no hint is at fault). Run with 1 rank. */
#include "mpi_test.h"

#include <strata/mpi.h>

enum { MIB = 1 << 20, WINDOW = 16 * MIB, FAILS_AT = 4 * MIB };

static unsigned char pattern(size_t i) {
    return (unsigned char)((i / 4096) * 3 + i % 251 + 1);
}

/* The error class and message of rc; checks the class is MPI_ERR_IO and the message names path, an offset and EIO. */
static void expect_io_error(int rc, const char* routine, const char* path) {
    CHECK(rc != MPI_SUCCESS, "%s succeeded over a file whose reads fail", routine);
    int error_class = -1, length = 0;
    char text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(rc, &error_class);
    MPI_Error_string(rc, text, &length);
    CHECK(error_class == MPI_ERR_IO, "%s: class %d, expected MPI_ERR_IO (%d): \"%s\"", routine, error_class, MPI_ERR_IO,
          text);
    CHECK(strstr(text, routine) && strstr(text, path) && strstr(text, "offset") && strstr(text, "EIO"),
          "%s: message \"%s\" should name the call, %s, the offset and EIO", routine, text, path);
    const char* at = strstr(text, "failed at offset ");
    CHECK(at != NULL, "%s: message \"%s\" gives no offset", routine, text);
    const long long offset = atoll(at + strlen("failed at offset "));
    CHECK(offset >= FAILS_AT && offset < WINDOW, "%s: offset %lld is not where reads fail", routine, offset);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(argc == 2, "usage: %s FILE (on a file system whose reads fail from 4 MiB on)", argv[0]);
    const char* path = argv[1];
    unsigned char* data = malloc(WINDOW);
    CHECK(data != NULL, "malloc");
    for (size_t i = 0; i < WINDOW; ++i) data[i] = pattern(i);
    write_file(path, data, WINDOW);

    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path,
                              STRATA_MPI_ACCESS_STYLE, "read_once", NULL);
    unsigned char* base = NULL;
    MPI_Win win = MPI_WIN_NULL;
    const int allocated = MPI_Win_allocate(WINDOW, 1, info, MPI_COMM_WORLD, &base, &win);
    MPI_Info_free(&info);
    const char* ci = getenv("CI");
    if (allocated != MPI_SUCCESS) {
        CHECK(ci == NULL || strcmp(ci, "true") != 0,
              "missing capability (a failure in CI): MPI_Win_allocate read the file itself (no read-behind)");
        expect_io_error(allocated, "MPI_Win_allocate", path);
    } else {
        char value[16] = "";
        expect_info(win, STRATA_MPI_INFO_READ_BEHIND, "true");
        /* The read ends (here: fails) in milliseconds; 10 s is a hang. */
        for (int i = 0; i < 10000; ++i) {
            info_text(win, STRATA_MPI_INFO_READ_COMPLETE, value, sizeof value);
            if (strcmp(value, "true") == 0) break;
            usleep(1000);
        }
        CHECK(strcmp(value, "true") == 0, "the read behind the program did not end in 10 s");
        MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        CHECK_MPI(MPI_Win_lock_all(0, win));
        expect_io_error(MPI_Win_sync(win), "MPI_Win_sync", path);
        CHECK_MPI(MPI_Win_unlock_all(win));
        expect_io_error(MPI_Win_free(&win), "MPI_Win_free", path);
        CHECK(win == MPI_WIN_NULL, "MPI_Win_free left the window");
    }
    /* The same file as memory from MPI_Alloc_mem: no read-complete key to
     * poll here, and the read of 16 MiB from the FUSE daemon ends (fails)
     * in milliseconds, so MPI_Free_mem runs after a generous second. */
    info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_ACCESS_STYLE,
                     "read_once", NULL);
    void* memory = NULL;
    const int got = MPI_Alloc_mem(WINDOW, info, &memory);
    MPI_Info_free(&info);
    if (got != MPI_SUCCESS) {
        expect_io_error(got, "MPI_Alloc_mem", path);
    } else {
        sleep(1);
        const int freed = MPI_Free_mem(memory);
        expect_io_error(freed, "MPI_Free_mem", path);
        char text[MPI_MAX_ERROR_STRING] = "";
        int length = 0;
        MPI_Error_string(freed, text, &length);
        CHECK(strstr(text, "storage_alloc_filename=:") == NULL && strstr(text, "=: ") == NULL,
              "MPI_Free_mem: message \"%s\" names a hint with no value", text);
    }
    /* Nothing written back: the first MiB (readable) is still the file's. */
    unsigned char head[MIB];
    read_file(path, 0, head, sizeof head);
    for (size_t i = 0; i < sizeof head; ++i) CHECK(head[i] == pattern(i), "file byte %zu changed", i);
    free(data);
    MPI_Finalize();
    return 0;
}
