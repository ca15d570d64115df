// SPDX-License-Identifier: MIT
// Advice, placement and statistics: read-only views of a region.
#include <fcntl.h>
#include <sys/mman.h>
#include <fstream>
#include <sstream>
#include <vector>

#include "region/posix.hpp"
#include "region/region_impl.hpp"

namespace strata {

namespace {

struct AdviceCalls {
    int madvice;
    int fadvice;
};

AdviceCalls calls_for(Advice advice) {
    switch (advice) {
        case Advice::normal: return {MADV_NORMAL, POSIX_FADV_NORMAL};
        case Advice::sequential: return {MADV_SEQUENTIAL, POSIX_FADV_SEQUENTIAL};
        case Advice::random: return {MADV_RANDOM, POSIX_FADV_RANDOM};
        case Advice::read_mostly: return {MADV_WILLNEED, POSIX_FADV_WILLNEED};
        // Pages about to be overwritten gain nothing from read-ahead.
        case Advice::write_mostly: return {MADV_RANDOM, POSIX_FADV_RANDOM};
    }
    return {MADV_NORMAL, POSIX_FADV_NORMAL};
}

/// Sum of "Shared_Dirty" and "Private_Dirty" of the smaps entries inside [begin, end).
Result<std::size_t> dirty_in(const char* op, std::uintptr_t begin, std::uintptr_t end) {
    std::ifstream smaps("/proc/self/smaps");
    if (!smaps) {
        return make_error(Errc::unsupported, "{}: cannot read /proc/self/smaps", op);
    }
    std::size_t dirty_kib = 0;
    bool inside = false;
    std::string line;
    while (std::getline(smaps, line)) {
        const auto dash = line.find('-');
        const auto space = line.find(' ');
        if (dash != std::string::npos && space != std::string::npos && dash < space && line.find(':') > space) {
            // A mapping header: "start-end perms offset dev inode path".
            const auto lo = std::stoull(line.substr(0, dash), nullptr, 16);
            const auto hi = std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
            inside = lo < end && hi > begin;
            continue;
        }
        if (inside && (line.starts_with("Shared_Dirty:") || line.starts_with("Private_Dirty:"))) {
            std::istringstream fields(line.substr(line.find(':') + 1));
            std::size_t kib = 0;
            fields >> kib;
            dirty_kib += kib;
        }
    }
    return dirty_kib * 1024;
}

}  // namespace

Result<void> Region::advise(Advice advice, std::size_t offset, std::size_t length) {
    constexpr const char* op = "Region::advise";
    if (auto ok = RegionAccess::check_range(*this, op, offset, length); !ok) {
        return ok;
    }
    if (length == 0) {
        return {};
    }
    const AdviceCalls calls = calls_for(advice);
    const std::size_t begin = posix::round_down_to_page(offset);
    const std::size_t span = posix::round_up_to_page(offset + length) - begin;
    if (::madvise(base_ + begin, span, calls.madvice) != 0) {
        return make_sys_error(errno, "{}: advice={}: madvise failed", op, to_string(advice));
    }
    const auto [storage_begin, storage_span] = RegionAccess::storage_pages(*this, offset, length);
    if (storage_span > 0) {
        const std::size_t file_span =
            std::min(storage_begin + storage_span, RegionAccess::storage_end(*this)) - storage_begin;
        if (const int err = ::posix_fadvise(fd_, static_cast<off_t>(RegionAccess::file_offset_of(*this, storage_begin)),
                                            static_cast<off_t>(file_span), calls.fadvice);
            err != 0) {
            return make_sys_error(err, "{}: advice={}: posix_fadvise on {} failed", op, to_string(advice),
                                  path_.string());
        }
    }
    return {};
}

Result<Tier> Region::placement(const void* address) const {
    const auto* p = static_cast<const std::byte*>(address);
    if (base_ == nullptr || p < base_ || p >= base_ + size_) {
        return make_error(Errc::invalid_argument, "Region::placement: address={}: outside the region [{}, {})", address,
                          static_cast<const void*>(base_), static_cast<const void*>(base_ + size_));
    }
    if (kind_ == RegionKind::shared) {
        return Tier::shared;
    }
    const auto offset = static_cast<std::size_t>(p - base_);
    if (storage_length_ > 0 && offset >= storage_begin_ && offset < RegionAccess::storage_end(*this)) {
        return Tier::storage;
    }
    return Tier::memory;
}

Result<RegionStats> Region::stats() const {
    constexpr const char* op = "Region::stats";
    if (base_ == nullptr) {
        return make_error(Errc::invalid_argument, "{}: the region is not open", op);
    }
    RegionStats s;
    s.size = size_;
    s.storage_bytes = storage_length_;
    s.memory_bytes = size_ - storage_length_;
    const std::size_t page = posix::page_size();
    std::vector<unsigned char> resident(mapped_ / page);
    if (::mincore(base_, mapped_, resident.data()) != 0) {
        return make_sys_error(errno, "{}: mincore failed", op);
    }
    std::size_t pages = 0;
    for (const unsigned char v : resident) {
        pages += v & 1U;
    }
    s.resident_bytes = std::min(pages * page, size_);
    const auto [begin, span] = RegionAccess::storage_pages(*this, 0, size_);
    if (span > 0 && !read_only_) {
        const auto lo = reinterpret_cast<std::uintptr_t>(base_ + begin);
        auto dirty = dirty_in(op, lo, lo + span);
        if (!dirty) {
            return std::unexpected(dirty.error());
        }
        s.dirty_bytes = std::min(*dirty, storage_length_);
    }
    return s;
}

}  // namespace strata
