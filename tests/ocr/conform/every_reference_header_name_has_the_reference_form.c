/* SPDX-License-Identifier: MIT */
/* Each macro and declaration of the reference runtime's public headers that a
 * proxy application may use is there in the reference's form (issue 26):
 * the GUID helpers of ocr-guid-functions.h (GUID_ASSIGN_VALUE, GUIDFS(g),
 * GUIDLx, GUID_SIZE, IS_GUID_ERROR), the numeric OCR_E* codes, the version
 * macros, ocrHintSetValue and friends, the data-block heap calls of
 * ocr-db.h, the trace enums, AFFINITY_SIM, GUID_USER_EVENT_COLLECTIVE, the
 * reduction operator's field macros, ocrInjectFault; PRINTF, getArgc and
 * getArgv are functions (a program may define a PRINTF macro of its own),
 * and addValueToGuid comes with ocr.h alone. */
#include "extensions/ocr-affinity.h"
#include "extensions/ocr-hints.h"
#include "extensions/ocr-labeling.h"
#include "extensions/ocr-pause.h"
#include "extensions/ocr-reduction-event.h"
#include "ocr.h"

/* The reference declares these as functions: a program's own macro of the
 * same name is no redefinition. */
#define PRINTF(...) ocrPrintf(__VA_ARGS__)
#define getArgc(db) (ocrGetArgc(db))

/* The reference's error codes are fixed numbers, usable in #if. */
#if OCR_EPERM != 1 || OCR_ENOENT != 2 || OCR_EINTR != 4 || OCR_EIO != 5 || OCR_ENXIO != 6 || OCR_E2BIG != 7 || \
    OCR_ENOEXEC != 8 || OCR_EAGAIN != 11 || OCR_ENOMEM != 12 || OCR_EACCES != 13 || OCR_EFAULT != 14 ||        \
    OCR_EBUSY != 16 || OCR_ENODEV != 19 || OCR_EINVAL != 22 || OCR_ENOSPC != 28 || OCR_ESPIPE != 29 ||         \
    OCR_EROFS != 30 || OCR_EDOM != 33 || OCR_ERANGE != 34 || OCR_ENOSYS != 38 || OCR_ENOTEMPTY != 39 ||        \
    OCR_ENOTSUP != 95 || OCR_EGUIDEXISTS != 100 || OCR_EACQ != 101 || OCR_EPEND != 102 || OCR_ENOP != 103 ||   \
    OCR_EDEFERRED != 104 || OCR_ECANCELED != 125
#error "OCR error codes differ from the reference's"
#endif

#if REDOP_BIT_COUNT != 16 || REDOP_SIZE(OPERATOR) != 3 || REDOP_SIDX(OPERATOR) != 10 || REDOP_EIDX(DATUM_SIZE) != 2
#error "reduction operator fields differ from the reference's"
#endif

#if EXTENSION_LEGACY_BITPOS != 1 || EXTENSION_LABELING_BITPOS != 7 || OCR_VERSION_LABELING_BIT != (1 << 7)
#error "extension bits differ from the reference's"
#endif

