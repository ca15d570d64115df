// SPDX-License-Identifier: MIT
// Data blocks placed in shared memory: each is the object "block" of a strata
// segment of its own, so other processes load it by handle
// (include/ocr/extensions/ocr-db-shm.h, docs/runtime.md "Shared data blocks").
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "strata/error.hpp"
#include "strata/shm/named_handle.hpp"

namespace strata::ocr {

struct Db;

/// The segment behind a shared data block, and the block in it.
struct SharedBlock;

/// A new segment holding `length` zero bytes for data block number `serial`
/// of this process; `data` receives where the bytes are mapped here.
Result<std::shared_ptr<SharedBlock>> make_shared_block(std::uint64_t length, std::uint64_t serial, void** data);

/// The segment file of a shared block (for db_info).
std::filesystem::path shared_block_path(const SharedBlock& block);

/// The handle of `db`, granting writes when `writable`. invalid_argument
/// naming the block, its placement and the cause when it is not shared.
Result<NamedHandle> shared_block_handle(const Db& db, bool writable);

}  // namespace strata::ocr
