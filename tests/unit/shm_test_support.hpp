// SPDX-License-Identifier: MIT
// Helpers of the shm tests: a private segment directory per test.
#pragma once

#include <filesystem>
#include <string>

#include "strata/shm.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace strata::test {

inline constexpr std::size_t kSegmentBytes = 4U << 20U;

/// A segment directory of its own and a unique segment name.
struct ShmFixture {
    TempDir dir;
    std::string name = unique_name("seg").substr(0, 120);
    SegmentOptions options{.dir = dir.path()};

    [[nodiscard]] Result<Segment> open(SegmentMode mode, std::size_t size = kSegmentBytes) const {
        return Segment::open(name, mode, size, options);
    }
    [[nodiscard]] std::filesystem::path seg_file() const { return dir / ("strata." + name + ".seg"); }
    [[nodiscard]] std::filesystem::path lock_file() const { return dir / ("strata." + name + ".lock"); }
};

}  // namespace strata::test
