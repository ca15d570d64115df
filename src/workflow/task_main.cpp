// SPDX-License-Identifier: MIT
// strata-workflow-task: one rank of a workflow started by `strata run` with
// mpiexec, one rank per task (rank i runs task i of the workflow file).
//
//   mpiexec -n <tasks> strata-workflow-task WORKFLOW.toml --result report.json [--progress] [--segment NAME]
//
// Rank 0 creates the shared segment (strata::Segment, when an edge goes
// through it), every rank attaches and opens its producers' and consumers'
// Ports; the last rank to detach removes the segment. Rank 0 writes the report.
#include <mpi.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "mpi_ports.hpp"
#include "shm_ports.hpp"
#include "task_loop.hpp"

namespace {

using namespace strata;
using namespace strata::workflow;
using namespace strata::workflow::detail;

[[noreturn]] void die(int rank, const std::string& task, const Error& error) {
    fmt::print(stderr, "strata-workflow-task: task {} (rank {}): {}\n", task, rank, error.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
}

// The port of producer `t`, opened with the full shape by whichever side comes first.
Result<Port> open_port(Segment& segment, const Workflow& wf, std::size_t t, PortRole role) {
    unsigned consumers = 0;
    for (const auto& e : wf.edges) {
        consumers += e.from == wf.tasks[t].name ? 1U : 0U;
    }
    return segment.port(wf.tasks[t].name, role,
                        {.slots = wf.slots,
                         .slot_bytes = port_slot_bytes(wf.tasks[t].data_size),
                         .consumers = consumers,
                         // busy-poll spins on zero-timeout calls (shm_ports.hpp); the port itself blocks.
                         .sync = PortSync::blocking});
}

// This rank's ports; `segment` is null when no edge goes through one. The
// producers create their ports before any consumer opens one (a barrier in
// between): Segment::port refuses an open while another user constructs the port.
Result<TaskIo> plan(const Workflow& wf, int rank, Segment* segment) {
    const auto ms = handoff_timeout_from_env();
    if (!ms) {
        return std::unexpected(ms.error());
    }
    const Port::Timeout timeout = *ms;
    TaskIo io;
    std::optional<Port> own_port;
    const auto self = static_cast<std::size_t>(rank);
    bool produces_in_segment = false;
    for (const auto& e : wf.edges) {
        produces_in_segment = produces_in_segment || (e.from == wf.tasks[self].name && e.method != Method::mpi);
    }
    if (produces_in_segment) {
        auto port = open_port(*segment, wf, self, PortRole::producer);
        if (!port) {
            return std::unexpected(port.error());
        }
        own_port.emplace(std::move(*port));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    io.task = rank;
    io.period_us = wf.tasks[static_cast<std::size_t>(rank)].period_us;
    std::vector<int> consumer_ranks;
    std::vector<int> tags;
    std::optional<Method> out_method;
    for (std::size_t e = 0; e < wf.edges.size(); ++e) {
        const auto& edge = wf.edges[e];
        const int from = wf.task_index(edge.from);
        const int to = wf.task_index(edge.to);
        if (from == rank) {
            consumer_ranks.push_back(to);
            tags.push_back(static_cast<int>(e));
            out_method = edge.method;
        }
        if (to == rank) {
            const auto size = wf.tasks[static_cast<std::size_t>(from)].data_size;
            if (edge.method == Method::mpi) {
                io.inputs.push_back(std::make_unique<MpiInput>(size / 8, from, static_cast<int>(e)));
            } else {
                auto port = open_port(*segment, wf, static_cast<std::size_t>(from), PortRole::consumer);
                if (!port) {
                    return std::unexpected(port.error());
                }
                const bool copy_from = edge.method == Method::copy_from || edge.method == Method::copy;
                io.inputs.push_back(std::make_unique<PortInput>(std::move(*port), size, copy_from, timeout,
                                                                wf.wait == Wait::busy_poll));
            }
            io.input_edges.push_back(static_cast<int>(e));
            io.input_producers.push_back(from);
        }
    }
    if (out_method) {
        const auto t = static_cast<std::size_t>(rank);
        if (*out_method == Method::mpi) {
            io.output = std::make_unique<MpiOutput>(wf.tasks[t].data_size / 8, consumer_ranks, tags);
        } else {
            const bool copy_into = *out_method == Method::copy_into || *out_method == Method::copy;
            io.output = std::make_unique<PortOutput>(std::move(*own_port), wf.tasks[t].data_size, copy_into, timeout,
                                                     wf.wait == Wait::busy_poll);
        }
    }
    return io;
}

struct Args {
    std::string file;
    std::string result;
    std::string segment_name;
    bool progress = false;
};

// The command line; the exit status when it is not one to run (a bad option, --help).
std::optional<int> parse_args(int argc, char** argv, int rank, Args& args) {
    CLI::App app{"One rank of a strata workflow (started by `strata run`)", "strata-workflow-task"};
    app.add_option("workflow", args.file, "Workflow file")->required();
    app.add_option("--result", args.result, "Where rank 0 writes the JSON report (default: stdout)");
    app.add_option("--segment", args.segment_name, "Name of the shared segment to create");
    app.add_flag("--progress", args.progress, "Print 'progress <done> <total>' lines");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (rank == 0) {
            app.exit(e);
        }
        return 2;
    }
    return std::nullopt;
}

// The workflow file, checked against this job: one rank per task, processes only.
Workflow load_for_job(const std::string& file, int rank, int size) {
    auto wf = load(file);
    if (!wf) {
        die(rank, "?", wf.error());
    }
    const std::string& name = wf->tasks[std::min(static_cast<std::size_t>(rank), wf->tasks.size() - 1)].name;
    if (static_cast<std::size_t>(size) != wf->tasks.size()) {
        die(rank, name,
            Error{Errc::invalid_argument,
                  fmt::format("mpiexec -n {}: the workflow has {} tasks (one rank per task)", size, wf->tasks.size())});
    }
    if (wf->uses_threads()) {
        die(rank, name, Error{Errc::invalid_argument, "method threads runs in one process (strata run does that)"});
    }
    return std::move(*wf);
}

// The shared segment, when an edge goes through one: rank 0 creates it, then the others open it.
std::optional<Segment> open_segment(const Workflow& wf, int rank, const std::string& name, std::string segment_name) {
    std::optional<Segment> segment;
    if (!wf.uses_segment()) {
        return segment;
    }
    if (segment_name.empty()) {
        segment_name = fmt::format("strata-workflow-{}", ::getppid());
    }
    const std::size_t bytes = wf.segment_size != 0 ? wf.segment_size : wf.segment_bytes_needed();
    if (rank == 0) {
        auto r = Segment::open(segment_name, SegmentMode::create_only, bytes);
        if (!r) {
            die(rank, name, r.error());
        }
        segment.emplace(std::move(*r));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) {
        auto r = Segment::open(segment_name, SegmentMode::open_only);
        if (!r) {
            die(rank, name, r.error());
        }
        segment.emplace(std::move(*r));
    }
    return segment;
}

// The first timed iteration's start and the last one's end on this rank.
struct Span {
    std::int64_t start = 0;
    std::int64_t end = 0;
};

// The warm-up, then the timed iterations (all ranks start them together);
// with `progress`, the task that finishes last prints how far it is.
Span run_task(const Workflow& wf, int rank, const std::string& name, TaskIo& io, TaskOutcome& outcome, bool progress) {
    const int reporter = wf.topological_order().back();
    const std::uint64_t total = wf.warmup + wf.iterations;
    const std::uint64_t step = std::max<std::uint64_t>(1, total / 200);
    std::function<void(std::uint64_t)> on_done;
    if (progress && rank == reporter) {
        on_done = [&](std::uint64_t it) {
            if ((it + 1) % step == 0 || it + 1 == total) {
                std::printf("progress %llu %llu\n", static_cast<unsigned long long>(it + 1),
                            static_cast<unsigned long long>(total));
                std::fflush(stdout);
            }
        };
    }
    if (auto r = run_iterations(io, 0, wf.warmup, false, outcome, on_done); !r) {
        die(rank, name, r.error());
    }
    MPI_Barrier(MPI_COMM_WORLD);
    Span span;
    span.start = now_ns();
    if (auto r = run_iterations(io, wf.warmup, wf.iterations, true, outcome, on_done); !r) {
        die(rank, name, r.error());
    }
    span.end = now_ns();
    return span;
}

// Rank 0 gathers: the wall time (the first start to the last end), the
// checksum errors and each edge's percentiles from its consumer. The report
// on rank 0, nothing on the others.
std::optional<Report> gather_report(const Workflow& wf, const TaskIo& io, TaskOutcome& outcome, Span span, int rank) {
    std::int64_t first_start = 0;
    std::int64_t last_end = 0;
    MPI_Reduce(&span.start, &first_start, 1, MPI_INT64_T, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&span.end, &last_end, 1, MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    std::uint64_t errors = 0;
    MPI_Reduce(&outcome.checksum_errors, &errors, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    constexpr int kFields = 5;
    std::vector<double> mine(wf.edges.size() * kFields, 0.0);
    for (std::size_t i = 0; i < io.inputs.size(); ++i) {
        const auto e = static_cast<std::size_t>(io.input_edges[i]);
        const auto s = summarize(wf.edges[e], std::move(outcome.latency_ns[i]));
        const double fields[kFields] = {static_cast<double>(s.samples), s.p50_ns, s.p90_ns, s.p99_ns, s.max_ns};
        std::copy(std::begin(fields), std::end(fields), mine.begin() + static_cast<std::ptrdiff_t>(e * kFields));
    }
    std::vector<double> all(mine.size(), 0.0);
    MPI_Reduce(mine.data(), all.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank != 0) {
        return std::nullopt;
    }
    Report report;
    finish_report(wf, static_cast<double>(last_end - first_start) / 1e9, report);
    report.checksum_errors = errors;
    for (std::size_t e = 0; e < wf.edges.size(); ++e) {
        const double* f = all.data() + e * kFields;
        report.edges.push_back({wf.edges[e].from, wf.edges[e].to, wf.edges[e].method, static_cast<std::uint64_t>(f[0]),
                                f[1], f[2], f[3], f[4]});
    }
    return report;
}

// The report as JSON to `result`, or to stdout when it is empty; the exit status.
int write_report(const Report& report, const std::string& result) {
    const std::string json = to_json(report);
    if (result.empty()) {
        std::printf("%s\n", json.c_str());
        return 0;
    }
    std::ofstream out(result);
    out << json << "\n";
    if (!out) {
        fmt::print(stderr, "strata-workflow-task: --result={}: cannot write the report\n", result);
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    Args args;
    if (const auto status = parse_args(argc, argv, rank, args)) {
        MPI_Finalize();
        return *status;
    }
    const Workflow wf = load_for_job(args.file, rank, size);
    const std::string& name = wf.tasks[static_cast<std::size_t>(rank)].name;
    std::optional<Segment> segment = open_segment(wf, rank, name, args.segment_name);

    auto planned = plan(wf, rank, segment ? &*segment : nullptr);
    if (!planned) {
        die(rank, name, planned.error());
    }
    TaskIo io = std::move(*planned);
    // Every consumer has joined its ports before the first message.
    MPI_Barrier(MPI_COMM_WORLD);
    TaskOutcome outcome;
    const Span span = run_task(wf, rank, name, io, outcome, args.progress);
    const auto report = gather_report(wf, io, outcome, span, rank);
    const int status = report ? write_report(*report, args.result) : 0;
    MPI_Finalize();
    return status;
}
