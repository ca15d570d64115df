/* SPDX-License-Identifier: MIT */
/* OCR 1.2 types and constants, as strata provides them (docs/runtime.md).
 *
 * Written from the Open Community Runtime specification 1.2 so that existing
 * OCR programs compile unchanged against strata and link with -lstrata-ocr.
 * ocrGuid_t is opaque: compare GUIDs with the ocrGuidIs* helpers of
 * ocr-guid.h, never by looking inside. */
#ifndef STRATA_OCR_TYPES_H
#define STRATA_OCR_TYPES_H

#include <inttypes.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A cast that C++ compilers with -Wold-style-cast accept too. */
#ifdef __cplusplus
#define STRATA_OCR_CAST(type, value) (static_cast<type>(value))
#else
#define STRATA_OCR_CAST(type, value) ((type)(value))
#endif

typedef uint64_t u64;
typedef uint32_t u32;
typedef uint16_t u16;
typedef uint8_t u8;
typedef int64_t s64;
typedef int32_t s32;
typedef int16_t s16;
typedef int8_t s8;

#ifndef __cplusplus
#include <stdbool.h>
#ifndef TRUE
#define TRUE 1
#define FALSE 0
#endif
#else
#ifndef TRUE
#define TRUE true
#define FALSE false
#endif
#endif

/** A globally unique identifier of an OCR object (template, EDT, event, data block). */
typedef struct {
    intptr_t guid;
} ocrGuid_t;

#define GUID_BIT_COUNT 64
#ifdef __cplusplus
#define NULL_GUID (ocrGuid_t{0})
#define UNINITIALIZED_GUID (ocrGuid_t{-2})
#define ERROR_GUID (ocrGuid_t{-1})
#else
#define NULL_GUID_INITIALIZER \
    { .guid = 0x0 }
#define UNINITIALIZED_GUID_INITIALIZER \
    { .guid = -2 }
#define ERROR_GUID_INITIALIZER \
    { .guid = -1 }
#define NULL_GUID ((ocrGuid_t)NULL_GUID_INITIALIZER)
#define UNINITIALIZED_GUID ((ocrGuid_t)UNINITIALIZED_GUID_INITIALIZER)
#define ERROR_GUID ((ocrGuid_t)ERROR_GUID_INITIALIZER)
#endif

/** printf a GUID: ocrPrintf("edt " GUIDF "\n", GUIDA(edt)). ocr-guid.h has
 *  the older spellings (GUIDSx with GUIDFS(g), GUIDLx with GUIDFL(g)). */
#define GUIDF "0x%" PRIx64
#define GUIDA(g) STRATA_OCR_CAST(u64, (g).guid)

/** guid advanced by `value` positions of a labeled range or map
 *  (extensions/ocr-labeling.h; declared here, as in the reference). */
ocrGuid_t addValueToGuid(ocrGuid_t input, u64 value);

/* ---- data blocks ---- */

/** Allocators within a data block: none. */
typedef enum { NO_ALLOC = 0 } ocrInDbAllocator_t;

/** How an EDT accesses a data block on one of its slots.
 *  RW: no isolation. EW: no other EW or RW holder at the same time.
 *  RO: may see concurrent writes. CONST: the data does not change while held
 *  (strata gives a private copy). NULL: a pure control dependence. */
typedef enum {
    DB_MODE_NULL = 0x0,
    DB_MODE_CONST = 0x1,
    DB_MODE_RW = 0x2,
    DB_MODE_EW = 0x4,
    DB_MODE_RO = 0x8
} ocrDbAccessMode_t;

#define DB_DEFAULT_MODE DB_MODE_RW
/* Older OCR spellings of the modes. */
#define DB_MODE_ITW DB_MODE_RW
#define DB_MODE_NCR DB_MODE_RO

#define DB_PROP_NONE STRATA_OCR_CAST(u16, 0x0)
#define DB_PROP_NO_ACQUIRE STRATA_OCR_CAST(u16, 0x10)
#define DB_PROP_SINGLE_ASSIGNMENT STRATA_OCR_CAST(u16, 0x20)
#define DB_PROP_NO_HINT STRATA_OCR_CAST(u16, 0x40)

