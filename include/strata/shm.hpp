// SPDX-License-Identifier: MIT
// strata shared objects (docs/shm.md): the one include for segments, named
// objects and containers, handles and ports.
//
//   #include <strata/shm.hpp>
//   auto seg = strata::Segment::open("wf", strata::SegmentMode::open_or_create, 256 << 20);
//   auto v = seg->container<strata::vector<double>>("temperature", n);
#pragma once

#include "strata/shm/admin.hpp"         // IWYU pragma: export
#include "strata/shm/allocator.hpp"     // IWYU pragma: export
#include "strata/shm/containers.hpp"    // IWYU pragma: export
#include "strata/shm/handle.hpp"        // IWYU pragma: export
#include "strata/shm/named_handle.hpp"  // IWYU pragma: export
#include "strata/shm/port.hpp"          // IWYU pragma: export
#include "strata/shm/segment.hpp"       // IWYU pragma: export
