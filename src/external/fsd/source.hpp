// SPDX-License-Identifier: MIT
// Where strata-fsd reads an input's bytes: the paper's two data channels.
//
//   SharedSource: the block lives in a descriptor of the owner (a memfd or a
//     shared region); the daemon opens /proc/<owner>/fd/<n> and maps it
//     read-only, so a read is one copy, kernel to the reader.
//   VmSource: the block lives in the owner's private memory; each read copies
//     it with process_vm_readv into a per-thread buffer, then to the reader.
//
// Thread safety: read() may run on several threads at once.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace strata::external::fsd {

class Source {
public:
    virtual ~Source() = default;
    [[nodiscard]] std::uint64_t size() const { return size_; }
    /// Points `out` at `length` bytes at `offset` (length already clipped to the size);
    /// returns 0 or an errno. The pointer stays valid until the next read on this thread.
    virtual int read(std::uint64_t offset, std::size_t length, const char*& out) = 0;

protected:
    explicit Source(std::uint64_t size) : size_(size) {}
    std::uint64_t size_;
};

/// Maps `size` bytes at `offset` of the owner's descriptor `fd`; errno on failure, message in `error`.
int make_shared_source(pid_t owner, int fd, std::uint64_t offset, std::uint64_t size, std::unique_ptr<Source>& out,
                       std::string& error);
/// Reads from `address` in the owner's address space; checks the range is readable now.
int make_vm_source(pid_t owner, std::uint64_t address, std::uint64_t size, std::unique_ptr<Source>& out,
                   std::string& error);

}  // namespace strata::external::fsd