/* ---- EDTs ---- */

/** One input of an EDT: the data block GUID (NULL_GUID for a control
 *  dependence), a pointer to its data, and the mode it was acquired with. */
typedef struct {
    ocrGuid_t guid;
    void* ptr;
    ocrDbAccessMode_t mode;
} ocrEdtDep_t;

#define EDT_PROP_NONE STRATA_OCR_CAST(u16, 0x0)
#define EDT_PROP_FINISH STRATA_OCR_CAST(u16, 0x1)
#define EDT_PROP_NO_HINT STRATA_OCR_CAST(u16, 0x2)
#define EDT_PROP_LONG STRATA_OCR_CAST(u16, 0x4)
/** The output event passed in *outputEvent is the caller's (e.g. a sticky one). */
#define EDT_PROP_OEVT_VALID STRATA_OCR_CAST(u16, 0x8)

#define EDT_PARAM_UNK STRATA_OCR_CAST(u32, -1)
#define EDT_PARAM_DEF STRATA_OCR_CAST(u32, -2)

/** The function of an EDT; its return value (a data block or NULL_GUID)
 *  satisfies the EDT's output event. */
typedef ocrGuid_t (*ocrEdt_t)(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]);

/* ---- events ---- */

/** ONCE: fires once, then is destroyed. IDEM: later satisfactions are ignored.
 *  STICKY: stays satisfied; a second satisfaction is an error. LATCH: fires
 *  when its DECR and INCR counts are equal and non-zero, then is destroyed.
 *  COUNTED: sticky until it fired and received its declared number of
 *  dependences, then destroyed. CHANNEL: each satisfaction goes to one
 *  dependence, first in first out. */
typedef enum {
    OCR_EVENT_ONCE_T = 1,
    OCR_EVENT_IDEM_T = 2,
    OCR_EVENT_STICKY_T = 3,
    OCR_EVENT_LATCH_T = 4,
    OCR_EVENT_COUNTED_T = 5,
    OCR_EVENT_CHANNEL_T = 6,
    OCR_EVENT_COLLECTIVE_T = 7, /**< extensions/ocr-reduction-event.h */
    OCR_EVENT_T_MAX
} ocrEventTypes_t;

typedef enum { OCR_EVENT_LATCH_DECR_SLOT = 0, OCR_EVENT_LATCH_INCR_SLOT = 1 } ocrLatchEventSlot_t;

#define EVT_PROP_NONE STRATA_OCR_CAST(u16, 0x0)
#define EVT_PROP_TAKES_ARG STRATA_OCR_CAST(u16, 0x1)

/** The unbounded value of a CHANNEL event's maxGen. */
#define EVENT_CHANNEL_UNBOUNDED STRATA_OCR_CAST(u32, -1)

/** Parameters of ocrEventCreateParams, one struct per event type. */
typedef struct {
    u64 counter; /**< initial INCR count of a LATCH event */
} ocrEventLatchParams_t;
typedef struct {
    u64 nbDeps; /**< dependences a COUNTED event expects before it is destroyed */
} ocrEventCounterParams_t;
typedef struct {
    u32 maxGen; /**< satisfactions (and dependences) that may wait unmatched at once, or EVENT_CHANNEL_UNBOUNDED */
    u32 nbSat;  /**< satisfactions per generation: strata, like the reference, takes 1 */
    u32 nbDeps; /**< dependences per generation: strata, like the reference, takes 1 */
} ocrEventChannelParams_t;
/** A reduction operator (extensions/ocr-reduction-event.h has the REDOP_* values). */
typedef u16 redOp_t;
/** What a COLLECTIVE event does with the contributions. */
typedef enum { COL_REDUCE, COL_ALLREDUCE, COL_BROADCAST } collectiveType_t;
typedef struct _ocrEventCollectiveParams_t {
    u32 maxGen;            /**< generations that may be incomplete at once */
    u32 nbContribs;        /**< contributions (slots) per generation */
    u32 nbContribsPd;      /**< contributions from this process: strata takes nbContribs */
    u16 nbDatum;           /**< values per contribution */
    u8 arity;              /**< reduction tree arity: ignored */
    redOp_t op;            /**< a REDOP_* value */
    collectiveType_t type; /**< COL_REDUCE or COL_ALLREDUCE (COL_BROADCAST is refused) */
    bool reuseDbPerGen;    /**< ignored: a new block per generation */
} ocrEventCollectiveParams_t;
typedef struct {
    union {
        ocrEventLatchParams_t EVENT_LATCH;
        ocrEventCounterParams_t EVENT_COUNTED;
        ocrEventChannelParams_t EVENT_CHANNEL;
        ocrEventCollectiveParams_t EVENT_COLLECTIVE;
    };
} ocrEventParams_t;

