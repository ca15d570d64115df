/* SPDX-License-Identifier: MIT */
/* The storage and combined windows of libstrata-mpi made by hand, without strata: what the kernel
 * and MPI do for the same layout, the bound strata's windows are measured against (issue 29).
 *
 * Variants (--variant):
 *   plain-storage   the whole window a MAP_SHARED mapping of a file in --dir
 *   plain-combined  one range: its first part anonymous memory, the rest a MAP_SHARED | MAP_FIXED
 *                   mapping of a file in --dir; --factor is the file's share, as
 *                   storage_alloc_factor is strata's
 * Each is exposed with MPI_Win_create. The layout is the one strata makes for alloc_type=storage
 * with storage_alloc_order=memory_first and no access_style (src/region/region_combined.cpp,
 * src/mpi/storage_part.cpp): the memory part is (1 - factor) x size rounded down to pages (factor
 * printed with 6 decimals, as sw_hints passes it); the file holds the storage part only, created
 * with O_EXCL, reserved with posix_fallocate, mapped MAP_SHARED with MADV_RANDOM (page-sized
 * faults and dirty tracking); the sync is MPI_Win_sync, then msync(MS_SYNC) of the file part; the
 * free removes the file without writing back (storage_alloc_unlink=true).
 *
 * Programs including this are built without libstrata-mpi (sw-dht-plain), so MPI_Win_create and
 * every RMA call go to MPI itself. Include after sw.h. */
#ifndef STRATA_BENCH_PLAIN_WINDOW_H
#define STRATA_BENCH_PLAIN_WINDOW_H

#include <sys/mman.h>

typedef struct {
    unsigned char* base;
    size_t mapped;        /* the window's bytes rounded up to pages */
    size_t memory_bytes;  /* the anonymous part, from base */
    size_t storage_bytes; /* the file part, after it */
    int fd;               /* -1 without a file part */
    char path[4096];
} plain_window;

static inline int plain_is_variant(const char* variant) {
    return strcmp(variant, "plain-storage") == 0 || strcmp(variant, "plain-combined") == 0;
}

static inline size_t plain_page_round(size_t bytes, int up) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (up ? bytes + page - 1 : bytes) / page * page;
}

/* The variant's configuration: --variant, --dir and --factor as sw_config_from reads them. The
 * mapping is strata's default, so its tuning hints do not apply. */
static inline sw_config plain_config_from(int argc, char** argv) {
    sw_config c = {.variant = sw_opt(argc, argv, "--variant", ""),
                   .dir = sw_opt(argc, argv, "--dir", "/var/tmp"),
                   .factor = sw_opt_double(argc, argv, "--factor", 0.5),
                   .sync = "on_sync",
                   .access_style = NULL,
                   .order = "memory_first"};
    CHECK(plain_is_variant(c.variant), "--variant=%s: expected plain-storage or plain-combined", c.variant);
    CHECK(c.factor >= 0 && c.factor <= 1, "--factor=%g: outside [0, 1]", c.factor);
    const char* tuning[] = {"--sync", "--access-style", "--order"};
    for (int i = 0; i < 3; ++i) {
        CHECK(sw_opt(argc, argv, tuning[i], NULL) == NULL,
              "%s: the plain variants map the file as strata does without hints; %s is for sw-dht", tuning[i],
              tuning[i]);
    }
    return c;
}

/* The split strata makes for storage_alloc_factor = factor (memory_part_bytes in region_combined.cpp). */
static inline size_t plain_memory_bytes(size_t bytes, double factor) {
    char text[32];
    snprintf(text, sizeof text, "%.6f", factor);
    const double memory_share = 1.0 - strtod(text, NULL);
    if (memory_share >= 1.0) return plain_page_round(bytes, 1);
    return plain_page_round((size_t)(memory_share * (double)bytes), 0);
}

/* Maps the window (name: the file's name under dir) and exposes it on MPI_COMM_WORLD. */
static inline void* plain_win_create(const char* variant, const char* dir, double factor, const char* name,
                                     size_t bytes, MPI_Win* win, plain_window* w) {
    CHECK(plain_is_variant(variant), "--variant=%s: expected plain-storage or plain-combined", variant);
    memset(w, 0, sizeof *w);
    w->fd = -1;
    w->mapped = plain_page_round(bytes, 1);
    w->memory_bytes = plain_memory_bytes(bytes, strcmp(variant, "plain-storage") == 0 ? 1.0 : factor);
    w->storage_bytes = w->memory_bytes < w->mapped ? bytes - w->memory_bytes : 0;
    void* base = mmap(NULL, w->mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(base != MAP_FAILED, "cannot map %zu bytes: %s", w->mapped, strerror(errno));
    w->base = base;
    if (w->storage_bytes > 0) {
        snprintf(w->path, sizeof w->path, "%s/%s", dir, name);
        w->fd = open(w->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        CHECK(w->fd >= 0, "%s: cannot create: %s", w->path, strerror(errno));
        const int reserved = posix_fallocate(w->fd, 0, (off_t)w->storage_bytes);
        CHECK(reserved == 0, "%s: cannot reserve %zu bytes: %s", w->path, w->storage_bytes, strerror(reserved));
        unsigned char* part = w->base + w->memory_bytes;
        const size_t length = plain_page_round(w->storage_bytes, 1);
        CHECK(mmap(part, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, w->fd, 0) != MAP_FAILED,
              "%s: cannot map %zu bytes: %s", w->path, length, strerror(errno));
        CHECK(madvise(part, length, MADV_RANDOM) == 0, "%s: madvise(MADV_RANDOM): %s", w->path, strerror(errno));
    }
    CHECK_MPI(MPI_Win_create(w->base, (MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, win));
    return w->base;
}

/* As sw_win_sync_self: the file part is durable when it returns. */
static inline void plain_win_sync_self(MPI_Win win, const plain_window* w) {
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, sw_rank(), 0, win));
    CHECK_MPI(MPI_Win_sync(win));
    if (w->storage_bytes > 0) {
        const size_t length = plain_page_round(w->storage_bytes, 1);
        CHECK(msync(w->base + w->memory_bytes, length, MS_SYNC) == 0, "%s: msync: %s", w->path, strerror(errno));
    }
    CHECK_MPI(MPI_Win_unlock(sw_rank(), win));
}

static inline void plain_win_free(MPI_Win* win, plain_window* w) {
    CHECK_MPI(MPI_Win_free(win));
    munmap(w->base, w->mapped);
    if (w->fd >= 0) {
        close(w->fd);
        CHECK(unlink(w->path) == 0, "%s: cannot remove: %s", w->path, strerror(errno));
    }
    w->base = NULL;
    w->fd = -1;
}

#endif /* STRATA_BENCH_PLAIN_WINDOW_H */
