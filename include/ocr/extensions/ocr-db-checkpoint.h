/* SPDX-License-Identifier: MIT */
/* Checkpointing data blocks to files and restoring them (strata extension;
 * docs/runtime.md, "Checkpoints of data blocks").
 *
 *   // every k steps, in an EDT holding the field:
 *   ocrDbCheckpoint(field, "/scratch/run7/field.ckpt", OCR_DB_CHECKPOINT_SAVE);
 *   // after a restart, before the first step (an RW or EW hold):
 *   ocrDbCheckpoint(field, "/scratch/run7/field.ckpt", OCR_DB_CHECKPOINT_RESTORE);
 *
 * SAVE writes the block's bytes to `<path>.tmp-<pid>` (created O_EXCL |
 * O_NOFOLLOW, mode 0600), makes them durable (fdatasync), renames that file
 * over `path` and syncs the directory: `path` holds the previous checkpoint or
 * this one, never a mix, whenever the program is killed. A block placed on
 * storage (OCR_HINT_DB_FAR, STRATA_OCR_DB_PLACEMENT=storage), and the file
 * half of a combined one (STRATA_OCR_DB_PLACEMENT=combined), is copied from
 * its region's file to the checkpoint inside the kernel (copy_file_range,
 * through the page cache its mapping writes), so a block larger than memory
 * is not paged through the program; other bytes are written from memory.
 * A temporary file of a killed SAVE is removed by the next SAVE to `path`.
 *
 * RESTORE replaces the block's bytes with the file's, which must be a regular
 * file of this user (not a link) holding exactly the block's size.
 *
 * Returns 0, or: OCR_EINVAL (`path` NULL or empty, `db` not a live block,
 * an unknown `op`, a restore file of another size or not a regular file),
 * OCR_EACCES (the calling EDT does not hold the block; RESTORE without an
 * RW or EW hold; a file of another user), OCR_ENOSPC, OCR_EIO. Each failure
 * logs one line naming the block, the path, the operation and the cause.
 *
 * Thread safety: may be called from any EDT; two SAVEs to the same path at
 * once leave one of the two. */
#ifndef STRATA_OCR_DB_CHECKPOINT_H
#define STRATA_OCR_DB_CHECKPOINT_H

#include "../ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    OCR_DB_CHECKPOINT_SAVE = 0,   /**< block -> file, atomically replacing it */
    OCR_DB_CHECKPOINT_RESTORE = 1 /**< file -> block */
} ocrDbCheckpointOp_t;

u8 ocrDbCheckpoint(ocrGuid_t db, const char* path, ocrDbCheckpointOp_t op);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_DB_CHECKPOINT_H */
