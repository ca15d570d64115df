/* SPDX-License-Identifier: MIT */
/* Started by auto_factor_stays_within_a_memory_cgroup.sh inside a memory
 * cgroup of LIMIT bytes. Each rank asks for a window of 3/4 LIMIT with
 * storage_alloc_factor=auto: together the ranks ask for more than the limit,
 * so each may keep only its share of what is left in memory — more than
 * nothing, at most LIMIT / ranks — and the rest must be on storage. Every
 * byte is then written and read back (the job must not be OOM-killed).
 * Usage: auto_factor_window LIMIT DIR */
#include "mpi_test.h"

#include <strata/mpi.h>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    CHECK(argc == 3, "usage: %s LIMIT DIR", argv[0]);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const size_t limit = (size_t)atoll(argv[1]), size = limit / 4 * 3, page = (size_t)page_size();
    char path[300];
    snprintf(path, sizeof path, "%s/auto-%d.dat", argv[2], rank);
    MPI_Info info = make_info(STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE, STRATA_MPI_FILENAME, path, STRATA_MPI_FACTOR,
                              STRATA_MPI_FACTOR_AUTO, STRATA_MPI_UNLINK, "true", NULL);
    unsigned char* base = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate((MPI_Aint)size, 1, info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);

    const long memory = info_number(win, STRATA_MPI_INFO_MEMORY_BYTES);
    const long storage = info_number(win, STRATA_MPI_INFO_STORAGE_BYTES);
    printf("rank %d: %zu MiB window, %ld MiB in memory, %ld MiB on storage (limit %zu MiB, %d ranks)\n", rank,
           size >> 20, memory >> 20, storage >> 20, limit >> 20, n);
    CHECK(memory > 0 && storage > 0 && (size_t)(memory + storage) == size, "split %ld + %ld of %zu", memory, storage,
          size);
    CHECK((size_t)memory <= limit / (size_t)n, "rank keeps %ld bytes in memory, more than its share %zu", memory,
          limit / (size_t)n);
    CHECK((size_t)memory % page == 0, "memory part %ld is not whole pages", memory);
    struct mapping maps[3];
    CHECK(find_mappings(base, size, maps, 3) == 2, "expected a memory and a storage mapping");
    CHECK(maps[0].path[0] == '\0' && maps[0].end == (uintptr_t)base + (size_t)memory, "memory part ends at %#lx",
          (unsigned long)maps[0].end);
    CHECK(strcmp(maps[1].path, path) == 0 && maps[1].start == (uintptr_t)base + (size_t)memory,
          "storage part maps %s at %#lx", maps[1].path, (unsigned long)maps[1].start);

    for (size_t p = 0; p < size; p += page) memset(base + p, (int)((p / page + (size_t)rank) & 0xff), page);
    for (size_t p = 0; p < size; p += page)
        CHECK(base[p] == (unsigned char)((p / page + (size_t)rank) & 0xff) &&
                  base[p + page - 1] == (unsigned char)((p / page + (size_t)rank) & 0xff),
              "page %zu lost its data", p / page);
    MPI_Win_lock_all(0, win);
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Win_unlock_all(win);
    unsigned char last[4096];
    read_file(path, storage - 4096, last, sizeof last);
    CHECK(last[0] == (unsigned char)(((size - page) / page + (size_t)rank) & 0xff), "last page of the file: %d",
          last[0]);
    CHECK_MPI(MPI_Win_free(&win));
    CHECK(!file_exists(path), "%s left behind", path);
    MPI_Finalize();
    return 0;
}
