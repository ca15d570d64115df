// SPDX-License-Identifier: MIT
// Workflow files: parsing, validation of every bad input, generated shapes.
#include <limits>
#include <string>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "strata/workflow.hpp"
#include "support/result.hpp"

namespace strata::workflow {
namespace {

using test::fails_with;

const std::string kSimple = R"(
[workflow]
iterations = 10
segment_size = "64MiB"
slots = 3
wait = "busy-poll"
warmup = 1

[[task]]
name = "a"
period_us = 5
data_size = "1MB"

[[task]]
name = "b"

[[edge]]
from = "a"
to = "b"
method = "copy-from"
)";

// kSimple with `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
}

TEST(WorkflowParse, a_simple_file_gives_every_setting) {
    STRATA_ASSERT_ASSIGN(wf, parse(kSimple));
    EXPECT_EQ(wf.iterations, 10U);
    EXPECT_EQ(wf.warmup, 1U);
    EXPECT_EQ(wf.segment_size, 64U << 20);
    EXPECT_EQ(wf.slots, 3U);
    EXPECT_EQ(wf.wait, Wait::busy_poll);
    ASSERT_EQ(wf.tasks.size(), 2U);
    EXPECT_EQ(wf.tasks[0].name, "a");
    EXPECT_EQ(wf.tasks[0].period_us, 5U);
    EXPECT_EQ(wf.tasks[0].data_size, 1'000'000U);
    EXPECT_EQ(wf.tasks[1].data_size, 0U);
    ASSERT_EQ(wf.edges.size(), 1U);
    EXPECT_EQ(wf.edges[0].method, Method::copy_from);
    EXPECT_TRUE(wf.uses_segment());
    EXPECT_FALSE(wf.uses_threads());
}

// The expected text and values are literals, not outputs of the code under
// test: a to_toml that dropped or changed a setting fails here.
TEST(WorkflowParse, to_toml_writes_every_setting_and_reads_back_to_the_same_values) {
    STRATA_ASSERT_ASSIGN(wf, parse(kSimple));
    EXPECT_EQ(to_toml(wf), R"([workflow]
iterations = 10
warmup = 1
segment_size = 67108864
slots = 3
wait = "busy-poll"

[[task]]
name = "a"
period_us = 5
data_size = 1000000

[[task]]
name = "b"
period_us = 0
data_size = 0

[[edge]]
from = "a"
to = "b"
method = "copy-from"
)");
    STRATA_ASSERT_ASSIGN(again, parse(to_toml(wf)));
    EXPECT_EQ(again.iterations, 10U);
    EXPECT_EQ(again.warmup, 1U);
    EXPECT_EQ(again.segment_size, 64U << 20);
    EXPECT_EQ(again.slots, 3U);
    EXPECT_EQ(again.wait, Wait::busy_poll);
    ASSERT_EQ(again.tasks.size(), 2U);
    EXPECT_EQ(again.tasks[0].name, "a");
    EXPECT_EQ(again.tasks[0].period_us, 5U);
    EXPECT_EQ(again.tasks[0].data_size, 1'000'000U);
    EXPECT_EQ(again.tasks[1].name, "b");
    EXPECT_EQ(again.tasks[1].period_us, 0U);
    EXPECT_EQ(again.tasks[1].data_size, 0U);
    ASSERT_EQ(again.edges.size(), 1U);
    EXPECT_EQ(again.edges[0].from, "a");
    EXPECT_EQ(again.edges[0].to, "b");
    EXPECT_EQ(again.edges[0].method, Method::copy_from);
}

TEST(WorkflowParse, defaults_apply_without_a_workflow_section) {
    STRATA_ASSERT_ASSIGN(wf, parse("[[task]]\nname = \"a\"\ndata_size = 8\n[[task]]\nname = \"b\"\n"
                                   "[[edge]]\nfrom = \"a\"\nto = \"b\"\nmethod = \"shm\"\n"));
    EXPECT_EQ(wf.iterations, 100U);
    EXPECT_EQ(wf.warmup, 2U);
    EXPECT_EQ(wf.slots, 2U);
    EXPECT_EQ(wf.segment_size, 0U);
    EXPECT_EQ(wf.wait, Wait::blocking);
}

TEST(WorkflowParse, every_method_name_parses_and_prints_back) {
    for (auto m :
         {Method::shm, Method::copy_into, Method::copy_from, Method::copy, Method::mpi, Method::threads, Method::dsm}) {
        STRATA_ASSERT_ASSIGN(parsed, parse_method(to_string(m)));
        EXPECT_EQ(parsed, m);
    }
}

