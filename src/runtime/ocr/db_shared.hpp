// SPDX-License-Identifier: MIT
// Data blocks placed in shared memory: each is the object "block" of a strata
// segment of its own, so other processes load it by handle
// (include/ocr/extensions/ocr-db-shm.h, docs/runtime.md "Shared data blocks").
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "strata/error.hpp"
#include "strata/shm/named_handle.hpp"

namespace strata::ocr {

struct Db;

/// The segment behind a shared data block, and the block in it.
struct SharedBlock;

/// A new segment holding `length` zero bytes for data block number `serial`
/// of this process, named shared_block_prefix(job) + serial; `data` receives
/// where the bytes are mapped here.
Result<std::shared_ptr<SharedBlock>> make_shared_block(std::string_view job, std::uint64_t length, std::uint64_t serial,
                                                       void** data);

/// The name prefix of this process's shared block segments:
/// strata-ocr-<job>-<pid>-<token>- in a job (OcrOptions::job), else
/// strata-ocr-<pid>-<token>- (the token tells this process from an earlier
/// one of the same pid).
std::string shared_block_prefix(std::string_view job);

/// Removes the files of every shared block segment of this process now and of
/// those made from here on (as soon as made), for a rank that ends on a
/// failure without destroying its blocks (dist/failure.cpp). Mappings stay
/// valid until the process ends. Thread-safe.
void remove_shared_blocks();

/// The segment file of a shared block (for db_info).
std::filesystem::path shared_block_path(const SharedBlock& block);

/// The handle of `db`, granting writes when `writable`. invalid_argument
/// naming the block, its placement and the cause when it is not shared.
Result<NamedHandle> shared_block_handle(const Db& db, bool writable);

}  // namespace strata::ocr
