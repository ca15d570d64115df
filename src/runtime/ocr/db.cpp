// Data blocks: placement in a region of any kind, holds (RW, EW, RO, CONST),
// release and destruction.
#include <unistd.h>
#include <algorithm>
#include <cstring>
#include <new>

#include "core/log.hpp"
#include "ocr/ocr.h"
#include "state.hpp"

namespace strata::ocr {

namespace {

// Below this size a memory block comes from the heap: a mapping per block
// would cost a system call and a whole page for every small block.
constexpr u64 heap_limit = 64 * 1024;
constexpr std::align_val_t block_alignment{64};

std::atomic<std::uint64_t> g_db_serial{0};

}  // namespace

Db::~Db() {
    if (heap != nullptr) {
        ::operator delete(heap, block_alignment);
    }
    if (region && region->is_open()) {
        if (auto closed = region->close({.unlink = region->kind() != RegionKind::memory}); !closed) {
            strata::detail::log().warn("strata-ocr: data block {}: {}", show(guid), closed.error().what());
        }
    }
}

Result<std::shared_ptr<Db>> make_db(u64 length, DbPlacement placement) {
    auto db = std::make_shared<Db>();
    db->size = length;
    db->placement = placement;
    const std::size_t size = std::max<std::size_t>(static_cast<std::size_t>(length), 8);
    const std::uint64_t serial = g_db_serial.fetch_add(1, std::memory_order_relaxed);
    switch (placement) {
        case DbPlacement::memory:
            if (length < heap_limit) {
                db->heap = static_cast<std::byte*>(::operator new(size, block_alignment, std::nothrow));
                if (db->heap == nullptr) {
                    return make_error(Errc::out_of_memory, "ocrDbCreate: len={}: out of memory", length);
                }
                db->data = db->heap;
                return db;
            } else {
                auto region = Region::memory(size);
                if (!region) return std::unexpected(region.error());
                db->region.emplace(std::move(*region));
            }
            break;
        case DbPlacement::shared: {
            auto region = Region::shared(size, {.name = fmt::format("strata-ocr-{}-{}", ::getpid(), serial)});
            if (!region) return std::unexpected(region.error());
            db->region.emplace(std::move(*region));
            break;
        }
        case DbPlacement::storage: {
            const auto path = state()->options().db_dir / fmt::format("strata-ocr-{}-{}.db", ::getpid(), serial);
            auto region = Region::storage(size, {.path = path});
            if (!region) return std::unexpected(region.error());
            db->region.emplace(std::move(*region));
            break;
        }
    }
    db->data = db->region->data();
    return db;
}

// RW and EW holds are kept until released; CONST takes a private copy while
// no EW holder can write (under the mutex, with ew_held false) and keeps no
// hold; RO neither waits nor holds.
bool Db::acquire_or_wait(const std::shared_ptr<Edt>& edt, ocrDbAccessMode_t mode, std::vector<std::byte>* copy) {
    std::lock_guard lock(mutex);
    const bool fits =
        waiters.empty() && (mode == DB_MODE_RO || (mode == DB_MODE_EW ? !ew_held && rw_holders == 0 : !ew_held));
    if (!fits) {
        waiters.push_back({edt, mode});
        return false;
    }
    if (mode == DB_MODE_EW) {
        ew_held = true;
    } else if (mode == DB_MODE_RW) {
        ++rw_holders;
    } else if (mode == DB_MODE_CONST) {
        copy->resize(static_cast<std::size_t>(size));
        std::memcpy(copy->data(), data, static_cast<std::size_t>(size));
    }
    return true;
}

void Db::release(ocrDbAccessMode_t mode) {
    std::vector<std::shared_ptr<Edt>> granted;
    {
        std::lock_guard lock(mutex);
        if (mode == DB_MODE_EW) {
            ew_held = false;
        } else if (mode == DB_MODE_RW) {
            --rw_holders;
        }
        // Grant in order; the first that does not fit keeps the rest waiting.
        while (!waiters.empty()) {
            Waiter& w = waiters.front();
            if (w.mode == DB_MODE_EW ? (ew_held || rw_holders > 0) : (w.mode != DB_MODE_RO && ew_held)) {
                break;
            }
            if (w.mode == DB_MODE_EW) {
                ew_held = true;
            } else if (w.mode == DB_MODE_RW) {
                ++rw_holders;
            } else if (w.mode == DB_MODE_CONST) {
                Hold& hold = w.edt->holds[w.edt->next_hold - 1];
                hold.copy.resize(static_cast<std::size_t>(size));
                std::memcpy(hold.copy.data(), data, static_cast<std::size_t>(size));
            }
            granted.push_back(std::move(w.edt));
            waiters.pop_front();
        }
    }
    for (auto& edt : granted) {
        continue_acquire(edt);
    }
}

namespace {

void release_hold(Hold& hold) {
    if (hold.released) {
        return;
    }
    hold.released = true;
    hold.db->release(hold.mode);
    std::vector<std::byte>().swap(hold.copy);
}

}  // namespace

void release_all(Edt& edt) {
    for (Hold& hold : edt.holds) {
        release_hold(hold);
    }
    edt.holds.clear();
}

Result<DbInfo> db_info(ocrGuid_t guid) {
    OcrState* s = state();
    auto db = s != nullptr ? s->table.find_as<Db>(guid, Kind::db) : nullptr;
    if (!db) {
        return make_error(Errc::not_found, "db_info: guid={}: not a live data block", show(guid));
    }
    DbInfo info;
    info.size = db->size;
    info.heap = db->heap != nullptr;
    if (db->region) {
        info.kind = db->region->kind();
        info.path = db->region->kind() == RegionKind::shared ? std::filesystem::path("/dev/shm") / db->region->name()
                                                             : db->region->path();
    }
    return info;
}

std::string_view to_string(DbPlacement placement) noexcept {
    switch (placement) {
        case DbPlacement::memory: return "memory";
        case DbPlacement::shared: return "shared";
        case DbPlacement::storage: return "storage";
    }
    return "?";
}

Result<DbPlacement> parse_db_placement(std::string_view text, std::string_view param) {
    if (text == "memory") return DbPlacement::memory;
    if (text == "shared") return DbPlacement::shared;
    if (text == "storage") return DbPlacement::storage;
    return make_error(Errc::invalid_argument, "{}={}: expected memory, shared or storage", param, text);
}

}  // namespace strata::ocr