#define CHECK(cond)                                                       \
    do {                                                                  \
        if (!(cond)) {                                                    \
            ocrPrintf("FAILED: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
            ocrAbort(1);                                                  \
            return NULL_GUID;                                             \
        }                                                                 \
    } while (0)

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)paramv;
    (void)depc;
    CHECK(getArgc(depv[0].ptr) >= 1);
    char* (*argv_of)(void*, u64) = getArgv;
    CHECK(argv_of(depv[0].ptr, 0) != NULL);

    /* ocr-guid-functions.h */
    ocrGuid_t a = NULL_GUID;
    ocrGuid_t b = ERROR_GUID;
    GUID_ASSIGN_VALUE(a, b);
    CHECK(IS_GUID_ERROR(a) && IS_GUID_EQUAL(a, b) && !IS_GUID_NULL(a) && !IS_GUID_UNINITIALIZED(a));
    CHECK(IS_GUID_LESS_THAN(ERROR_GUID, NULL_GUID));
    CHECK(GUID_SIZE(a) == GUID_BIT_COUNT);
    PRINTF("GUIDs " GUIDSx " " GUIDLx "\n", GUIDFS(a), GUIDFL(b));

    /* ocr-version.h */
    u8 version[] = OCR_VERSION;
    CHECK(OCR_VERSION_GET_MAJOR(version) == OCR_MAJOR_VERSION);
    CHECK(OCR_VERSION_GET_MINOR(version) == OCR_MINOR_VERSION);
    CHECK(OCR_VERSION_GET_PATCH(version) == OCR_PATCH_VERSION);
    CHECK((OCR_VERSION_EXTENSION_BITMAP & OCR_VERSION_LABELING_BIT) != 0);
    CHECK((OCR_VERSION_EXTENSION_BITMAP & OCR_VERSION_LEGACY_BIT) != 0);
    CHECK(PICK_1_1(1, 2) == 1);

    /* extensions/ocr-hints.h: the 1.2.0 names */
    ocrHint_t hint;
    ocrHintVal_t value = 0;
    CHECK(ocrHintInit(&hint, OCR_HINT_EDT_T) == 0);
    CHECK(ocrHintSetValue(&hint, OCR_HINT_EDT_PRIORITY, 7) == 0);
    CHECK(ocrHintGetValue(&hint, OCR_HINT_EDT_PRIORITY, &value) == 0 && value == 7);
    CHECK(ocrHintUnsetValue(&hint, OCR_HINT_EDT_PRIORITY) == 0);
    CHECK(ocrHintGetValue(&hint, OCR_HINT_EDT_PRIORITY, &value) == OCR_ENOENT);

    /* ocr-db.h: heap calls answer that NO_ALLOC blocks have no allocator;
     * ocrDbGetSize is declared by ocr.h itself, as in the reference. */
    ocrGuid_t db;
    void* data = NULL;
    CHECK(ocrDbCreate(&db, &data, 64, DB_PROP_NONE, NULL_HINT, NO_ALLOC) == 0);
    u64 size = 0;
    CHECK(ocrDbGetSize(db, &size) == 0 && size == 64);
    void* chunk = NULL;
    u64 offset = 0;
    CHECK(ocrDbMalloc(db, 8, &chunk) == OCR_EINVAL && chunk == NULL);
    CHECK(ocrDbMallocOffset(db, 8, &offset) == OCR_EINVAL);
    CHECK(ocrDbFree(db, data) == OCR_EINVAL);
    CHECK(ocrDbFreeOffset(db, 0) == OCR_EINVAL);
    u8 (*copy)(ocrGuid_t, u64, ocrGuid_t, u64, u64, u64, ocrGuid_t*) = ocrDbCopy;
    CHECK(copy != NULL);
    CHECK(ocrDbDestroy(db) == 0);

    /* ocr-types.h */
    ocrGuid_t (*add)(ocrGuid_t, u64) = addValueToGuid;
    CHECK(add != NULL);
    ocrTraceType_t trace = OCR_TRACE_TYPE_EDT;
    ocrTraceAction_t action = OCR_ACTION_CREATE;
    CHECK(trace == 1000 && OCR_TRACE_TYPE_MAX == 1012 && action == 0 && OCR_ACTION_MAX > OCR_ACTION_RANGE_CREATE);

    /* Extensions */
    ocrAffinityKind kinds[] = {AFFINITY_CURRENT, AFFINITY_PD, AFFINITY_PD_MASTER, AFFINITY_SIM, AFFINITY_GUID};
    CHECK(kinds[0] == 0 && kinds[3] == 3 && kinds[4] == 4);
    CHECK(GUID_USER_EVENT_COLLECTIVE == 24);
    void (*inject)(void) = ocrInjectFault;
    CHECK(inject != NULL);
    ocrEventParams_t params;
    collectiveType_t* type = &params.EVENT_COLLECTIVE.type;
    redOp_t* op = &params.EVENT_COLLECTIVE.op;
    *type = COL_ALLREDUCE;
    *op = REDOP_U8_ADD;
    CHECK(params.EVENT_COLLECTIVE.type == COL_ALLREDUCE && params.EVENT_COLLECTIVE.op == REDOP_U8_ADD);

    ocrShutdown();
    return NULL_GUID;
}
