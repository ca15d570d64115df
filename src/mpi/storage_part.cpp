// SPDX-License-Identifier: MIT
#include "mpi/storage_part.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/log.hpp"

namespace strata::mpi {

namespace {

/// Bytes the file already holds from `offset` on (0 if it does not exist).
std::uint64_t existing_bytes(const std::filesystem::path& path, std::uint64_t offset) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) <= offset) {
        return 0;
    }
    return static_cast<std::uint64_t>(st.st_size) - offset;
}

/// Reads [begin, begin+length) of a file mapping into the page cache without
/// waiting: MADV_WILLNEED starts at most one read-ahead window (read_ahead_kb)
/// per call, so the range goes in steps of that size. At most half the
/// memory budget is fetched: a window larger than memory must not push out
/// what the program works on.
void prefetch(std::byte* begin, std::size_t length, const std::filesystem::path& path) {
    auto budget = current_memory_budget();
    const std::size_t limit = budget ? budget->usable / 2 : 0;
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    length = std::min(length, limit) / page * page;
    constexpr std::size_t step = std::size_t{4} << 20;
    for (std::size_t at = 0; at < length; at += step) {
        if (::madvise(begin + at, std::min(step, length - at), MADV_WILLNEED) != 0) {
            detail::log().debug("prefetch of {}: madvise(MADV_WILLNEED): {}", path.string(), describe_errno(errno));
            return;
        }
    }
    detail::log().debug("prefetch of {}: {} bytes of read-ahead started", path.string(), length);
}

/// True if `size` bytes fit in half the memory budget: a write_once window
/// that does may live in anonymous memory until it is synced (direct
/// write-back); a larger one stays a file mapping the kernel can write back.
bool fits_in_memory(std::size_t size) {
    auto budget = current_memory_budget();
    return budget && size <= budget->usable / 2;
}

/// Faults every page of a write_once storage part in, writable, in one call:
/// the kernel's loop costs a fraction of the program's faults, which a store
/// takes per folio. Best effort: without MADV_POPULATE_WRITE (Linux < 5.14)
/// the program faults as usual; ENOMEM/EFAULT are reported by the stores.
void populate_for_writing(std::byte* begin, std::size_t length, const std::filesystem::path& path) {
#ifndef MADV_POPULATE_WRITE
    constexpr int MADV_POPULATE_WRITE = 23;
#endif
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    if (::madvise(begin, (length + page - 1) / page * page, MADV_POPULATE_WRITE) != 0) {
        detail::log().debug("write_once on {}: madvise(MADV_POPULATE_WRITE): {}", path.string(), describe_errno(errno));
    }
}

}  // namespace

StoragePart::StoragePart(Region region, std::filesystem::path path, const ReleasePolicy& policy,
                         std::optional<Region> target)
    : region_(std::move(region)), target_(std::move(target)), path_(std::move(path)), policy_(policy) {}

Result<std::shared_ptr<StoragePart>> StoragePart::create_over_copy(std::size_t size, const PartSpec& spec,
                                                                   const ReleasePolicy& policy) {
    // The window's file, opened, checked and reserved as any storage window's,
    // but mapped only to be written at a sync.
    const std::uint64_t held = spec.create_working_copy ? existing_bytes(spec.file.path, spec.file.offset) : 0;
    StorageOptions file = spec.file;
    file.writeback = Writeback::kernel;
    file.fill = false;
    auto target = Region::storage(size, file);
    if (!target) {
        return std::unexpected(target.error());
    }
    StorageOptions copy = file;
    copy.path = spec.working_copy;
    copy.offset = 0;
    copy.permissions = 0600;
    copy.create_only = spec.create_working_copy;
    copy.allow_other_owner = false;
    auto region = Region::storage(size, copy);
    if (!region) {
        (void)target->close({.roll_back = true});
        return std::unexpected(region.error());
    }
    if (held > 0) {  // the copy starts as the file: one read of what it holds
        std::memcpy(region->data(), target->data(), static_cast<std::size_t>(std::min<std::uint64_t>(held, size)));
    }
    if (spec.advice) {
        (void)region->advise(*spec.advice);
    }
    return std::shared_ptr<StoragePart>(
        new StoragePart(std::move(*region), spec.file.path, policy, std::optional<Region>(std::move(*target))));
}

