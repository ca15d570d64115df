// SPDX-License-Identifier: MIT
// Reading a range of a file into memory with several large O_DIRECT reads in
// flight at once: a single read() stream gets only the kernel's read-ahead
// window in flight, while a device serves parallel requests faster. Private
// to libstrata.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "strata/error.hpp"

namespace strata::parallel_read {

/// Reads one piece, [offset, offset+length) of the file, into `data`: from
/// `direct_fd` (O_DIRECT; -1 for none) while the device accepts it, then
/// through the page cache of `fd` (EINVAL: an alignment O_DIRECT refuses).
/// Returns 0 or an errno; `done` is the bytes read, fewer than `length` where
/// the file ends (the rest of `data` is left as it is).
int read_piece(int fd, int direct_fd, std::byte* data, std::size_t length, std::uint64_t offset, std::size_t& done);

/// Reads [offset, offset+length) of the file open as `fd` into `data`
/// (page-aligned; `length` rounded up to pages must be writable) with
/// `streams` threads, each reading `chunk`-byte pieces with O_DIRECT from a
/// shared cursor. Bytes past the end of the file are left as they are
/// (zeros in fresh anonymous memory). Where the file system refuses O_DIRECT
/// the pieces are read through the page cache. `op` and `path` name errors.
Result<void> read(const char* op, int fd, std::byte* data, std::size_t length, std::uint64_t offset,
                  const std::filesystem::path& path, unsigned streams = 8, std::size_t chunk = std::size_t{2} << 20);

}  // namespace strata::parallel_read
