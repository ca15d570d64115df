// SPDX-License-Identifier: MIT
// Handles: a trivially copyable reference to an object in a Segment that any
// process attached to the segment can turn back into a pointer (docs/shm.md).
//
//   strata::Handle h = *segment.save(*v);          // send h by MPI, a pipe, a port...
//   auto w = other_segment.load<strata::vector<int>>(h);   // checks, then a pointer
//
// A handle carries the segment's id (new for every creation of a segment of
// that name), the object's generation (new for every object, so a freed and
// reused place is told apart), its offset in the segment and its type id.
// load<T>() checks all four and fails with a message naming what differs.
//
// Thread safety: a Handle is a value.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace strata {

/// 32 bytes, trivially copyable; a default-constructed handle is null and never loads.
struct Handle {
    std::uint64_t segment = 0;     ///< Segment::id() of the segment that holds the object
    std::uint64_t generation = 0;  ///< the object's generation, unique within the segment
    std::uint64_t offset = 0;      ///< byte offset of the object from the segment's start
    std::uint64_t type = 0;        ///< type_id<T>() of the object

    [[nodiscard]] bool is_null() const noexcept { return segment == 0; }
    bool operator==(const Handle&) const = default;
};
static_assert(std::is_trivially_copyable_v<Handle> && sizeof(Handle) == 32);

/// The name of T as the compiler spells it ("strata::vector<int>" spelled out).
template <class T>
constexpr std::string_view type_name() noexcept {
    constexpr std::string_view pretty = __PRETTY_FUNCTION__;
    constexpr std::string_view key = "T = ";
    constexpr std::size_t begin = pretty.find(key) + key.size();
    constexpr std::size_t end = pretty.find_first_of(";]", begin);
    return pretty.substr(begin, end - begin);
}

/// A 64-bit FNV-1a hash of type_name<T>(), its size and alignment: equal in
/// every process built by the same compiler, different for different types.
template <class T>
constexpr std::uint64_t type_id() noexcept {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    auto mix = [&hash](std::uint64_t byte) {
        hash ^= byte;
        hash *= 0x100000001b3ULL;
    };
    for (const char c : type_name<T>()) {
        mix(static_cast<unsigned char>(c));
    }
    for (int shift = 0; shift < 64; shift += 8) {
        mix((sizeof(T) >> shift) & 0xFFU);
    }
    mix(alignof(T));
    return hash;
}

}  // namespace strata
