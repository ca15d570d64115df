// SPDX-License-Identifier: MIT
// The files of a segment, opened so that no other user can plant them
// (docs/shm.md, Security).
//
// The default segment directory is private (/dev/shm/strata-<uid>, 0700,
// owned by the user, checked on every open). Any existing segment or lock file
// is opened with O_NOFOLLOW and kept only when the caller owns it, or, when
// group access was asked for, when its group is one of the caller's and
// others have no access; otherwise the error names the file, its owner and
// its mode.
#pragma once

#include <filesystem>
#include <string_view>

#include <sys/stat.h>

#include "strata/error.hpp"

namespace strata::shm_detail {

/// Where the default private segment directory lives: tmpfs, like POSIX shm.
inline constexpr const char* kPrivateDirBase = "/dev/shm";

/// `base`/strata-<euid>: created 0700 if missing; refused (permission_denied)
/// unless it is a directory (not a link) owned by the caller with mode 0700.
Result<std::filesystem::path> private_dir(const std::filesystem::path& base, bool create, std::string_view op);

/// Whether the caller may trust a file with these attributes (see above).
bool trusted(const struct stat& st, bool group_access);

/// "owned by uid 65534 (nobody), gid 65534, mode 0666"
std::string describe_owner(const struct stat& st);

/// Opens an existing file with O_NOFOLLOW | O_CLOEXEC | `flags` and checks it
/// is a regular file the caller may trust. Returns the descriptor, or an
/// error naming the file (not_found when missing, so callers can create it).
Result<int> open_trusted(const std::filesystem::path& path, int flags, bool group_access, std::string_view op,
                         std::string_view what);

}  // namespace strata::shm_detail
