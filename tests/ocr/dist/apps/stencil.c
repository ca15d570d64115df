/* SPDX-License-Identifier: MIT */
/* A 2-D Jacobi stencil whose tiles are placed on ranks by affinity.
 *
 *   stencil <n> <q> <steps> <in.bin> <out.bin>
 *
 * The n×n grid (doubles, row major, zero outside) is cut into q×q tiles of b = n/q; tile
 * t = ti*q + tj lives on rank stencil_rank_of(t) (contiguous runs of tiles, the decomposition
 * of bench/ocr-dist's MPI stencil). Each step of a tile is one EDT on the tile's rank: it reads
 * its tile and the edges its neighbours sent, writes the tile's other buffer, sends its own
 * edges to its neighbours' ranks (blocks created there by affinity) and creates its next step.
 * An edge arrives through a labeled STICKY event of the receiving rank's GUID range; one set-up
 * EDT per rank makes the range and its events. The last step writes its tile into out.bin at
 * its offsets; the FINISH EDT that started the tiles ends when every step on every rank did,
 * and then the program shuts down. tests/ocr/apps/check.py compares out.bin with numpy.
 * Exit 0; 2 on bad arguments, 4 when a file cannot be read or written. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dist_test.h"
#include "extensions/ocr-labeling.h"
#include "stencil_kernel.h"

/* paramv of the set-up, init and step EDTs */
enum { P_STEP, P_TILE, P_N, P_Q, P_STEPS, P_RANKS, P_ARGS, P_TPL, P_T0, P_RANGE0 };
enum { EDGES = 4 };

/* The side of a tile. */
static u64 side(const u64* g) {
    return g[P_N] / g[P_Q];
}

static ocrGuid_t event_of(const u64* g, u64 step, u64 tile, int d) {
    ocrGuid_t event;
    const u64 q = g[P_Q];
    ocrGuid_t range = {.guid = g[P_RANGE0 + stencil_rank_of(tile, q, (int)g[P_RANKS])]};
    ocrGuidFromIndex(&event, range, ((step * q * q) + tile) * EDGES + (u64)d);
    return event;
}

/* The tile beside `tile` in direction d (north, south, west, east), or -1 at the border. */
static long long neighbour(const u64* g, u64 tile, int d) {
    const u64 q = g[P_Q], ti = tile / q, tj = tile % q;
    if (d == 0) return ti > 0 ? (long long)(tile - q) : -1;
    if (d == 1) return ti + 1 < q ? (long long)(tile + q) : -1;
    if (d == 2) return tj > 0 ? (long long)(tile - 1) : -1;
    return tj + 1 < q ? (long long)(tile + 1) : -1;
}

/* Sends the edges of `grid` (the tile after step `step`) to the neighbours' events of step+1. */
static void send_edges(const u64* g, u64 step, u64 tile, const double* grid) {
    for (int d = 0; d < EDGES; ++d) {
        const long long other = neighbour(g, tile, d);
        if (other < 0) continue;
        ocrHint_t hint;
        ocrGuid_t edge;
        double* data;
        on_rank(&hint, (u64)stencil_rank_of((u64)other, g[P_Q], (int)g[P_RANKS]), 0);
        ocrDbCreate(&edge, (void**)&data, side(g) * sizeof(double), DB_PROP_NONE, &hint, NO_ALLOC);
        stencil_edge(side(g), grid, d, data);
        ocrDbRelease(edge);
        ocrEventSatisfy(event_of(g, step + 1, (u64)other, d ^ 1), edge);
    }
}

/* Creates step `step` of the tile: reads `in`, writes `out`. */
static void create_step(const u64* g, u64 step, ocrGuid_t in, ocrGuid_t out) {
    u64 params[P_RANGE0 + 64];
    memcpy(params, g, (P_RANGE0 + g[P_RANKS]) * sizeof(u64));
    params[P_STEP] = step;
    const int last = step == g[P_STEPS];
    ocrGuid_t edt, tpl = {.guid = g[P_TPL]};
    ocrEdtCreate(&edt, tpl, (u32)(P_RANGE0 + g[P_RANKS]), params, 2 + EDGES + (last ? 1 : 0), NULL, EDT_PROP_NONE,
                 NULL_HINT, NULL);
    ocrAddDependence(in, edt, 0, DB_MODE_RO);
    ocrAddDependence(out, edt, 1, DB_MODE_RW);
    for (int d = 0; d < EDGES; ++d) {
        const int inner = neighbour(g, g[P_TILE], d) >= 0;
        ocrAddDependence(inner ? event_of(g, step, g[P_TILE], d) : NULL_GUID, edt, 2 + (u32)d, DB_MODE_RO);
    }
    if (last) ocrAddDependence((ocrGuid_t){.guid = g[P_ARGS]}, edt, 2 + EDGES, DB_MODE_RO);
}

