// SPDX-License-Identifier: MIT
#include "mpi/hint_source.hpp"

#include <array>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <vector>

namespace strata::mpi {

namespace {

/// The known keys of `info`; the rest is ignored, as MPI requires.
HintMap read_info(MPI_Info info) {
    HintMap out;
    if (info == MPI_INFO_NULL) {
        return out;
    }
    int count = 0;
    if (PMPI_Info_get_nkeys(info, &count) != MPI_SUCCESS) {
        return out;
    }
    std::array<char, MPI_MAX_INFO_KEY + 1> key{};
    for (int i = 0; i < count; ++i) {
        if (PMPI_Info_get_nthkey(info, i, key.data()) != MPI_SUCCESS) {
            continue;
        }
        if (!is_known_key(key.data()) && !is_storage_key(key.data())) {
            continue;
        }
        int length = 0;
        int flag = 0;
        char probe = '\0';
        PMPI_Info_get_string(info, key.data(), &length, &probe, &flag);  // length includes the terminator
        if (flag == 0 || length <= 0) {
            continue;
        }
        std::vector<char> value(static_cast<std::size_t>(length) + 1);
        PMPI_Info_get_string(info, key.data(), &length, value.data(), &flag);
        out.emplace(key.data(), value.data());
    }
    return out;
}

bool names_storage(const HintMap& hints) {
    for (const auto& entry : hints) {
        if (is_storage_key(entry.first)) {
            return true;
        }
    }
    return false;
}

constexpr std::string_view scope_variable = "STRATA_MPI_WINDOW_HINTS_SCOPE";
constexpr std::string_view scope_entries =
    "expected a comma list of win_allocate, win_allocate_shared, alloc_mem, alloc_mem>=SIZE "
    "(SIZE in bytes, or with a K, M or G suffix), all or none";

std::optional<std::size_t> parse_size(std::string_view text) {
    std::size_t multiplier = 1;
    if (!text.empty()) {
        switch (text.back()) {
            case 'k':
            case 'K': multiplier = std::size_t{1} << 10; break;
            case 'm':
            case 'M': multiplier = std::size_t{1} << 20; break;
            case 'g':
            case 'G': multiplier = std::size_t{1} << 30; break;
            default: break;
        }
        if (multiplier != 1) {
            text.remove_suffix(1);
        }
    }
    std::size_t value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size() ||
        value > std::numeric_limits<std::size_t>::max() / multiplier) {
        return std::nullopt;
    }
    return value * multiplier;
}

}  // namespace

std::expected<HintScope, HintError> parse_scope(std::string_view text) {
    HintScope scope{.win_allocate = false, .win_allocate_shared = false, .alloc_mem = false};
    std::string_view rest = text;
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        while (!item.empty() && item.front() == ' ') {
            item.remove_prefix(1);
        }
        while (!item.empty() && item.back() == ' ') {
            item.remove_suffix(1);
        }
        if (item.empty() || item == "none") {
            continue;
        }
        if (item == "all") {
            scope.win_allocate = scope.win_allocate_shared = scope.alloc_mem = true;
        } else if (item == "win_allocate") {
            scope.win_allocate = true;
        } else if (item == "win_allocate_shared") {
            scope.win_allocate_shared = true;
        } else if (item == "alloc_mem") {
            scope.alloc_mem = true;
        } else if (item.starts_with("alloc_mem>=")) {
            auto size = parse_size(item.substr(11));
            if (!size) {
                return std::unexpected(
                    HintError{std::string(scope_variable), std::string(text),
                              "'" + std::string(item) + "': not a size (" + std::string(scope_entries) + ")"});
            }
            scope.alloc_mem = true;
            scope.alloc_mem_min = *size;
        } else {
            return std::unexpected(
                HintError{std::string(scope_variable), std::string(text),
                          "unknown entry '" + std::string(item) + "' (" + std::string(scope_entries) + ")"});
        }
    }
    return scope;
}

namespace {

struct EnvironmentDefaults {
    bool set = false;
    HintMap hints;
    HintScope scope;
    std::optional<HintError> error;        ///< malformed STRATA_MPI_WINDOW_HINTS: fails the routines in scope
    std::optional<HintError> scope_error;  ///< malformed scope: fails every routine that could use the defaults
};

const EnvironmentDefaults& environment_defaults() {
    // Read once: getenv is not safe against a concurrent setenv, and the
    // defaults of one run should not change between its windows.
    static const EnvironmentDefaults defaults = [] {
        EnvironmentDefaults d;
        const char* text = std::getenv("STRATA_MPI_WINDOW_HINTS");
        if (text == nullptr || *text == '\0') {
            return d;
        }
        d.set = true;
        if (auto parsed = parse_hint_list(text, "STRATA_MPI_WINDOW_HINTS", true); parsed) {
            d.hints = std::move(*parsed);
        } else {
            d.error = parsed.error();
        }
        if (const char* scope = std::getenv(scope_variable.data()); scope != nullptr) {
            if (auto parsed = parse_scope(scope); parsed) {
                d.scope = *parsed;
            } else {
                d.scope_error = parsed.error();
            }
        }
        return d;
    }();
    return defaults;
}

bool in_scope(const EnvironmentDefaults& defaults, Routine routine, std::size_t size) {
    if (defaults.scope_error) {
        return true;  // the first routine that could use the defaults reports the error
    }
    switch (routine) {
        case Routine::win_allocate: return defaults.scope.win_allocate;
        case Routine::win_allocate_shared: return defaults.scope.win_allocate_shared;
        case Routine::alloc_mem: return defaults.scope.alloc_mem && size >= defaults.scope.alloc_mem_min;
    }
    return false;
}

}  // namespace

std::string_view scope_name(Routine routine) noexcept {
    switch (routine) {
        case Routine::win_allocate: return "win_allocate";
        case Routine::win_allocate_shared: return "win_allocate_shared";
        case Routine::alloc_mem: return "alloc_mem";
    }
    return "unknown";
}

std::string_view kind_name(Routine routine) noexcept {
    switch (routine) {
        case Routine::win_allocate: return "win";
        case Routine::win_allocate_shared: return "shm";
        case Routine::alloc_mem: return "mem";
    }
    return "unknown";
}

HintRequest request_hints(Routine routine, MPI_Info info, std::size_t size) {
    HintMap given = read_info(info);
    if (names_storage(given)) {
        return {.applies = true, .from_environment = false, .hints = std::move(given), .error = std::nullopt};
    }
    const auto& defaults = environment_defaults();
    if (!defaults.set || !in_scope(defaults, routine, size)) {
        return {};
    }
    HintRequest request{.applies = true,
                        .from_environment = true,
                        .hints = defaults.hints,
                        .error = defaults.scope_error ? defaults.scope_error : defaults.error};
    if (routine != Routine::win_allocate) {
        // Only MPI_Win_allocate windows have it: a default meant for those
        // must not fail the program's other allocations.
        request.hints.erase("storage_alloc_remote_sync");
    }
    for (auto& [key, value] : given) {
        request.hints.insert_or_assign(key, std::move(value));
    }
    return request;
}

const std::string& job_id_from_environment() {
    static const std::string id = [] {
        for (const char* name :
             {"STRATA_JOB_ID", "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID", "COBALT_JOBID", "JOB_ID"}) {
            if (const char* value = std::getenv(name); value != nullptr && *value != '\0') {
                return std::string(value);
            }
        }
        return std::string();
    }();
    return id;
}

}  // namespace strata::mpi
