// SPDX-License-Identifier: MIT
// One task's iterations, the same for every method: receive and check every
// input, write and publish the output, keep the period.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ports.hpp"
#include "strata/workflow.hpp"

namespace strata::workflow::detail {

struct TaskIo {
    int task = 0;
    std::uint64_t period_us = 0;
    std::vector<std::unique_ptr<InputPort>> inputs;
    std::vector<int> input_edges;        ///< edge index of each input
    std::vector<int> input_producers;    ///< task index of each input's producer
    std::unique_ptr<OutputPort> output;  ///< null for a sink
};

struct TaskOutcome {
    std::vector<std::vector<double>> latency_ns;  ///< per input, one sample per timed iteration
    std::vector<std::uint64_t> digest;            ///< per input, EdgeReport::digest over every iteration
    std::uint64_t checksum_errors = 0;
};

/// Runs iterations [first, first + count); records latencies when `record`.
/// `on_done(it)` runs after each iteration (progress).
Result<void> run_iterations(TaskIo& io, std::uint64_t first, std::uint64_t count, bool record, TaskOutcome& outcome,
                            const std::function<void(std::uint64_t)>& on_done);

/// Percentiles of one edge's samples.
EdgeReport summarize(const Edge& edge, std::vector<double> samples);

/// Fills the report's totals from the wall time.
void finish_report(const Workflow& wf, double seconds, Report& report);

}  // namespace strata::workflow::detail