TEST(WorkflowParse, sizes_take_decimal_and_binary_units) {
    EXPECT_EQ(parse_size("4096", "s").value(), 4096U);
    EXPECT_EQ(parse_size("10MB", "s").value(), 10'000'000U);
    EXPECT_EQ(parse_size("1.5GiB", "s").value(), 1'610'612'736U);
    EXPECT_EQ(parse_size("2 KiB", "s").value(), 2048U);
    EXPECT_TRUE(fails_with(parse_size("10XB", "s"), Errc::invalid_argument, {"s=10XB", "unknown unit"}));
    EXPECT_TRUE(fails_with(parse_size("-1", "s"), Errc::invalid_argument, {"s=-1"}));
    EXPECT_TRUE(fails_with(parse_size("", "s"), Errc::invalid_argument, {"not a byte count"}));
    EXPECT_TRUE(fails_with(parse_size("0.5B", "s"), Errc::invalid_argument, {"whole number"}));
    EXPECT_TRUE(fails_with(parse_size("2000000GB", "s"), Errc::invalid_argument, {"larger than"}));
}

// One bad input per row: the text replaced, and what the error must name.
struct BadInput {
    const char* what;
    std::string from;
    std::string to;
    std::vector<std::string> mentions;
};

class WorkflowBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(WorkflowBadInput, is_an_error_naming_the_key_the_value_and_the_cause) {
    const auto& p = GetParam();
    const auto wf = parse(replaced(kSimple, p.from, p.to));
    ASSERT_FALSE(wf.has_value()) << p.what;
    EXPECT_EQ(wf.error().code, Errc::invalid_argument);
    for (const auto& m : p.mentions) {
        EXPECT_NE(wf.error().message.find(m), std::string::npos) << p.what << ": " << wf.error().message;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Workflow, WorkflowBadInput,
    ::testing::Values(
        BadInput{"not toml", "[workflow]", "[workflow", {"not valid TOML", "workflow:2"}},
        BadInput{"unknown top key", "[workflow]", "colour = 1\n[workflow]", {"colour", "unknown key"}},
        BadInput{"unknown workflow key", "slots = 3", "slotz = 3", {"workflow.slotz", "unknown key"}},
        BadInput{"unknown task key", "period_us = 5", "periodus = 5", {"task[0].periodus", "unknown key"}},
        BadInput{"unknown edge key",
                 "method = \"copy-from\"",
                 "method = \"copy-from\"\nvia = 1",
                 {"edge[0].via", "unknown key"}},
        BadInput{"iterations zero", "iterations = 10", "iterations = 0", {"workflow.iterations=0", "at least 1"}},
        BadInput{"iterations string",
                 "iterations = 10",
                 "iterations = \"ten\"",
                 {"workflow.iterations=", "ten", "not an integer"}},
        BadInput{"slots zero", "slots = 3", "slots = 0", {"workflow.slots=0"}},
        BadInput{"slots too many", "slots = 3", "slots = 65", {"workflow.slots=65", "between 1 and 64"}},
        // Values that narrowing to 32 bits would turn into 1 and 0: checked in full width first.
        BadInput{
            "slots of 2^32 + 1", "slots = 3", "slots = 4294967297", {"workflow.slots=4294967297", "between 1 and 64"}},
        BadInput{"slots of 2^32", "slots = 3", "slots = 4294967296", {"workflow.slots=4294967296", "between 1 and 64"}},
        BadInput{"slots of 2^63 - 1",
                 "slots = 3",
                 "slots = 9223372036854775807",
                 {"workflow.slots=9223372036854775807", "between 1 and 64"}},
        BadInput{"segment size integer above 1 PB",
                 "\"64MiB\"",
                 "1000000000000001",
                 {"workflow.segment_size=1000000000000001", "larger than 1 PB"}},
        BadInput{"data size integer above 1 PB",
                 "\"1MB\"",
                 "9223372036854775800",
                 {"task[0].data_size=9223372036854775800", "larger than 1 PB"}},
        BadInput{
            "iterations beyond 64 bits", "iterations = 10", "iterations = 18446744073709551617", {"not valid TOML"}},
        BadInput{"wait unknown", "\"busy-poll\"", "\"sleepy\"", {"workflow.wait=sleepy", "unknown wait"}},
        BadInput{"segment size bad unit", "\"64MiB\"", "\"64MiBs\"", {"workflow.segment_size=64MiBs"}},
        BadInput{"segment size negative", "\"64MiB\"", "-5", {"workflow.segment_size=-5", "negative"}},
        BadInput{
            "segment size too small", "\"64MiB\"", "\"1MB\"", {"workflow.segment_size=1000000", "too small", "need"}},
        BadInput{"segment size a table", "\"64MiB\"", "{ a = 1 }", {"workflow.segment_size", "not a byte count"}},
        BadInput{"task without name", "name = \"a\"", "", {"task[0].name", "missing"}},
        BadInput{"task name not a string", "name = \"a\"", "name = 7", {"task[0].name=7", "not a string"}},
        BadInput{"task name with space", "name = \"a\"", "name = \"a b\"", {"task[0].name=a b", "not a valid name"}},
        BadInput{"task declared twice", "name = \"b\"", "name = \"a\"", {"task[1].name=a", "declared twice"}},
        BadInput{"data size not a multiple of 8", "\"1MB\"", "1001", {"task[0].data_size=1001", "multiple of 8"}},
        BadInput{"period negative", "period_us = 5", "period_us = -5", {"task[0].period_us=-5"}},
        BadInput{"period too long", "period_us = 5", "period_us = 61000000", {"task[0].period_us=61000000"}},
        BadInput{"producer without data", "data_size = \"1MB\"", "", {"edge[0].from=a", "produces no data"}},
        BadInput{"edge from unknown task", "from = \"a\"", "from = \"x\"", {"edge[0].from=x", "no task"}},
        BadInput{"edge to unknown task", "to = \"b\"", "to = \"y\"", {"edge[0].to=y", "no task"}},
        BadInput{"edge without method", "method = \"copy-from\"", "", {"edge[0].method", "missing"}},
        BadInput{"edge with unknown method",
                 "\"copy-from\"",
                 "\"carrier-pigeon\"",
                 {"edge[0].method=carrier-pigeon", "unknown method"}},
        BadInput{"self edge", "to = \"b\"", "to = \"a\"", {"edge[0].to=a", "cycle"}},
        BadInput{"task is not an array of tables", "[[task]]\nname = \"b\"", "", {}},
        BadInput{"one task only", "[[task]]\nname = \"b\"\n", "", {"1 task", "at least 2"}},
        BadInput{"no edges", "[[edge]]\nfrom = \"a\"\nto = \"b\"\nmethod = \"copy-from\"", "edge = []", {"edge"}}));

TEST(WorkflowValidate, a_cycle_names_an_edge_on_it) {
    Workflow wf;
    wf.tasks = {{"a", 0, 8}, {"b", 0, 8}, {"c", 0, 8}, {"d", 0, 0}};
    wf.edges = {{"a", "b", Method::mpi}, {"b", "c", Method::mpi}, {"c", "b", Method::mpi}, {"c", "d", Method::mpi}};
    EXPECT_TRUE(fails_with(validate(wf), Errc::invalid_argument, {"closes a cycle", "DAG"}));
}

TEST(WorkflowValidate, sizes_of_a_workflow_built_in_code_are_checked_before_any_arithmetic_on_them) {
    Workflow wf;
    wf.tasks = {{"a", 0, 8}, {"b", 0, 0}};
    wf.edges = {{"a", "b", Method::shm}};
    wf.tasks[0].data_size = std::numeric_limits<std::size_t>::max() - 7;  // a multiple of 8
    EXPECT_TRUE(fails_with(validate(wf), Errc::invalid_argument, {"task[0].data_size=18446744073709551608", "1 PB"}));
    wf.tasks[0].data_size = 8;
    wf.segment_size = std::numeric_limits<std::size_t>::max();
    EXPECT_TRUE(fails_with(validate(wf), Errc::invalid_argument, {"workflow.segment_size=18446744073709551615"}));
    // 1024 producers x 64 slots x 1 PB exceeds 2^64: refused, never wrapped to a small segment.
    wf.segment_size = 0;
    wf.slots = kMaxSlots;
    wf.tasks.clear();
    wf.edges.clear();
    for (int i = 0; i < 1024; ++i) wf.tasks.push_back({fmt::format("t{}", i), 0, kMaxByteCount});
    wf.tasks.back().data_size = 0;
    for (int i = 0; i + 1 < 1024; ++i)
        wf.edges.push_back({fmt::format("t{}", i), fmt::format("t{}", i + 1), Method::shm});
    EXPECT_EQ(wf.segment_bytes_needed(), std::numeric_limits<std::size_t>::max());
    EXPECT_TRUE(fails_with(validate(wf), Errc::invalid_argument, {"workflow.slots=64", "2^64"}));
}

TEST(WorkflowValidate, a_duplicate_edge_is_an_error) {
    Workflow wf;
    wf.tasks = {{"a", 0, 8}, {"b", 0, 0}};
    wf.edges = {{"a", "b", Method::mpi}, {"a", "b", Method::mpi}};
    EXPECT_TRUE(fails_with(validate(wf), Errc::invalid_argument, {"edge[1]", "a -> b", "declared twice"}));
}

TEST(WorkflowValidate, threads_mixed_with_process_methods_is_an_error) {
    Workflow wf;
    wf.tasks = {{"a", 0, 8}, {"b", 0, 8}, {"c", 0, 0}};
    wf.edges = {{"a", "b", Method::threads}, {"b", "c", Method::shm}};
    EXPECT_TRUE(fails_with(validate(wf), Errc::invalid_argument, {"edge[1].method=shm", "threads cannot be mixed"}));
}

TEST(WorkflowValidate, method_dsm_in_a_workflow_is_an_error_pointing_to_the_placement) {
    Workflow wf;
    wf.tasks = {{"a", 0, 8}, {"b", 0, 0}};
    wf.edges = {{"a", "b", Method::dsm}};
    EXPECT_TRUE(fails_with(validate(wf), Errc::invalid_argument, {"edge[0].method=dsm", "--across dsm"}));
}

TEST(WorkflowPlacement, edges_across_nodes_take_the_placements_method_and_the_dsm_one_server_per_node) {
    Workflow wf;
    wf.tasks = {{"a", 0, 8}, {"b", 0, 8}, {"c", 0, 0}};
    wf.edges = {{"a", "b", Method::shm}, {"b", "c", Method::shm}};
    STRATA_ASSERT_ASSIGN(placement, placement_from_nodes(wf, "n0,n1", "--nodes"));  // a b | c
    EXPECT_EQ(edge_method(wf, placement, 0), Method::shm);
    EXPECT_EQ(edge_method(wf, placement, 1), Method::mpi);
    EXPECT_EQ(dsm_servers(wf, placement), 0U);
    STRATA_ASSERT_ASSIGN(across, parse_across("dsm", "--across"));
    placement.across = across;
    EXPECT_EQ(edge_method(wf, placement, 0), Method::shm);
    EXPECT_EQ(edge_method(wf, placement, 1), Method::dsm);
    EXPECT_EQ(dsm_servers(wf, placement), 2U);
    EXPECT_TRUE(fails_with(parse_across("shm", "--across"), Errc::invalid_argument, {"--across=shm", "mpi or dsm"}));
}

TEST(WorkflowValidate, a_producer_with_two_methods_is_an_error) {
    Workflow wf;
    wf.tasks = {{"a", 0, 8}, {"b", 0, 0}, {"c", 0, 0}};
    wf.edges = {{"a", "b", Method::shm}, {"a", "c", Method::mpi}};
    EXPECT_TRUE(fails_with(validate(wf), Errc::invalid_argument, {"edge[1].method=mpi", "a already sends with shm"}));
}

TEST(WorkflowValidate, any_dag_with_mixed_producer_methods_is_valid) {
    Workflow wf;
    wf.tasks = {{"a", 0, 8}, {"b", 0, 16}, {"c", 0, 24}, {"d", 0, 0}};
    wf.edges = {{"a", "b", Method::shm},
                {"a", "c", Method::shm},
                {"b", "d", Method::copy_into},
                {"c", "d", Method::mpi},
                {"a", "d", Method::shm}};
    STRATA_EXPECT_OK(validate(wf));
    const auto order = wf.topological_order();
    ASSERT_EQ(order.size(), 4U);
    EXPECT_EQ(order.front(), 0);
    EXPECT_EQ(order.back(), 3);
}

TEST(WorkflowGenerate, shapes_have_the_papers_graphs) {
    STRATA_ASSERT_ASSIGN(simple, generate({.shape = Shape::simple, .data_size = 64}));
    EXPECT_EQ(simple.tasks.size(), 2U);
    EXPECT_EQ(simple.edges.size(), 1U);
    STRATA_ASSERT_ASSIGN(pipe, generate({.shape = Shape::pipeline, .tasks = 5, .data_size = 64}));
    EXPECT_EQ(pipe.edges.size(), 4U);
    EXPECT_EQ(pipe.edges[3].from, "t3");
    EXPECT_EQ(pipe.tasks.back().data_size, 0U);
    STRATA_ASSERT_ASSIGN(sg, generate({.shape = Shape::scatter_gather, .tasks = 6, .data_size = 64}));
    EXPECT_EQ(sg.edges.size(), 8U);                                                   // 4 workers, in and out
    EXPECT_EQ(sg.segment_bytes_needed(), (4U << 20) + 5 * (2 * 128U + (64U << 10)));  // 64 + 8 bytes per slot, in 64s
}

TEST(WorkflowGenerate, too_few_tasks_or_an_odd_size_is_an_error) {
    EXPECT_TRUE(fails_with(generate({.shape = Shape::scatter_gather, .tasks = 2}), Errc::invalid_argument,
                           {"tasks=2", "scatter-gather", "between 3"}));
    EXPECT_TRUE(fails_with(generate({.shape = Shape::pipeline, .tasks = 1}), Errc::invalid_argument, {"tasks=1"}));
    EXPECT_TRUE(fails_with(generate({.shape = Shape::pipeline, .tasks = 3, .data_size = 12}), Errc::invalid_argument,
                           {"data_size=12", "multiple of 8"}));
    EXPECT_TRUE(fails_with(parse_shape("ring"), Errc::invalid_argument, {"shape=ring"}));
}

TEST(WorkflowLoad, a_missing_file_is_an_error_naming_it) {
    EXPECT_TRUE(fails_with(load("/nonexistent/wf.toml"), Errc::not_found, {"/nonexistent/wf.toml"}));
}

TEST(WorkflowReport, json_reads_back) {
    Report r;
    r.iterations = 3;
    r.tasks = 2;
    r.seconds = 0.5;
    r.edges.push_back({"a", "b", Method::copy, 3, 1, 2, 3, 4});
    STRATA_ASSERT_ASSIGN(back, report_from_json(to_json(r)));
    EXPECT_EQ(back.iterations, 3U);
    ASSERT_EQ(back.edges.size(), 1U);
    EXPECT_EQ(back.edges[0].method, Method::copy);
    EXPECT_EQ(back.edges[0].max_ns, 4);
    EXPECT_TRUE(fails_with(report_from_json("{}"), Errc::invalid_argument, {"not a workflow report"}));
}

TEST(WorkflowReport, a_count_that_is_not_a_non_negative_integer_is_refused_naming_its_key) {
    // tests/fuzz/corpus/workflow/crash-report-count-1e82: converting 1.1e82 to an integer was undefined.
    const auto with = [](std::string_view key, std::string_view value) {
        Report r;
        r.edges.push_back({"a", "b", Method::copy, 3, 1, 2, 3, 4});
        auto doc = to_json(r);
        const auto at = doc.find(fmt::format("\"{}\": ", key));
        const auto end = doc.find_first_of(",\n", at);
        return doc.replace(at, end - at, fmt::format("\"{}\": {}", key, value));
    };
    for (std::string_view key : {"iterations", "tasks", "checksum_errors", "samples"}) {
        for (std::string_view value : {"1.1e82", "-1", "2.5"}) {
            EXPECT_TRUE(fails_with(report_from_json(with(key, value)), Errc::invalid_argument,
                                   {"not a workflow report", key, "not a count"}))
                << key << " = " << value;
        }
    }
    STRATA_ASSERT_ASSIGN(sut, report_from_json(with("iterations", "18446744073709551615")));
    EXPECT_EQ(sut.iterations, 18446744073709551615U);
}

TEST(WorkflowParse, a_control_character_is_refused_with_its_line_and_column) {
    const std::string text = "[[task]]\nname = \"a\"\n[\x01";
    EXPECT_TRUE(fails_with(parse(text, "wf.toml"), Errc::invalid_argument, {"wf.toml", "line 3, column 2", "U+0001"}));
}

TEST(WorkflowParse, a_key_with_a_non_ascii_letter_is_a_parse_error) {
    EXPECT_TRUE(fails_with(parse("[[task]]\nn\xc3\xa4me = \"a\"\n", "wf.toml"), Errc::invalid_argument,
                           {"wf.toml", "not valid TOML"}));
}

}  // namespace
}  // namespace strata::workflow
