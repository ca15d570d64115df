/* SPDX-License-Identifier: MIT */
/* External programs as tasks (strata extension, paper 000 §3; docs/external.md).
 *
 * An external task is a program the runtime starts when the task's input
 * slots are satisfied. Its inputs are data blocks the program sees as files;
 * each output is a file the program writes, adopted as a new data block and
 * passed to the output event given for it. Programs are described by name in
 * a TOML file (STRATA_EXTERNAL_CONFIG, `strata ocr --external-config FILE`,
 * or ocrExternalConfigLoad):
 *
 *   [convert]
 *   command = "./convert --in=[in:0] --out=[out:0] --size=[arg:int:1]x[arg:int:1]"
 *
 *   ocrGuid_t tpl, task, outs[1];
 *   ocrExternalTemplateCreate(&tpl, "convert", 2, 1);
 *   ocrEventCreate(&outs[0], OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
 *   ocrAddDependence(outs[0], sink, 0, DB_MODE_RO);
 *   ocrExternalTaskCreate(&task, tpl, 2, NULL, 1, outs);
 *   ocrAddDependence(data, task, 0, DB_MODE_RO);
 *   ocrAddDependence(size, task, 1, DB_MODE_RO);
 *
 * Inputs: whatever mode a dependence names, the task holds the block so that
 * RW and EW requests wait until the program exits and RO/CONST ones do not;
 * the program can never change an input's bytes.
 *
 * Failure: a program that cannot start, exits with a code not in
 * success_exit_codes, dies of a signal, times out or leaves an output missing
 * satisfies every output event with NULL_GUID (no half-made data block) and
 * logs the command, the exit status and the tail of its stderr. The task's
 * GUID then answers ocrExternalTaskStatus().
 *
 * Thread safety: every call may be made from any EDT. */
#ifndef STRATA_OCR_EXTERNAL_H
#define STRATA_OCR_EXTERNAL_H

#include "../ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How an external task ended. */
typedef enum {
    OCR_EXTERNAL_PENDING = 0,   /**< not started yet, or still running */
    OCR_EXTERNAL_OK = 1,        /**< exited with a success code; every output event got its block */
    OCR_EXTERNAL_EXIT = 2,      /**< exited with another code (exitCode) */
    OCR_EXTERNAL_SIGNAL = 3,    /**< killed by a signal (signal) */
    OCR_EXTERNAL_TIMEOUT = 4,   /**< ran past its timeout; its process group was killed */
    OCR_EXTERNAL_NO_OUTPUT = 5, /**< exited well but left output `output` empty */
    OCR_EXTERNAL_NO_START = 6,  /**< could not be started: bad argument block, exposure or spawn failure */
    OCR_EXTERNAL_CANCELLED = 7  /**< the program ended (shutdown, SIGINT/SIGTERM) while it ran */
} ocrExternalState_t;

typedef struct {
    ocrExternalState_t state;
    s32 exitCode; /**< OCR_EXTERNAL_OK / _EXIT / _NO_OUTPUT: the exit code, else -1 */
    s32 signal;   /**< OCR_EXTERNAL_SIGNAL / _TIMEOUT: the signal that ended it, else 0 */
    u32 output;   /**< OCR_EXTERNAL_NO_OUTPUT: the index of the missing output */
} ocrExternalStatus_t;

/** Reads the configuration file `path` (TOML) for the templates created
 *  from now on. Without it, the first ocrExternalTemplateCreate reads
 *  $STRATA_EXTERNAL_CONFIG. OCR_EINVAL (with the file, line, entry, key,
 *  value and cause on stderr) for a file that does not parse or check. */
u8 ocrExternalConfigLoad(const char* path);

/** A template for the configuration entry `name`, with nInputs input slots
 *  and nOutputs outputs. OCR_EINVAL when there is no such entry or its
 *  command names an input or output beyond these counts (the message names
 *  the file, line, entry, key, value and cause). */
u8 ocrExternalTemplateCreate_internal(ocrGuid_t* guid, const char* name, u32 nInputs, u32 nOutputs);
u8 ocrExternalTemplateDestroy(ocrGuid_t guid);

/** Creates an external task from a template. depc must equal the template's
 *  nInputs; depv may be NULL or hold GUIDs as for ocrEdtCreate. outc must
 *  equal nOutputs, and outputEvents[k] (an event created by the program,
 *  connected before the inputs are satisfied) receives output k's data block
 *  (or NULL_GUID on failure). The program starts once every input is
 *  satisfied, possibly before this call returns. */
u8 ocrExternalTaskCreate(ocrGuid_t* guid, ocrGuid_t templateGuid, u32 depc, ocrGuid_t* depv, u32 outc,
                         ocrGuid_t* outputEvents);
/** Destroys a task whose inputs are not all satisfied yet, or forgets the
 *  status of one that finished. OCR_EPERM while its program runs. */
u8 ocrExternalTaskDestroy(ocrGuid_t guid);

/** How the task `guid` ended (OCR_EXTERNAL_PENDING before). Valid until
 *  ocrExternalTaskDestroy(guid) or the end of the run; OCR_EINVAL for a GUID
 *  that is not an external task. Typically called by the EDT that receives
 *  the outputs, with the task GUID passed in its paramv. */
u8 ocrExternalTaskStatus(ocrGuid_t guid, ocrExternalStatus_t* status);

#ifndef STRATA_OCR_NO_CALL_SITES
#define ocrExternalConfigLoad(...) STRATA_OCR_AT(ocrExternalConfigLoad(__VA_ARGS__))
#define ocrExternalTemplateCreate(...) STRATA_OCR_AT(ocrExternalTemplateCreate_internal(__VA_ARGS__))
#define ocrExternalTemplateDestroy(...) STRATA_OCR_AT(ocrExternalTemplateDestroy(__VA_ARGS__))
#define ocrExternalTaskCreate(...) STRATA_OCR_AT(ocrExternalTaskCreate(__VA_ARGS__))
#define ocrExternalTaskDestroy(...) STRATA_OCR_AT(ocrExternalTaskDestroy(__VA_ARGS__))
#else
#define ocrExternalTemplateCreate ocrExternalTemplateCreate_internal
#endif

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_EXTERNAL_H */
