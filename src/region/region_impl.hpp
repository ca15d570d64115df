// SPDX-License-Identifier: MIT
// Private access to Region's fields for the files that implement it.
#pragma once

#include <sys/types.h>

#include "strata/region.hpp"

namespace strata {

/// Checks and flags the region factories share (region.cpp, region_combined.cpp).
namespace region_detail {
/// size is in 1..2^56 bytes.
Result<void> check_size(const char* op, std::size_t size);
/// permissions is a file mode (at most 07777).
Result<void> check_permissions(const char* op, mode_t permissions);
/// mmap protection of a region's pages.
int protection(bool read_only);
}  // namespace region_detail

struct RegionAccess {
    /// Validates [offset, offset+length) against the region; `op` names the caller.
    static Result<void> check_range(const Region& r, const char* op, std::size_t offset, std::size_t length);
    /// Writes the anonymous (changed) pages of the storage part of an
    /// explicit_sync or direct region in [offset, offset+length) to the file and drops
    /// them so the mapping shows the file again (a region that tracks writes
    /// keeps its pages, write-protected again). Returns bytes written.
    /// `keep_tail`: see Region::write_changed (tracked regions only).
    static Result<std::size_t> write_back_private(Region& r, const char* op, std::size_t offset, std::size_t length,
                                                  std::size_t keep_tail = 0);
    /// The storage part intersected with [offset, offset+length), page aligned;
    /// empty (second == 0) if they do not meet.
    static std::pair<std::size_t, std::size_t> storage_pages(const Region& r, std::size_t offset, std::size_t length);
    static std::uint64_t file_offset_of(const Region& r, std::size_t region_offset) {
        return r.file_offset_ + (region_offset - r.storage_begin_);
    }
    static std::size_t storage_end(const Region& r) { return r.storage_begin_ + r.storage_length_; }
};

}  // namespace strata
