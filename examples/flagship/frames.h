/* SPDX-License-Identifier: MIT */
/* The flagship's frames (examples/flagship/frames.cpp): the C side of handing a frame of the
 * heat field to the Python analysis (analysis.py) through a strata shm port, by handle.
 *
 * analysis.py creates the segment and its port "frames" (2 slots, 1 consumer) before the OCR
 * job starts; the frame EDT of rank 0, which runs on the analysis's node, opens them as
 * producer, makes each frame a strata::vector<double> of n*n+2 values (the step, n, then the
 * field, row major) in the segment and sends its handle: the analysis maps the same pages.
 * A frame stays in the segment until the segment goes (the analysis sizes it for every frame).
 *
 * Thread safety: one frame EDT at a time (heat.c chains them). Errors print one line naming
 * the segment and the cause; the caller aborts the run. */
#ifndef STRATA_FLAGSHIP_FRAMES_H
#define STRATA_FLAGSHIP_FRAMES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct flagship_frames flagship_frames;

/** The producer end of `segment`'s port "frames", opened on the first call; NULL on error. */
flagship_frames* flagship_frames_open(const char* segment);
/** A new frame of step `step`, n×n: where to write its field; NULL on error. */
double* flagship_frames_field(flagship_frames* frames, uint64_t step, uint64_t n);
/** Sends the frame made last by handle (waiting while both slots are held); `last` closes
 *  the port, which ends the analysis's stream. 0, or -1 on error. */
int flagship_frames_send(flagship_frames* frames, int last);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_FLAGSHIP_FRAMES_H */
