// SPDX-License-Identifier: MIT
// Objects in a segment: each sits behind an ObjectHeader (layout.hpp) inside
// a Boost char array, named or anonymous:
//
//   [u64: bytes from the array to the header][pad][ObjectHeader][object]
//
// The header directly precedes the object, so save() finds it from the
// object's address and load() from a handle's offset.
#pragma once

#include <string_view>

#include "shm/layout.hpp"
#include "strata/shm/segment.hpp"

namespace strata::shm_detail {

/// Fails when the segment is closed, broken, or (for `writes`) read-only.
Result<void> usable(const Attachment* a, std::string_view op, bool writes);
Result<void> check_object_name(std::string_view op, std::string_view name);

Result<void*> place_object(Attachment& a, std::string_view op, std::string_view name, const ObjectSpec& spec,
                           ConstructFn construct, void* context);
Result<void*> find_object(Attachment& a, std::string_view op, std::string_view name, const ObjectSpec& spec);
Result<void> erase_object(Attachment& a, std::string_view op, std::string_view name, const void* object,
                          const ObjectSpec& spec, DestroyFn destroy);
/// The live header of `object`, checked to be of spec's type.
Result<ObjectHeader*> header_of(const Attachment& a, std::string_view op, const void* object, const ObjectSpec& spec);
Result<void*> load_object(const Attachment& a, const Handle& handle, const ObjectSpec& spec);

/// "segment 'x' (size N bytes, F free)" for out-of-space messages.
std::string space_description(const Attachment& a);

}  // namespace strata::shm_detail
