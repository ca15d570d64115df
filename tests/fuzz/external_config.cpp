// SPDX-License-Identifier: MIT
// Fuzz target: the external-program configuration file (src/external/config.cpp)
// and the command templates it holds (command.cpp): the TOML text as a user
// writes it, then each entry's placeholders checked against a template and
// expanded, as an external task does before it starts the program.
#include <cstddef>
#include <cstdint>
#include <string>

#include "external/command.hpp"
#include "external/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace strata::external;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto config = Config::parse(text, "fuzz.toml");
    if (!config) {
        return 0;
    }
    for (const Entry& entry : config->entries()) {
        (void)config->find(entry.name);
        for (std::size_t n = 0; n < 3; ++n) {
            (void)Config::check(entry, n, n);
        }
        // Every placeholder resolves to the input's own bytes read as an argument block.
        auto argv = expand(entry.command, [&](const Placeholder& p) -> strata::Result<std::string> {
            const std::size_t take = p.index % (size + 1);
            switch (p.kind) {
                case PlaceholderKind::arg_int: return int_argument(data, take);
                case PlaceholderKind::arg_float: return float_argument(data, take);
                case PlaceholderKind::arg_str: return str_argument(data, take);
                default: return p.text;
            }
        });
        if (argv) {
            (void)show_command(*argv);
        }
    }
    // The command splitter on the raw text too: it is reached with any string a file holds.
    if (auto words = split_command(text)) {
        (void)placeholders(*words);
    }
    return 0;
}
