/* SPDX-License-Identifier: MIT */
/* The names OCR 1.2 programs use from the ocr.h family and its extensions
 * compile with -Wall -Werror, and the runtime answers the calls. Written as a
 * reference-runtime user would: a u64 printed with %d (the reference's
 * ocrPrintf has no format attribute), ASSERT and VERIFY, version macros, GUID
 * printing, every hint property. */
#include "extensions/ocr-affinity.h"
#include "extensions/ocr-db-info.h"
#include "extensions/ocr-hints.h"
#include "extensions/ocr-labeling.h"
#include "extensions/ocr-legacy.h"
#include "extensions/ocr-pause.h"
#include "extensions/ocr-runtime-itf.h"
#include "ocr-guid-functions.h"
#include "ocr.h"

#if OCR_MAJOR_VERSION != 1 || OCR_MINOR_VERSION != 2
#error "expected the OCR 1.2 API"
#endif

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 count = 3;
    ocrPrintf("OCR %s, %d items\n", OCR_VERSION, count); /* -Wformat would reject this with an attribute */
    PRINTF("GUID " GUIDF "\n", GUIDA(NULL_GUID));
    char buf[32];
    u32 n = SNPRINTF(buf, sizeof(buf), "%d-%s", 7, "x");
    ASSERT(n == 3 && buf[0] == '7');
    ocrAssert(ocrGuidIsNull(NULL_GUID) && ocrGuidIsUninitialized(UNINITIALIZED_GUID) && ocrGuidIsError(ERROR_GUID));
    ocrAssert(ocrGuidIsEq(NULL_GUID, NULL_GUID) && !ocrGuidIsLt(NULL_GUID, NULL_GUID));
    VERIFY(count == 3, "VERIFY prints and goes on\n");

    /* Types and constants. */
    s8 a8 = -1;
    s16 a16 = -1;
    s32 a32 = -1;
    s64 a64 = -1;
    u8 b8 = 1;
    u16 b16 = DB_PROP_SINGLE_ASSIGNMENT;
    ocrAssert(a8 + a16 + a32 + a64 == -4 && b8 + b16 == 0x21);
    ocrDbAccessMode_t modes[] = {DB_MODE_NULL, DB_MODE_CONST, DB_MODE_RW, DB_MODE_EW, DB_MODE_RO, DB_DEFAULT_MODE};
    ocrAssert(modes[5] == DB_MODE_RW && sizeof(modes) / sizeof(modes[0]) == 6);
    u16 props = EDT_PROP_NONE | EDT_PROP_FINISH | EDT_PROP_NO_HINT | EDT_PROP_LONG | EDT_PROP_OEVT_VALID;
    ocrAssert(props == 0xF && DB_PROP_NO_ACQUIRE == 0x10 && DB_PROP_NO_HINT == 0x40 && EVT_PROP_TAKES_ARG == 1);
    ocrAssert(GUID_PROP_CHECK & GUID_PROP_IS_LABELED && GUID_PROP_BLOCK & GUID_PROP_IS_LABELED);
    ocrAssert(EDT_PARAM_UNK == (u32)-1 && EDT_PARAM_DEF == (u32)-2 && EVENT_CHANNEL_UNBOUNDED == (u32)-1);
    ocrEventTypes_t types[] = {OCR_EVENT_ONCE_T,  OCR_EVENT_IDEM_T,    OCR_EVENT_STICKY_T,
                               OCR_EVENT_LATCH_T, OCR_EVENT_COUNTED_T, OCR_EVENT_CHANNEL_T};
    ocrAssert(types[0] == 1 && types[5] == 6 && OCR_EVENT_LATCH_DECR_SLOT == 0 && OCR_EVENT_LATCH_INCR_SLOT == 1);
    ocrEventParams_t params;
    params.EVENT_LATCH.counter = 1;
    params.EVENT_COUNTED.nbDeps = 2;
    params.EVENT_CHANNEL.maxGen = 1;
    ocrEventLatchParams_t latch = {4};
    ocrEventCounterParams_t counted = {1};
    ocrEventChannelParams_t channel = {EVENT_CHANNEL_UNBOUNDED, 1, 1};
    ocrAssert(latch.counter + counted.nbDeps + channel.nbSat == 6 && params.EVENT_CHANNEL.maxGen == 1);
    ocrQueryType_t query = OCR_QUERY_ALL_EDTS;
    ocrGuidUserKind kind = GUID_USER_EVENT_STICKY;
    ocrAffinityKind akind = AFFINITY_PD;
    ocrInDbAllocator_t alloc = NO_ALLOC;
    ocrAssert(query == OCR_QUERY_ALL_EDTS && kind == 21 && akind == AFFINITY_PD && alloc == NO_ALLOC);
    ocrAssert(LEGACY_PROP_NONE == 0 && LEGACY_PROP_WAIT_FOR_CREATE == 1 && LEGACY_BLOCK_PROGRESS_5_ARGS == 1);
    ocrAssert(OCR_EINVAL != 0 && OCR_EPERM != 0 && OCR_ENOMEM != 0 && OCR_EGUIDEXISTS != 0 && OCR_EACCES != 0);
    ocrAssert(OCR_HINT_EDT_DISPERSE_NEAR == 1 && OCR_HINT_EDT_DISPERSE_FAR == 0);

    /* Affinity and workers. */
    u64 affinities = 0;
    ocrAffinityCount(AFFINITY_PD, &affinities);
    ocrGuid_t current;
    ocrAffinityGetCurrent(&current);
    ocrHint_t hint;
    ocrHintInit(&hint, OCR_HINT_EDT_T);
    ocrSetHintValue(&hint, OCR_HINT_EDT_AFFINITY, ocrAffinityToHintValue(current));
    ocrAssert(affinities >= 1 && ocrNbWorkers() >= 1);

    ocrShutdown();
    return NULL_GUID;
}
