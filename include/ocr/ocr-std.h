/* Program-wide calls: shutdown, abort, printing, argc/argv. */
#ifndef STRATA_OCR_STD_H
#define STRATA_OCR_STD_H

#include "ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The program's entry EDT, defined by the program: paramc 0, depc 1; depv[0]
 *  is a data block holding argc/argv (read with ocrGetArgc / ocrGetArgv). */
ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]);

/** Ends the program once running EDTs return; EDTs not yet runnable never
 *  run. Exit code 0. */
void ocrShutdown(void);
/** Like ocrShutdown with exit code `errorCode`. */
void ocrAbort(u8 errorCode);
/** printf to standard output, one call per line without interleaving. */
u32 ocrPrintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/** argc and argv from mainEdt's data block. */
u64 ocrGetArgc(void* dbPtr);
char* ocrGetArgv(void* dbPtr, u64 count);

#ifndef STRATA_OCR_NO_CALL_SITES
#define ocrShutdown() STRATA_OCR_AT(ocrShutdown())
#define ocrAbort(...) STRATA_OCR_AT(ocrAbort(__VA_ARGS__))
#endif

/* Older spellings, still common in OCR programs. */
#define PRINTF ocrPrintf
#define getArgc ocrGetArgc
#define getArgv ocrGetArgv

/** Prints the failed expression with its file and line and aborts the process. */
void strataOcrAssertFailed(const char* expression, const char* file, int line) __attribute__((noreturn));
#ifndef ASSERT
#define ASSERT(a) ((a) ? (void)0 : strataOcrAssertFailed(#a, __FILE__, __LINE__))
#endif
/** Prints "PASSED: <message>" or "FAILED: <message>"; a failure ends the program with exit code 1. */
#ifndef VERIFY
#define VERIFY(cond, ...)                      \
    do {                                       \
        if (cond) {                            \
            ocrPrintf("PASSED: " __VA_ARGS__); \
        } else {                               \
            ocrPrintf("FAILED: " __VA_ARGS__); \
            ocrAbort(1);                       \
        }                                      \
    } while (0)
#endif

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_STD_H */
