/* SPDX-License-Identifier: MIT */
/* The flagship's checkpoints in MPI storage windows (paper 004; docs/mpi-storage-windows.md).
 *
 * Each rank allocates one window whose memory is the file <dir>/ckpt/rank-<r>.win (hints
 * alloc_type=storage and storage_alloc_filename, given in the MPI_Info; libstrata-mpi, linked
 * before MPI, implements them). The window holds a header, then per tile of the rank its id and
 * CKPT_SLOTS slots of [step, tile values]. A save of step s writes slot (s / k) % CKPT_SLOTS:
 * the slot's step set to 0 and made durable with MPI_Win_sync, then the values, MPI_Win_sync,
 * then the step, MPI_Win_sync. So a slot whose step says s holds step s whole, whatever moment
 * a SIGKILL came, and the last CKPT_SLOTS saves of each tile are kept. A checkpoint of step s is
 * complete when every tile has a slot of step s; a restart restores the tiles from the window
 * files of the run before.
 *
 * The window is collective: heat.c's set-up EDTs (one per rank, all waiting for one another
 * through MPI) open it, and closing EDTs (one per rank) free it at the end. On one rank the
 * runtime runs without MPI: ckpt_open then initializes it (a singleton) and ckpt_close ends it. Between the two every
 * access is local: an EDT writes its tile's slot and syncs, in a passive-target epoch
 * (MPI_Win_lock_all) that stays open. Several EDTs of a rank save different tiles at once;
 * MPI_THREAD_MULTIPLE (which the distributed runtime asks for) allows their syncs side by side.
 *
 * The file format (u64 words, little endian): magic, version, n, q, tiles, slots; then per
 * tile: its id, then per slot: step (0: empty), (n/q)^2 doubles. examples/flagship/flagship.py
 * and tests/python/test_flagship.py read it too. */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <strata/mpi.h> /* hint names only */
#include <string.h>
#include <unistd.h>

#include "heat.h"

enum { CKPT_MAGIC = 0x31504b4354414548ull /* "HEATCKP1" */, CKPT_VERSION = 1, CKPT_HEADER_WORDS = 6 };

static MPI_Win window = MPI_WIN_NULL;
static int own_mpi;    /* one rank: the runtime needs no MPI, so the checkpoints start it */
static u64* base;      /* the window's memory: the header, then the tiles' entries */
static u64** entry_of; /* per tile of the run: its entry in this rank's window, or NULL */

static u64 slot_words(u64 b) {
    return 1 + b * b;
}

static u64 entry_words(u64 b) {
    return 1 + CKPT_SLOTS * slot_words(b);
}

void ckpt_path(char* path, size_t size, const char* dir, u64 rank) {
    snprintf(path, size, "%s/ckpt/rank-%llu.win", dir, (unsigned long long)rank);
}

static u64 tiles_of_rank(const u64* g, u64 rank) {
    u64 count = 0;
    for (u64 t = 0; t < g[P_Q] * g[P_Q]; ++t) count += (u64)rank_of_tile(g, t) == rank;
    return count;
}

static int mpi_failed(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return 0;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    ocrPrintf("heat: %s: %.*s\n", what, length, text);
    return 1;
}

int ckpt_open(const u64* g, const char* dir) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        int provided = 0;
        if (mpi_failed(MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread")) return 0;
        own_mpi = 1;
    }
    const u64 here = current_rank(), b = side(g), tiles = tiles_of_rank(g, here);
    const u64 words = CKPT_HEADER_WORDS + tiles * entry_words(b);
    char path[4096];
    ckpt_path(path, sizeof path, dir, here);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, STRATA_MPI_ALLOC_TYPE, STRATA_MPI_STORAGE);
    MPI_Info_set(info, STRATA_MPI_FILENAME, path);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int rc = MPI_Win_allocate((MPI_Aint)(words * sizeof(u64)), sizeof(u64), info, MPI_COMM_WORLD, &base, &window);
    MPI_Info_free(&info);
    if (mpi_failed(rc, "MPI_Win_allocate of the checkpoint window")) return 0;
    MPI_Win_set_errhandler(window, MPI_ERRORS_RETURN);
    if (mpi_failed(MPI_Win_lock_all(MPI_MODE_NOCHECK, window), "MPI_Win_lock_all")) return 0;
    entry_of = calloc(g[P_Q] * g[P_Q], sizeof *entry_of);
    if (entry_of == NULL) {
        ocrPrintf("heat: no memory for %llu tiles\n", (unsigned long long)(g[P_Q] * g[P_Q]));
        return 0;
    }
    /* A file of the same run shape keeps its checkpoints; anything else starts empty. */
    const u64 header[CKPT_HEADER_WORDS] = {CKPT_MAGIC, CKPT_VERSION, g[P_N], g[P_Q], tiles, CKPT_SLOTS};
    const int same = memcmp(base, header, sizeof header) == 0;
    u64* entry = base + CKPT_HEADER_WORDS;
    for (u64 t = 0; t < g[P_Q] * g[P_Q]; ++t) {
        if ((u64)rank_of_tile(g, t) != here) continue;
        if (!same || entry[0] != t) {
            memset(entry, 0, entry_words(b) * sizeof(u64));
            entry[0] = t;
        }
        entry_of[t] = entry;
        entry += entry_words(b);
    }
    if (!same) memcpy(base, header, sizeof header);
    return !mpi_failed(MPI_Win_sync(window), "MPI_Win_sync of the checkpoint window");
}

