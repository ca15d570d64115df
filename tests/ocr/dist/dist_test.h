/* SPDX-License-Identifier: MIT */
/* Helpers of the distributed conformance programs (tests/ocr/dist): ranks as
 * affinities, hints placing an object on a rank, and CHECK, which aborts the
 * job with exit code 3 and a message. Every program also passes on one rank. */
#ifndef STRATA_OCR_DIST_TEST_H
#define STRATA_OCR_DIST_TEST_H

#include "extensions/ocr-affinity.h"
#include "ocr.h"

static inline u64 rank_count(void) {
    u64 n = 0;
    ocrAffinityCount(AFFINITY_PD, &n);
    return n;
}

/* The rank (index among AFFINITY_PD) of an affinity. */
static inline u64 rank_of_affinity(ocrGuid_t affinity) {
    const u64 n = rank_count();
    for (u64 r = 0; r < n; ++r) {
        ocrGuid_t a;
        ocrAffinityGetAt(AFFINITY_PD, r, &a);
        if (ocrAffinityToHintValue(a) == ocrAffinityToHintValue(affinity)) return r;
    }
    return ~(u64)0;
}

static inline u64 current_rank(void) {
    ocrGuid_t here;
    ocrAffinityGetCurrent(&here);
    return rank_of_affinity(here);
}

/* The rank an object lives on. */
static inline u64 rank_of(ocrGuid_t object) {
    u64 count = 1;
    ocrGuid_t affinity;
    ocrAffinityQuery(object, &count, &affinity);
    return rank_of_affinity(affinity);
}

/* A hint placing an EDT (edt != 0) or a data block on rank `rank` modulo the ranks. */
static inline ocrHint_t* on_rank(ocrHint_t* hint, u64 rank, int edt) {
    ocrGuid_t affinity;
    ocrAffinityGetAt(AFFINITY_PD, rank % rank_count(), &affinity);
    ocrHintInit(hint, edt ? OCR_HINT_EDT_T : OCR_HINT_DB_T);
    ocrSetHintValue(hint, edt ? OCR_HINT_EDT_AFFINITY : OCR_HINT_DB_AFFINITY, ocrAffinityToHintValue(affinity));
    return hint;
}

#define CHECK(cond, ...)                                                            \
    do {                                                                            \
        if (!(cond)) {                                                              \
            ocrPrintf("FAILED on rank %llu: ", (unsigned long long)current_rank()); \
            ocrPrintf(__VA_ARGS__);                                                 \
            ocrPrintf("\n");                                                        \
            ocrAbort(3);                                                            \
            return NULL_GUID;                                                       \
        }                                                                           \
    } while (0)

#endif /* STRATA_OCR_DIST_TEST_H */
