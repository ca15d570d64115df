// SPDX-License-Identifier: MIT
// The memfd exposure (exposure.hpp): data blocks reach external programs as
// /proc/self/fd/N paths of descriptors the program inherits.
//
// Inputs: a block that already lives in a memfd of exactly its size (data
// blocks placed with STRATA_OCR_DB_PLACEMENT=memfd, and every block adopted
// from an earlier program's output) is exposed as is, with no copy, after
// sealing it with F_SEAL_FUTURE_WRITE | F_SEAL_GROW | F_SEAL_SHRINK: the
// runtime's existing shared mapping stays writable (F_SEAL_WRITE would fail
// while it exists), but the program can neither write, grow nor shrink the
// file, nor map it writable. Any other block is copied once into a fresh
// memfd sealed with F_SEAL_WRITE as well.
// Outputs: empty memfds the program opens by path and writes (they grow as it
// writes); take_output() hands the descriptor over, so the runtime maps it as
// the new data block without a copy.
//
// Every descriptor is close-on-exec in this process; the launcher dup2()s each
// onto its own number in the child only, so concurrent spawns of other
// programs never inherit another task's files.
//
// Thread safety: MemfdExposure is stateless and thread-safe; a MemfdTaskFiles
// belongs to one thread at a time. Errors: strata::Result; a failed call
// leaves nothing open.
#pragma once

#include "exposure.hpp"

namespace strata::external {

class MemfdExposure final : public Exposure {
public:
    [[nodiscard]] ExposureKind kind() const override { return ExposureKind::memfd; }
    Result<std::unique_ptr<TaskFiles>> new_task() override;

    /// Whether memfds with F_SEAL_FUTURE_WRITE work here (a real round trip);
    /// the error says what failed.
    static Result<void> probe();
};

}  // namespace strata::external
