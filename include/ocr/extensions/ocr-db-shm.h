/* SPDX-License-Identifier: MIT */
/* Data blocks as strata shared objects (strata extension; docs/runtime.md,
 * "Shared data blocks").
 *
 * A data block placed in shared memory (ocrDbCreate with the hint
 * OCR_HINT_DB_INTER, or every block of a run with STRATA_OCR_DB_PLACEMENT=shared)
 * is the object "block" (a strata::vector<std::uint8_t> of the block's size)
 * in a strata segment of its own, strata-ocr-<pid>-<run>-<n>. Its handle lets
 * another process of the node load the block with no copy:
 *
 *   ocrDbShmHandle_t h;
 *   if (ocrDbGetShmHandle(db, &h) == 0) printf("%s\n", h.text);
 *
 *   // C++:    auto named = strata::parse_named_handle(text);
 *   //         auto seg = strata::open_segment(*named);
 *   //         auto v = seg->load<strata::vector<std::uint8_t>>(named->handle);
 *   // Python: a = strata.open_handle(text)      # a numpy uint8 array over the block
 *
 * Access: the handle is writable ("rw") when the caller may write the block
 * (an EDT holding it RW or EW, or code outside EDTs), else read-only ("ro"):
 * the loader then maps the segment PROT_READ and a numpy array of it is not
 * writeable. Writes through a writable handle are the caller's, as far as the
 * OCR rules go: make them before the caller releases the block.
 *
 * Liveness follows the segment's rules (docs/shm.md): every process that
 * loaded the block is a user of the segment; ocrDbDestroy (or the end of the
 * run) detaches the program, and the last user to detach removes the
 * segment. A loader that outlives the program keeps reading the bytes; a
 * handle loaded after every user left fails with not_found naming the segment.
 *
 * Thread safety: may be called from any EDT. */
#ifndef STRATA_OCR_DB_SHM_H
#define STRATA_OCR_DB_SHM_H

#include "../ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Room for the text form, with its NUL. */
#define OCR_DB_SHM_HANDLE_TEXT_MAX 320

typedef struct {
    /** "shm:<segment>:<segment id>:<generation>:<offset>:<type>:<ro|rw>"
     *  (the numbers in hexadecimal): one word for a command line, what
     *  strata::parse_named_handle and strata.open_handle read. */
    char text[OCR_DB_SHM_HANDLE_TEXT_MAX];
    char segment[208]; /**< the segment's name */
    u64 segmentId;     /**< strata::Handle: the segment's id, */
    u64 generation;    /**< the object's generation, */
    u64 offset;        /**< its offset in the segment */
    u64 type;          /**< and its type id (strata::vector<std::uint8_t>) */
    u64 size;          /**< the block's size in bytes */
    u8 writable;       /**< 1: "rw", 0: "ro" */
} ocrDbShmHandle_t;

/** The shm handle of data block `db`.
 *  OCR_EINVAL: `handle` is NULL or `db` is not a live data block;
 *  OCR_EPERM: the block is not placed in shared memory (the warning names its
 *  placement and how to place it there);
 *  OCR_EACCES: called from an EDT that neither holds the block nor has it
 *  among its dependences. Each failure logs one line naming db and the cause. */
u8 ocrDbGetShmHandle(ocrGuid_t db, ocrDbShmHandle_t* handle);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_DB_SHM_H */