/* ---- hints ---- */

typedef enum { OCR_HINT_UNDEF_T, OCR_HINT_EDT_T, OCR_HINT_DB_T, OCR_HINT_EVT_T, OCR_HINT_GROUP_T } ocrHintType_t;

/** Hint properties (every one of the OCR 1.2 headers). strata acts on
 *  OCR_HINT_EDT_PRIORITY (a ready EDT with a higher value starts first; EDTs
 *  without one start after every prioritized one) and on the DB placement
 *  ones: NEAR and HIGHBW = memory (default), INTER = shared memory (a
 *  /dev/shm segment), FAR = storage (a file under STRATA_OCR_DB_DIR). The
 *  others are accepted, stored and read back by ocrHintGetValue, and have no
 *  effect (docs/runtime.md, conformance table). */
typedef enum {
    OCR_HINT_EDT_PROP_START,
    OCR_HINT_EDT_PRIORITY,
    OCR_HINT_EDT_SLOT_MAX_ACCESS,
    OCR_HINT_EDT_AFFINITY,
    OCR_HINT_EDT_DISPERSE,
    OCR_HINT_EDT_SPACE,
    OCR_HINT_EDT_TIME,
    OCR_HINT_EDT_STATS_HW_CYCLES,
    OCR_HINT_EDT_STATS_L1_HITS,
    OCR_HINT_EDT_STATS_L1_MISSES,
    OCR_HINT_EDT_STATS_FLOAT_OPS,
    OCR_HINT_EDT_PROP_END,
    OCR_HINT_DB_PROP_START,
    OCR_HINT_DB_AFFINITY,
    OCR_HINT_DB_NEAR,
    OCR_HINT_DB_INTER,
    OCR_HINT_DB_FAR,
    OCR_HINT_DB_HIGHBW,
    OCR_HINT_DB_EAGER,
    OCR_HINT_DB_LAZY,
    OCR_HINT_DB_PROP_END,
    OCR_HINT_EVT_PROP_START,
    OCR_HINT_EVT_PROP_END,
    OCR_HINT_GROUP_PROP_START,
    OCR_HINT_GROUP_PROP_END
} ocrHintProp_t;

/* Values of OCR_HINT_EDT_DISPERSE. */
#define OCR_HINT_EDT_DISPERSE_FAR 0
#define OCR_HINT_EDT_DISPERSE_NEAR 1

typedef u64 ocrHintVal_t;

/** A set of hints; fill with ocrHintInit and ocrSetHintValue (extensions/ocr-hints.h). */
typedef struct {
    ocrHintType_t type;
    u64 propMask;
    u64 values[OCR_HINT_GROUP_PROP_END];
} ocrHint_t;

/** What ocrQuery (extensions/ocr-pause.h) can ask a paused runtime for. */
typedef enum { OCR_QUERY_READY_EDTS, OCR_QUERY_EVENTS, OCR_QUERY_LAST_SATISFIED_DB, OCR_QUERY_ALL_EDTS } ocrQueryType_t;

/** The reference's tracing vocabulary (objects and their actions), with its
 *  values. strata has no trace hooks; the names are here so that programs
 *  and tools written against the reference compile. */
