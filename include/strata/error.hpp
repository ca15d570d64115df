// SPDX-License-Identifier: MIT
// strata's one error policy (docs/errors.md).
//
// Every fallible operation returns `Result<T>`: either the value or an
// `Error` carrying a code from `Errc`, the errno that caused it (0 when none)
// and a message that names the operation, the parameter, the value and the
// cause, for example
//
//   Region::storage: path=/mnt/ro/data.bin: cannot create the file: Read-only file system (EROFS)
//
// Operations that fail leave nothing behind: no mapping, descriptor, file,
// segment, process or mount that the failed call created.
//
// Thread safety: Error and Result are values; copies are independent.
#pragma once

#include <cerrno>
#include <expected>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace strata {

/// What went wrong, independent of the component that reports it.
enum class Errc {
    invalid_argument,    ///< a parameter's value is outside what the operation accepts
    not_found,           ///< a named file, segment or object does not exist
    already_exists,      ///< create-only on a name that exists
    permission_denied,   ///< the process may not do this (EACCES, EPERM, EROFS)
    no_space,            ///< the file system, device or segment is full (ENOSPC, EDQUOT)
    out_of_memory,       ///< address space or memory could not be had (ENOMEM)
    io_error,            ///< the device or file system reported an error (EIO and others)
    unsupported,         ///< the machine or the object does not offer the feature
    busy,                ///< the object is in use
    peer_dead,           ///< a process this one depends on has died; the object recovered and stays usable
    broken,              ///< an object is unusable (a user died holding its lock): remove or recreate it
    corrupted,           ///< shared state is not what strata wrote (bad magic, impossible values): recreate it
    resource_exhausted,  ///< a fixed limit of strata or the system was reached (the message names it)
    timeout,             ///< a bounded wait ran out
    internal,            ///< an invariant of strata itself did not hold
};

/// The name of an error code, as written in docs/errors.md ("invalid_argument").
std::string_view to_string(Errc code) noexcept;

/// Maps an errno value to the closest Errc.
Errc errc_from_errno(int err) noexcept;

/// "Read-only file system (EROFS)": strerror plus the symbolic errno name.
std::string describe_errno(int err);

/// A failure: code, the errno that caused it (0 if none), and a message.
struct Error {
    Errc code = Errc::internal;
    std::string message;
    int sys_errno = 0;

    /// "invalid_argument: <message>"
    [[nodiscard]] std::string what() const;
};

template <class T = void>
using Result = std::expected<T, Error>;

/// Builds the unexpected value for a Result: make_error(Errc::invalid_argument, "...{}", v).
template <class... Args>
[[nodiscard]] std::unexpected<Error> make_error(Errc code, fmt::format_string<Args...> fmt, Args&&... args) {
    return std::unexpected(Error{code, fmt::format(fmt, std::forward<Args>(args)...), 0});
}

/// Builds an error from errno `err`: the code follows errno and the message
/// ends with describe_errno(err).
template <class... Args>
[[nodiscard]] std::unexpected<Error> make_sys_error(int err, fmt::format_string<Args...> fmt, Args&&... args) {
    return std::unexpected(
        Error{errc_from_errno(err), fmt::format(fmt, std::forward<Args>(args)...) + ": " + describe_errno(err), err});
}

}  // namespace strata