int ckpt_save(const u64* g, u64 step, u64 tile, const double* grid) {
    const u64 b = side(g);
    u64* slot = entry_of[tile] + 1 + (step / g[P_K]) % CKPT_SLOTS * slot_words(b);
    __atomic_store_n(&slot[0], 0, __ATOMIC_RELEASE);
    if (mpi_failed(MPI_Win_sync(window), "MPI_Win_sync (a slot emptied)")) return 0;
    memcpy(slot + 1, grid, b * b * sizeof(double));
    if (mpi_failed(MPI_Win_sync(window), "MPI_Win_sync (a tile written)")) return 0;
    __atomic_store_n(&slot[0], step, __ATOMIC_RELEASE);
    return !mpi_failed(MPI_Win_sync(window), "MPI_Win_sync (a checkpoint completed)");
}

int ckpt_restore(const u64* g, u64 step, u64 tile, double* grid) {
    const u64 b = side(g);
    for (u64 s = 0; s < CKPT_SLOTS; ++s) {
        const u64* slot = entry_of[tile] + 1 + s * slot_words(b);
        if (slot[0] == step) {
            memcpy(grid, slot + 1, b * b * sizeof(double));
            return 1;
        }
    }
    ocrPrintf("heat: tile %llu has no checkpoint of step %llu in its window\n", (unsigned long long)tile,
              (unsigned long long)step);
    return 0;
}

int ckpt_close(void) {
    if (window == MPI_WIN_NULL) return 1;
    int ok = !mpi_failed(MPI_Win_unlock_all(window), "MPI_Win_unlock_all");
    ok = !mpi_failed(MPI_Win_free(&window), "MPI_Win_free of the checkpoint window") && ok;
    free(entry_of);
    entry_of = NULL;
    if (own_mpi) ok = !mpi_failed(MPI_Finalize(), "MPI_Finalize") && ok;
    return ok;
}

/* The steps whose values tile `tile` has in the file at `path` (up to CKPT_SLOTS), from its
 * header; 0 when the file is absent or of another run shape. */
static int steps_in_file(const char* path, const u64* g, u64 tile, u64 steps[CKPT_SLOTS]) {
    const u64 b = side(g);
    const int fd = open(path, O_RDONLY | O_NOFOLLOW);
    if (fd < 0) return 0;
    u64 header[CKPT_HEADER_WORDS];
    int found = 0;
    if (pread(fd, header, sizeof header, 0) == (ssize_t)sizeof header && header[0] == CKPT_MAGIC &&
        header[1] == CKPT_VERSION && header[2] == g[P_N] && header[3] == g[P_Q] && header[5] == CKPT_SLOTS) {
        for (u64 e = 0; e < header[4] && !found; ++e) {
            const off_t at = (off_t)((CKPT_HEADER_WORDS + e * entry_words(b)) * sizeof(u64));
            u64 id = 0;
            if (pread(fd, &id, sizeof id, at) != (ssize_t)sizeof id || id != tile) continue;
            for (u64 s = 0; s < CKPT_SLOTS; ++s) {
                const off_t slot_at = at + (off_t)((1 + s * slot_words(b)) * sizeof(u64));
                if (pread(fd, &steps[s], sizeof(u64), slot_at) != (ssize_t)sizeof(u64)) steps[s] = 0;
            }
            found = 1;
        }
    }
    close(fd);
    return found;
}

u64 ckpt_last_complete(const u64* g, const char* dir) {
    if (g[P_K] == 0) return 0;
    for (u64 s = g[P_STEPS] / g[P_K] * g[P_K]; s > 0; s -= g[P_K]) {
        u64 tile = 0;
        for (; tile < g[P_Q] * g[P_Q]; ++tile) {
            char path[4096];
            u64 steps[CKPT_SLOTS] = {0};
            ckpt_path(path, sizeof path, dir, (u64)rank_of_tile(g, tile));
            if (!steps_in_file(path, g, tile, steps)) break;
            int has = 0;
            for (int k = 0; k < CKPT_SLOTS; ++k) has |= steps[k] == s;
            if (!has) break;
        }
        if (tile == g[P_Q] * g[P_Q]) return s;
    }
    return 0;
}
