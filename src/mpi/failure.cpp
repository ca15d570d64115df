// SPDX-License-Identifier: MIT
// Failure messages, error classes, collective agreement and error codes.
#include "mpi/failure.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include <unistd.h>

namespace strata::mpi {

namespace {

/// Error codes this library created, with their messages. MPICH 4.0's
/// MPI_Error_string ignores MPI_Add_error_string for codes of predefined
/// classes, so MPI_Error_string (below) answers for them itself.
class ErrorCodes {
public:
    int code_for(int error_class, const std::string& message) {
        const std::lock_guard lock(mutex_);
        // Reuse codes: MPI offers no way to free them, and a program that
        // retries a failing allocation would otherwise exhaust them.
        if (const auto it = codes_.find({error_class, message}); it != codes_.end()) {
            return it->second;
        }
        int code = error_class;
        if (PMPI_Add_error_code(error_class, &code) != MPI_SUCCESS) {
            return error_class;  // out of codes: the class alone still says what went wrong
        }
        PMPI_Add_error_string(code, message.c_str());
        codes_.emplace(std::pair{error_class, message}, code);
        messages_.emplace(code, message);
        return code;
    }
    bool message_of(int code, std::string& out) const {
        const std::lock_guard lock(mutex_);
        const auto it = messages_.find(code);
        if (it == messages_.end()) {
            return false;
        }
        out = it->second;
        return true;
    }

private:
    mutable std::mutex mutex_;
    std::map<std::pair<int, std::string>, int> codes_;
    std::map<int, std::string> messages_;
};

ErrorCodes& error_codes() {
    static auto* codes = new ErrorCodes;  // never destroyed: MPI may report errors during exit
    return *codes;
}

/// Region messages read "Region::storage: path=/x: cause"; the MPI user named
/// hints, not region parameters, so the parameter is translated to its hint.
struct Parameter {
    std::string_view region_name;
    std::string_view hint;
};
constexpr std::array parameters = {
    Parameter{"path", "storage_alloc_filename"},
    Parameter{"offset", "storage_alloc_offset"},
    Parameter{"factor", "storage_alloc_factor"},
    Parameter{"permissions", "file_perm"},
    Parameter{"size", "size"},
};

std::string truncated(std::string message) {
    if (message.size() >= MPI_MAX_ERROR_STRING) {
        message.resize(MPI_MAX_ERROR_STRING - 4);
        message += "...";
    }
    return message;
}

bool is_fatal(MPI_Errhandler handler) {
    return handler == MPI_ERRORS_ARE_FATAL || handler == MPI_ERRORS_ABORT;
}

/// The code to give an error handler. A fatal handler aborts with MPICH's
/// own text, which cannot show our message (see ErrorCodes) and garbles a
/// dynamic code's: print the message first and hand it the plain class.
int code_for_handler(MPI_Errhandler handler, int code, const Failure& failure) {
    if (!is_fatal(handler)) {
        return code;
    }
    detail::log().error("{}", failure.message);
    return failure.error_class;
}

/// A fatal rank that is not the printer: the printer prints the agreed
/// message and aborts the job, which ends this process too. Aborting here
/// as well could end the job before the printer's message is out. Should
/// the abort not come (an MPI whose abort spares other ranks), fall through
/// to this rank's own handler after a while rather than hang.
void wait_for_abort(int printer) {
    detail::log().debug("rank {} prints the error and aborts the job", printer);
    for (int i = 0; i < 300; ++i) {
        ::usleep(100'000);
    }
}

/// The agreement itself failed: MPI has already called the error handler,
/// so this only carries the class back to the caller.
Failure collective_failure(int rc, int rank, std::string_view call) {
    int error_class = MPI_ERR_OTHER;
    PMPI_Error_class(rc, &error_class);
    return {error_class, fmt::format("strata-mpi: rank {}: {} failed while agreeing on the outcome", rank, call)};
}

}  // namespace

int comm_rank(MPI_Comm comm) noexcept {
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    return rank;
}

const std::string& host_name() {
    static const std::string name = [] {
        std::array<char, 256> buffer{};
        if (::gethostname(buffer.data(), buffer.size() - 1) != 0) {
            return std::string("unknown host");
        }
        return std::string(buffer.data());
    }();
    return name;
}

Failure make_failure(int error_class, const char* routine, int rank, std::string_view key, std::string_view value,
                     std::string_view cause) {
    return {error_class,
            truncated(fmt::format("{}: rank {} ({}): {}={}: {}", routine, rank, host_name(), key, value, cause))};
}

Failure make_target_failure(int error_class, const char* routine, int rank, int target, std::string_view target_host,
                            std::string_view file, std::string_view cause) {
    return {error_class, truncated(fmt::format("{}: rank {} ({}): target rank {} ({}): {}: {}", routine, rank,
                                               host_name(), target, target_host, file, cause))};
}

Failure hint_failure(const char* routine, int rank, const HintError& error) {
    return make_failure(MPI_ERR_INFO_VALUE, routine, rank, error.key, error.value, error.cause);
}

int error_class_of(const Error& error) noexcept {
    switch (error.sys_errno) {
        case ENOENT: return MPI_ERR_NO_SUCH_FILE;
        case ENOSPC:
        case EDQUOT: return MPI_ERR_NO_SPACE;
        case EACCES:
        case EPERM: return MPI_ERR_ACCESS;
        case EROFS: return MPI_ERR_READ_ONLY;
        case ENOTDIR:
        case EISDIR:
        case ENAMETOOLONG:
        case ELOOP: return MPI_ERR_BAD_FILE;
        case ENOMEM: return MPI_ERR_NO_MEM;
        case EIO: return MPI_ERR_IO;
        case 0: break;
        default: return error.code == Errc::io_error ? MPI_ERR_IO : MPI_ERR_FILE;
    }
    switch (error.code) {
        case Errc::invalid_argument: return MPI_ERR_INFO_VALUE;  // a hint value the region refused
        case Errc::permission_denied: return MPI_ERR_ACCESS;     // a link or another user's file, refused
        case Errc::already_exists: return MPI_ERR_FILE_EXISTS;
        case Errc::out_of_memory: return MPI_ERR_NO_MEM;
        case Errc::io_error: return MPI_ERR_IO;
        default: return MPI_ERR_FILE;
    }
}

namespace {

// The region layer's message without its "Region::op: " prefix, split into
// the hint it names ("path=/x: cause" names storage_alloc_filename=/x) and
// the cause; with no parameter named, the hint is storage_alloc_filename
// with no value.
struct RegionCause {
    std::string_view key = "storage_alloc_filename";
    std::string_view value;
    std::string_view cause;
};

RegionCause region_cause(const Error& error) {
    RegionCause out;
    std::string_view message = error.message;
    if (message.starts_with("Region::")) {
        message.remove_prefix(std::min(message.size(), message.find(": ") + 2));
    }
    const auto colon = message.find(": ");
    const auto equals = message.find('=');
    if (colon != std::string_view::npos && equals < colon) {
        const std::string_view name = message.substr(0, equals);
        for (const auto& p : parameters) {
            if (p.region_name == name) {
                out.key = p.hint;
                out.value = message.substr(equals + 1, colon - equals - 1);
                message.remove_prefix(colon + 2);
                break;
            }
        }
    }
    out.cause = message;
    return out;
}

}  // namespace

Failure region_failure(const char* routine, int rank, const Error& error) {
    const RegionCause c = region_cause(error);
    return make_failure(error_class_of(error), routine, rank, c.key, c.value, c.cause);
}

Failure file_failure(const char* routine, int rank, const Error& error) {
    const RegionCause c = region_cause(error);
    if (!c.value.empty()) {
        return make_failure(error_class_of(error), routine, rank, c.key, c.value, c.cause);
    }
    return {error_class_of(error), truncated(fmt::format("{}: rank {} ({}): {}", routine, rank, host_name(), c.cause))};
}

std::optional<Failure> agree(MPI_Comm comm, const std::optional<Failure>& mine, std::span<int> min_values) {
    const int rank = comm_rank(comm);
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    PMPI_Comm_get_errhandler(comm, &handler);
    const bool fatal = is_fatal(handler);
    if (handler != MPI_ERRHANDLER_NULL) {
        PMPI_Errhandler_free(&handler);
    }
    std::vector<int> values;
    values.reserve(min_values.size() + 2);
    values.push_back(mine ? rank : INT_MAX);
    values.push_back(fatal ? rank : INT_MAX);
    values.insert(values.end(), min_values.begin(), min_values.end());
    if (int rc = PMPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_INT, MPI_MIN, comm);
        rc != MPI_SUCCESS) {
        return collective_failure(rc, rank, "MPI_Allreduce");
    }
    std::ranges::copy(values.begin() + 2, values.end(), min_values.begin());
    const int failing = values.front();
    const int printer = values[1] == INT_MAX ? -1 : values[1];
    if (failing == INT_MAX) {
        return std::nullopt;
    }
    // One fixed-size broadcast carries class and message, so every rank
    // reports exactly the failing rank's text.
    struct Wire {
        int error_class;
        std::array<char, MPI_MAX_ERROR_STRING> message;
    } wire{};
    if (rank == failing) {
        wire.error_class = mine->error_class;
        std::strncpy(wire.message.data(), mine->message.c_str(), wire.message.size() - 1);
    }
    if (int rc = PMPI_Bcast(&wire, sizeof wire, MPI_BYTE, failing, comm); rc != MPI_SUCCESS) {
        return collective_failure(rc, rank, "MPI_Bcast");
    }
    wire.message.back() = '\0';
    return Failure{wire.error_class, std::string(wire.message.data()), printer};
}

int raise_on_comm(MPI_Comm comm, const Failure& failure) {
    const int code = error_codes().code_for(failure.error_class, failure.message);
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    PMPI_Comm_get_errhandler(comm, &handler);
    detail::log().debug("{}", failure.message);
    if (failure.printer >= 0) {
        // Every rank has undone its setup (callers abandon before raising):
        // only now may the printer end the job.
        PMPI_Barrier(comm);
        if (is_fatal(handler) && comm_rank(comm) != failure.printer) {
            wait_for_abort(failure.printer);
        }
    }
    PMPI_Comm_call_errhandler(comm, code_for_handler(handler, code, failure));
    if (handler != MPI_ERRHANDLER_NULL) {
        PMPI_Errhandler_free(&handler);
    }
    return code;
}

int raise_on_win(MPI_Win win, const Failure& failure) {
    const int code = error_codes().code_for(failure.error_class, failure.message);
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    PMPI_Win_get_errhandler(win, &handler);
    detail::log().debug("{}", failure.message);
    PMPI_Win_call_errhandler(win, code_for_handler(handler, code, failure));
    if (handler != MPI_ERRHANDLER_NULL) {
        PMPI_Errhandler_free(&handler);
    }
    return code;
}

int raise_after_free(MPI_Errhandler handler, const Failure& failure) {
    const int code = error_codes().code_for(failure.error_class, failure.message);
    detail::log().debug("{}", failure.message);
    if (handler == MPI_ERRORS_RETURN) {
        return code;
    }
    PMPI_Comm_call_errhandler(MPI_COMM_SELF, code_for_handler(MPI_ERRORS_ARE_FATAL, code, failure));
    return code;
}

}  // namespace strata::mpi

using strata::mpi::guarded;

extern "C" int MPI_Error_string(int errorcode, char* string, int* resultlen) {
    return guarded("MPI_Error_string", [&] {
        std::string message;
        if (!strata::mpi::error_codes().message_of(errorcode, message)) {
            return PMPI_Error_string(errorcode, string, resultlen);
        }
        const std::size_t n = std::min(message.size(), std::size_t{MPI_MAX_ERROR_STRING - 1});
        std::memcpy(string, message.data(), n);
        string[n] = '\0';
        *resultlen = static_cast<int>(n);
        return MPI_SUCCESS;
    });
}
