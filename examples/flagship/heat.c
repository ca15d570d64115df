/* SPDX-License-Identifier: MIT */
/* The flagship workflow's simulation (docs/getting-started/flagship.md): a 2-D heat diffusion
 * as one distributed OCR program.
 *
 *   strata ocr -n 2 --external-config examples/flagship/flagship.toml \
 *       ./flagship_heat <n> <q> <steps> <k> <m> <dir> [frames-segment [steer]]
 *
 * The n×n field (heat_kernel.h: a hot disk, 0 outside the grid) is cut into q×q tiles placed
 * on the ranks by affinity. One EDT per tile and step computes the tile from its previous
 * value and the edges its neighbours sent; an edge bound for another rank travels as a data
 * block created there (MPI, the runtime's communication thread: no worker waits for it).
 *   - every k steps each tile saves itself into its rank's MPI storage window, whose memory is
 *     the file <dir>/ckpt/rank-<r>.win (heat_ckpt.c; MPI_Win_sync makes it durable: the worker
 *     blocks in the kernel and the monitor wakes another one). Started again, the program
 *     continues from the last step whose every tile is in the files;
 *   - every m steps each tile sends a copy of itself to rank 0, where a frame EDT assembles the
 *     field: into a vector of the shm segment [frames-segment] whose port "frames" hands it by
 *     handle to the Python analysis (frames.cpp), and as 8-bit pixels into the movie block;
 *   - with "steer", each frame's alpha for the next m steps comes back from the steering job
 *     (steer.cpp), which shares global statistics across nodes through the DSM
 *     (heat_frames.c);
 *   - after the last frame, ffmpeg runs as an external task ([encode] in flagship.toml) on the
 *     movie block exposed as a file, and writes <dir>/heat.mp4;
 *   - the last step writes the field to <dir>/field.bin (doubles, row major).
 * With STRATA_FLAGSHIP_HOLD_AT=S every tile stops after saving the checkpoint of step S (a
 * known point for a SIGKILL: flagship.py --hold).
 * Exit 0; 2 on bad arguments, 4 when a file cannot be read or written, 5 when a frame cannot
 * be handed over, 6 when the video cannot be made. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "extensions/ocr-labeling.h"
#include "heat.h"

struct heat_counters heat_count;

u64 rank_count(void) {
    u64 n = 0;
    ocrAffinityCount(AFFINITY_PD, &n);
    return n;
}

u64 current_rank(void) {
    ocrGuid_t here, a;
    ocrAffinityGetCurrent(&here);
    for (u64 r = 0; r < rank_count(); ++r) {
        ocrAffinityGetAt(AFFINITY_PD, r, &a);
        if (ocrAffinityToHintValue(a) == ocrAffinityToHintValue(here)) return r;
    }
    return 0;
}

ocrHint_t* on_rank(ocrHint_t* hint, u64 rank, int edt) {
    ocrGuid_t affinity;
    ocrAffinityGetAt(AFFINITY_PD, rank, &affinity);
    ocrHintInit(hint, edt ? OCR_HINT_EDT_T : OCR_HINT_DB_T);
    ocrSetHintValue(hint, edt ? OCR_HINT_EDT_AFFINITY : OCR_HINT_DB_AFFINITY, ocrAffinityToHintValue(affinity));
    return hint;
}

u64 now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

/* Each rank's counters, one line when it exits (after the runtime ended): the driver sums
 * them into the report. A killed rank says nothing. */
__attribute__((destructor)) static void print_counters(void) {
    const struct heat_counters* c = &heat_count;
    if (c->rank == 0 && c->checkpoints == 0 && c->frames == 0 && c->mpi_payload_bytes == 0) return;
    fprintf(stdout,
            "heat: rank %llu counters: mpi_payload_bytes=%llu checkpoints=%llu checkpoint_bytes=%llu "
            "checkpoint_ns=%llu frames=%llu frame_bytes=%llu frame_send_ns=%llu steer_ns=%llu movie_bytes=%llu "
            "video_bytes=%llu ffmpeg_ns=%llu\n",
            (unsigned long long)c->rank, (unsigned long long)c->mpi_payload_bytes, (unsigned long long)c->checkpoints,
            (unsigned long long)c->checkpoint_bytes, (unsigned long long)c->checkpoint_ns,
            (unsigned long long)c->frames, (unsigned long long)c->frame_bytes, (unsigned long long)c->frame_send_ns,
            (unsigned long long)c->steer_ns, (unsigned long long)c->movie_bytes, (unsigned long long)c->video_bytes,
            (unsigned long long)c->ffmpeg_ns);
    fflush(stdout);
}

