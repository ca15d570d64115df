/* SPDX-License-Identifier: MIT */
/* Combined windows: storage_alloc_factor is the share of the range on
 * storage; the memory part is floor((1 - factor) * size) rounded down to
 * pages, and storage_alloc_order says which part comes first. Checked
 * against /proc/self/maps (an anonymous private mapping and a shared file
 * mapping side by side), against MPI_Win_get_info, and by data: RMA across
 * the boundary, with only the storage part in the file after MPI_Win_free.
 * Run with 2 ranks. */
#include "mpi_test.h"

#include <strata/mpi.h>

static void run(const char* dir, const char* factor, double storage_share, const char* order, size_t size) {
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const size_t page = (size_t)page_size();
    const size_t mapped = (size + page - 1) / page * page;
    const size_t memory = (size_t)((1.0 - storage_share) * (double)size) / page * page;
    const int storage_first = strcmp(order, STRATA_MPI_STORAGE_FIRST) == 0;
    /* Storage first: the storage part is whole pages before the memory part. */
    const size_t storage = storage_first ? mapped - memory : size - memory;
    char path[300];
    snprintf(path, sizeof path, "%s/combined-%s-%s-%zu-%d.dat", dir, factor, order, size, rank);

    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_FACTOR,
                              factor, STRATA_MPI_ORDER, order, NULL);
    unsigned char* base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate((MPI_Aint)size, 1, info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);
    CHECK(info_number(win, STRATA_MPI_INFO_MEMORY_BYTES) == (long)(size - storage), "memory bytes %ld, expected %zu",
          info_number(win, STRATA_MPI_INFO_MEMORY_BYTES), size - storage);
    CHECK(info_number(win, STRATA_MPI_INFO_STORAGE_BYTES) == (long)storage, "storage bytes %ld, expected %zu",
          info_number(win, STRATA_MPI_INFO_STORAGE_BYTES), storage);

    struct mapping maps[4];
    CHECK(find_mappings(base, size, maps, 4) == 2, "expected two mappings for factor %s %s", factor, order);
    const struct mapping* mem = storage_first ? &maps[1] : &maps[0];
    const struct mapping* file = storage_first ? &maps[0] : &maps[1];
    const uintptr_t b = (uintptr_t)base;
    const uintptr_t boundary = storage_first ? b + mapped - memory : b + memory;
    CHECK(mem->path[0] == '\0' && strcmp(mem->perms, "rw-p") == 0, "memory part maps \"%s\" %s", mem->path, mem->perms);
    CHECK(strcmp(file->path, path) == 0 && strcmp(file->perms, "rw-s") == 0, "storage part maps \"%s\" %s", file->path,
          file->perms);
    if (storage_first) {
        CHECK(file->start == b && file->end == boundary && mem->start == boundary && mem->end >= b + mapped,
              "storage first: file [%#lx, %#lx) memory [%#lx, %#lx) window %#lx", (unsigned long)file->start,
              (unsigned long)file->end, (unsigned long)mem->start, (unsigned long)mem->end, (unsigned long)b);
    } else {
        CHECK(mem->start <= b && mem->end == boundary && file->start == boundary && file->end == b + mapped,
              "memory first: memory [%#lx, %#lx) file [%#lx, %#lx) window %#lx", (unsigned long)mem->start,
              (unsigned long)mem->end, (unsigned long)file->start, (unsigned long)file->end, (unsigned long)b);
    }

    /* The other rank writes the whole window, across the boundary. */
    unsigned char* data = malloc(size);
    const int peer = (rank + 1) % n;
    for (size_t i = 0; i < size; ++i) data[i] = (unsigned char)(peer * 13 + i * 3);
    MPI_Win_fence(0, win);
    CHECK_MPI(MPI_Put(data, (int)size, MPI_BYTE, peer, 0, (int)size, MPI_BYTE, win));
    MPI_Win_fence(0, win);
    for (size_t i = 0; i < size; ++i) CHECK(base[i] == (unsigned char)(rank * 13 + i * 3), "byte %zu = %d", i, base[i]);
    CHECK_MPI(MPI_Win_free(&win));

    /* The file holds exactly the storage part. */
    const size_t storage_begin = storage_first ? 0 : memory;
    const size_t storage_in_window = storage_first ? mapped - memory : size - memory;
    CHECK(file_size(path) == (long long)storage, "file size %lld, expected %zu", file_size(path), storage);
    unsigned char* stored = malloc(storage);
    read_file(path, 0, stored, storage);
    for (size_t i = 0; i < storage_in_window && storage_begin + i < size; ++i)
        CHECK(stored[i] == (unsigned char)(rank * 13 + (storage_begin + i) * 3), "file byte %zu = %d", i, stored[i]);
    free(stored);
    free(data);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    char dir[256];
    make_test_dir(MPI_COMM_WORLD, "combined", dir, sizeof dir);
    const size_t page = (size_t)page_size();
    run(dir, "0.5", 0.5, STRATA_MPI_MEMORY_FIRST, 16 * page);
    run(dir, "0.5", 0.5, STRATA_MPI_STORAGE_FIRST, 16 * page);
    run(dir, "0.25", 0.25, STRATA_MPI_MEMORY_FIRST, 16 * page); /* 4 pages on storage, 12 in memory */
    run(dir, "0.25", 0.25, STRATA_MPI_STORAGE_FIRST, 16 * page);
    run(dir, "0.5", 0.5, STRATA_MPI_MEMORY_FIRST, 10 * page + 100); /* a partial last page */
    run(dir, "0.5", 0.5, STRATA_MPI_STORAGE_FIRST, 10 * page + 100);
    remove_test_dir(MPI_COMM_WORLD, dir);
    MPI_Finalize();
    return 0;
}
