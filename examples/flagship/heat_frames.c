/* SPDX-License-Identifier: MIT */
/* The flagship's frames (heat.c has the simulation): every m steps the tiles' copies meet in
 * a frame EDT on rank 0, which
 *   - writes the field into a new vector of the analysis's segment and hands it over by handle
 *     through the port "frames" (frames.cpp): to analysis.py and, with steering, to the
 *     steering job's bridge (steer.cpp);
 *   - with steering, waits for the alpha the steering job decided from the frame's global
 *     statistics (shared across nodes through the DSM) and passes it, as a data block, to
 *     every step until the next frame;
 *   - adds the field as 8-bit pixels to the movie block; after the last frame, ffmpeg runs
 *     as an external task on that block, exposed to it as a file, and writes an MP4 file
 *     that becomes a data block, written to <dir>/heat.mp4. */
#include <stdio.h>

#include "extensions/ocr-external.h"
#include "frames.h"
#include "heat.h"

static ocrGuid_t frame_guid(const u64* g, u64 f) {
    return guid(g[P_RANGE0 + g[P_RANKS] + f]);
}

static ocrGuid_t alpha_guid(const u64* g, u64 f) {
    return guid(g[P_RANGE0 + g[P_RANKS] + g[P_FRAMES] + f]);
}

ocrGuid_t alpha_event_of(const u64* g, u64 step) {
    if (!g[P_STEER] || step <= g[P_FIRST]) return NULL_GUID;
    return alpha_guid(g, (step - 1 - g[P_FIRST]) / g[P_M]);
}

void send_frame_part(const u64* g, u64 step, u64 tile, const double* grid) {
    if (g[P_FRAMES] == 0 || step < g[P_FIRST] || (step - g[P_FIRST]) % g[P_M] != 0) return;
    const u64 bytes = side(g) * side(g) * sizeof(double);
    ocrHint_t hint;
    ocrGuid_t part;
    double* data;
    ocrDbCreate(&part, (void**)&data, bytes, DB_PROP_NONE, on_rank(&hint, 0, 0), NO_ALLOC);
    memcpy(data, grid, bytes);
    ocrDbRelease(part);
    if (current_rank() != 0) HEAT_COUNT(mpi_payload_bytes, bytes);
    ocrAddDependence(part, frame_guid(g, (step - g[P_FIRST]) / g[P_M]), (u32)tile, DB_MODE_RO);
}

/* The video, once ffmpeg ended: written to <dir>/heat.mp4. paramv: the task, the video
 * event, when the task was made. */
static ocrGuid_t video_edt(u32 paramc_, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    HEAT_COUNT(ffmpeg_ns, now_ns() - paramv[2]);
    if (ocrGuidIsNull(depv[0].guid)) {
        ocrExternalStatus_t st;
        ocrExternalTaskStatus(guid(paramv[0]), &st);
        ocrPrintf("heat: ffmpeg failed: state %d, exit code %d, signal %d\n", st.state, st.exitCode, st.signal);
        ocrAbort(6);
        return NULL_GUID;
    }
    u64 size = 0;
    ocrDbGetSize(depv[0].guid, &size);
    char path[4096];
    snprintf(path, sizeof path, "%s/heat.mp4", dir_of(depv[1].ptr));
    FILE* f = fopen(path, "we");
    const int ok = f != NULL && fwrite(depv[0].ptr, 1, size, f) == size;
    if (f == NULL || fclose(f) != 0 || !ok) {
        ocrPrintf("heat: cannot write %s\n", path);
        ocrAbort(4);
        return NULL_GUID;
    }
    HEAT_COUNT(video_bytes, size);
    ocrPrintf("heat: video %s (%llu bytes)\n", path, (unsigned long long)size);
    ocrDbDestroy(depv[0].guid);
    ocrEventSatisfy(guid(paramv[1]), NULL_GUID);
    return NULL_GUID;
}

