/* SPDX-License-Identifier: MIT */
/* Collective (reduction) events (OCR 1.2 extension,
 * ENABLE_EXTENSION_COLLECTIVE_EVT), in one process or across the ranks of a
 * distributed run.
 *
 * An OCR_EVENT_COLLECTIVE_T event made with ocrEventCreateParams
 * (EVENT_COLLECTIVE: nbContribs, nbContribsPd, nbDatum, op, type, maxGen)
 * combines one contribution per slot 0..nbContribs-1 and generation:
 * contributor i calls
 *
 *   ocrAddDependenceSlot(evt, i, destination, dslot, mode);  // where its result goes
 *   ocrEventCollectiveSatisfySlot(evt, &values, i);           // nbDatum values
 *
 * Once every slot contributed to a generation, a new data block holding the
 * nbDatum reduced values (combined in slot order, so floating-point results
 * do not depend on timing) satisfies every dependence registered for that
 * generation. A slot's k-th call of either function belongs to generation k;
 * at most maxGen generations may be incomplete at once (else OCR_EBUSY).
 * COL_REDUCE and COL_ALLREDUCE behave alike; COL_BROADCAST is refused
 * (OCR_EINVAL). arity and reuseDbPerGen are accepted and ignored (a new block
 * per generation).
 *
 * Across ranks, as in the reference's distributed runtime: nbContribs is the
 * total, nbContribsPd the contributors per rank (nbContribs = nbContribsPd x
 * ranks, or nbContribsPd = nbContribs); contributors and destinations may be
 * on any rank, and a slot may contribute from different ranks in different
 * generations. The event lives on one rank (its GUID's); contributions and
 * dependences travel there, results travel to the destinations. Creating the
 * event again at its labeled GUID (GUID_PROP_IS_LABELED) with the same
 * parameters, as every rank of the reference's programs does, joins it and
 * returns 0; with GUID_PROP_CHECK, or other parameters, OCR_EGUIDEXISTS. */
#ifndef STRATA_OCR_REDUCTION_EVENT_H
#define STRATA_OCR_REDUCTION_EVENT_H

#include "../ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* redOp_t and collectiveType_t are in ocr-types.h (the creation parameters use them). */

/* The fields of a redOp_t, from the least significant bit, as the
 * reference lays them out: associative, commutative, datum size (bytes - 1),
 * signed, real, operator. REDOP_SIDX(f) is one past field f's most
 * significant bit, REDOP_EIDX(f) its least significant bit. */
#define REDOP_BIT_COUNT (16)
#define REDOP_ASSOCIATIVE_SIZE (1)
#define REDOP_COMMUTATIVE_SIZE (1)
#define REDOP_DATUM_SIZE_SIZE (3)
#define REDOP_SIGNED_SIZE (1)
#define REDOP_TYPE_SIZE (1)
#define REDOP_OPERATOR_SIZE (3)
#define REDOP_ASSOCIATIVE_SIDX (REDOP_ASSOCIATIVE_SIZE)
#define REDOP_COMMUTATIVE_SIDX (REDOP_ASSOCIATIVE_SIDX + REDOP_COMMUTATIVE_SIZE)
#define REDOP_DATUM_SIZE_SIDX (REDOP_COMMUTATIVE_SIDX + REDOP_DATUM_SIZE_SIZE)
#define REDOP_SIGNED_SIDX (REDOP_DATUM_SIZE_SIDX + REDOP_SIGNED_SIZE)
#define REDOP_TYPE_SIDX (REDOP_SIGNED_SIDX + REDOP_TYPE_SIZE)
#define REDOP_OPERATOR_SIDX (REDOP_TYPE_SIDX + REDOP_OPERATOR_SIZE)
#define REDOP_SIZE(name) (REDOP_##name##_SIZE)
#define REDOP_SIDX(name) (REDOP_##name##_SIDX)
#define REDOP_EIDX(name) (REDOP_SIDX(name) - REDOP_SIZE(name))

/* Values of the fields. Unlike the reference, whose operator values are not
 * shifted into their field (so its REDOP_F8_MULT equals REDOP_F8_ADD), strata
 * places the operator in its field: programs that combine the names get the
 * operation they named. */
#define REDOP_ASSOCIATIVE STRATA_OCR_CAST(redOp_t, 1U << REDOP_EIDX(ASSOCIATIVE))
#define REDOP_COMMUTATIVE STRATA_OCR_CAST(redOp_t, 1U << REDOP_EIDX(COMMUTATIVE))
#define REDOP_BS1 STRATA_OCR_CAST(redOp_t, 0U << REDOP_EIDX(DATUM_SIZE))
#define REDOP_BS2 STRATA_OCR_CAST(redOp_t, 1U << REDOP_EIDX(DATUM_SIZE))
#define REDOP_BS4 STRATA_OCR_CAST(redOp_t, 3U << REDOP_EIDX(DATUM_SIZE))
#define REDOP_BS8 STRATA_OCR_CAST(redOp_t, 7U << REDOP_EIDX(DATUM_SIZE))
#define REDOP_UNSIGNED STRATA_OCR_CAST(redOp_t, 0U)
#define REDOP_SIGNED STRATA_OCR_CAST(redOp_t, 1U << REDOP_EIDX(SIGNED))
#define REDOP_INTEGER STRATA_OCR_CAST(redOp_t, 0U)
#define REDOP_REAL STRATA_OCR_CAST(redOp_t, 1U << REDOP_EIDX(TYPE))
#define REDOP_ADD STRATA_OCR_CAST(redOp_t, 0U << REDOP_EIDX(OPERATOR))
#define REDOP_MULT STRATA_OCR_CAST(redOp_t, 1U << REDOP_EIDX(OPERATOR))
#define REDOP_MIN STRATA_OCR_CAST(redOp_t, 2U << REDOP_EIDX(OPERATOR))
#define REDOP_MAX STRATA_OCR_CAST(redOp_t, 3U << REDOP_EIDX(OPERATOR))
#define REDOP_BITAND STRATA_OCR_CAST(redOp_t, 4U << REDOP_EIDX(OPERATOR))
#define REDOP_BITOR STRATA_OCR_CAST(redOp_t, 5U << REDOP_EIDX(OPERATOR))
#define REDOP_BITXOR STRATA_OCR_CAST(redOp_t, 6U << REDOP_EIDX(OPERATOR))

