// SPDX-License-Identifier: MIT
// Which pages of anonymous memory were written, without a full pagemap read
// and without remapping: a userfaultfd registered for write-protection in
// asynchronous mode (Linux 6.7+, UFFD_FEATURE_WP_ASYNC) lets the kernel clear
// a page's write-protect bit itself on the first store after a scan, and
// PAGEMAP_SCAN returns the pages without that bit and sets it again in one
// step. A store costs one minor fault per page per scan, taken in the kernel
// (no thread handles it). Stores by the kernel on the program's behalf (read(),
// process_vm_writev, an RMA transport) are tracked alike. Private to libstrata.
#pragma once

#include <cstddef>
#include <vector>

#include "region/posix.hpp"
#include "strata/error.hpp"

namespace strata::written_pages {

/// A run of written pages: offset from the scanned base and length, in bytes.
struct Run {
    std::size_t offset;
    std::size_t length;
};

/// Starts tracking stores to [begin, begin+length), page-aligned anonymous
/// memory. An invalid descriptor if this kernel cannot (no userfaultfd, no
/// asynchronous write-protection, not allowed): the caller falls back to
/// reading /proc/self/pagemap. Pages already present count as written.
/// With `missing`, the descriptor also reports missing pages (for
/// background_fill.hpp; no page may be present yet) and handles faults taken
/// inside the kernel too (a system call or an RMA transport touching the
/// range), which needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1:
/// invalid where this process may not.
posix::UniqueFd track(std::byte* begin, std::size_t length, bool missing = false);

/// Runs of pages in [base+begin, base+end) written since they were last
/// taken (or since track()), write-protected again in the same step so the
/// next call sees only later stores. With `keep_tail` > 0, the last
/// `keep_tail` bytes of a run that stops before `end` are left for a later
/// call: a sequential writer is most likely still filling them.
/// The range must lie in one tracked mapping.
Result<std::vector<Run>> take(const char* op, std::byte* base, std::size_t begin, std::size_t end,
                              std::size_t keep_tail = 0);

}  // namespace strata::written_pages
