/* SPDX-License-Identifier: MIT */
/* What heat.c (the simulation) and heat_frames.c (frames, steering, video) of the flagship
 * share: the layout of every EDT's paramv, small helpers, and the per-rank counters that
 * feed the report. */
#ifndef STRATA_FLAGSHIP_HEAT_H
#define STRATA_FLAGSHIP_HEAT_H

#include <stdint.h>
#include <string.h>

#include "extensions/ocr-affinity.h"
#include "heat_kernel.h"
#include "ocr.h"

/* paramv of every EDT of the program: the run's shape, then one GUID range per rank (the
 * events bringing edges to that rank's tiles), one frame EDT per frame, and one event per
 * frame that brings the steps after it their alpha (with steering). */
enum {
    P_STEP,
    P_TILE,
    P_N,
    P_Q,
    P_STEPS,
    P_K,
    P_M,
    P_START,  /* the step the run starts from: 0, or the checkpoint it restarted from */
    P_FIRST,  /* the first frame's step */
    P_FRAMES, /* the frame count */
    P_STEER,  /* 1: alpha after each frame comes from the steering job (steer.cpp) */
    P_RANKS,
    P_ARGS, /* the data block of the text arguments: <dir>, then the frames segment */
    P_TPL,  /* the step EDTs' template */
    P_T0,
    P_VIDEO, /* the event satisfied once the video is written */
    P_HOLD,  /* $STRATA_FLAGSHIP_HOLD_AT: the step after whose checkpoint every tile stops */
    P_RANGE0
};
enum { EDGES = 4, MAX_RANKS = 64, MAX_FRAMES = 64, MAX_PARAMS = P_RANGE0 + MAX_RANKS + 2 * MAX_FRAMES };
/* alpha without steering, and before the first frame's decision */
static const double HEAT_ALPHA = 0.2;

static inline ocrGuid_t guid(u64 value) {
    return (ocrGuid_t){.guid = (intptr_t)value};
}
static inline u64 side(const u64* g) {
    return g[P_N] / g[P_Q];
}
static inline u64 paramc(const u64* g) {
    return P_RANGE0 + g[P_RANKS] + 2 * g[P_FRAMES];
}
static inline int rank_of_tile(const u64* g, u64 tile) {
    return heat_rank_of(tile, g[P_Q], (int)g[P_RANKS]);
}
/* The text arguments: <dir>, then the frames segment ("" for none). */
static inline const char* dir_of(const char* args) {
    return args;
}
static inline const char* segment_of(const char* args) {
    return args + strlen(args) + 1;
}

u64 rank_count(void);
u64 current_rank(void);
/* A hint placing an EDT (edt != 0) or a data block on `rank`. */
ocrHint_t* on_rank(ocrHint_t* hint, u64 rank, int edt);
u64 now_ns(void);

/* heat_frames.c: the frame EDTs (and the movie block, the alpha events) made by mainEdt; a
 * tile's copy sent to the frame of `step`, if one is taken then; the event that brings the
 * steps after `step` their alpha (NULL_GUID: HEAT_ALPHA). */
void create_frames(u64* params, ocrGuid_t args);
void send_frame_part(const u64* g, u64 step, u64 tile, const double* grid);
ocrGuid_t alpha_event_of(const u64* g, u64 step);

/* heat_ckpt.c: checkpoints in an MPI storage window per rank (its file <dir>/ckpt/rank-<r>.win),
 * the last CKPT_SLOTS saves of each tile. ckpt_open and ckpt_close are collective (one EDT per
 * rank calls each); ckpt_save makes a tile's values of `step` durable; ckpt_restore copies them
 * back; ckpt_last_complete reads the files (before any window exists): the last step whose every
 * tile is saved, 0 if none. The int ones return 0 on failure, after saying why. */
enum { CKPT_SLOTS = 3 };
int ckpt_open(const u64* g, const char* dir);
int ckpt_save(const u64* g, u64 step, u64 tile, const double* grid);
int ckpt_restore(const u64* g, u64 step, u64 tile, double* grid);
int ckpt_close(void);
u64 ckpt_last_complete(const u64* g, const char* dir);
void ckpt_path(char* path, size_t size, const char* dir, u64 rank);

/* Counted by each rank, printed when it exits (heat.c): the report's figures. */
struct heat_counters {
    u64 rank;
    u64 mpi_payload_bytes; /* edges and frame copies sent to another rank */
    u64 checkpoints, checkpoint_bytes, checkpoint_ns;
    u64 frames, frame_bytes, frame_send_ns; /* handed through the port, by handle */
    u64 steer_ns;                           /* waiting for the steering job's alpha */
    u64 movie_bytes, video_bytes, ffmpeg_ns;
};
extern struct heat_counters heat_count;
#define HEAT_COUNT(field, value) __atomic_fetch_add(&heat_count.field, (value), __ATOMIC_RELAXED)

#endif /* STRATA_FLAGSHIP_HEAT_H */