#define REDOP_F8_ADD (REDOP_ASSOCIATIVE | REDOP_COMMUTATIVE | REDOP_BS8 | REDOP_SIGNED | REDOP_REAL | REDOP_ADD)
#define REDOP_F8_MULT (REDOP_ASSOCIATIVE | REDOP_COMMUTATIVE | REDOP_BS8 | REDOP_SIGNED | REDOP_REAL | REDOP_MULT)
#define REDOP_F8_MIN (REDOP_ASSOCIATIVE | REDOP_COMMUTATIVE | REDOP_BS8 | REDOP_SIGNED | REDOP_REAL | REDOP_MIN)
#define REDOP_F8_MAX (REDOP_ASSOCIATIVE | REDOP_COMMUTATIVE | REDOP_BS8 | REDOP_SIGNED | REDOP_REAL | REDOP_MAX)
#define REDOP_F4_ADD (REDOP_ASSOCIATIVE | REDOP_COMMUTATIVE | REDOP_BS4 | REDOP_SIGNED | REDOP_REAL | REDOP_ADD)
#define REDOP_F4_MULT (REDOP_ASSOCIATIVE | REDOP_COMMUTATIVE | REDOP_BS4 | REDOP_SIGNED | REDOP_REAL | REDOP_MULT)
#define REDOP_F4_MIN (REDOP_ASSOCIATIVE | REDOP_COMMUTATIVE | REDOP_BS4 | REDOP_SIGNED | REDOP_REAL | REDOP_MIN)
#define REDOP_F4_MAX (REDOP_ASSOCIATIVE | REDOP_COMMUTATIVE | REDOP_BS4 | REDOP_SIGNED | REDOP_REAL | REDOP_MAX)
#define REDOP_U8_ADD (REDOP_BS8 | REDOP_UNSIGNED | REDOP_INTEGER | REDOP_ADD)
#define REDOP_U8_MULT (REDOP_BS8 | REDOP_UNSIGNED | REDOP_INTEGER | REDOP_MULT)
#define REDOP_U8_MIN (REDOP_BS8 | REDOP_UNSIGNED | REDOP_INTEGER | REDOP_MIN)
#define REDOP_U8_MAX (REDOP_BS8 | REDOP_UNSIGNED | REDOP_INTEGER | REDOP_MAX)
#define REDOP_U8_BITAND (REDOP_BS8 | REDOP_UNSIGNED | REDOP_INTEGER | REDOP_BITAND)
#define REDOP_U8_BITOR (REDOP_BS8 | REDOP_UNSIGNED | REDOP_INTEGER | REDOP_BITOR)
#define REDOP_U8_BITXOR (REDOP_BS8 | REDOP_UNSIGNED | REDOP_INTEGER | REDOP_BITXOR)
#define REDOP_S8_MIN (REDOP_BS8 | REDOP_SIGNED | REDOP_INTEGER | REDOP_MIN)
#define REDOP_S8_MAX (REDOP_BS8 | REDOP_SIGNED | REDOP_INTEGER | REDOP_MAX)
#define REDOP_U4_ADD (REDOP_BS4 | REDOP_UNSIGNED | REDOP_INTEGER | REDOP_ADD)
#define REDOP_U4_MULT (REDOP_BS4 | REDOP_UNSIGNED | REDOP_INTEGER | REDOP_MULT)
#define REDOP_U4_MIN (REDOP_BS4 | REDOP_UNSIGNED | REDOP_INTEGER | REDOP_MIN)
#define REDOP_U4_MAX (REDOP_BS4 | REDOP_UNSIGNED | REDOP_INTEGER | REDOP_MAX)
#define REDOP_S4_MIN (REDOP_BS4 | REDOP_SIGNED | REDOP_INTEGER | REDOP_MIN)
#define REDOP_S4_MAX (REDOP_BS4 | REDOP_SIGNED | REDOP_INTEGER | REDOP_MAX)
#define REDOP_U4_BITAND (REDOP_BS4 | REDOP_UNSIGNED | REDOP_INTEGER | REDOP_BITAND)
#define REDOP_U4_BITOR (REDOP_BS4 | REDOP_UNSIGNED | REDOP_INTEGER | REDOP_BITOR)
#define REDOP_U4_BITXOR (REDOP_BS4 | REDOP_UNSIGNED | REDOP_INTEGER | REDOP_BITXOR)

/** Contributes nbDatum values at dataPtr (copied) as slot islot's next
 *  generation. OCR_EINVAL: not a collective event or islot out of range;
 *  OCR_EBUSY: maxGen generations are already incomplete. */
u8 ocrEventCollectiveSatisfySlot(ocrGuid_t eventGuid, void* dataPtr, u32 islot);

#ifndef STRATA_OCR_NO_CALL_SITES
#define ocrEventCollectiveSatisfySlot(...) STRATA_OCR_AT(ocrEventCollectiveSatisfySlot(__VA_ARGS__))
#endif

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_REDUCTION_EVENT_H */