/* Reads (write == 0) or writes the tile's rows of the n×n file at `path`. */
static int tile_io(const u64* g, const char* path, double* tile, int write) {
    const u64 n = g[P_N], q = g[P_Q], b = side(g), ti = g[P_TILE] / q, tj = g[P_TILE] % q;
    const int fd = open(path, write ? O_WRONLY : O_RDONLY);
    int ok = fd >= 0;
    for (u64 r = 0; ok && r < b; ++r) {
        const off_t at = (off_t)(((ti * b + r) * n + tj * b) * sizeof(double));
        const ssize_t done =
            write ? pwrite(fd, tile + r * b, b * sizeof(double), at) : pread(fd, tile + r * b, b * sizeof(double), at);
        ok = done == (ssize_t)(b * sizeof(double));
    }
    if (fd >= 0 && close(fd) != 0) ok = 0;
    if (!ok) {
        ocrPrintf("stencil: cannot %s tile %llu of %s\n", write ? "write" : "read", (unsigned long long)g[P_TILE],
                  path);
        ocrAbort(4);
    }
    return ok;
}

static ocrGuid_t step_edt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64* g = paramv;
    const u64 step = g[P_STEP], tile = g[P_TILE];
    double* out = depv[1].ptr;
    stencil_tile(side(g), depv[0].ptr, out, depv[2].ptr, depv[3].ptr, depv[4].ptr, depv[5].ptr);
    for (int d = 0; d < EDGES; ++d) {
        if (ocrGuidIsNull(depv[2 + d].guid)) continue;
        ocrDbDestroy(depv[2 + d].guid);
        ocrEventDestroy(event_of(g, step, tile, d));
    }
    if (step < g[P_STEPS]) {
        send_edges(g, step, tile, out);
        ocrDbRelease(depv[1].guid);
        create_step(g, step + 1, depv[1].guid, depv[0].guid);
        return NULL_GUID;
    }
    const char* args = depv[2 + EDGES].ptr;
    tile_io(g, args + strlen(args) + 1, out, 1);
    ocrDbDestroy(depv[0].guid);
    ocrDbDestroy(depv[1].guid);
    return NULL_GUID;
}

/* Step 0 of a tile, on its rank: its two buffers, the first read from in.bin. */
static ocrGuid_t init_edt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64* g = paramv;
    ocrGuid_t in, out;
    double *grid, *spare;
    ocrDbCreate(&in, (void**)&grid, side(g) * side(g) * sizeof(double), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    ocrDbCreate(&out, (void**)&spare, side(g) * side(g) * sizeof(double), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    if (!tile_io(g, depv[0].ptr, grid, 0)) return NULL_GUID;
    send_edges(g, 0, g[P_TILE], grid);
    ocrDbRelease(in);
    ocrDbRelease(out);
    create_step(g, 1, in, out);
    return NULL_GUID;
}

/* One per rank: the range of the events that bring this rank's tiles their edges. */
static ocrGuid_t setup_edt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64* g = paramv;
    const u64 q = g[P_Q], steps = g[P_STEPS], here = current_rank();
    ocrGuid_t range, db;
    u64* out;
    ocrGuidRangeCreate(&range, (steps + 1) * q * q * EDGES, GUID_USER_EVENT_STICKY);
    u64 params[P_RANGE0 + 64];
    memcpy(params, g, P_RANGE0 * sizeof(u64));
    params[P_RANGE0 + here] = (u64)range.guid;
    g = params;
    for (u64 tile = 0; tile < q * q; ++tile) {
        if ((u64)stencil_rank_of(tile, q, (int)g[P_RANKS]) != here) continue;
        for (u64 s = 1; s <= steps; ++s) {
            for (int d = 0; d < EDGES; ++d) {
                if (neighbour(g, tile, d) < 0) continue;
                ocrGuid_t e = event_of(g, s, tile, d);
                ocrEventCreate(&e, OCR_EVENT_STICKY_T, GUID_PROP_IS_LABELED | EVT_PROP_TAKES_ARG);
            }
        }
    }
    ocrDbCreate(&db, (void**)&out, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *out = (u64)range.guid;
    ocrDbRelease(db);
    return db;
}

/* FINISH: once every rank made its events, starts every tile on its rank. */
static ocrGuid_t start_edt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 params[P_RANGE0 + 64];
    memcpy(params, paramv, P_RANGE0 * sizeof(u64));
    for (u64 r = 0; r < params[P_RANKS]; ++r) {
        params[P_RANGE0 + r] = *(const u64*)depv[1 + r].ptr;
        ocrDbDestroy(depv[1 + r].guid);
    }
    ocrGuid_t init;
    ocrEdtTemplateCreate(&init, init_edt, EDT_PARAM_UNK, 1);
    const u64 q = params[P_Q];
    for (u64 tile = 0; tile < q * q; ++tile) {
        ocrHint_t hint;
        ocrGuid_t edt;
        params[P_TILE] = tile;
        on_rank(&hint, (u64)stencil_rank_of(tile, q, (int)params[P_RANKS]), 1);
        ocrEdtCreate(&edt, init, (u32)(P_RANGE0 + params[P_RANKS]), params, 1, NULL, EDT_PROP_NONE, &hint, NULL);
        ocrAddDependence(depv[0].guid, edt, 0, DB_MODE_RO);
    }
    return NULL_GUID;
}

