// SPDX-License-Identifier: MIT
#include "strata/error.hpp"

#include <cstring>

namespace strata {

std::string_view to_string(Errc code) noexcept {
    switch (code) {
        case Errc::invalid_argument: return "invalid_argument";
        case Errc::not_found: return "not_found";
        case Errc::already_exists: return "already_exists";
        case Errc::permission_denied: return "permission_denied";
        case Errc::no_space: return "no_space";
        case Errc::out_of_memory: return "out_of_memory";
        case Errc::io_error: return "io_error";
        case Errc::unsupported: return "unsupported";
        case Errc::busy: return "busy";
        case Errc::peer_dead: return "peer_dead";
        case Errc::broken: return "broken";
        case Errc::corrupted: return "corrupted";
        case Errc::resource_exhausted: return "resource_exhausted";
        case Errc::timeout: return "timeout";
        case Errc::internal: return "internal";
    }
    return "unknown";
}

Errc errc_from_errno(int err) noexcept {
    switch (err) {
        case EINVAL:
        case ENAMETOOLONG:
        case ENOTDIR:
        case EISDIR:
        case EOVERFLOW:
        case EFBIG: return Errc::invalid_argument;
        case ENOENT: return Errc::not_found;
        case EEXIST: return Errc::already_exists;
        case EACCES:
        case EPERM:
        case EROFS: return Errc::permission_denied;
        case ENOSPC:
        case EDQUOT: return Errc::no_space;
        case ENOMEM: return Errc::out_of_memory;
        case EOPNOTSUPP:
        case ENOSYS:
        case ENODEV:
        case ENXIO: return Errc::unsupported;
        case EBUSY:
        case ETXTBSY: return Errc::busy;
        case ESRCH:
        case EPIPE:
        case ECONNRESET:
        case EOWNERDEAD: return Errc::peer_dead;
        case ETIMEDOUT: return Errc::timeout;
        case EMFILE:
        case ENFILE: return Errc::resource_exhausted;
        default: return Errc::io_error;
    }
}

std::string describe_errno(int err) {
    const char* name = strerrorname_np(err);
    return fmt::format("{} ({})", strerror(err), name != nullptr ? name : "E?");
}

std::string Error::what() const {
    return fmt::format("{}: {}", to_string(code), message);
}

}  // namespace strata
