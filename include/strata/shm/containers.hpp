// SPDX-License-Identifier: MIT
// Containers that live in a Segment (docs/shm.md): Boost.Interprocess /
// Boost.Container containers over strata::allocator, so their storage is in
// the segment and every process that maps it sees the same elements.
//
//   auto v = segment.container<strata::vector<int>>("numbers", 1000);  // 1000 ints
//   (*v)->push_back(7);
//
// A struct of containers receives the segment's allocator in its constructor
// (allocator forwarding; Segment::container passes it last, or after
// std::allocator_arg first):
//
//   struct Particles {
//       strata::vector<double> x, y;
//       explicit Particles(const strata::allocator<void>& a) : x(a), y(a) {}
//   };
//   auto p = segment.container<Particles>("particles");
//
// Growth that does not fit throws strata::out_of_space (allocator.hpp).
// Thread safety: as the std containers (concurrent const access, one writer).
#pragma once

#include <functional>

#include <boost/container/deque.hpp>
#include <boost/container/map.hpp>
#include <boost/container/string.hpp>
#include <boost/container/vector.hpp>
#include <boost/unordered_map.hpp>

#include "strata/shm/allocator.hpp"

namespace strata {

template <class T>
using vector = boost::container::vector<T, allocator<T>>;

using string = boost::container::basic_string<char, std::char_traits<char>, allocator<char>>;

template <class T>
using deque = boost::container::deque<T, allocator<T>>;

template <class K, class V, class Compare = std::less<K>>
using map = boost::container::map<K, V, Compare, allocator<std::pair<const K, V>>>;

template <class K, class V, class Hash = boost::hash<K>, class Equal = std::equal_to<K>>
using unordered_map = boost::unordered_map<K, V, Hash, Equal, allocator<std::pair<const K, V>>>;

}  // namespace strata
