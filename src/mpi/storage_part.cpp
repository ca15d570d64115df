#include "mpi/storage_part.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>

#include "core/log.hpp"

namespace strata::mpi {

StoragePart::StoragePart(Region region, std::filesystem::path path, const ReleasePolicy& policy)
    : region_(std::move(region)), path_(std::move(path)), policy_(policy) {}

Result<std::shared_ptr<StoragePart>> StoragePart::create(std::size_t size, const PartSpec& spec,
                                                         const ReleasePolicy& policy) {
    if (!spec.storage) {
        auto region = Region::memory(size);
        if (!region) {
            return std::unexpected(region.error());
        }
        return std::shared_ptr<StoragePart>(new StoragePart(std::move(*region), {}, policy));
    }
    auto region = Region::combined(size, {.storage = spec.file, .factor = spec.memory_share, .order = spec.order});
    if (!region) {
        return std::unexpected(region.error());
    }
    if (spec.advice) {
        if (auto advised = region->advise(*spec.advice); !advised) {
            (void)region->close({.roll_back = true});
            return std::unexpected(advised.error());
        }
    }
    auto path = region->storage_bytes() > 0 ? spec.file.path : std::filesystem::path{};
    return std::shared_ptr<StoragePart>(new StoragePart(std::move(*region), std::move(path), policy));
}

void StoragePart::abandon() noexcept {
    const std::lock_guard lock(mutex_);
    if (!region_.is_open()) {
        return;
    }
    // The window never existed, so nothing was stored: write nothing back
    // and leave the file system as create() found it.
    if (auto closed = region_.close({.roll_back = true}); !closed) {
        detail::log().warn("releasing an abandoned window: {}", closed.error().what());
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