using namespace strata::ocr;

extern "C" {

u8(ocrDbCreate)(ocrGuid_t* guid, void** addr, u64 len, u16 flags, ocrHint_t* hint, ocrInDbAllocator_t /*allocator*/) {
    const CallSite site = take_call_site();
    OcrState* s = state();
    if (s == nullptr || guid == nullptr) {
        return OCR_EINVAL;
    }
    DbPlacement placement = s->options().db_placement;
    if (hint != nullptr && hint->type == OCR_HINT_DB_T) {
        auto has = [&](ocrHintProp_t p) { return (hint->propMask & (u64{1} << static_cast<unsigned>(p))) != 0; };
        if (has(OCR_HINT_DB_NEAR) || has(OCR_HINT_DB_HIGHBW)) placement = DbPlacement::memory;
        if (has(OCR_HINT_DB_INTER)) placement = DbPlacement::shared;
        if (has(OCR_HINT_DB_FAR)) placement = DbPlacement::storage;
    }
    auto db = make_db(len, placement);
    if (!db) {
        strata::detail::log().warn("strata-ocr: {}: ocrDbCreate(len={}, {}): {}", site.str(), len, to_string(placement),
                                   db.error().what());
        return db.error().code == strata::Errc::no_space ? OCR_ENOSPC : OCR_ENOMEM;
    }
    if (is_labeled(flags)) {
        if (u8 rc = insert_labeled(*guid, flags, *db); rc != 0) {
            strata::detail::log().warn("strata-ocr: {}: ocrDbCreate(labeled {}): {}", site.str(), show(*guid),
                                       error_name(rc));
            return rc;
        }
    } else {
        *guid = s->table.insert(*db);
    }
    Edt* edt = current_edt();
    const bool acquire = (flags & DB_PROP_NO_ACQUIRE) == 0 && edt != nullptr;
    if (acquire) {
        (*db)->rw_holders = 1;  // not shared yet: no lock needed
        edt->holds.push_back(Hold{*db, DB_MODE_RW, {}, false});
    }
    if (addr != nullptr) {
        *addr = acquire || edt == nullptr ? (*db)->data : nullptr;
    }
    return 0;
}

u8(ocrDbRelease)(ocrGuid_t guid) {
    const CallSite site = take_call_site();
    Edt* edt = current_edt();
    if (edt == nullptr) {
        return OCR_EINVAL;
    }
    auto it =
        std::find_if(edt->holds.begin(), edt->holds.end(), [&](const Hold& h) { return h.db->guid.guid == guid.guid; });
    if (it == edt->holds.end() || it->released) {
        strata::detail::log().warn("strata-ocr: {}: ocrDbRelease({}): EDT {} ({}) does not hold it", site.str(),
                                   show(guid), show(edt->guid), edt->name);
        return OCR_EACCES;
    }
    release_hold(*it);
    return 0;
}

u8(ocrDbDestroy)(ocrGuid_t guid) {
    const CallSite site = take_call_site();
    OcrState* s = state();
    auto db = s != nullptr ? s->table.find_as<Db>(guid, Kind::db) : nullptr;
    if (!db) {
        strata::detail::log().warn("strata-ocr: {}: ocrDbDestroy({}): not a live data block", site.str(), show(guid));
        return OCR_EINVAL;
    }
    s->table.erase(guid);
    {
        std::lock_guard lock(db->mutex);
        db->destroyed = true;
    }
    // Destroying a block one holds releases it; the memory goes with the last reference.
    if (Edt* edt = current_edt()) {
        for (Hold& hold : edt->holds) {
            if (hold.db == db) {
                release_hold(hold);
            }
        }
    }
    return 0;
}

}  // extern "C"