static u64 now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

/* Ends the run once every step ended; prints the time since mainEdt began (bench/ocr-dist). */
static ocrGuid_t done_edt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrPrintf("stencil: n=%llu q=%llu steps=%llu on %llu rank(s): seconds %.6f\n", (unsigned long long)paramv[P_N],
              (unsigned long long)paramv[P_Q], (unsigned long long)paramv[P_STEPS], (unsigned long long)rank_count(),
              (double)(now_ns() - paramv[P_T0]) / 1e9);
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    void* argv = depv[0].ptr;
    const u64 ranks = rank_count();
    if (getArgc(argv) != 6) {
        ocrPrintf("usage: stencil <n> <q> <steps> <in.bin> <out.bin>\n");
        ocrAbort(2);
        return NULL_GUID;
    }
    u64 params[P_RANGE0 + 64] = {0};
    params[P_T0] = now_ns();
    params[P_N] = strtoull(getArgv(argv, 1), NULL, 10);
    params[P_Q] = strtoull(getArgv(argv, 2), NULL, 10);
    params[P_STEPS] = strtoull(getArgv(argv, 3), NULL, 10);
    params[P_RANKS] = ranks;
    if (params[P_Q] == 0 || params[P_N] % params[P_Q] != 0 || params[P_STEPS] == 0 || ranks > 64) {
        ocrPrintf("stencil: n=%s must be a multiple of q=%s, steps=%s at least 1, ranks=%llu at most 64\n",
                  getArgv(argv, 1), getArgv(argv, 2), getArgv(argv, 3), (unsigned long long)ranks);
        ocrAbort(2);
        return NULL_GUID;
    }
    const char* in = getArgv(argv, 4);
    const char* out = getArgv(argv, 5);
    const int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)(params[P_N] * params[P_N] * sizeof(double))) != 0 || close(fd) != 0) {
        ocrPrintf("stencil: cannot create %s\n", out);
        ocrAbort(4);
        return NULL_GUID;
    }
    ocrGuid_t args, step, setup, start, done, finished;
    char* text;
    ocrDbCreate(&args, (void**)&text, strlen(in) + strlen(out) + 2, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    strcpy(text, in);
    strcpy(text + strlen(in) + 1, out);
    ocrDbRelease(args);
    params[P_ARGS] = (u64)args.guid;
    ocrEdtTemplateCreate(&step, step_edt, EDT_PARAM_UNK, EDT_PARAM_UNK);
    params[P_TPL] = (u64)step.guid;

    ocrEdtTemplateCreate(&start, start_edt, P_RANGE0, (u32)(1 + ranks));
    ocrGuid_t starter;
    ocrEdtCreate(&starter, start, P_RANGE0, params, (u32)(1 + ranks), NULL, EDT_PROP_FINISH, NULL_HINT, &finished);
    ocrEdtTemplateCreate(&done, done_edt, P_RANGE0, 1);
    ocrGuid_t ender;
    ocrEdtCreate(&ender, done, P_RANGE0, params, 1, &finished, EDT_PROP_NONE, NULL_HINT, NULL);
    /* A set-up EDT waits for its slot until the starter depends on its output event (a ONCE
     * event satisfied before anything depends on it would be lost). */
    ocrEdtTemplateCreate(&setup, setup_edt, P_RANGE0, 1);
    for (u64 r = 0; r < ranks; ++r) {
        ocrHint_t hint;
        ocrGuid_t edt, made;
        ocrEdtCreate(&edt, setup, P_RANGE0, params, 1, NULL, EDT_PROP_NONE, on_rank(&hint, r, 1), &made);
        ocrAddDependence(made, starter, 1 + (u32)r, DB_MODE_RO);
        ocrAddDependence(NULL_GUID, edt, 0, DB_MODE_RO);
    }
    ocrAddDependence(args, starter, 0, DB_MODE_RO);
    return NULL_GUID;
}
