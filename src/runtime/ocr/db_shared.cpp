// SPDX-License-Identifier: MIT
// Shared data blocks (db_shared.hpp) and ocrDbGetShmHandle.
#include "db_shared.hpp"

#include <dirent.h>
#include <unistd.h>
#include <algorithm>
#include <cstring>
#include <new>
#include <random>
#include <shared_mutex>
#include <vector>

#include "core/log.hpp"
#include "ocr/extensions/ocr-db-shm.h"
#include "ocr/ocr.h"
#include "state.hpp"
#include "strata/shm/containers.hpp"
#include "strata/shm/segment.hpp"

namespace strata::ocr {

using BlockBytes = strata::vector<std::uint8_t>;

struct SharedBlock {
    Segment segment;
    BlockBytes* bytes = nullptr;
};

namespace {

// Room in a block's segment besides the bytes: the segment header (128 KiB),
// Boost's segment manager and name index, the object's header and the
// vector; measured well under 8 KiB beyond the header, so this is ample.
constexpr std::uint64_t segment_overhead = 256 * 1024;
constexpr std::uint64_t min_segment_bytes = 1024 * 1024;

// Tells this process's runs apart from an earlier process of the same pid
// whose segments a crash left behind (until `strata shm gc`).
std::uint32_t process_token() {
    static const std::uint32_t token = std::random_device{}();
    return token;
}

// The segments of this process, for remove_shared_blocks(): creations hold
// `mutex` shared, so none slips between the removal's listing and its end.
struct Made {
    std::shared_mutex mutex;
    bool removed = false;       // guarded by mutex
    std::filesystem::path dir;  // guarded by mutex: where they are
    std::string prefix;         // guarded by mutex: their names' prefix
};

Made& made() {
    static Made instance;
    return instance;
}

void unlink_segment(const std::filesystem::path& dir, std::string_view name) {
    ::unlink((dir / fmt::format("strata.{}.seg", name)).c_str());
    ::unlink((dir / fmt::format("strata.{}.lock", name)).c_str());
}

}  // namespace

std::string shared_block_prefix(std::string_view job) {
    return job.empty() ? fmt::format("strata-ocr-{}-{:08x}-", ::getpid(), process_token())
                       : fmt::format("strata-ocr-{}-{}-{:08x}-", job, ::getpid(), process_token());
}

void remove_shared_blocks() {
    Made& m = made();
    std::unique_lock lock(m.mutex);
    m.removed = true;
    if (m.prefix.empty()) {
        return;  // none made
    }
    DIR* dir = ::opendir(m.dir.c_str());
    if (dir == nullptr) {
        return;
    }
    const std::string seg = "strata." + m.prefix;
    std::vector<std::string> names;
    while (dirent* entry = ::readdir(dir)) {
        const std::string_view file(entry->d_name);
        if (file.starts_with(seg) && file.ends_with(".seg")) {
            names.emplace_back(file.substr(7, file.size() - 11));
        }
    }
    ::closedir(dir);
    for (const std::string& name : names) {
        unlink_segment(m.dir, name);
    }
}

Result<std::shared_ptr<SharedBlock>> make_shared_block(std::string_view job, std::uint64_t length, std::uint64_t serial,
                                                       void** data) {
    const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t size = std::max(min_segment_bytes, (length + segment_overhead + page - 1) / page * page);
    const std::string prefix = shared_block_prefix(job);
    const std::string name = fmt::format("{}{}", prefix, serial);
    Made& m = made();
    std::shared_lock creating(m.mutex);
    auto segment = Segment::open(name, SegmentMode::create_only, static_cast<std::size_t>(size));
    if (!segment) {
        return std::unexpected(segment.error());
    }
    if (m.removed) {
        unlink_segment(segment->path().parent_path(), name);  // the rank is ending: no file outlives it
    } else if (m.prefix != prefix) {
        creating.unlock();
        std::unique_lock recording(m.mutex);
        if (m.removed) {
            unlink_segment(segment->path().parent_path(), name);
        }
        m.dir = segment->path().parent_path();
        m.prefix = prefix;
    }
    // A new segment's pages are zero: default_init leaves them untouched, so
    // creating a large block maps nothing into this process yet.
    auto bytes =
        segment->container<BlockBytes>("block", static_cast<std::size_t>(length), boost::container::default_init);
    if (!bytes) {
        return std::unexpected(bytes.error());
    }
    // A block's address is never null, not even for 0 bytes (as for every placement).
    try {
        (*bytes)->reserve(8);
    } catch (const std::bad_alloc& e) {
        return make_error(Errc::no_space, "ocrDbCreate: len={}: segment '{}': {}", length, name, e.what());
    }
    auto block = std::make_shared<SharedBlock>(SharedBlock{std::move(*segment), *bytes});
    *data = block->bytes->data();
    return block;
}

std::filesystem::path shared_block_path(const SharedBlock& block) {
    return block.segment.path();
}

Result<NamedHandle> shared_block_handle(const Db& db, bool writable) {
    if (!db.shared) {
        return make_error(Errc::invalid_argument,
                          "data block {}: placed in {}, not in shared memory: only a block created with the hint "
                          "OCR_HINT_DB_INTER or STRATA_OCR_DB_PLACEMENT=shared has a shm handle",
                          show(db.guid), db.heap != nullptr ? "memory (heap)" : to_string(db.placement));
    }
    auto handle = db.shared->segment.save(*db.shared->bytes);
    if (!handle) {
        return std::unexpected(handle.error());
    }
    return NamedHandle{db.shared->segment.name(), *handle, writable};
}

}  // namespace strata::ocr

