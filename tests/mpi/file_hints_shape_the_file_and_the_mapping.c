/* SPDX-License-Identifier: MIT */
/* The file-level hints: file_perm is octal (0640 gives rw-r-----) and only
 * applies to a file the window creates; access_style reaches the kernel
 * (MADV_RANDOM shows as "rr" in VmFlags, MADV_SEQUENTIAL as "sr");
 * striping_factor/striping_unit are accepted and reported as not applied;
 * several ranks may share one file at their own offsets, each finding its
 * data where it put it. Run with 3 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

static void expect_info_containing(MPI_Win win, const char* key, const char* part) {
    char value[MPI_MAX_INFO_VAL + 1];
    info_text(win, key, value, sizeof value);
    CHECK(strstr(value, part) != NULL, "MPI_Win_get_info %s=\"%s\" should contain \"%s\"", key, value, part);
}

static MPI_Win window(const char* path, const char* offset, const char* extra_key, const char* extra_value, size_t size,
                      int** base) {
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_OFFSET,
                              offset, extra_key, extra_value, NULL);
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate((MPI_Aint)size, sizeof(int), info, MPI_COMM_WORLD, base, &win));
    MPI_Info_free(&info);
    return win;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char dir[256], path[300], flags[256];
    make_test_dir(MPI_COMM_WORLD, "filehints", dir, sizeof dir);
    const size_t page = (size_t)page_size();
    int* base = NULL;

    /* file_perm, access_style=random, striping. */
    snprintf(path, sizeof path, "%s/perm-%d.dat", dir, rank);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path,
                              STRATA_MPI_FILE_PERM, "0640", STRATA_MPI_ACCESS_STYLE, "random, read_mostly",
                              STRATA_MPI_STRIPING_FACTOR, "4", STRATA_MPI_STRIPING_UNIT, "1048576", NULL);
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate((MPI_Aint)page, 1, info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0640, "file mode %o, expected 640", st.st_mode & 07777);
    vm_flags(base, flags, sizeof flags);
    CHECK(strstr(flags, " rr") != NULL, "access_style=random: VmFlags \"%s\" lack rr", flags);
    expect_info_containing(win, STRATA_MPI_INFO_NOT_APPLIED, "striping_factor,striping_unit");
    expect_info_containing(win, STRATA_MPI_STRIPING_FACTOR, "4");
    CHECK_MPI(MPI_Win_free(&win));

    /* An existing file keeps its mode; sequential advice. */
    CHECK(chmod(path, 0600) == 0, "chmod");
    info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_FILE_PERM, "0777",
                     STRATA_MPI_ACCESS_STYLE, "read_once", NULL);
    CHECK_MPI(MPI_Win_allocate((MPI_Aint)page, 1, info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600, "existing file's mode became %o", st.st_mode & 07777);
    vm_flags(base, flags, sizeof flags);
    CHECK(strstr(flags, " sr") != NULL, "access_style=read_once: VmFlags \"%s\" lack sr", flags);
    CHECK_MPI(MPI_Win_free(&win));

    /* One file, every rank at its own page-aligned offset. */
    const size_t count = 3000, stride = (count * sizeof(int) + page - 1) / page * page;
    snprintf(path, sizeof path, "%s/together.dat", dir);
    char offset[32];
    snprintf(offset, sizeof offset, "%zu", (size_t)rank * stride);
    win = window(path, offset, STRATA_MPI_UNLINK, "false", count * sizeof(int), &base);
    int data[3000];
    const int next = (rank + 1) % n;
    for (size_t i = 0; i < count; ++i) data[i] = next * 10000 + (int)i;
    MPI_Win_fence(0, win);
    CHECK_MPI(MPI_Put(data, (int)count, MPI_INT, next, 0, (int)count, MPI_INT, win));
    MPI_Win_fence(0, win);
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(file_size(path) == (long long)((size_t)(n - 1) * stride + count * sizeof(int)), "shared file size %lld",
          file_size(path));
    read_file(path, (long long)((size_t)rank * stride), data, count * sizeof(int));
    for (size_t i = 0; i < count; ++i)
        CHECK(data[i] == rank * 10000 + (int)i, "rank %d's part of the file [%zu] = %d", rank, i, data[i]);

    remove_test_dir(MPI_COMM_WORLD, dir);
    MPI_Finalize();
    return 0;
}
