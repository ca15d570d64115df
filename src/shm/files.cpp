// SPDX-License-Identifier: MIT
// Opening a segment's files without trusting another user's (files.hpp).
#include "shm/files.hpp"

#include <vector>

#include <fcntl.h>
#include <grp.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/file_owner.hpp"

namespace strata::shm_detail {
namespace {

bool in_my_groups(gid_t gid) {
    if (gid == ::getegid()) {
        return true;
    }
    const int n = ::getgroups(0, nullptr);
    if (n <= 0) {
        return false;
    }
    std::vector<gid_t> groups(static_cast<std::size_t>(n));
    const int got = ::getgroups(n, groups.data());
    for (int i = 0; i < got; ++i) {
        if (groups[static_cast<std::size_t>(i)] == gid) {
            return true;
        }
    }
    return false;
}

}  // namespace

std::string describe_owner(const struct stat& st) {
    return detail::describe_owner(st);
}

bool trusted(const struct stat& st, bool group_access) {
    if (st.st_uid == ::geteuid()) {
        return true;
    }
    return group_access && in_my_groups(st.st_gid) && (st.st_mode & S_IRWXO) == 0;
}

Result<std::filesystem::path> private_dir(const std::filesystem::path& base, bool create, std::string_view op) {
    std::filesystem::path dir = base / fmt::format("strata-{}", ::geteuid());
    if (create && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        return make_sys_error(errno, "{}: dir={}: cannot create the private segment directory", op, dir.string());
    }
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        struct stat link {};
        if ((err == ELOOP || err == ENOTDIR) && ::lstat(dir.c_str(), &link) == 0) {
            return make_error(Errc::permission_denied,
                              "{}: dir={}: is not a directory but {} ({}): another user may have planted it; remove "
                              "it or choose a directory with STRATA_SHM_DIR",
                              op, dir.string(), S_ISLNK(link.st_mode) ? "a symbolic link" : "a file",
                              describe_owner(link));
        }
        return make_sys_error(err, "{}: dir={}: cannot open the private segment directory", op, dir.string());
    }
    struct stat st {};
    const int rc = ::fstat(fd, &st);
    const int err = errno;
    ::close(fd);
    if (rc != 0) {
        return make_sys_error(err, "{}: dir={}: cannot stat the private segment directory", op, dir.string());
    }
    if (st.st_uid != ::geteuid() || (st.st_mode & 07777) != 0700) {
        return make_error(Errc::permission_denied,
                          "{}: dir={}: the private segment directory is {}, not owned by this user (uid {}) with "
                          "mode 0700: another user may have made it to plant segments; remove it or choose a "
                          "directory with STRATA_SHM_DIR",
                          op, dir.string(), describe_owner(st), ::geteuid());
    }
    return dir;
}

Result<int> open_trusted(const std::filesystem::path& path, int flags, bool group_access, std::string_view op,
                         std::string_view what) {
    const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        if (err == ELOOP) {
            return make_error(Errc::permission_denied,
                              "{}: {} {} is a symbolic link: refused (another user may have planted it)", op, what,
                              path.string());
        }
        return make_sys_error(err, "{}: cannot open {} {}", op, what, path.string());
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        return make_sys_error(err, "{}: cannot stat {} {}", op, what, path.string());
    }
    if (!S_ISREG(st.st_mode) || !trusted(st, group_access)) {
        ::close(fd);
        return make_error(Errc::permission_denied,
                          "{}: {} {} is {}{}: refused, because only files owned by this user (uid {}){} are opened "
                          "- another user may have planted it; remove it or use a private directory",
                          op, what, path.string(), S_ISREG(st.st_mode) ? "" : "not a regular file, ",
                          describe_owner(st), ::geteuid(),
                          group_access ? ", or of one of its groups with no access for others," : "");
    }
    return fd;
}

}  // namespace strata::shm_detail
