// SPDX-License-Identifier: MIT
// NamedHandle: a Handle together with the name of its segment and the access
// it grants, as one word of text - what a process that is not attached to the
// segment yet needs to load the object (docs/shm.md, "Handles as text"). The
// OCR extension ocrDbGetShmHandle and external tasks' [handle:K] give data
// blocks placed in shared memory this way (docs/runtime.md).
//
//   shm:<segment>:<segment id>:<generation>:<offset>:<type>:<ro|rw>
//
// The four numbers are the Handle's fields in lowercase hexadecimal. Segment
// names hold no ':' (Segment::open allows [A-Za-z0-9._-]), so the text splits
// without escapes and stays one shell word.
//
// Example (another process, C++):
//
//   auto named = strata::parse_named_handle(argv[1]);             // "shm:strata-ocr-..."
//   auto seg = strata::open_segment(*named);                      // read_only unless "rw"
//   auto block = seg->load<strata::vector<std::uint8_t>>(named->handle);
//
// Errors: parse_named_handle gives invalid_argument naming the parameter, the
// text and what is wrong; open_segment gives Segment::open's errors (not_found
// once the segment's last user detached).
//
// Thread safety: values and pure functions.
#pragma once

#include <string>
#include <string_view>

#include "strata/error.hpp"
#include "strata/shm/handle.hpp"
#include "strata/shm/segment.hpp"

namespace strata {

struct NamedHandle {
    std::string segment;    ///< Segment::name() of the segment holding the object
    Handle handle;          ///< the object in it
    bool writable = false;  ///< whether the giver lets the loader write ("rw") or only read ("ro")
};

/// "shm:<segment>:<id>:<generation>:<offset>:<type>:<ro|rw>".
std::string to_string(const NamedHandle& named);

/// Parses to_string()'s text; invalid_argument names `param`, the text and the fault.
Result<NamedHandle> parse_named_handle(std::string_view text, std::string_view param = "handle");

/// Opens the segment of `named`: SegmentMode::read_only unless it is
/// writable (then open_only), so a read-only handle maps the object PROT_READ.
Result<Segment> open_segment(const NamedHandle& named, const SegmentOptions& options = {});

}  // namespace strata
