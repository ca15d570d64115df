// SPDX-License-Identifier: MIT
// Synthetic workflows (docs/workflow.md): the benchmark of the Dhmem paper's §IV.
//
// A workflow is a DAG of tasks. Each task has a data size (what it produces
// every iteration) and a period (the least time between two of its
// iterations). Each edge hands the producer's data to a consumer by one method:
//
//   shm        the producer writes into a slot of a shared segment and sends a
//              handle; the consumer reads the slot in place, then releases it
//   copy-into  the producer writes a private buffer and copies it into a slot
//   copy-from  the consumer copies the slot into a private buffer, then reads it
//   copy       both copies
//   mpi        the producer's private buffer goes over MPI_Isend / MPI_Irecv
//   threads    all tasks are threads of one process; the consumer reads the
//              producer's buffer through a pointer handed over with a mutex and
//              a condition variable
//   dsm        across nodes only, chosen by the placement (Placement::across),
//              never by a workflow file: the producer writes a chunk of the
//              strata DSM, each consumer is notified with its bytes
//
// Every iteration every producer writes all its data and every consumer reads
// all of it and checks a checksum that depends on the producer and the
// iteration, so a stale or torn buffer is an error, never a silent result.
//
// Example (a workflow file, see examples/workflows/):
//
//   [workflow]
//   iterations = 1000
//   segment_size = "256MiB"
//   [[task]]
//   name = "producer"
//   data_size = "10MB"
//   [[task]]
//   name = "consumer"
//   [[edge]]
//   from = "producer"
//   to = "consumer"
//   method = "shm"
//
//   auto wf = strata::workflow::load("simple.toml");   // parses and validates
//   auto report = strata::workflow::run_threads(*wf, {});  // only for method threads
//
// Errors: parse() and validate() name the key, the value and the cause
// ("edge[2].to=sink2: no task of that name"). Nothing here creates resources;
// the runners clean up what they create also on failure.
//
// Thread safety: the types are values; functions are reentrant.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/error.hpp"

namespace strata::workflow {

/// How one edge hands data from its producer to its consumer (header comment).
enum class Method { shm, copy_into, copy_from, copy, mpi, threads, dsm };

/// How a task waits for a handoff through the segment.
enum class Wait {
    blocking,   ///< spin briefly, then sleep on a futex (the default: fair to oversubscribed cores)
    busy_poll,  ///< spin without sleeping (lowest latency while every task has a core)
};

/// "shm", "copy-into", "copy-from", "copy", "mpi", "threads", "dsm".
std::string_view to_string(Method method) noexcept;
Result<Method> parse_method(std::string_view text, std::string_view param = "method");
std::string_view to_string(Wait wait) noexcept;
Result<Wait> parse_wait(std::string_view text, std::string_view param = "wait");

/// The largest byte count a workflow accepts anywhere (1 PB): data sizes and
/// the segment size, whether written as integers or with a unit.
inline constexpr std::uint64_t kMaxByteCount = 1'000'000'000'000'000;
/// The most slots a producer's port may have (workflow.slots).
inline constexpr std::uint32_t kMaxSlots = 64;

/// Parses a byte count: an integer, or a number with a unit B, KB, MB, GB
/// (powers of 1000) or KiB, MiB, GiB (powers of 1024): "10MB", "1.5GiB".
/// At most kMaxByteCount.
Result<std::size_t> parse_size(std::string_view text, std::string_view param);

struct Task {
    std::string name;
    std::uint64_t period_us = 0;  ///< least time between two iterations' handoffs; 0: as fast as possible
    std::size_t data_size = 0;    ///< bytes produced per iteration; a multiple of 8, > 0 for a producer
};

struct Edge {
    std::string from;
    std::string to;
    Method method = Method::shm;
};

struct Workflow {
    std::uint64_t iterations = 100;
    std::uint64_t warmup = 2;      ///< iterations run before the clock starts
    std::size_t segment_size = 0;  ///< bytes of the shared segment; 0: just enough for the slots
    std::uint32_t slots = 2;       ///< buffers per producer, so it writes one while consumers read another
    Wait wait = Wait::blocking;
    std::vector<Task> tasks;
    std::vector<Edge> edges;