using namespace strata::ocr;

namespace {

// Whether the running EDT may see `db` (holds it or has it in a slot), and write it.
struct Access {
    bool allowed = true;
    bool writable = true;
};

Access access_of(const std::shared_ptr<Db>& db) {
    Edt* edt = current_edt();
    if (edt == nullptr) {
        return {};  // legacy code outside EDTs: the program's own block
    }
    Access access{false, false};
    for (const Hold& hold : edt->holds) {
        if (hold.db == db && !hold.released) {
            access.allowed = true;
            access.writable = access.writable || hold.mode == DB_MODE_RW || hold.mode == DB_MODE_EW;
        }
    }
    access.allowed = access.allowed || std::any_of(edt->slots.begin(), edt->slots.end(),
                                                   [&](const Slot& slot) { return slot.block == db; });
    return access;
}

}  // namespace

extern "C" {

u8 ocrDbGetShmHandle(ocrGuid_t guid, ocrDbShmHandle_t* out) {
    OcrState* s = state();
    auto db = s != nullptr ? s->table.find_as<Db>(guid, Kind::db) : nullptr;
    if (!db || out == nullptr) {
        strata::detail::log().warn("strata-ocr: ocrDbGetShmHandle(db={}): {}", show(guid),
                                   out == nullptr ? "handle is NULL" : "not a live data block");
        return OCR_EINVAL;
    }
    const Access access = access_of(db);
    if (!access.allowed) {
        strata::detail::log().warn("strata-ocr: ocrDbGetShmHandle(db={}): EDT {} neither holds it nor depends on it",
                                   show(guid), show(current_edt()->guid));
        return OCR_EACCES;
    }
    auto named = shared_block_handle(*db, access.writable);
    if (!named) {
        strata::detail::log().warn("strata-ocr: ocrDbGetShmHandle(db={}): {}", show(guid), named.error().message);
        return named.error().code == strata::Errc::invalid_argument ? OCR_EPERM : OCR_EFAULT;
    }
    *out = ocrDbShmHandle_t{};
    const std::string text = to_string(*named);
    std::memcpy(out->text, text.data(), std::min(text.size(), sizeof out->text - 1));
    std::memcpy(out->segment, named->segment.data(), std::min(named->segment.size(), sizeof out->segment - 1));
    out->segmentId = named->handle.segment;
    out->generation = named->handle.generation;
    out->offset = named->handle.offset;
    out->type = named->handle.type;
    out->size = db->size;
    out->writable = named->writable ? 1 : 0;
    return 0;
}

}  // extern "C"
