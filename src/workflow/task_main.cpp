// SPDX-License-Identifier: MIT
// strata-workflow-task: one rank of a workflow started by `strata run` with
// mpiexec, one rank per task (rank i runs task i of the workflow file).
//
//   mpiexec -n <tasks + servers> strata-workflow-task WORKFLOW.toml --result report.json [--progress]
//           [--segment NAME] [--nodes NODE,NODE,...] [--across mpi|dsm]
//
// --nodes is the placement (one node per task; default: all on one node).
// On each node the first rank creates the node's shared segment
// (strata::Segment, when an edge within the node goes through it), every rank
// of the node attaches and opens its producers' and consumers' Ports; the last
// rank to detach removes the segment. Edges across nodes go by MPI, or with
// --across dsm through the strata DSM, whose servers are the ranks after the
// tasks', one per node (task_plan.hpp, dsm_ports.hpp). Rank 0 writes the report.
#include <mpi.h>
#include <unistd.h>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "task_loop.hpp"
#include "task_plan.hpp"

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

struct Args {
    std::string file;
    std::string result;
    std::string segment_name;
    std::string nodes;
    std::string across = "mpi";
    bool progress = false;
};

// The command line; the exit status when it is not one to run (a bad option, --help).
std::optional<int> parse_args(int argc, char** argv, int rank, Args& args) {
    CLI::App app{"One rank of a strata workflow (started by `strata run`)", "strata-workflow-task"};
    app.add_option("workflow", args.file, "Workflow file")->required();
    app.add_option("--result", args.result, "Where rank 0 writes the JSON report (default: stdout)");
    app.add_option("--segment", args.segment_name, "Name of the shared segment to create");
    app.add_flag("--progress", args.progress, "Print 'progress <done> <total>' lines");
    app.add_option("--nodes", args.nodes, "The node of each task, comma-separated (default: all on one node)");
    app.add_option("--across", args.across, "How edges across nodes run: mpi or dsm (default: mpi)");
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

// The workflow file: processes only.
Workflow load_for_job(const std::string& file, int rank) {
    auto wf = load(file);
    if (!wf) {
        die(rank, "?", wf.error());
    }
    if (wf->uses_threads()) {
        die(rank, "?", Error{Errc::invalid_argument, "method threads runs in one process (strata run does that)"});
    }
    return std::move(*wf);
}

// The placement of --nodes and --across, checked against the job's size: one rank per task, then the
// DSM's servers.
Placement placement_for_job(const Workflow& wf, const Args& args, int rank, int size) {
    const std::string& name = wf.tasks[std::min(static_cast<std::size_t>(rank), wf.tasks.size() - 1)].name;
    Placement placement;
    if (!args.nodes.empty()) {
        auto p = placement_from_task_nodes(wf, args.nodes, "--nodes");
        if (!p) {
            die(rank, name, p.error());
        }
        placement = std::move(*p);
    }
    auto across = parse_across(args.across, "--across");
    if (!across) {
        die(rank, name, across.error());
    }
    placement.across = *across;
    const std::size_t ranks = wf.tasks.size() + dsm_servers(wf, placement);
    if (static_cast<std::size_t>(size) != ranks) {
        die(rank, name,
            Error{Errc::invalid_argument,
                  fmt::format("mpiexec -n {}: the job has {} ranks ({} tasks, one rank each, and {} DSM servers)", size,
                              ranks, wf.tasks.size(), ranks - wf.tasks.size())});
    }
    return placement;
}

// The first timed iteration's start and the last one's end on this rank.
struct Span {
    std::int64_t start = 0;
    std::int64_t end = 0;
};

// The warm-up, then the timed iterations (all ranks start them together);
// with `progress`, the task that finishes last prints how far it is.
Span run_task(const Job& job, const std::string& name, TaskIo& io, TaskOutcome& outcome, bool progress) {
    const Workflow& wf = job.wf;
    const int rank = job.rank;
    const int reporter = wf.topological_order().back();
    const std::uint64_t total = wf.warmup + wf.iterations;
    const std::uint64_t step = std::max<std::uint64_t>(1, total / 200);
    std::function<void(std::uint64_t)> on_done;
    if (progress && rank == reporter) {
        on_done = [&](std::uint64_t it) {
            const std::uint64_t done = it + 1;
            if (done % step == 0 || done == total) {
                std::printf("progress %llu %llu\n", static_cast<unsigned long long>(done),
                            static_cast<unsigned long long>(total));
                std::fflush(stdout);
            }
        };
    }
    if (auto r = run_iterations(io, 0, wf.warmup, false, outcome, on_done); !r) {
        die(rank, name, r.error());
    }
    if (auto r = barrier(job, "the barrier after the warm-up iterations"); !r) {
        die(rank, name, r.error());
    }
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
Result<std::optional<Report>> gather_report(const Job& job, const TaskIo& io, TaskOutcome& outcome, Span span) {
    const Workflow& wf = job.wf;
    const int rank = job.rank;
    constexpr int kFields = 5;
    std::vector<double> mine(wf.edges.size() * kFields, 0.0);
    for (std::size_t i = 0; i < io.inputs.size(); ++i) {
        const auto e = static_cast<std::size_t>(io.input_edges[i]);
        const auto s = summarize(wf.edges[e], std::move(outcome.latency_ns[i]));
        const double fields[kFields] = {static_cast<double>(s.samples), s.p50_ns, s.p90_ns, s.p99_ns, s.max_ns};
        std::copy(std::begin(fields), std::end(fields), mine.begin() + static_cast<std::ptrdiff_t>(e * kFields));
    }
    // Each edge has one consumer: the others add 0.
    std::vector<std::uint64_t> digests(wf.edges.size(), 0);
    for (std::size_t i = 0; i < io.inputs.size(); ++i) {
        digests[static_cast<std::size_t>(io.input_edges[i])] = outcome.digest[i];
    }
    std::int64_t first_start = 0;
    std::int64_t last_end = 0;
    std::uint64_t errors = 0;
    std::vector<double> all(mine.size(), 0.0);
    std::vector<std::uint64_t> all_digests(digests.size(), 0);
    struct Reduction {
        const void* mine;
        void* all;
        int count;
        MPI_Datatype type;
        MPI_Op op;
        const char* what;
    };
    // One after the other, every rank in the same order; the first that fails ends the gathering.
    const Reduction reductions[] = {
        {&span.start, &first_start, 1, MPI_INT64_T, MPI_MIN, "gathering the first start"},
        {&span.end, &last_end, 1, MPI_INT64_T, MPI_MAX, "gathering the last end"},
        {&outcome.checksum_errors, &errors, 1, MPI_UINT64_T, MPI_SUM, "gathering the checksum errors"},
        {mine.data(), all.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_SUM, "gathering the edges' latencies"},
        {digests.data(), all_digests.data(), static_cast<int>(digests.size()), MPI_UINT64_T, MPI_SUM,
         "gathering the edges' digests"},
    };
    for (const Reduction& r : reductions) {
        if (auto done = reduce(job, r.mine, r.all, r.count, r.type, r.op, r.what); !done) {
            return std::unexpected(done.error());
        }
    }
    if (rank != 0) {
        return std::optional<Report>{};
    }
    Report report;
    finish_report(wf, static_cast<double>(last_end - first_start) / 1e9, report);
    report.checksum_errors = errors;
    for (std::size_t e = 0; e < wf.edges.size(); ++e) {
        const double* f = all.data() + e * kFields;
        report.edges.push_back({wf.edges[e].from, wf.edges[e].to, edge_method(wf, job.placement, e),
                                static_cast<std::uint64_t>(f[0]), f[1], f[2], f[3], f[4],
                                across_nodes(wf, job.placement, e), all_digests[e]});
    }
    report.task_nodes = job.placement.task_nodes;
    return report;
}

// The report as JSON to `result`, or to stdout when it is empty; the exit status.
int write_report(const Report& report, const std::string& result) {
    const std::string json = to_json(report);
    if (result.empty()) {
        std::printf("%s\n", json.c_str());
        return 0;
    }
    // Written whole, then renamed: `strata run` reads either nothing or all of it.
    const std::string partial = result + ".partial";
    {
        std::ofstream out(partial);
        out << json << "\n";
        if (!out) {
            fmt::print(stderr, "strata-workflow-task: --result={}: cannot write the report\n", result);
            return 1;
        }
    }
    if (std::rename(partial.c_str(), result.c_str()) != 0) {
        fmt::print(stderr, "strata-workflow-task: --result={}: cannot rename the report into place\n", result);
        return 1;
    }
    return 0;
}

// MPICH 4.0.2's ch4:ucx MPI_Finalize can deadlock over UCX's TCP transport, which carries the
// edges across nodes (docs/video.md, "What MPICH 4.0.2 (Debian 12) does", item 1; fixed upstream
// by MPICH PR #6596): a rank whose endpoint disconnects finished waits in a PMI barrier and no
// longer progresses UCX, while a peer's disconnect still needs it. As strata-video does: after a
// barrier every rank passed (so the job's work, the report included, is complete), 200 ms of quiet,
// then MPI_Finalize under a watchdog that warns and ends the rank with its status after 10 s.
void finalize_across_nodes(int rank, const std::string& task, int status) {
    MPI_Barrier(MPI_COMM_WORLD);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    std::thread watchdog([&] {
        std::unique_lock lock(mutex);
        if (!finished.wait_for(lock, std::chrono::seconds(10), [&] { return done; })) {
            fmt::print(stderr,
                       "strata-workflow-task: task {} (rank {}): warning: MPI_Finalize did not return within 10 s "
                       "after every rank finished (the MPICH 4.0.2 ch4:ucx finalize deadlock over TCP); the "
                       "run's work is complete\n",
                       task, rank);
            std::fflush(nullptr);
            std::_Exit(status);  // not exit(): the main thread is inside MPI_Finalize
        }
    });
    MPI_Finalize();
    {
        const std::lock_guard lock(mutex);
        done = true;
    }
    finished.notify_one();
    watchdog.join();
}

// A DSM server rank: serves the tasks' chunks until every task left, then ends with them.
int serve_dsm(const Job& job, int size) {
    const std::string name = fmt::format("dsm-server-{}", job.rank - static_cast<int>(job.wf.tasks.size()));
    MPI_Comm dsm_comm = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, 0, job.rank - static_cast<int>(job.wf.tasks.size()), &dsm_comm);
    {  // the node ends (its communicator too) before MPI does
        auto node = dsm::Node::join(dsm_comm, {.servers = size - static_cast<int>(job.wf.tasks.size())});
        if (!node) {
            die(job.rank, name, node.error());
        }
        if (auto served = node->serve(); !served) {
            die(job.rank, name, served.error());
        }
    }
    MPI_Comm_free(&dsm_comm);
    finalize_across_nodes(job.rank, name, 0);
    return 0;
}

// A task rank's DSM membership: joins after the servers (they are the first ranks of its communicator).
std::optional<dsm::Node> join_dsm(const Job& job, const std::string& name, int servers, MPI_Comm& dsm_comm) {
    MPI_Comm_split(MPI_COMM_WORLD, 0, servers + job.rank, &dsm_comm);
    auto node = dsm::Node::join(dsm_comm, {.servers = servers});
    if (!node) {
        die(job.rank, name, node.error());
    }
    return std::move(*node);
}

// The rank's whole life after MPI_Init; the exit status.
int run_rank(int argc, char** argv, int rank, int size) {
    Args args;
    if (const auto status = parse_args(argc, argv, rank, args)) {
        MPI_Finalize();
        return *status;
    }
    const Workflow wf = load_for_job(args.file, rank);
    const Placement placement = placement_for_job(wf, args, rank, size);
    const int tasks = static_cast<int>(wf.tasks.size());
    const int servers = size - tasks;
    // The tasks' own communicator (rank i = task i): the servers keep out of the tasks' collectives.
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, rank < tasks ? 0 : 1, rank, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    Job job{wf, placement, rank, comm, nullptr};
    if (rank >= tasks) {
        return serve_dsm(job, size);
    }
    const std::string& name = wf.tasks[static_cast<std::size_t>(rank)].name;
    MPI_Comm dsm_comm = MPI_COMM_NULL;
    std::optional<dsm::Node> node;
    if (servers > 0) {
        node = join_dsm(job, name, servers, dsm_comm);
        job.dsm = &*node;
    }
    const std::string base =
        args.segment_name.empty() ? fmt::format("strata-workflow-{}", ::getppid()) : args.segment_name;
    auto segment = open_node_segment(job, base);
    if (!segment) {
        die(rank, name, segment.error());
    }
    auto planned = plan(job, *segment ? &**segment : nullptr);
    if (!planned) {
        die(rank, name, planned.error());
    }
    TaskIo io = std::move(*planned);
    // Every consumer has joined its ports (and subscribed its DSM chunks) before the first message.
    if (auto r = barrier(job, "the barrier before the first message"); !r) {
        die(rank, name, r.error());
    }
    TaskOutcome outcome;
    const Span span = run_task(job, name, io, outcome, args.progress);
    const auto report = gather_report(job, io, outcome, span);
    if (!report) {
        die(rank, name, report.error());
    }
    const int status = *report ? write_report(**report, args.result) : 0;
    // Ports, then the segment: the node's last rank to detach removes it, before MPI ends.
    io = TaskIo{};
    segment->reset();
    if (node) {
        if (auto left = node->leave(); !left) {
            die(rank, name, left.error());
        }
        node.reset();
        MPI_Comm_free(&dsm_comm);
    }
    MPI_Comm_free(&comm);
    if (placement.task_nodes.empty()) {  // this machine's mpiexec: ranks meet through shared memory
        MPI_Finalize();
    } else {
        finalize_across_nodes(rank, name, status);
    }
    return status;
}

}  // namespace

// True when the command line asks for the DSM across nodes, which needs MPI_THREAD_MULTIPLE (its progress
// thread); read before MPI_Init, as mpiexec passes the arguments unchanged.
bool asks_for_dsm(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg(argv[i]);
        if (arg == "--across=dsm" || (arg == "--across" && i + 1 < argc && std::string_view(argv[i + 1]) == "dsm")) {
            return true;
        }
    }
    return false;
}

int main(int argc, char** argv) {
    if (asks_for_dsm(argc, argv)) {
        int provided = 0;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    // A failed MPI call (a peer on another node died) is reported by the task that saw it, naming itself
    // and the peer's rank, instead of MPICH's abort.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    try {
        return run_rank(argc, argv, rank, size);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strata-workflow-task: rank %d: %s\n", rank, e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
}