    /// Index of the task named `name`, or -1.
    [[nodiscard]] int task_index(std::string_view name) const noexcept;
    /// True when every edge uses method threads (the whole workflow is one process).
    [[nodiscard]] bool uses_threads() const noexcept;
    /// True when any edge goes through the shared segment.
    [[nodiscard]] bool uses_segment() const noexcept;
    /// Bytes of segment the slots need (producers with segment out-edges x slots x data size, plus headers).
    [[nodiscard]] std::size_t segment_bytes_needed() const noexcept;
    /// Task indices in an order where every producer comes before its consumers (valid workflows only).
    [[nodiscard]] std::vector<int> topological_order() const;
};

/// Parses a workflow file's text and validates it; `source` names it in errors.
Result<Workflow> parse(std::string_view toml_text, std::string_view source = "workflow");
/// Reads and parses a workflow file.
Result<Workflow> load(const std::filesystem::path& path);
/// Checks everything parse() checks on a workflow built in code: names, sizes,
/// unknown tasks, duplicate edges, cycles, threads mixed with other methods,
/// one method per producer, a segment large enough.
Result<void> validate(const Workflow& workflow);
/// The workflow as a TOML file that parse() reads back to an equal workflow.
std::string to_toml(const Workflow& workflow);

/// The paper's graph shapes.
enum class Shape {
    simple,          ///< producer -> consumer (2 tasks)
    pipeline,        ///< a chain of n tasks
    scatter_gather,  ///< one source -> n-2 workers -> one sink (n tasks)
};
std::string_view to_string(Shape shape) noexcept;
Result<Shape> parse_shape(std::string_view text, std::string_view param = "shape");

/// STRATA_WORKFLOW_TIMEOUT_MS: how long a task of a process run waits for a
/// handoff (default 30000 when unset or empty). A whole number from 1 to
/// 86400000 read in full width; anything else is invalid_argument naming the
/// variable and the value (`strata run` checks it before starting any task).
Result<std::chrono::milliseconds> handoff_timeout_from_env();

struct GenerateOptions {
    Shape shape = Shape::simple;
    std::size_t tasks = 2;               ///< n; simple ignores it
    std::size_t data_size = 10'000'000;  ///< every producer's data size
    Method method = Method::shm;
    std::uint64_t iterations = 100;
    std::uint64_t period_us = 0;
    Wait wait = Wait::blocking;
};
/// A workflow of a ready-made shape; tasks named "t0".."t<n-1>".
Result<Workflow> generate(const GenerateOptions& options);

/// Where each task runs (docs/workflow.md, "Placement"). An edge between two
/// tasks on one node keeps its method (shm: a port of that node's segment); an
/// edge across nodes runs as `across`: mpi (the default) or dsm. The tasks'
/// code is the same either way: only the placement decides.
///
///   auto p = strata::workflow::placement_from_nodes(wf, "n0,n1", "--nodes");  // tasks in blocks
///   auto q = strata::workflow::placement_from_hosts(wf, "n0 t0 t1\nn1 t2\n", "hosts.txt");
///   strata::workflow::edge_method(wf, *p, 0);  // shm or mpi
struct Placement {
    /// The node of each task, in task order; empty: every task on this node (the default).
    std::vector<std::string> task_nodes;
    /// How edges across nodes run: Method::mpi or Method::dsm (parse_across).
    Method across = Method::mpi;

