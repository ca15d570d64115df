/* SPDX-License-Identifier: MIT */
/* Program-wide calls: shutdown, abort, printing, argc/argv. */
#ifndef STRATA_OCR_STD_H
#define STRATA_OCR_STD_H

#include "ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The program defines its entry EDT, mainEdt (paramc 0, depc 1; depv[0] is
 * a data block holding argc/argv, read with getArgc / getArgv), in any form
 * compatible with ocrEdt_t: as in the reference, no header declares it. */

/** Ends the program once running EDTs return; EDTs not yet runnable never
 *  run. Exit code 0. */
void ocrShutdown(void);
/** Like ocrShutdown with exit code `errorCode`. */
void ocrAbort(u8 errorCode);
/** printf to standard output, one call per line without interleaving.
 *  Declared without a printf-format attribute, as in the reference headers:
 *  programs that print a u64 with %d still build with -Wall -Werror. */
u32 ocrPrintf(const char* fmt, ...);
/** ocrPrintf's older name; a function, as in the reference, so a program may
 *  define a PRINTF macro of its own. */
u32 PRINTF(const char* fmt, ...);
/** snprintf into buf (at most size bytes, NUL included); returns what snprintf returns. */
u32 SNPRINTF(char* buf, u32 size, const char* fmt, ...);

/** argc and argv from mainEdt's data block; getArgc and getArgv are the
 *  reference's names (functions too). */
u64 ocrGetArgc(void* dbPtr);
char* ocrGetArgv(void* dbPtr, u64 count);
u64 getArgc(void* dbPtr);
char* getArgv(void* dbPtr, u64 count);

#ifndef STRATA_OCR_NO_CALL_SITES
#define ocrShutdown() STRATA_OCR_AT(ocrShutdown())
#define ocrAbort(...) STRATA_OCR_AT(ocrAbort(__VA_ARGS__))
#endif

/** With val false: prints the expression, file and line to standard error and
 *  aborts the process (SIGABRT), whatever EDTs are running. Called through
 *  ocrAssert. */
void _ocrAssert(bool val, const char* str, const char* file, u32 line);

/* As in the reference: with OCR_ASSERT, ocrAssert (and the deprecated ASSERT)
 * check their condition; without it they compile to nothing (the condition is
 * not evaluated, but stays "used" so -Wall does not warn). Both end in ';' as
 * the reference's do. */
#ifdef OCR_ASSERT
#define ocrAssert(a)                                                         \
    do {                                                                     \
        _ocrAssert(STRATA_OCR_CAST(bool, (a) != 0), #a, __FILE__, __LINE__); \
    } while (0);
#ifndef ASSERT
#define ASSERT(a) ocrAssert(a)
#endif
#else
#define ocrAssert(a)     \
    do {                 \
        (void)sizeof(a); \
    } while (0);
#ifndef ASSERT
#define ASSERT(a) ocrAssert(a)
#endif
#endif

/** Prints "PASSED @ 'file:line' <message>" or "FAILURE @ 'file:line' <message>"
 *  and goes on, as the reference's VERIFY does: it never ends the program. */
#ifndef VERIFY
#define VERIFY(cond, format, ...)                                                      \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            ocrPrintf("FAILURE @ '%s:%d' " format, __FILE__, __LINE__, ##__VA_ARGS__); \
        } else {                                                                       \
            ocrPrintf("PASSED @ '%s:%d' " format, __FILE__, __LINE__, ##__VA_ARGS__);  \
        }                                                                              \
    } while (0);
#endif

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_STD_H */
