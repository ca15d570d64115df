#include "mpi/hint_source.hpp"

#include <array>
#include <cstdlib>
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

struct EnvironmentDefaults {
    bool set = false;
    HintMap hints;
    std::optional<HintError> error;
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
        if (auto parsed = parse_hint_list(text, "STRATA_MPI_WINDOW_HINTS"); parsed) {
            d.hints = std::move(*parsed);
        } else {
            d.error = parsed.error();
        }
        return d;
    }();
    return defaults;
}

}  // namespace

HintRequest window_hints(MPI_Info info) {
    HintMap given = read_info(info);
    if (names_storage(given)) {
        return {.applies = true, .hints = std::move(given), .error = std::nullopt};
    }
    const auto& defaults = environment_defaults();
    if (!defaults.set) {
        return {};
    }
    HintRequest request{.applies = true, .hints = defaults.hints, .error = defaults.error};
    for (auto& [key, value] : given) {
        request.hints.insert_or_assign(key, std::move(value));
    }
    return request;
}

HintRequest allocation_hints(MPI_Info info) {
    HintMap given = read_info(info);
    if (!names_storage(given)) {
        return {};
    }
    return {.applies = true, .hints = std::move(given), .error = std::nullopt};
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
