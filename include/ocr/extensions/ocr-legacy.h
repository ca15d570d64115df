/* SPDX-License-Identifier: MIT */
/* Legacy interoperation (OCR 1.2 extension, ENABLE_EXTENSION_LEGACY): a C
 * program with its own main() starts the runtime, runs DAGs and waits for
 * their results.
 *
 *   ocrConfig_t cfg; ocrParseArgs(argc, argv, &cfg);
 *   ocrGuid_t ctx;   ocrLegacyInit(&ctx, &cfg);
 *   ocrLegacySpawnOCR(&handle, finishTemplate, paramc, paramv, depc, depv, ctx);
 *   ocrLegacyBlockProgress(handle, &db, &ptr, &size, LEGACY_PROP_NONE);
 *   ocrEventDestroy(handle);
 *   return ocrLegacyFinalize(ctx, false);
 *
 * Such a program still links with -lstrata-ocr and defines no mainEdt.
 * Runtime options come from the environment as for any OCR program
 * (STRATA_CPUS, STRATA_WORKERS, STRATA_MONITOR, ...; `strata ocr` sets
 * them); the worker count also from ocrConfig's iniFile. One context per
 * process at a time. The calls are made from the program's own threads, not
 * from EDTs. */
#ifndef STRATA_OCR_LEGACY_H
#define STRATA_OCR_LEGACY_H

#include "../ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The runtime's configuration: the program's arguments (without the
 *  reference's `-ocr:cfg FILE`) and the reference's configuration file, of
 *  which strata reads the worker count (NULL: none). */
typedef struct _ocrConfig_t {
    int userArgc;
    char** userArgv;
    const char* iniFile;
} ocrConfig_t;

/** Fills ocrConfig: argc/argv without `-ocr:cfg FILE`, and iniFile from
 *  there or $OCR_CONFIG. */
void ocrParseArgs(int argc, const char* argv[], ocrConfig_t* ocrConfig);
/** Starts the runtime; *legacyContext names it. Prints the reason and exits
 *  with code 2 when the runtime cannot start (as libstrata-ocr's main does). */
void ocrLegacyInit(ocrGuid_t* legacyContext, ocrConfig_t* ocrConfig);
/** Runs an EDT of finishEdtTemplate as a FINISH EDT; *handle is a STICKY event
 *  satisfied, when it and every EDT it created completed, with the GUID the
 *  EDT returned. Destroy the handle with ocrEventDestroy after waiting. */
u8 ocrLegacySpawnOCR(ocrGuid_t* handle, ocrGuid_t finishEdtTemplate, u64 paramc, u64* paramv, u64 depc, ocrGuid_t* depv,
                     ocrGuid_t legacyContext);
/** Blocks the calling (non-EDT) thread until `handle` (a persistent event) is
 *  satisfied; then *guid, *result and *size (each may be NULL) describe the
 *  data block it carries (NULL_GUID, NULL, 0 for none). OCR_EINVAL: handle is
 *  not a live event (LEGACY_PROP_WAIT_FOR_CREATE: waits for it to be created
 *  at that labeled GUID); OCR_ECANCELED: the program shut down first. */
u8 ocrLegacyBlockProgress(ocrGuid_t handle, ocrGuid_t* guid, void** result, u64* size, u16 properties);
/** Deprecated form of ocrLegacyBlockProgress: the data block's GUID. */
ocrGuid_t ocrWait(ocrGuid_t outputEvent);
/** Stops the runtime and returns the exit code (0, or ocrAbort's code). With
 *  runUntilShutdown, first waits for ocrShutdown or ocrAbort. */
u8 ocrLegacyFinalize(ocrGuid_t legacyContext, bool runUntilShutdown);

#define LEGACY_BLOCK_PROGRESS_5_ARGS 1

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_LEGACY_H */
