// SPDX-License-Identifier: MIT
// Fuzz target: workflow files (src/workflow/parse.cpp), the report a task
// hands back to `strata run` as JSON (report.cpp), and the single-value
// parsers behind the command line. A workflow that parses must survive its
// own round trip: to_toml() reads back to the same text, and its graph has an
// order that puts every producer before its consumers.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "strata/workflow.hpp"

namespace {

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "fuzz_workflow: %s\n", what);
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace wf = strata::workflow;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    if (auto parsed = wf::parse(text, "fuzz.toml")) {
        const std::string again = wf::to_toml(*parsed);
        auto reparsed = wf::parse(again, "round-trip");
        check(reparsed.has_value(), "to_toml() wrote a workflow parse() rejects");
        check(wf::to_toml(*reparsed) == again, "to_toml() after a round trip differs");
        const auto order = parsed->topological_order();
        check(order.size() == parsed->tasks.size(), "topological_order() lost a task");
        (void)parsed->segment_bytes_needed();
        (void)parsed->uses_segment();
    }
    if (auto report = wf::report_from_json(text)) {
        auto again = wf::report_from_json(wf::to_json(*report));
        check(again.has_value(), "to_json() wrote a report report_from_json() rejects");
    }
    if (size < 64) {
        (void)wf::parse_size(text, "size");
        (void)wf::parse_method(text);
        (void)wf::parse_wait(text);
        (void)wf::parse_shape(text);
    }
    return 0;
}
