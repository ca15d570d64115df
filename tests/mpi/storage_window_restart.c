/* SPDX-License-Identifier: MIT */
/* Run twice by storage_window_data_survives_a_restart.sh:
 *   write DIR   each rank's window (at offset 4096 of its file, behind a
 *               header the program wrote itself) is filled by its neighbour
 *               with MPI_Put, then freed: the file must hold the data;
 *   verify DIR  a new job maps the same files: the data is there, for local
 *               loads and for MPI_Get from another rank; the window is freed
 *               with storage_alloc_unlink=true, which removes the files. */
#include "mpi_test.h"

#include <strata/mpi.h>

enum { COUNT = 100000, OFFSET = 4096 };

static double value(int owner, int i) {
    return owner * 1e6 + i * 0.5;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    CHECK(argc == 3 && (strcmp(argv[1], "write") == 0 || strcmp(argv[1], "verify") == 0), "usage: %s write|verify DIR",
          argv[0]);
    const int writing = strcmp(argv[1], "write") == 0;
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const int next = (rank + 1) % n, previous = (rank + n - 1) % n;
    char templ[300], path[300], header[OFFSET];
    snprintf(templ, sizeof templ, "%s/ckpt-%%r.dat", argv[2]);
    snprintf(path, sizeof path, "%s/ckpt-%d.dat", argv[2], rank);
    memset(header, 'H', sizeof header);
    if (writing) {
        CHECK(!file_exists(path), "%s exists before the first run", path);
        write_file(path, header, sizeof header);
    }

    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, templ, STRATA_MPI_OFFSET,
                              "4096", STRATA_MPI_UNLINK, writing ? "false" : "true", NULL);
    double* base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(COUNT * sizeof(double), sizeof(double), info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);
    double* data = malloc(COUNT * sizeof(double));

    if (writing) {
        for (int i = 0; i < COUNT; ++i) data[i] = value(next, i);
        MPI_Win_fence(0, win);
        CHECK_MPI(MPI_Put(data, COUNT, MPI_DOUBLE, next, 0, COUNT, MPI_DOUBLE, win));
        MPI_Win_fence(0, win);
        CHECK_MPI(MPI_Win_free(&win));
        CHECK(file_size(path) == OFFSET + (long long)(COUNT * sizeof(double)), "file size %lld", file_size(path));
        char stored_header[OFFSET];
        read_file(path, 0, stored_header, sizeof stored_header);
        CHECK(memcmp(stored_header, header, sizeof header) == 0, "the header before the offset changed");
        read_file(path, OFFSET, data, COUNT * sizeof(double));
        for (int i = 0; i < COUNT; ++i) CHECK(data[i] == value(rank, i), "file[%d] = %f", i, data[i]);
    } else {
        for (int i = 0; i < COUNT; ++i) CHECK(base[i] == value(rank, i), "after restart base[%d] = %f", i, base[i]);
        MPI_Win_fence(0, win);
        CHECK_MPI(MPI_Get(data, COUNT, MPI_DOUBLE, previous, 0, COUNT, MPI_DOUBLE, win));
        MPI_Win_fence(0, win);
        for (int i = 0; i < COUNT; ++i) CHECK(data[i] == value(previous, i), "got[%d] = %f", i, data[i]);
        CHECK_MPI(MPI_Win_free(&win));
        CHECK(!file_exists(path), "storage_alloc_unlink=true left %s", path);
    }
    free(data);
    MPI_Finalize();
    return 0;
}
