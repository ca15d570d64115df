// SPDX-License-Identifier: MIT
// Data blocks across ranks (docs/runtime.md, "Data blocks across ranks").
//
// The owner keeps the block and its holds. An EDT of another rank asks for a
// hold (acquire); the owner queues the request with its local ones, in order,
// and grants it with the block's bytes and version: inside the grant up to
// inline_limit, else as a byte range from the block's memory into the copy's
// (no copy through the runtime). RO and CONST copies are kept (budget
// copy_budget) and sent again only when the owner's version differs. A write
// hold (RW, EW) of another rank is exclusive at the owner: the copy's bytes
// come back with its release, before any other hold (RO included) is granted,
// so no update is lost and every later acquirer sees them (db.cpp, Db::fits).
#include <new>

#include "api.hpp"
#include "cluster.hpp"
#include "core/log.hpp"
#include "ocr/ocr.h"
#include "site.hpp"

namespace strata::ocr {

RemoteCopy::RemoteCopy(std::uint64_t size_, std::uint64_t version_) : size(size_), version(version_) {
    data = static_cast<std::byte*>(
        ::operator new (std::max<std::size_t>(static_cast<std::size_t>(size), 8), std::align_val_t{64}));
}

RemoteCopy::~RemoteCopy() {
    ::operator delete (data, std::align_val_t{64});
}

void* remote_data(const RemoteCopy& copy) noexcept {
    return copy.data;
}

}  // namespace strata::ocr