static ocrGuid_t event_of(const u64* g, u64 step, u64 tile, int d) {
    ocrGuid_t event;
    const u64 q = g[P_Q];
    ocrGuidFromIndex(&event, guid(g[P_RANGE0 + rank_of_tile(g, tile)]), ((step * q * q) + tile) * EDGES + (u64)d);
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

/* Sends the edges of `grid` (the tile after `step`) to the neighbours' events of step+1. */
static void send_edges(const u64* g, u64 step, u64 tile, const double* grid) {
    for (int d = 0; d < EDGES; ++d) {
        const long long other = neighbour(g, tile, d);
        if (other < 0) continue;
        ocrHint_t hint;
        ocrGuid_t edge;
        double* data;
        on_rank(&hint, (u64)rank_of_tile(g, (u64)other), 0);
        ocrDbCreate(&edge, (void**)&data, side(g) * sizeof(double), DB_PROP_NONE, &hint, NO_ALLOC);
        heat_edge(side(g), grid, d, data);
        ocrDbRelease(edge);
        if (rank_of_tile(g, (u64)other) != rank_of_tile(g, tile))
            HEAT_COUNT(mpi_payload_bytes, side(g) * sizeof(double));
        ocrEventSatisfy(event_of(g, step + 1, (u64)other, d ^ 1), edge);
    }
}

static void save_checkpoint(const u64* g, u64 step, const double* grid) {
    const u64 t0 = now_ns();
    if (!ckpt_save(g, step, g[P_TILE], grid)) {
        ocrAbort(4);
        return;
    }
    HEAT_COUNT(checkpoints, 1);
    HEAT_COUNT(checkpoint_bytes, side(g) * side(g) * sizeof(double));
    HEAT_COUNT(checkpoint_ns, now_ns() - t0);
}

static void create_step(const u64* g, u64 step, ocrGuid_t in, ocrGuid_t out) {
    u64 params[MAX_PARAMS];
    memcpy(params, g, paramc(g) * sizeof(u64));
    params[P_STEP] = step;
    ocrGuid_t edt;
    ocrEdtCreate(&edt, guid(g[P_TPL]), (u32)paramc(g), params, 2 + EDGES + 2, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(in, edt, 0, DB_MODE_RO);
    ocrAddDependence(out, edt, 1, DB_MODE_RW);
    for (int d = 0; d < EDGES; ++d) {
        const int inner = neighbour(g, g[P_TILE], d) >= 0;
        ocrAddDependence(inner ? event_of(g, step, g[P_TILE], d) : NULL_GUID, edt, 2 + (u32)d, DB_MODE_RO);
    }
    ocrAddDependence(guid(g[P_ARGS]), edt, 2 + EDGES, DB_MODE_RO);
    ocrAddDependence(alpha_event_of(g, step), edt, 2 + EDGES + 1, DB_MODE_RO);
}

/* Writes the tile into its rows of <dir>/field.bin. */
static void write_tile(const u64* g, const char* dir, const double* tile) {
    const u64 n = g[P_N], q = g[P_Q], b = side(g), ti = g[P_TILE] / q, tj = g[P_TILE] % q;
    char path[4096];
    snprintf(path, sizeof path, "%s/field.bin", dir);
    const int fd = open(path, O_WRONLY | O_NOFOLLOW);
    int ok = fd >= 0;
    for (u64 r = 0; ok && r < b; ++r) {
        const off_t at = (off_t)(((ti * b + r) * n + tj * b) * sizeof(double));
        ok = pwrite(fd, tile + r * b, b * sizeof(double), at) == (ssize_t)(b * sizeof(double));
    }
    if (fd >= 0 && close(fd) != 0) ok = 0;
    if (!ok) {
        ocrPrintf("heat: cannot write tile %llu into %s\n", (unsigned long long)g[P_TILE], path);
        ocrAbort(4);
    }
}

static ocrGuid_t step_edt(u32 paramc_, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64* g = paramv;
    const u64 step = g[P_STEP], tile = g[P_TILE];
    const char* args = depv[2 + EDGES].ptr;
    double* out = depv[1].ptr;
    const double alpha = depv[2 + EDGES + 1].ptr != NULL ? *(const double*)depv[2 + EDGES + 1].ptr : HEAT_ALPHA;
    heat_count.rank = current_rank();
    heat_step(side(g), alpha, depv[0].ptr, out, depv[2].ptr, depv[3].ptr, depv[4].ptr, depv[5].ptr);
    for (int d = 0; d < EDGES; ++d) {
        if (ocrGuidIsNull(depv[2 + d].guid)) continue;
        ocrDbDestroy(depv[2 + d].guid);
        ocrEventDestroy(event_of(g, step, tile, d));
    }
    send_frame_part(g, step, tile, out);
    if (step < g[P_STEPS]) {
        if (g[P_K] != 0 && step % g[P_K] == 0) save_checkpoint(g, step, out);
        if (step == g[P_HOLD]) return NULL_GUID;  // held: the run waits here to be killed
        send_edges(g, step, tile, out);
        ocrDbRelease(depv[1].guid);
        create_step(g, step + 1, depv[1].guid, depv[0].guid);
        return NULL_GUID;
    }
    write_tile(g, dir_of(args), out);
    ocrDbDestroy(depv[0].guid);
    ocrDbDestroy(depv[1].guid);
    return NULL_GUID;
}

/* The first step of a tile, on its rank: its two buffers, the first either the initial field
 * or, after a restart, the tile's checkpoint of step P_START. */
static ocrGuid_t init_edt(u32 paramc_, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64* g = paramv;
    const u64 b = side(g), n = g[P_N], q = g[P_Q], ti = g[P_TILE] / q, tj = g[P_TILE] % q;
    ocrGuid_t in, out;
    double *grid, *spare;
    ocrDbCreate(&in, (void**)&grid, b * b * sizeof(double), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    ocrDbCreate(&out, (void**)&spare, b * b * sizeof(double), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    if (g[P_START] == 0) {
        for (u64 i = 0; i < b; ++i) {
            for (u64 j = 0; j < b; ++j) grid[i * b + j] = heat_initial(n, ti * b + i, tj * b + j);
        }
    } else if (!ckpt_restore(g, g[P_START], g[P_TILE], grid)) {
        ocrAbort(4);
        return NULL_GUID;
    }
    send_frame_part(g, g[P_START], g[P_TILE], grid);
    send_edges(g, g[P_START], g[P_TILE], grid);
    ocrDbRelease(in);
    ocrDbRelease(out);
    create_step(g, g[P_START] + 1, in, out);
    return NULL_GUID;
}

/* One per rank: opens the rank's checkpoint window (collective: every rank's set-up EDT takes
 * part), and makes the range of the events that bring this rank's tiles their edges. */
static ocrGuid_t setup_edt(u32 paramc_, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64* g = paramv;
    const u64 q = g[P_Q], here = current_rank();
    if (!ckpt_open(g, dir_of(depv[0].ptr))) {
        ocrAbort(4);
        return NULL_GUID;
    }
    ocrGuid_t range, db;
    u64* out;
    ocrGuidRangeCreate(&range, (g[P_STEPS] + 1) * q * q * EDGES, GUID_USER_EVENT_STICKY);
    u64 params[MAX_PARAMS];
    memcpy(params, g, paramc(g) * sizeof(u64));
    params[P_RANGE0 + here] = (u64)range.guid;
    for (u64 tile = 0; tile < q * q; ++tile) {
        if ((u64)rank_of_tile(params, tile) != here) continue;
        for (u64 s = g[P_START] + 1; s <= g[P_STEPS]; ++s) {
            for (int d = 0; d < EDGES; ++d) {
                if (neighbour(params, tile, d) < 0) continue;
                ocrGuid_t e = event_of(params, s, tile, d);
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
static ocrGuid_t start_edt(u32 paramc_, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 params[MAX_PARAMS];
    memcpy(params, paramv, paramc(paramv) * sizeof(u64));
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
        on_rank(&hint, (u64)rank_of_tile(params, tile), 1);
        ocrEdtCreate(&edt, init, (u32)paramc(params), params, 1, NULL, EDT_PROP_NONE, &hint, NULL);
        ocrAddDependence(depv[0].guid, edt, 0, DB_MODE_RO);
    }
    return NULL_GUID;
}

/* One per rank, at the end: frees the rank's checkpoint window (collective). */
static ocrGuid_t close_edt(u32 paramc_, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    if (!ckpt_close()) ocrAbort(4);
    return NULL_GUID;
}

/* FINISH: a closing EDT on every rank. */
static ocrGuid_t close_all_edt(u32 paramc_, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t tpl;
    ocrEdtTemplateCreate(&tpl, close_edt, 0, 0);
    for (u64 r = 0; r < paramv[0]; ++r) {
        ocrHint_t hint;
        ocrGuid_t edt;
        ocrEdtCreate(&edt, tpl, 0, NULL, 0, NULL, EDT_PROP_NONE, on_rank(&hint, r, 1), NULL);
    }
    return NULL_GUID;
}

static ocrGuid_t shutdown_edt(u32 paramc_, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrShutdown();
    return NULL_GUID;
}

/* Once every step ended and the video is written: the windows are freed, then the run ends. */
static ocrGuid_t done_edt(u32 paramc_, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrPrintf("heat: n=%llu q=%llu steps %llu..%llu on %llu rank(s), %llu frame(s): seconds %.6f\n",
              (unsigned long long)paramv[P_N], (unsigned long long)paramv[P_Q], (unsigned long long)paramv[P_START],
              (unsigned long long)paramv[P_STEPS], (unsigned long long)paramv[P_RANKS],
              (unsigned long long)paramv[P_FRAMES], (double)(now_ns() - paramv[P_T0]) / 1e9);
    ocrGuid_t close_all, shutdown, closer, closed, ender;
    ocrEdtTemplateCreate(&close_all, close_all_edt, 1, 1);
    ocrEdtTemplateCreate(&shutdown, shutdown_edt, 0, 1);
    ocrEdtCreate(&closer, close_all, 1, &paramv[P_RANKS], 1, NULL, EDT_PROP_FINISH, NULL_HINT, &closed);
    ocrEdtCreate(&ender, shutdown, 0, NULL, 1, &closed, EDT_PROP_NONE, NULL_HINT, NULL);
    /* Started only now that the ender depends on its output event (satisfied once, at its end). */
    ocrAddDependence(NULL_GUID, closer, 0, DB_MODE_RO);
    return NULL_GUID;
}

/* Parses and checks the arguments into params; 0 when they are bad (after saying why). */
static int parse(void* argv, u64* params) {
    const u64 argc = getArgc(argv);
    if (argc < 7 || argc > 9 || (argc == 9 && strcmp(getArgv(argv, 8), "steer") != 0)) {
        ocrPrintf("usage: heat <n> <q> <steps> <k> <m> <dir> [frames-segment [steer]]\n");
        return 0;
    }
    params[P_N] = strtoull(getArgv(argv, 1), NULL, 10);
    params[P_Q] = strtoull(getArgv(argv, 2), NULL, 10);
    params[P_STEPS] = strtoull(getArgv(argv, 3), NULL, 10);
    params[P_K] = strtoull(getArgv(argv, 4), NULL, 10);
    params[P_M] = strtoull(getArgv(argv, 5), NULL, 10);
    params[P_RANKS] = rank_count();
    params[P_STEER] = argc == 9;
    if (params[P_STEER] && params[P_K] % params[P_M] != 0) {
        /* A restart then starts at a frame, whose alpha the steering decides again. */
        ocrPrintf("heat: k=%s: with steering, must be a multiple of m=%s\n", getArgv(argv, 4), getArgv(argv, 5));
        return 0;
    }
    if (params[P_Q] == 0 || params[P_N] % params[P_Q] != 0 || params[P_N] % 2 != 0) {
        ocrPrintf("heat: n=%s: must be even and a multiple of q=%s\n", getArgv(argv, 1), getArgv(argv, 2));
        return 0;
    }
    if (params[P_STEPS] == 0 || params[P_M] == 0 || params[P_RANKS] > MAX_RANKS) {
        ocrPrintf("heat: steps=%s and m=%s must be at least 1, ranks=%llu at most %d\n", getArgv(argv, 3),
                  getArgv(argv, 5), (unsigned long long)params[P_RANKS], MAX_RANKS);
        return 0;
    }
    return 1;
}

ocrGuid_t mainEdt(u32 paramc_, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    void* argv = depv[0].ptr;
    u64 params[MAX_PARAMS] = {0};
    params[P_T0] = now_ns();
    /* For a SIGKILL at a known point (flagship.py --hold): every tile stops after saving the
     * checkpoint of this step, and the run waits there, so the last complete one is known. */
    const char* hold = getenv("STRATA_FLAGSHIP_HOLD_AT");
    params[P_HOLD] = hold != NULL ? strtoull(hold, NULL, 10) : 0;
    if (!parse(argv, params)) {
        ocrAbort(2);
        return NULL_GUID;
    }
    const char* dir = getArgv(argv, 6);
    const char* segment = getArgc(argv) >= 8 ? getArgv(argv, 7) : "";
    char path[4096];
    snprintf(path, sizeof path, "%s/ckpt", dir);
    params[P_START] = ckpt_last_complete(params, dir);
    if (params[P_START] > 0)
        ocrPrintf("heat: restarting from the checkpoint of step %llu\n", (unsigned long long)params[P_START]);
    params[P_FIRST] = (params[P_START] + params[P_M] - 1) / params[P_M] * params[P_M];
    params[P_FRAMES] = params[P_FIRST] <= params[P_STEPS] ? (params[P_STEPS] - params[P_FIRST]) / params[P_M] + 1 : 0;
    if (params[P_FRAMES] > MAX_FRAMES) {
        ocrPrintf("heat: m=%s: %llu frames, at most %d\n", getArgv(argv, 5), (unsigned long long)params[P_FRAMES],
                  MAX_FRAMES);
        ocrAbort(2);
        return NULL_GUID;
    }
    snprintf(path, sizeof path, "%s/field.bin", dir);
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
    snprintf(path, sizeof path, "%s/ckpt", dir);
    if (fd < 0 || ftruncate(fd, (off_t)(params[P_N] * params[P_N] * sizeof(double))) != 0 || close(fd) != 0 ||
        (mkdir(path, 0700) != 0 && errno != EEXIST)) {
        ocrPrintf("heat: dir=%s: cannot create field.bin and ckpt/ in it: %s\n", dir, strerror(errno));
        ocrAbort(4);
        return NULL_GUID;
    }
    ocrGuid_t args, step, setup, start, done, finished, video;
    char* text;
    ocrDbCreate(&args, (void**)&text, strlen(dir) + strlen(segment) + 2, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    strcpy(text, dir);
    strcpy(text + strlen(dir) + 1, segment);
    ocrDbRelease(args);
    params[P_ARGS] = (u64)args.guid;
    ocrEdtTemplateCreate(&step, step_edt, EDT_PARAM_UNK, EDT_PARAM_UNK);
    params[P_TPL] = (u64)step.guid;
    ocrEventCreate(&video, OCR_EVENT_STICKY_T, EVT_PROP_NONE);
    params[P_VIDEO] = (u64)video.guid;
    create_frames(params, args);

    ocrEdtTemplateCreate(&start, start_edt, EDT_PARAM_UNK, (u32)(1 + params[P_RANKS]));
    ocrGuid_t starter, ender;
    ocrEdtCreate(&starter, start, (u32)paramc(params), params, (u32)(1 + params[P_RANKS]), NULL, EDT_PROP_FINISH,
                 NULL_HINT, &finished);
    ocrEdtTemplateCreate(&done, done_edt, P_RANGE0, 2);
    ocrGuid_t ends[2] = {finished, video};
    ocrEdtCreate(&ender, done, P_RANGE0, params, 2, ends, EDT_PROP_NONE, NULL_HINT, NULL);
    /* A set-up EDT waits for its slot until the starter depends on its output event (a ONCE
     * event satisfied before anything depends on it would be lost). */
    ocrEdtTemplateCreate(&setup, setup_edt, EDT_PARAM_UNK, 1);
    for (u64 r = 0; r < params[P_RANKS]; ++r) {
        ocrHint_t hint;
        ocrGuid_t edt, made;
        ocrEdtCreate(&edt, setup, (u32)paramc(params), params, 1, NULL, EDT_PROP_NONE, on_rank(&hint, r, 1), &made);
        ocrAddDependence(made, starter, 1 + (u32)r, DB_MODE_RO);
        ocrAddDependence(args, edt, 0, DB_MODE_RO);
    }
    ocrAddDependence(args, starter, 0, DB_MODE_RO);
    return NULL_GUID;
}