/* After the last frame: ffmpeg ([encode] of flagship.toml) on the movie block. */
static void encode_video(const u64* g, ocrGuid_t movie, ocrGuid_t args) {
    ocrGuid_t tpl, task, out, geometry, show_tpl, show;
    char* text;
    ocrEventCreate(&out, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
    if (ocrExternalTemplateCreate(&tpl, "encode", 2, 1) != 0 ||
        ocrExternalTaskCreate(&task, tpl, 2, NULL, 1, &out) != 0) {
        ocrPrintf("heat: no [encode] program: run with --external-config examples/flagship/flagship.toml\n");
        ocrAbort(6);
        return;
    }
    u64 params[3] = {(u64)task.guid, g[P_VIDEO], now_ns()};
    ocrEdtTemplateCreate(&show_tpl, video_edt, 3, 2);
    ocrEdtCreate(&show, show_tpl, 3, params, 2, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(out, show, 0, DB_MODE_RO);
    ocrAddDependence(args, show, 1, DB_MODE_RO);
    ocrDbCreate(&geometry, (void**)&text, 64, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    snprintf(text, 64, "%llux%llu", (unsigned long long)g[P_N], (unsigned long long)g[P_N]);
    ocrDbRelease(geometry);
    HEAT_COUNT(movie_bytes, g[P_FRAMES] * g[P_N] * g[P_N]);
    ocrAddDependence(movie, task, 0, DB_MODE_RO);
    ocrAddDependence(geometry, task, 1, DB_MODE_RO);
}

/* The port's part of a frame: the field handed over by handle, then (with steering, and
 * when steps follow the frame) the alpha the steering job decided, into `alpha`.
 * 0, or -1 after the error was said. */
static int hand_over(const u64* g, flagship_frames* frames, int last, double* alpha) {
    u64 t0 = now_ns();
    if (flagship_frames_send(frames) != 0) return -1;
    HEAT_COUNT(frames, 1);
    HEAT_COUNT(frame_bytes, (g[P_N] * g[P_N] + 2) * sizeof(double));
    HEAT_COUNT(frame_send_ns, now_ns() - t0);
    if (g[P_STEER] && g[P_STEP] < g[P_STEPS]) {
        t0 = now_ns();
        if (flagship_frames_steer(frames, g[P_TILE], alpha) != 0) return -1;
        HEAT_COUNT(steer_ns, now_ns() - t0);
    }
    return last ? flagship_frames_close(frames) : 0;
}

/* Passes alpha to the steps after frame f (the event every one of them depends on). */
static void pass_alpha(const u64* g, double alpha) {
    ocrGuid_t db;
    double* value;
    ocrDbCreate(&db, (void**)&value, sizeof(double), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *value = alpha;
    ocrDbRelease(db);
    ocrEventSatisfy(alpha_guid(g, g[P_TILE]), db);
}

/* On rank 0, one per frame, in order. depv: the tiles' copies (0..q*q-1), the movie block,
 * the previous frame's output event, the arguments. */
static ocrGuid_t frame_edt(u32 paramc_, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64* g = paramv;
    const u64 n = g[P_N], q = g[P_Q], b = side(g), f = g[P_TILE];
    const char* args = depv[q * q + 2].ptr;
    unsigned char* pixels = (unsigned char*)depv[q * q].ptr + f * n * n;
    flagship_frames* frames = *segment_of(args) != '\0' ? flagship_frames_open(segment_of(args), g[P_STEER]) : NULL;
    double* field = frames != NULL ? flagship_frames_field(frames, g[P_STEP], n) : NULL;
    if (*segment_of(args) != '\0' && field == NULL) {
        ocrAbort(5);
        return NULL_GUID;
    }
    for (u64 t = 0; t < q * q; ++t) {
        const double* tile = depv[t].ptr;
        const u64 ti = t / q, tj = t % q;
        for (u64 i = 0; i < b; ++i) {
            for (u64 j = 0; j < b; ++j) {
                const u64 at = (ti * b + i) * n + tj * b + j;
                pixels[at] = heat_pixel(tile[i * b + j]);
                if (field != NULL) field[at] = tile[i * b + j];
            }
        }
        ocrDbDestroy(depv[t].guid);
    }
    const int last = f + 1 == g[P_FRAMES];
    double alpha = HEAT_ALPHA;
    if (frames != NULL && hand_over(g, frames, last, &alpha) != 0) {
        ocrAbort(5);
        return NULL_GUID;
    }
    if (g[P_STEER] && g[P_STEP] < g[P_STEPS]) pass_alpha(g, alpha);
    if (last) {
        ocrDbRelease(depv[q * q].guid);
        encode_video(g, depv[q * q].guid, depv[q * q + 2].guid);
    }
    return NULL_GUID;
}

void create_frames(u64* params, ocrGuid_t args) {
    const u64 q = params[P_Q], frames = params[P_FRAMES];
    ocrGuid_t tpl, movie, previous = NULL_GUID;
    unsigned char* pixels;
    if (frames == 0) {
        ocrEventSatisfy(guid(params[P_VIDEO]), NULL_GUID);
        return;
    }
    ocrDbCreate(&movie, (void**)&pixels, frames * params[P_N] * params[P_N], DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    ocrDbRelease(movie);
    ocrEdtTemplateCreate(&tpl, frame_edt, EDT_PARAM_UNK, (u32)(q * q + 3));
    for (u64 f = 0; params[P_STEER] && f < frames; ++f) {
        ocrGuid_t event;
        ocrEventCreate(&event, OCR_EVENT_STICKY_T, EVT_PROP_TAKES_ARG);
        params[P_RANGE0 + params[P_RANKS] + frames + f] = (u64)event.guid;
    }
    /* Chained: frames reach the analysis in order. */
    for (u64 f = 0; f < frames; ++f) {
        ocrGuid_t edt, done;
        params[P_STEP] = params[P_FIRST] + f * params[P_M];
        params[P_TILE] = f;
        ocrEdtCreate(&edt, tpl, (u32)paramc(params), params, (u32)(q * q + 3), NULL, EDT_PROP_NONE, NULL_HINT, &done);
        params[P_RANGE0 + params[P_RANKS] + f] = (u64)edt.guid;
        ocrAddDependence(movie, edt, (u32)(q * q), DB_MODE_RW);
        ocrAddDependence(previous, edt, (u32)(q * q + 1), DB_MODE_RO);
        ocrAddDependence(args, edt, (u32)(q * q + 2), DB_MODE_RO);
        previous = done;
    }
}