    [[nodiscard]] bool one_node() const noexcept;
    /// The distinct nodes in order of first use.
    [[nodiscard]] std::vector<std::string> nodes() const;
    /// Index into nodes() of task `t`'s node (0 when one_node()).
    [[nodiscard]] std::size_t node_of(std::size_t t) const;
};

/// Node names: 1-253 of [A-Za-z0-9._-], not starting with '-' (host names, emulated node names).
Result<void> check_node_name(std::string_view name, std::string_view param);
/// `list` = "n0,n1,...": the tasks in file order split into contiguous blocks over the nodes (the first
/// nodes take one more when they do not divide evenly). At most one node per task.
Result<Placement> placement_from_nodes(const Workflow& workflow, std::string_view list, std::string_view param);
/// A hosts file's text: one line per node, `NODE TASK...` places those tasks there; a line of a node
/// alone takes the tasks no line names, in blocks as placement_from_nodes. '#' starts a comment.
/// Every task is placed exactly once.
Result<Placement> placement_from_hosts(const Workflow& workflow, std::string_view text, std::string_view source);
/// Reads and parses a hosts file.
Result<Placement> load_placement(const Workflow& workflow, const std::filesystem::path& path);
/// The placement given to strata-workflow-task: one node name per task, comma-separated.
Result<Placement> placement_from_task_nodes(const Workflow& workflow, std::string_view list, std::string_view param);
/// True when edge `e` joins tasks on two nodes.
bool across_nodes(const Workflow& workflow, const Placement& placement, std::size_t e);
/// The method edge `e` runs with: its own within a node, placement.across across nodes.
Method edge_method(const Workflow& workflow, const Placement& placement, std::size_t e);
/// "mpi" or "dsm": how edges across nodes run (`strata run --across`).
Result<Method> parse_across(std::string_view text, std::string_view param);
/// The DSM's server ranks a job needs: one per node of the placement when an edge runs dsm, else 0.
/// They follow the tasks' ranks (server k runs on node k).
std::size_t dsm_servers(const Workflow& workflow, const Placement& placement);
/// Bytes of node `node`'s segment (0: no edge goes through a segment on it).
std::size_t segment_bytes_on_node(const Workflow& workflow, const Placement& placement, std::size_t node);
/// The name of node `node`'s segment of a run whose segments are named `base`: `base` itself on one
/// node, `base-n<node>` when the placement spans several (their segment directories may be one, as
/// with emulated nodes).
std::string node_segment_name(std::string_view base, const Placement& placement, std::size_t node);

/// Handoff latency of one edge: from the producer's send to the consumer's
/// receive, over the timed iterations, in nanoseconds.
struct EdgeReport {
    std::string from;
    std::string to;
    Method method = Method::shm;  ///< as run: the edge's own method, or mpi across nodes
    std::uint64_t samples = 0;
    double p50_ns = 0;
    double p90_ns = 0;
    double p99_ns = 0;
    double max_ns = 0;
    bool across_nodes = false;
    /// What the consumer received, over every iteration (warm-up included): d = (d ^ sum of the
    /// iteration's words) * 0x100000001b3 mod 2^64 from d = 0xcbf29ce484222325. The same workflow gives
    /// the same digests wherever its tasks run.
    std::uint64_t digest = 0;
};

struct Report {
    std::uint64_t iterations = 0;
    std::size_t tasks = 0;
    double seconds = 0;          ///< wall time of the timed iterations
    double bytes = 0;            ///< bytes handed over: iterations x sum over edges of the producer's data size
    double throughput_mb_s = 0;  ///< bytes / seconds / 1e6 (the paper's metric)
    double iterations_per_s = 0;
    std::uint64_t checksum_errors = 0;  ///< always 0 in a successful run
    std::vector<EdgeReport> edges;
    std::vector<std::string> task_nodes;  ///< the placement: each task's node; empty: one node
};

/// The report as one JSON document.
std::string to_json(const Report& report);
/// Parses what to_json wrote (the task executable hands its report to `strata run` this way).
Result<Report> report_from_json(std::string_view text);

/// Called with the number of finished iterations (warmup included) from one thread.
using Progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

/// Runs a workflow whose edges all use method threads, in this process.
Result<Report> run_threads(const Workflow& workflow, const Progress& progress);

}  // namespace strata::workflow