Result<std::shared_ptr<StoragePart>> StoragePart::create(std::size_t size, const PartSpec& spec,
                                                         const ReleasePolicy& policy) {
    if (spec.storage && !spec.working_copy.empty()) {
        return create_over_copy(size, spec, policy);
    }
    if (!spec.storage) {
        auto region = Region::memory(size);
        if (!region) {
            return std::unexpected(region.error());
        }
        return std::shared_ptr<StoragePart>(new StoragePart(std::move(*region), {}, policy));
    }
    const std::uint64_t existing = spec.prefetch ? existing_bytes(spec.file.path, spec.file.offset) : 0;
    StorageOptions file = spec.file;
    const bool direct = spec.direct && fits_in_memory(size);
    if (direct) {
        file.writeback = Writeback::direct;
        file.fill = spec.fill;
    }
    auto region = Region::combined(
        size,
        {.storage = file, .factor = spec.memory_share, .order = spec.order, .shared_memory_fd = spec.shared_memory_fd});
    if (!region) {
        return std::unexpected(region.error());
    }
    if (spec.advice) {
        if (auto advised = region->advise(*spec.advice); !advised) {
            (void)region->close({.roll_back = true});
            return std::unexpected(advised.error());
        }
    }
    // The storage part follows the memory part (memory_first) or starts the range.
    std::byte* storage = region->data() + (spec.order == Order::memory_first ? region->memory_bytes() : 0);
    if (existing > 0 && region->storage_bytes() > 0 && !region->filled()) {
        prefetch(storage, std::min<std::uint64_t>(region->storage_bytes(), existing), spec.file.path);
    }
    if (spec.populate && !direct && region->storage_bytes() > 0) {
        populate_for_writing(storage, region->storage_bytes(), spec.file.path);
    }
    auto path = region->storage_bytes() > 0 ? spec.file.path : std::filesystem::path{};
    const bool behind = spec.write_behind && region->tracks_writes();
    std::shared_ptr<StoragePart> part(new StoragePart(std::move(*region), std::move(path), policy));
    if (behind) {
        part->writer_ = std::thread([raw = part.get()] { raw->write_behind(); });
    }
    return part;
}

void StoragePart::write_behind() {
    using namespace std::chrono_literals;
    // What a sequential writer is most likely still filling: one huge page.
    constexpr std::size_t tail = std::size_t{2} << 20;
    auto idle = 1ms;
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, idle, [this] { return stopping_; })) {
        if (!region_.is_open()) {
            return;
        }
        auto written = region_.write_changed(tail);
        if (!written) {
            // The pages stay owed (Region keeps them): the next MPI_Win_sync
            // writes them again and reports the error if it persists.
            detail::log().debug("write-behind of {}: {}", path_.string(), written.error().what());
            idle = 64ms;
            continue;
        }
        idle = *written > 0 ? 1ms : std::min<std::chrono::milliseconds>(idle * 2, 64ms);
    }
}

void StoragePart::stop_write_behind() noexcept {
    if (!writer_.joinable()) {
        return;
    }
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    writer_.join();
}

void StoragePart::abandon() noexcept {
    stop_write_behind();
    const std::lock_guard lock(mutex_);
    if (!region_.is_open()) {
        return;
    }
    // The window never existed, so nothing was stored: write nothing back
    // and leave the file system as create() found it.
    if (auto closed = region_.close({.roll_back = true}); !closed) {
        detail::log().warn("releasing an abandoned window: {}", closed.error().what());
    }
    if (target_ && target_->is_open()) {
        if (auto closed = target_->close({.roll_back = true}); !closed) {
            detail::log().warn("releasing an abandoned window: {}", closed.error().what());
        }
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
    if (target_) {
        // The working copy's bytes become the file's; the copy itself never needs to be durable.
        if (offset > region_.size() || length > region_.size() - offset) {
            return make_error(Errc::invalid_argument, "sync of {}: range [{}, {}) beyond the window's {} bytes",
                              path_.string(), offset, offset + length, region_.size());
        }
        std::memcpy(target_->data() + offset, region_.data() + offset, length);
        return target_->sync(offset, length);
    }
    return region_.sync(offset, length);
}

Result<void> StoragePart::flush_async() {
    const std::lock_guard lock(mutex_);
    if (!region_.is_open() || region_.storage_bytes() == 0 || target_) {
        return {};  // a working copy's changes reach the file only at a sync
    }
    return region_.sync_async();
}

Result<void> StoragePart::release(bool unlink) {
    stop_write_behind();
    const std::lock_guard lock(mutex_);
    if (!region_.is_open()) {
        return {};
    }
    const bool has_storage = region_.storage_bytes() > 0;
    if (target_) {
        // Discard: what was synced is in the file; the copy goes (its name is gone already).
        auto copy = region_.close({});
        auto file = target_->close({.unlink = unlink});
        target_.reset();
        if (!copy) {
            return copy;
        }
        return file;
    }
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
