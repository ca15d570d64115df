/* SPDX-License-Identifier: MIT */
/* The flagship's frames (examples/flagship/frames.cpp): the C side of handing a frame of the
 * heat field through a strata shm port, by handle, and of receiving the steering's alpha.
 *
 * analysis.py creates the segment and its port "frames" before the OCR job starts (with
 * steering, for 2 consumers: itself and the steering job's bridge, steer.cpp, which also
 * makes the port "steer"). The frame EDT of rank 0, on the same node, opens them; each frame
 * is a new strata::vector<double> of n*n+2 values (the step, n, then the field, row major) in
 * the segment, and its handle is what goes through the port: the consumers map the same
 * pages. A frame stays in the segment until the segment goes (analysis.py sizes it for all).
 *
 * Thread safety: one frame EDT at a time (heat_frames.c chains them). Errors print one line
 * naming the segment, the port and the cause; the caller aborts the run. */
#ifndef STRATA_FLAGSHIP_FRAMES_H
#define STRATA_FLAGSHIP_FRAMES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct flagship_frames flagship_frames;

/** The inline bytes of a message of the port "steer" (steer.cpp sends, the frame EDT receives). */
typedef struct {
    uint64_t frame; /**< the frame's index in the run: the answer's sequence check */
    double alpha;   /**< alpha of the steps up to the next frame */
} flagship_steer_message;

/** The producer end of `segment`'s port "frames" (and, if `steer`, the consumer end of its
 *  port "steer"), opened on the first call; NULL on error. */
flagship_frames* flagship_frames_open(const char* segment, int steer);
/** A new frame of step `step`, n×n: where to write its field; NULL on error. */
double* flagship_frames_field(flagship_frames* frames, uint64_t step, uint64_t n);
/** Sends the frame made last by handle, waiting while both slots are held. 0, or -1. */
int flagship_frames_send(flagship_frames* frames);
/** Waits for the steering's answer to frame `frame` (the frame's index in this run): alpha
 *  for the steps up to the next frame. 0, or -1 (also for an answer to another frame). */
int flagship_frames_steer(flagship_frames* frames, uint64_t frame, double* alpha);
/** Closes the ports (the consumers' stream ends) and detaches from the segment. 0, or -1. */
int flagship_frames_close(flagship_frames* frames);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_FLAGSHIP_FRAMES_H */
