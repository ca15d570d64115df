// SPDX-License-Identifier: MIT
// What the one-process OCR code (edt.cpp, event.cpp, db.cpp, labels.cpp,
// program.cpp) asks of the distributed runtime. Every function is a no-op
// returning "not taken" (false, -1, nullptr) when the run has one rank, so
// the one-process paths stay as they were.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "../state.hpp"
#include "ocr/ocr-types.h"

namespace strata::ocr::dist {

class Cluster;

/// While one lives on a thread (run_edt: an EDT's body and its completion), the
/// messages it sends to one rank, one after the other, wait in the outbox and
/// leave together (cluster.hpp, "the outbox"). No-op with one rank.
class SendBatch {
public:
    SendBatch() noexcept;
    ~SendBatch();
    SendBatch(const SendBatch&) = delete;
    SendBatch& operator=(const SendBatch&) = delete;

private:
    Cluster* cluster_;
};
/// Sends what waits in the outbox: before this thread waits for another rank.
void flush_sends();

/// This rank, and the number of ranks (0 and 1 with one rank).
int rank() noexcept;
int ranks() noexcept;
/// True when another rank owns `guid`.
bool is_remote(ocrGuid_t guid) noexcept;
/// True when this rank owns `guid` but its creation (by another rank) has not arrived.
bool awaited(ocrGuid_t guid);

/// The rank a hint places an EDT (OCR_HINT_EDT_AFFINITY) or a data block
/// (OCR_HINT_DB_AFFINITY) on: -1 without one; -2 (and `why`) for a value that
/// is not an affinity of this job.
int hinted_rank(const ocrHint_t* hint, bool edt, std::string* why);

// Operations the cluster takes (returns true) when another rank owns the
// object, or when this rank owns it but its creation has not arrived yet.
bool route_satisfy(ocrGuid_t destination, u32 slot, ocrGuid_t db, ocrDbAccessMode_t mode, const CallSite& site,
                   bool api);
bool route_add_dependence(ocrGuid_t event, u32 sslot, ocrGuid_t destination, u32 slot, ocrDbAccessMode_t mode,
                          const CallSite& site);
bool route_destroy(ocrGuid_t guid, const CallSite& site);
bool route_collective(ocrGuid_t event, const void* data, u32 slot, const CallSite& site);

/// ocrEdtCreate of an EDT that lives on `rank` (an affinity hint, or its labeled
/// GUID's owner): the creator adds the dependences of depv afterwards.
u8 create_edt_on(int rank, const EdtTemplate& tpl, u32 paramc, const u64* paramv, u32 depc, u16 properties,
                 std::optional<u64> priority, ocrGuid_t* guid, ocrGuid_t* output_event, const CallSite& site);
/// ocrEdtCreate at labeled GUID `guid` of another rank (a round trip for the result code).
u8 create_labeled_edt(const EdtTemplate& tpl, u32 paramc, const u64* paramv, u32 depc, u16 properties,
                      std::optional<u64> priority, ocrGuid_t guid, ocrGuid_t* output_event, const CallSite& site);
/// ocrDbCreate on `rank` (an affinity hint, or a labeled GUID's owner).
u8 create_db_on(int rank, ocrGuid_t* guid, void** addr, u64 len, u16 flags, DbPlacement placement,
                const CallSite& site);
/// ocrEventCreate(Params) at a labeled GUID of another rank.
u8 create_labeled_event(ocrGuid_t guid, ocrEventTypes_t type, u16 properties, const ocrEventParams_t* params,
                        const CallSite& site);

/// A proxy finish scope completed: its rank's scope counts one member done.
void proxy_scope_done(const FinishScope& proxy);

/// EDT templates and GUID maps of other ranks (fetched once, then kept).
std::shared_ptr<EdtTemplate> find_template(ocrGuid_t guid);
std::shared_ptr<GuidMap> find_map(ocrGuid_t guid);
/// ocrGetGuidKind and ocrDbGetSize of an object of another rank (a round trip).
u8 remote_guid_kind(ocrGuid_t guid, int* kind);
u8 remote_db_size(ocrGuid_t guid, u64* size);

/// Data blocks of other ranks held by EDTs here (blocks.cpp): false while the
/// owner has not granted hold `index` (continue_acquire runs when it does).
bool acquire_remote(const std::shared_ptr<Edt>& edt, std::size_t index);
/// Ends a hold on a block of another rank: a write hold sends the bytes back.
void release_remote(Hold& hold);
/// ocrDbDestroy of a block of another rank, dropping `held` (a hold of the caller's EDT, or null).
void destroy_remote_db(ocrGuid_t guid, Hold* held, const CallSite& site);
/// A hold of another rank on a block here was granted from the block's queue (db.cpp).
void grant_remote(const std::shared_ptr<Db>& db, const Db::Waiter& waiter, std::uint64_t version);
/// Internal modes of holds other ranks take on a block here: combinations of
/// bits no OCR mode uses (as db_mode_external_read, 0xC).
constexpr auto db_mode_remote_write = static_cast<ocrDbAccessMode_t>(0x3);
constexpr auto db_mode_remote_const = static_cast<ocrDbAccessMode_t>(0x5);
/// Blocks up to this size travel inside the grant and release messages; larger
/// ones move as byte ranges between the blocks' own memory.
inline constexpr u64 inline_limit = 64 * 1024;

}  // namespace strata::ocr::dist
