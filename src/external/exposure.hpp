// SPDX-License-Identifier: MIT
// How data blocks reach external programs as files (paper 000).
//
// An Exposure turns the runtime's data blocks into paths an external program
// can open, and the files the program writes back into bytes the runtime
// adopts as new data blocks. Two implementations share this interface:
//   - memfd: blocks live in memfds; the child inherits the descriptors and
//     opens /proc/self/fd/N; inputs are sealed read-only (src/external/memfd_*).
//   - fuse:  the strata-fsd daemon serves <mount>/db/<id>; the runtime
//     registers each block over a control channel before the program runs,
//     and only the program's process tree may open it (src/external/fuse_*).
//
// Lifecycle of one external task's files:
//   new_task() -> add_input()/add_output() for each block (before spawn)
//   -> spawn the child with inherited_fds() -> started(pid)
//   -> the child exits -> take_output(k) for each output -> release().
//
// Thread safety: an Exposure may be used by several threads at once; a
// TaskFiles belongs to one thread at a time.
// Errors: strata::Result (docs/errors.md); a failed call leaves nothing
// registered, mapped or open.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/error.hpp"

namespace strata::external {

/// Which mechanism exposes data blocks as files.
enum class ExposureKind { memfd, fuse };

/// A data block's bytes as the runtime holds them.
struct BlockView {
    std::uint64_t id = 0;        ///< data block id, unique within the runtime
    const void* data = nullptr;  ///< the bytes in this process's address space
    std::size_t size = 0;
    int fd = -1;                  ///< a descriptor backing the bytes (memfd, shared region), or -1 for private memory
    std::uint64_t fd_offset = 0;  ///< where the bytes start in fd
};

/// The bytes a program left in an output file: an owned descriptor the runtime
/// maps and adopts as a data block without a copy, and the file's size.
struct OutputBytes {
    int fd = -1;
    std::size_t size = 0;
};

/// The files of one external task.
class TaskFiles {
public:
    virtual ~TaskFiles() = default;

    /// Registers an input block; returns the path the child opens. The child
    /// may read it but never change the runtime's bytes.
    virtual Result<std::string> add_input(const BlockView& block) = 0;

    /// Registers an empty, growable output file; returns the path the child writes.
    virtual Result<std::string> add_output(std::uint64_t id) = 0;

    /// Lets the child create files of its own beside its inputs and outputs
    /// (temporaries: private to its process tree, dropped by release(), or
    /// renamed onto one of its outputs to become it). Call before started().
    /// Errc::unsupported where the exposure has no directory to create them in.
    virtual Result<void> allow_temporary_files() {
        return make_error(Errc::unsupported,
                          "temporary files need exposure fuse: memfd paths (/proc/self/fd/N) have no directory "
                          "to create files in");
    }

    /// Descriptors the child must inherit (same numbers in the child); the
    /// caller closes nothing of them: release() does.
    [[nodiscard]] virtual std::vector<int> inherited_fds() const = 0;

    /// The directory the paths live in, when they are files of a mount (fuse): a
    /// container binds it in at the same path. Empty for memfd (inherited descriptors).
    [[nodiscard]] virtual std::string mount_dir() const { return {}; }

    /// The child exists: from now on its process tree (and only it) may open the files.
    virtual Result<void> started(pid_t pid) = 0;

    /// After the child exited: output k (in add_output order) as owned bytes.
    virtual Result<OutputBytes> take_output(std::size_t k) = 0;

    /// Drops every registration and descriptor. Idempotent; the destructor calls it.
    virtual void release() noexcept = 0;
};

/// A mechanism that exposes blocks as files; one per runtime.
class Exposure {
public:
    virtual ~Exposure() = default;
    [[nodiscard]] virtual ExposureKind kind() const = 0;
    virtual Result<std::unique_ptr<TaskFiles>> new_task() = 0;
};

}  // namespace strata::external
