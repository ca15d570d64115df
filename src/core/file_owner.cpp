// SPDX-License-Identifier: MIT
#include "core/file_owner.hpp"

#include <vector>

#include <pwd.h>

#include <fmt/format.h>

namespace strata::detail {

std::string user_name(uid_t uid) {
    struct passwd entry {};
    struct passwd* found = nullptr;
    std::vector<char> buffer(4096);
    if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
        return found->pw_name;
    }
    return "?";
}

std::string describe_owner(const struct stat& st) {
    return fmt::format("owned by uid {} ({}), gid {}, mode {:04o}", st.st_uid, user_name(st.st_uid), st.st_gid,
                       st.st_mode & 07777);
}

}  // namespace strata::detail