namespace strata::ocr::dist {

namespace {

// RO and CONST copies of other ranks' blocks kept for reuse, beyond those in use.
constexpr std::uint64_t copy_budget = std::uint64_t{256} << 20;

enum class Sent : std::uint8_t { current, inline_bytes, byte_range };

bool is_write(ocrDbAccessMode_t mode) {
    return mode == DB_MODE_RW || mode == DB_MODE_EW;
}

ocrDbAccessMode_t owner_mode(ocrDbAccessMode_t asked) {
    if (is_write(asked)) {
        return db_mode_remote_write;
    }
    return asked == DB_MODE_CONST ? db_mode_remote_const : DB_MODE_RO;
}

// Keeps `copy` for later RO/CONST acquisitions; drops copies no hold uses when
// over budget. Called with the blocks mutex held.
void keep_copy(Cluster& c, ocrGuid_t guid, const std::shared_ptr<RemoteCopy>& copy) {
    auto [it, fresh] = c.copies.try_emplace(id_of(guid), copy);
    if (!fresh) {
        c.copies_bytes -= it->second->size;
        it->second = copy;
    }
    c.copies_bytes += copy->size;
    for (auto e = c.copies.begin(); c.copies_bytes > copy_budget && e != c.copies.end();) {
        if (e->second.use_count() == 1 && e->second != copy) {
            c.copies_bytes -= e->second->size;
            e = c.copies.erase(e);
        } else {
            ++e;
        }
    }
}

// The copy of acquisition `token` is here: the EDT goes on acquiring.
void acquired(Cluster& c, std::uint64_t token, const std::shared_ptr<RemoteCopy>& copy) {
    Cluster::Acquisition a;
    {
        std::lock_guard lock(c.blocks_mutex());
        auto it = c.acquisitions.find(token);
        if (it == c.acquisitions.end()) {
            return;
        }
        a = std::move(it->second);
        c.acquisitions.erase(it);
        Hold& hold = a.edt->holds[a.hold];
        if (!is_write(hold.mode)) {
            keep_copy(c, hold.guid, copy);
        }
        hold.remote = copy;
    }
    continue_acquire(a.edt);
}

void send_grant(Cluster& c, const std::shared_ptr<Db>& db, int rank, std::uint64_t token, ocrDbAccessMode_t mode,
                std::uint64_t cached, std::uint64_t version) {
    Writer grant(Msg::grant);
    grant.u64(token).u32(0).u64(version).u64(db->size);
    if (mode == db_mode_remote_write) {
        std::lock_guard lock(c.blocks_mutex());
        c.written[id_of(db->guid)] = db;
    }
    const std::span<const std::byte> bytes(static_cast<const std::byte*>(db->data), static_cast<std::size_t>(db->size));
    if (mode != db_mode_remote_write && cached == version) {
        grant.u8(static_cast<std::uint8_t>(Sent::current));
        c.send(rank, grant);
        if (mode == db_mode_remote_const) {
            db->release(mode);
        }
        return;
    }
    if (db->size <= inline_limit) {
        grant.u8(static_cast<std::uint8_t>(Sent::inline_bytes)).bytes(bytes);
        if (mode == db_mode_remote_const) {
            db->release(mode);  // copied: writers may go on
        }
        c.send(rank, grant);
        return;
    }
    const std::uint64_t transfer = c.new_transfer();
    grant.u8(static_cast<std::uint8_t>(Sent::byte_range)).u64(transfer);
    c.send(rank, grant);
    // CONST readers keep writers out until their bytes are out (Db::senders).
    auto sent = c.wire().send_bytes(rank, transfer, bytes, [db, mode](bool) {
        if (mode == db_mode_remote_const) {
            db->release(mode);
        }
    });
    if (!sent) {
        c.peer_died(rank, sent.error().message);
    }
}

// The copy a grant's bytes go into: the stale copy kept here, when it has the
// same size and no EDT of this rank holds it any more (its pages are mapped:
// a new buffer of a large block costs a page fault per 4 KiB on arrival), else
// a new one. The caller holds no reference to the stale copy.
std::shared_ptr<RemoteCopy> copy_for_grant(Cluster& c, std::uint64_t token, ocrGuid_t guid, std::uint64_t size,
                                           std::uint64_t version) {
    std::lock_guard lock(c.blocks_mutex());
    auto asked = c.acquisitions.find(token);
    auto kept = c.copies.find(id_of(guid));
    if (asked != c.acquisitions.end() && asked->second.cached && kept != c.copies.end() &&
        kept->second == asked->second.cached && kept->second->size == size) {
        asked->second.cached.reset();
        std::shared_ptr<RemoteCopy> stale = std::move(kept->second);
        c.copies.erase(kept);
        c.copies_bytes -= stale->size;
        if (stale.use_count() == 1) {  // no hold has it, and nothing can reach it any more
            stale->version = version;
            return stale;
        }
    }
    return std::make_shared<RemoteCopy>(size, version);
}

void finish_write(const std::shared_ptr<Db>& db) {
    db->release(db_mode_remote_write);
}

}  // namespace

bool acquire_remote(const std::shared_ptr<Edt>& edt, std::size_t index) {
    Cluster* c = cluster();
    Hold& hold = edt->holds[index];
    const std::uint64_t token = c->new_token();
    std::uint64_t cached = ~std::uint64_t{0};
    {
        std::lock_guard lock(c->blocks_mutex());
        Cluster::Acquisition& a = c->acquisitions[token];
        a.edt = edt;
        a.hold = index;
        if (!is_write(hold.mode)) {
            if (auto it = c->copies.find(id_of(hold.guid)); it != c->copies.end()) {
                a.cached = it->second;  // kept until the grant says whether it is current
                cached = it->second->version;
            }
        }
    }
    Writer message(Msg::acquire);
    message.u64(id_of(hold.guid)).u32(static_cast<u32>(hold.mode)).u64(token).u64(cached);
    c->send(owner_of(hold.guid), message);
    return false;
}

bool on_acquire(Cluster& c, int source, Reader& in) {
    OcrState& s = c.state();
    const ocrGuid_t guid = guid_of(in.u64());
    const auto asked = static_cast<ocrDbAccessMode_t>(in.u32());
    const std::uint64_t token = in.u64();
    const std::uint64_t cached = in.u64();
    auto db = s.table.find_as<Db>(guid, Kind::db);
    if (!db && c.not_created_yet(guid)) {
        return false;
    }
    if (!db) {
        Writer refusal(Msg::grant);
        refusal.u64(token).u32(OCR_EINVAL).u64(0).u64(0).u8(0);
        c.send(source, refusal);
        return true;
    }
    const Db::Waiter waiter{nullptr, owner_mode(asked), token, source, cached};
    std::uint64_t version = 0;
    if (db->acquire_remote_or_wait(waiter, &version)) {
        send_grant(c, db, source, token, waiter.mode, cached, version);
    }
    return true;
}

void grant_remote(const std::shared_ptr<Db>& db, const Db::Waiter& waiter, std::uint64_t version) {
    if (Cluster* c = cluster()) {
        send_grant(*c, db, waiter.remote_rank, waiter.remote_token, waiter.mode, waiter.remote_cached, version);
    }
}

void on_grant(Cluster& c, int source, Reader& in) {
    const std::uint64_t token = in.u64();
    const u32 status = in.u32();
    const std::uint64_t version = in.u64();
    const std::uint64_t size = in.u64();
    const auto sent = static_cast<Sent>(in.u8());
    Cluster::Acquisition a;
    {
        std::lock_guard lock(c.blocks_mutex());
        auto it = c.acquisitions.find(token);
        if (it == c.acquisitions.end()) {
            return;
        }
        a = it->second;
    }
    const Hold& hold = a.edt->holds[a.hold];
    if (status != 0) {
        {
            std::lock_guard lock(c.blocks_mutex());
            c.acquisitions.erase(token);
        }
        c.state().deferred_error(
            a.edt->created_at, "acquiring a data block", static_cast<int>(status),
            fmt::format("EDT {} ({}) depends on data block {} of rank {}, which is not a live data block there",
                        show(a.edt->guid), a.edt->name, show(hold.guid), source));
        return;
    }
    if (sent == Sent::current && a.cached) {
        acquired(c, token, a.cached);
        return;
    }
    a.cached.reset();
    auto copy = copy_for_grant(c, token, hold.guid, size, version);
    if (sent == Sent::inline_bytes) {
        auto bytes = in.bytes();
        std::memcpy(copy->data, bytes.data(), std::min<std::size_t>(bytes.size(), copy->bytes().size()));
        acquired(c, token, copy);
        return;
    }
    const std::uint64_t transfer = in.u64();
    auto received = c.wire().receive_bytes(source, transfer, copy->bytes(), copy, [&c, token, copy](bool ok) {
        if (ok) {
            acquired(c, token, copy);
        }
    });
    if (!received) {
        c.peer_died(source, received.error().message);
    }
}

void release_remote(Hold& hold) {
    Cluster* c = cluster();
    auto copy = std::move(hold.remote);
    if (c == nullptr || !copy || !is_write(hold.mode)) {
        return;
    }
    const int owner = owner_of(hold.guid);
    Writer message(Msg::release);
    message.u64(id_of(hold.guid)).u64(copy->size);
    if (copy->size <= inline_limit) {
        message.u8(static_cast<std::uint8_t>(Sent::inline_bytes)).bytes(copy->bytes());
        c->send(owner, message);
        return;
    }
    const std::uint64_t transfer = c->new_transfer();
    message.u8(static_cast<std::uint8_t>(Sent::byte_range)).u64(transfer);
    c->send(owner, message);
    auto sent = c->wire().send_bytes(owner, transfer, copy->bytes(), [copy](bool) {});
    if (!sent) {
        c->peer_died(owner, sent.error().message);
    }
}

void on_release(Cluster& c, int source, Reader& in) {
    const ocrGuid_t guid = guid_of(in.u64());
    const std::uint64_t size = in.u64();
    const auto sent = static_cast<Sent>(in.u8());
    std::shared_ptr<Db> db;
    {
        std::lock_guard lock(c.blocks_mutex());
        auto it = c.written.find(id_of(guid));
        if (it != c.written.end()) {
            db = std::move(it->second);
            c.written.erase(it);
        }
    }
    if (!db || size != db->size) {
        strata::detail::log().warn("strata-ocr: rank {}: rank {} released data block {}, which it does not hold here",
                                   c.rank(), source, show(guid));
        return;
    }
    if (sent == Sent::inline_bytes) {
        auto bytes = in.bytes();
        std::memcpy(db->data, bytes.data(), std::min<std::size_t>(bytes.size(), static_cast<std::size_t>(db->size)));
        finish_write(db);
        return;
    }
    // Straight into the block: the writer holds it alone (RO readers may see the bytes land).
    const std::uint64_t transfer = in.u64();
    auto received = c.wire().receive_bytes(
        source, transfer, {static_cast<std::byte*>(db->data), static_cast<std::size_t>(db->size)}, db, [db](bool ok) {
            if (ok) {
                finish_write(db);
            }
        });
    if (!received) {
        c.peer_died(source, received.error().message);
    }
}

void drop_remote_writer(Cluster& c, ocrGuid_t guid) {
    std::shared_ptr<Db> db;
    {
        std::lock_guard lock(c.blocks_mutex());
        auto it = c.written.find(id_of(guid));
        if (it == c.written.end()) {
            return;
        }
        db = std::move(it->second);
        c.written.erase(it);
    }
    finish_write(db);
}

void destroy_remote_db(ocrGuid_t guid, Hold* held, const CallSite& site) {
    Cluster* c = cluster();
    bool write = false;
    if (held != nullptr && !held->released) {
        held->released = true;
        write = is_write(held->mode);
        held->remote.reset();
    }
    Writer message(Msg::destroy);
    message.u64(id_of(guid)).u8(write ? 1 : 0);
    write_site(message, site);
    c->send(owner_of(guid), message);
}

u8 create_db_on(int rank, ocrGuid_t* guid, void** addr, u64 len, u16 flags, DbPlacement placement,
                const CallSite& site) {
    Cluster* c = cluster();
    Edt* edt = current_edt();
    const bool acquire = (flags & DB_PROP_NO_ACQUIRE) == 0 && edt != nullptr;
    ocrGuid_t id = *guid;
    if (is_labeled(flags)) {
        if (u8 rc = create_labeled_db(id, len, flags, placement, acquire, site); rc != 0) {
            return rc;
        }
    } else {
        id = c->create_on(rank, Kind::db, [&](ocrGuid_t minted) {
            Writer message(Msg::create_db);
            message.u64(id_of(minted)).u64(len).u8(static_cast<std::uint8_t>(placement)).u8(acquire ? 1 : 0);
            write_site(message, site);
            return message;
        });
    }
    *guid = id;
    if (acquire) {
        // Held for writing from the start, as a block made here is; the owner
        // receives the bytes when the EDT releases it.
        auto copy = std::make_shared<RemoteCopy>(len, 0);
        std::memset(copy->data, 0, static_cast<std::size_t>(len));
        Hold hold;
        hold.mode = DB_MODE_RW;
        hold.guid = id;
        hold.remote = copy;
        edt->holds.push_back(std::move(hold));
    }
    if (addr != nullptr) {
        *addr = acquire ? edt->holds.back().remote->data : nullptr;
    }
    return 0;
}

void on_create_db(Cluster& c, int source, Reader& in) {
    OcrState& s = c.state();
    const ocrGuid_t guid = guid_of(in.u64());
    const u64 len = in.u64();
    const auto placement = static_cast<DbPlacement>(in.u8());
    const bool held = in.u8() != 0;
    const CallSite site = read_site(c, in);
    auto db = make_db(len, placement);
    if (!db) {
        s.deferred_error(site, "ocrDbCreate", OCR_ENOMEM,
                         fmt::format("data block {} of {} bytes, created by rank {} on rank {}: {}", show(guid), len,
                                     source, c.rank(), db.error().what()));
        c.created(guid);
        return;
    }
    if (held) {
        (*db)->remote_writer = true;  // not shared yet: no lock needed
        std::lock_guard lock(c.blocks_mutex());
        c.written[id_of(guid)] = *db;
    }
    s.table.insert_at(guid, *db);
    c.created(guid);
}

}  // namespace strata::ocr::dist
