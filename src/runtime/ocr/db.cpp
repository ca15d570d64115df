// SPDX-License-Identifier: MIT
// Data blocks: placement in a region of any kind, holds (RW, EW, RO, CONST),
// release and destruction.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "core/log.hpp"
#include "db_shared.hpp"
#include "dist/api.hpp"
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
    if (memfd >= 0) {
        if (data != nullptr && memfd_mapped > 0) {
            ::munmap(data, memfd_mapped);
        }
        ::close(memfd);
    }
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
                if (!region) {
                    return std::unexpected(region.error());
                }
                db->region.emplace(std::move(*region));
            }
            break;
        case DbPlacement::shared: {
            auto shared = make_shared_block(state()->options().job, length, serial, &db->data);
            if (!shared) {
                return std::unexpected(shared.error());
            }
            db->shared = std::move(*shared);
            return db;
        }
        case DbPlacement::memfd: {
            const int fd =
                ::memfd_create(fmt::format("strata-ocr-db-{}", serial).c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
            if (fd < 0) {
                return make_sys_error(errno, "ocrDbCreate: len={}: memfd_create", length);
            }
            if (::ftruncate(fd, static_cast<off_t>(length)) != 0) {
                const int err = errno;
                ::close(fd);
                return make_sys_error(err, "ocrDbCreate: len={}: ftruncate of its memfd", length);
            }
            // The block's pages are allocated at creation, so a shortage of
            // memory shows at ocrDbCreate (an error naming the size, or the
            // memory cgroup's OOM killer there) rather than at a page fault in
            // the middle of a task; the memory is the block's anyway. (That
            // this also made external programs read it faster was measured
            // and not confirmed: git show dd8aaca:docs/benchmarks/external/page-placement/.)
            if (length > 0) {
                if (const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(length)); err != 0) {
                    ::close(fd);
                    return make_sys_error(err, "ocrDbCreate: len={}: allocating its memfd's pages", length);
                }
            }
            return adopt_memfd(fd, length);
        }
        case DbPlacement::storage:
        case DbPlacement::combined: {
            auto dir = state()->db_dir();
            if (!dir) {
                return std::unexpected(dir.error());
            }
            const StorageOptions file{.path = *dir / fmt::format("{}.db", serial), .create_only = true};
            auto region = placement == DbPlacement::storage ? Region::storage(size, file)
                                                            : Region::combined(size, {.storage = file});
            if (!region) {
                return std::unexpected(region.error());
            }
            db->region.emplace(std::move(*region));
            break;
        }
    }
    db->data = db->region->data();
    return db;
}

// RW and EW holds are kept until released; CONST takes a private copy while
// no EW holder can write (under the mutex, with ew_held false) and keeps no
// hold; RO neither waits nor holds. An external read excludes writers both
// ways (the program must read a block nobody changes) and lets RO and CONST in.
//
// Holds of other ranks (dist/blocks.cpp): a write hold excludes every other
// hold, RO included, until its bytes are back: they replace the block's, and
// the writer's EDT may have ended, and satisfied what made a reader runnable,
// before they arrive. A CONST reader whose bytes are on their way (senders)
// keeps writers out until they are.
bool Db::fits(ocrDbAccessMode_t mode) const {
    const bool no_writer = !ew_held && !remote_writer;
    if (mode == db_mode_external_read) {
        return no_writer && rw_holders == 0;
    }
    if (mode == dist::db_mode_remote_write) {
        return no_writer && rw_holders == 0 && external_readers == 0 && senders == 0;
    }
    switch (mode) {
        case DB_MODE_RO: return !remote_writer;
        case DB_MODE_EW: return no_writer && rw_holders == 0 && external_readers == 0 && senders == 0;
        case DB_MODE_RW: return no_writer && external_readers == 0 && senders == 0;
        default: return no_writer;  // CONST, remote CONST
    }
}

void Db::take(ocrDbAccessMode_t mode, std::vector<std::byte>* copy) {
    if (mode == dist::db_mode_remote_write) {
        remote_writer = true;
    } else if (mode == dist::db_mode_remote_const) {
        ++senders;
    } else if (mode == db_mode_external_read) {
        ++external_readers;
    } else if (mode == DB_MODE_EW) {
        ew_held = true;
    } else if (mode == DB_MODE_RW) {
        ++rw_holders;
    } else if (mode == DB_MODE_CONST) {
        copy->resize(static_cast<std::size_t>(size));
        std::memcpy(copy->data(), data, static_cast<std::size_t>(size));
    }
}

bool Db::acquire_or_wait(const std::shared_ptr<Edt>& edt, ocrDbAccessMode_t mode, std::vector<std::byte>* copy) {
    std::lock_guard lock(mutex);
    if (!waiters.empty() || !fits(mode)) {
        waiters.push_back({edt, mode});
        return false;
    }
    take(mode, copy);
    return true;
}

bool Db::acquire_remote_or_wait(const Waiter& waiter, std::uint64_t* taken_version) {
    std::lock_guard lock(mutex);
    if (!waiters.empty() || !fits(waiter.mode)) {
        waiters.push_back(waiter);
        return false;
    }
    take(waiter.mode, nullptr);
    *taken_version = version;
    return true;
}