typedef enum {
    OCR_TRACE_TYPE_EDT = 1000,
    OCR_TRACE_TYPE_API_EDT = 1001,
    OCR_TRACE_TYPE_EVENT = 1002,
    OCR_TRACE_TYPE_API_EVENT = 1003,
    OCR_TRACE_TYPE_DATABLOCK = 1004,
    OCR_TRACE_TYPE_API_DATABLOCK = 1005,
    OCR_TRACE_TYPE_MESSAGE = 1006,
    OCR_TRACE_TYPE_WORKER = 1007,
    OCR_TRACE_TYPE_SCHEDULER = 1008,
    OCR_TRACE_TYPE_API_AFFINITY = 1009,
    OCR_TRACE_TYPE_API_HINT = 1010,
    OCR_TRACE_TYPE_ALLOCATOR = 1011,
    OCR_TRACE_TYPE_MAX = 1012
} ocrTraceType_t;
typedef enum {
    OCR_ACTION_CREATE,
    OCR_ACTION_TEMPLATE_CREATE,
    OCR_ACTION_DESTROY,
    OCR_ACTION_RUNNABLE,
    OCR_ACTION_SCHEDULED,
    OCR_ACTION_ADD_DEP,
    OCR_ACTION_SATISFY,
    OCR_ACTION_EXECUTE,
    OCR_ACTION_FINISH,
    OCR_ACTION_DATA_ACQUIRE,
    OCR_ACTION_DATA_RELEASE,
    OCR_ACTION_ALLOCATE,
    OCR_ACTION_DEALLOCATE,
    OCR_ACTION_END_TO_END,
    OCR_ACTION_WORK_REQUEST,
    OCR_ACTION_WORK_TAKEN,
    OCR_ACTION_SCHED_MSG_SEND,
    OCR_ACTION_SCHED_MSG_RCV,
    OCR_ACTION_SCHED_INVOKE,
    OCR_ACTION_GET_CURRENT,
    OCR_ACTION_GET_AT,
    OCR_ACTION_GET_COUNT,
    OCR_ACTION_QUERY,
    OCR_ACTION_INIT,
    OCR_ACTION_SET_VAL,
    OCR_ACTION_RANGE_CREATE,
    OCR_ACTION_MAX
} ocrTraceAction_t;

/* ---- labeled GUIDs (extensions/ocr-labeling.h) ---- */

/** Properties of the create calls: *guid holds a labeled GUID to create the
 *  object at (IS_LABELED); CHECK also returns OCR_EGUIDEXISTS when an object
 *  lives there already; BLOCK waits until it is destroyed. */
#define GUID_PROP_NONE STRATA_OCR_CAST(u16, 0x0)
#define GUID_PROP_IS_LABELED STRATA_OCR_CAST(u16, 0x100)
#define GUID_PROP_CHECK STRATA_OCR_CAST(u16, 0x300)
#define GUID_PROP_BLOCK STRATA_OCR_CAST(u16, 0x500)

/* Properties of ocrLegacyBlockProgress (extensions/ocr-legacy.h). */
#define LEGACY_PROP_NONE STRATA_OCR_CAST(u16, 0x0)
#define LEGACY_PROP_WAIT_FOR_CREATE STRATA_OCR_CAST(u16, 0x1)
#define LEGACY_PROP_WAIT_IF_CREATED STRATA_OCR_CAST(u16, 0x2)
#define LEGACY_PROP_CHECK STRATA_OCR_CAST(u16, 0x4)

#ifdef __cplusplus
#define NULL_HINT (static_cast<ocrHint_t*>(nullptr))
#else
#define NULL_HINT ((ocrHint_t*)0x0)
#endif

/* strata: the API headers wrap each call in a macro that records the
 * caller's file and line first, so a deferred error can name the call that
 * caused it. The functions stay real functions (their addresses can be
 * taken); define STRATA_OCR_NO_CALL_SITES to drop the macros. */
void strataOcrCallSite(const char* file, int line);
#ifndef STRATA_OCR_NO_CALL_SITES
#define STRATA_OCR_AT(call) (strataOcrCallSite(__FILE__, __LINE__), call)
#endif

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_TYPES_H */
