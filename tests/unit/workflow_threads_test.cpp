// SPDX-License-Identifier: MIT
// Method threads end to end, and the data every method writes and checks.
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "../../src/workflow/ports.hpp"
#include "strata/workflow.hpp"
#include "support/result.hpp"

namespace strata::workflow {
namespace {

using test::fails_with;

class WorkflowThreads : public ::testing::TestWithParam<Shape> {};

TEST_P(WorkflowThreads, every_iteration_reaches_every_consumer_with_the_right_data) {
    STRATA_ASSERT_ASSIGN(
        wf,
        generate(
            {.shape = GetParam(), .tasks = 5, .data_size = 64 * 1024, .method = Method::threads, .iterations = 200}));
    std::uint64_t last = 0;
    std::uint64_t calls = 0;
    STRATA_ASSERT_ASSIGN(report, run_threads(wf, [&](std::uint64_t done, std::uint64_t total) {
                             EXPECT_EQ(total, 202U);
                             EXPECT_EQ(done, last + 1);
                             last = done;
                             ++calls;
                         }));
    EXPECT_EQ(calls, 202U);
    EXPECT_EQ(report.checksum_errors, 0U);
    EXPECT_EQ(report.iterations, 200U);
    EXPECT_GT(report.seconds, 0);
    EXPECT_DOUBLE_EQ(report.bytes, 200.0 * 64 * 1024 * static_cast<double>(wf.edges.size()));
    ASSERT_EQ(report.edges.size(), wf.edges.size());
    for (const auto& e : report.edges) {
        EXPECT_EQ(e.samples, 200U) << e.from << "->" << e.to;
        EXPECT_LE(e.p50_ns, e.p99_ns);
        EXPECT_LE(e.p99_ns, e.max_ns);
    }
}

INSTANTIATE_TEST_SUITE_P(Workflow, WorkflowThreads,
                         ::testing::Values(Shape::simple, Shape::pipeline, Shape::scatter_gather));

TEST(WorkflowThreadsRun, one_slot_still_never_overwrites_what_a_consumer_reads) {
    STRATA_ASSERT_ASSIGN(wf, generate({.shape = Shape::scatter_gather,
                                       .tasks = 4,
                                       .data_size = 4096,
                                       .method = Method::threads,
                                       .iterations = 500}));
    wf.slots = 1;
    STRATA_ASSERT_ASSIGN(report, run_threads(wf, {}));
    EXPECT_EQ(report.checksum_errors, 0U);
}

TEST(WorkflowThreadsRun, a_process_workflow_is_refused) {
    STRATA_ASSERT_ASSIGN(wf, generate({.shape = Shape::simple, .data_size = 64, .method = Method::shm}));
    EXPECT_TRUE(fails_with(run_threads(wf, {}), Errc::invalid_argument, {"edge[0].method=shm", "threads"}));
}

TEST(WorkflowChecksum, detects_a_stale_iteration_another_producer_and_one_changed_word) {
    std::vector<std::uint64_t> words(1000);
    detail::fill(words, 3, 7);
    EXPECT_TRUE(detail::verify(words, 3, 7));
    EXPECT_FALSE(detail::verify(words, 3, 6));
    EXPECT_FALSE(detail::verify(words, 2, 7));
    words[500] ^= 1;
    EXPECT_FALSE(detail::verify(words, 3, 7));
    std::vector<std::uint64_t> odd(3);
    detail::fill(odd, 0, 0);
    EXPECT_TRUE(detail::verify(odd, 0, 0));
}

}  // namespace
}  // namespace strata::workflow
