// SPDX-License-Identifier: MIT
// Describing who owns a file, for errors that refuse another user's file
// (segments, storage regions, OCR data block directories). Private to libstrata.
#pragma once

#include <string>

#include <sys/stat.h>

namespace strata::detail {

/// The user name of `uid`, or "?" when the system has none.
std::string user_name(uid_t uid);

/// "owned by uid 65534 (nobody), gid 65534, mode 0666"
std::string describe_owner(const struct stat& st);

}  // namespace strata::detail
