// SPDX-License-Identifier: MIT
// Fuzz target: libstrata-mpi's storage hints (src/mpi/hints.cpp,
// hint_source.cpp): STRATA_MPI_WINDOW_HINTS and its scope variable as a user
// sets them, and an MPI_Info's key/value pairs as a program passes them,
// validated into WindowHints, and the file name template expanded.
#include <cstddef>
#include <cstdint>
#include <string>

#include "input.hpp"
#include "mpi/hint_source.hpp"
#include "mpi/hints.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace strata::mpi;
    strata::fuzz::Input in(data, size);
    const std::uint8_t mode = in.byte();
    const int rank = in.take<std::int32_t>();
    const unsigned index = in.take<std::uint32_t>();
    if ((mode & 1U) != 0) {
        // An MPI_Info: pairs of texts, each at most MPI_MAX_INFO_KEY / MPI_MAX_INFO_VAL long.
        HintMap info;
        while (!in.empty()) {
            std::string key = in.text(255);
            std::string value = in.text(255);
            info.insert_or_assign(std::move(key), std::move(value));
        }
        if (auto hints = parse_hints(info)) {
            (void)hints->memory_factor();
            (void)access_plan(hints->access_styles, hints->advice);
            (void)expand_filename(hints->filename_template, rank, index, "job.1", "win");
        }
        return 0;
    }
    const std::string_view text = in.rest_text();
    for (const bool known_only : {false, true}) {
        if (auto list = parse_hint_list(text, "STRATA_MPI_WINDOW_HINTS", known_only)) {
            (void)parse_hints(*list);
        }
    }
    (void)parse_scope(text);
    (void)expand_filename(text, rank, index, "1234", "shm");
    return 0;
}