void Db::release(ocrDbAccessMode_t mode) {
    std::vector<std::shared_ptr<Edt>> granted;
    std::vector<std::pair<Waiter, std::uint64_t>> remote;
    {
        std::lock_guard lock(mutex);
        if (mode == dist::db_mode_remote_write) {
            remote_writer = false;
            ++version;
        } else if (mode == dist::db_mode_remote_const) {
            --senders;
        } else if (mode == db_mode_external_read) {
            --external_readers;
        } else if (mode == DB_MODE_EW) {
            ew_held = false;
            ++version;
        } else if (mode == DB_MODE_RW) {
            --rw_holders;
            ++version;
        }
        // Grant in order; the first that does not fit keeps the rest waiting.
        while (!waiters.empty()) {
            Waiter& w = waiters.front();
            if (!fits(w.mode)) {
                break;
            }
            if (w.edt) {
                take(w.mode, &w.edt->holds[w.edt->next_hold - 1].copy);
                granted.push_back(std::move(w.edt));
            } else {
                take(w.mode, nullptr);
                remote.emplace_back(w, version);
            }
            waiters.pop_front();
        }
    }
    for (auto& edt : granted) {
        continue_acquire(edt);
    }
    if (!remote.empty()) {
        auto self = shared_from_this();
        for (auto& [w, v] : remote) {
            dist::grant_remote(self, w, v);
        }
    }
}

namespace {

void release_hold(Hold& hold) {
    if (hold.released) {
        return;
    }
    hold.released = true;
    if (!hold.db) {
        dist::release_remote(hold);  // another rank's block: a write hold sends its bytes back
        return;
    }
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

Result<std::shared_ptr<Db>> adopt_memfd(int fd, u64 length) {
    auto db = std::make_shared<Db>();
    db->memfd = fd;  // closed by ~Db from here on
    db->size = length;
    db->placement = DbPlacement::memfd;
    // A block keeps at least one page mapped so data is never null; the file
    // keeps its exact length, since external programs see it as the block.
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t mapped = std::max<std::size_t>((static_cast<std::size_t>(length) + page - 1) / page * page, page);
    void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        return make_sys_error(errno, "data block from memfd {} of {} bytes: mmap", fd, length);
    }
    db->data = p;
    db->memfd_mapped = mapped;
    return db;
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
        info.path = db->region->path();
    }
    if (db->shared) {
        info.kind = RegionKind::shared;
        info.path = shared_block_path(*db->shared);
    }
    return info;
}

std::string_view to_string(DbPlacement placement) noexcept {
    switch (placement) {
        case DbPlacement::memory: return "memory";
        case DbPlacement::shared: return "shared";
        case DbPlacement::storage: return "storage";
        case DbPlacement::memfd: return "memfd";
        case DbPlacement::combined: return "combined";
    }
    return "?";
}

Result<DbPlacement> parse_db_placement(std::string_view text, std::string_view param) {
    if (text == "memory") {
        return DbPlacement::memory;
    }
    if (text == "shared") {
        return DbPlacement::shared;
    }
    if (text == "storage") {
        return DbPlacement::storage;
    }
    if (text == "memfd") {
        return DbPlacement::memfd;
    }
    if (text == "combined") {
        return DbPlacement::combined;
    }
    return make_error(Errc::invalid_argument, "{}={}: expected memory, shared, storage, memfd or combined", param,
                      text);
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
        if (has(OCR_HINT_DB_NEAR) || has(OCR_HINT_DB_HIGHBW)) {
            placement = DbPlacement::memory;
        }
        if (has(OCR_HINT_DB_INTER)) {
            placement = DbPlacement::shared;
        }
        if (has(OCR_HINT_DB_FAR)) {
            placement = DbPlacement::storage;
        }
    }
    // An affinity hint places the block on its rank; a labeled GUID on its owner.
    std::string bad_hint;
    const int where = is_labeled(flags) ? owner_of(*guid) : dist::hinted_rank(hint, false, &bad_hint);
    if (where == -2) {
        strata::detail::log().warn("strata-ocr: {}: ocrDbCreate(len={}): {}", site.str(), len, bad_hint);
        return OCR_EINVAL;
    }
    if (where >= 0 && where != dist::rank()) {
        return dist::create_db_on(where, guid, addr, len, flags, placement, site);
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
        Hold hold;
        hold.db = *db;
        hold.mode = DB_MODE_RW;
        hold.guid = *guid;
        edt->holds.push_back(std::move(hold));
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
        std::find_if(edt->holds.begin(), edt->holds.end(), [&](const Hold& h) { return h.guid.guid == guid.guid; });
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
    if (kind_of(guid) == Kind::db && (dist::is_remote(guid) || dist::awaited(guid))) {
        // Checked where it lives; a hold of this EDT on it ends here.
        Hold* held = nullptr;
        if (Edt* edt = current_edt()) {
            for (Hold& hold : edt->holds) {
                if (hold.guid.guid == guid.guid) {
                    held = &hold;
                }
            }
        }
        dist::destroy_remote_db(guid, held, site);
        return 0;
    }
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
