#include "mpi/storage_part.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>

#include "core/log.hpp"

namespace strata::mpi {

StoragePart::StoragePart(Region region, std::filesystem::path path, bool created, std::uint64_t original_size,
                         const ReleasePolicy& policy)
    : region_(std::move(region)),
      path_(std::move(path)),
      created_(created),
      original_size_(original_size),
      policy_(policy) {}

Result<std::shared_ptr<StoragePart>> StoragePart::create(std::size_t size, const PartSpec& spec,
                                                         const ReleasePolicy& policy) {
    if (!spec.storage) {
        auto region = Region::memory(size);
        if (!region) {
            return std::unexpected(region.error());
        }
        return std::shared_ptr<StoragePart>(new StoragePart(std::move(*region), {}, false, 0, policy));
    }
    // The region layer undoes its own failures but cannot know that another
    // rank failed after it succeeded; remember the file's state to undo then.
    // (A process racing to create the same path is not distinguished.)
    struct stat before {};
    const bool existed = ::stat(spec.file.path.c_str(), &before) == 0;
    auto region = Region::combined(size, {.storage = spec.file, .factor = spec.memory_share, .order = spec.order});
    if (!region) {
        return std::unexpected(region.error());
    }
    if (spec.advice) {
        if (auto advised = region->advise(*spec.advice); !advised) {
            const bool made_file = !existed && region->storage_bytes() > 0;
            (void)region->close({.unlink = made_file});
            return std::unexpected(advised.error());
        }
    }
    const bool created = !existed && region->storage_bytes() > 0;
    const auto original = existed && S_ISREG(before.st_mode) ? static_cast<std::uint64_t>(before.st_size) : 0;
    auto path = region->storage_bytes() > 0 ? spec.file.path : std::filesystem::path{};
    return std::shared_ptr<StoragePart>(
        new StoragePart(std::move(*region), std::move(path), created, original, policy));
}

void StoragePart::abandon() noexcept {
    const std::lock_guard lock(mutex_);
    if (!region_.is_open()) {
        return;
    }
    // Nothing was stored yet (the window never existed), so there is nothing
    // to write back; discard where the region allows it, to skip the scan.
    if (auto closed = region_.close({.discard = policy_.discard}); !closed) {
        detail::log().warn("releasing an abandoned window: {}", closed.error().what());
    }
    if (path_.empty()) {
        return;
    }
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return;  // already removed by a peer that shares the file, or a block device
    }
    if (created_) {
        ::unlink(path_.c_str());
    } else if (static_cast<std::uint64_t>(st.st_size) > original_size_) {
        (void)::truncate(path_.c_str(), static_cast<off_t>(original_size_));
    }
}

Result<void> StoragePart::sync(std::size_t offset, std::size_t length) {
    if (policy_.sync == SyncMode::on_free) {
        return {};
    }
    const std::lock_guard lock(mutex_);
    if (!region_.is_open() || region_.storage_bytes() == 0 || length == 0) {
        return {};
    }
    return region_.sync(offset, length);
}

Result<void> StoragePart::flush_async() {
    const std::lock_guard lock(mutex_);
    if (!region_.is_open() || region_.storage_bytes() == 0) {
        return {};
    }
    return region_.sync_async();
}

Result<void> StoragePart::release(bool unlink) {
    const std::lock_guard lock(mutex_);
    if (!region_.is_open()) {
        return {};
    }
    const bool has_storage = region_.storage_bytes() > 0;
    Result<void> result;
    // A kernel write-back mapping must be synced before unmapping to be
    // durable; explicit_sync regions write back in close() unless discarding.
    if (has_storage && !policy_.discard && !unlink) {
        result = region_.sync();
    }
    auto closed = region_.close({.unlink = unlink && has_storage, .discard = policy_.discard && has_storage});
    if (result && !closed) {
        result = std::unexpected(closed.error());
    }
    return result;
}

}  // namespace strata::mpi
