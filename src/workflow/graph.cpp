// SPDX-License-Identifier: MIT
// Validation of a workflow's graph and the ready-made shapes.
#include <algorithm>
#include <limits>
#include <set>
#include <string>

#include <fmt/format.h>

#include "shm_ports.hpp"
#include "strata/workflow.hpp"

namespace strata::workflow {

namespace {

constexpr std::size_t kMaxTasks = 1024;

bool through_segment(Method m) {
    return m == Method::shm || m == Method::copy_into || m == Method::copy_from || m == Method::copy;
}

bool valid_name(std::string_view name) {
    return !name.empty() && name.size() <= 64 && std::ranges::all_of(name, [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
               c == '.';
    });
}

}  // namespace

int Workflow::task_index(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        if (tasks[i].name == name) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

bool Workflow::uses_threads() const noexcept {
    return !edges.empty() && std::ranges::all_of(edges, [](const Edge& e) { return e.method == Method::threads; });
}

bool Workflow::uses_segment() const noexcept {
    return std::ranges::any_of(edges, [](const Edge& e) { return through_segment(e.method); });
}

std::size_t Workflow::segment_bytes_needed() const noexcept {
    return uses_segment() ? detail::segment_bytes_for_ports(*this) : 0;
}

std::vector<int> Workflow::topological_order() const {
    std::vector<int> indegree(tasks.size(), 0);
    for (const auto& e : edges) {
        const int to = task_index(e.to);
        if (to >= 0) {
            ++indegree[static_cast<std::size_t>(to)];
        }
    }
    std::vector<int> order;
    std::vector<int> ready;
    for (std::size_t i = tasks.size(); i-- > 0;) {
        if (indegree[i] == 0) {
            ready.push_back(static_cast<int>(i));
        }
    }
    while (!ready.empty()) {
        const int t = ready.back();
        ready.pop_back();
        order.push_back(t);
        for (const auto& e : edges) {
            if (e.from == tasks[static_cast<std::size_t>(t)].name) {
                const int to = task_index(e.to);
                if (to >= 0 && --indegree[static_cast<std::size_t>(to)] == 0) {
                    ready.push_back(to);
                }
            }
        }
    }
    return order;  // shorter than tasks when there is a cycle
}

namespace {

Result<void> validate_settings(const Workflow& wf) {
    if (wf.iterations < 1) {
        return make_error(Errc::invalid_argument, "workflow.iterations={}: must be at least 1", wf.iterations);
    }
    if (wf.slots < 1 || wf.slots > kMaxSlots) {
        return make_error(Errc::invalid_argument, "workflow.slots={}: must be between 1 and {}", wf.slots, kMaxSlots);
    }
    if (wf.segment_size > kMaxByteCount) {
        return make_error(Errc::invalid_argument, "workflow.segment_size={}: larger than 1 PB", wf.segment_size);
    }
    return {};
}

Result<void> validate_tasks(const Workflow& wf) {
    if (wf.tasks.size() < 2) {
        return make_error(Errc::invalid_argument, "task: {} task(s) declared (a workflow needs at least 2)",
                          wf.tasks.size());
    }
    if (wf.tasks.size() > kMaxTasks) {
        return make_error(Errc::invalid_argument, "task: {} tasks declared (at most {})", wf.tasks.size(), kMaxTasks);
    }
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < wf.tasks.size(); ++i) {
        const auto& t = wf.tasks[i];
        if (!valid_name(t.name)) {
            return make_error(Errc::invalid_argument,
                              "task[{}].name={}: not a valid name (1-64 characters of letters, digits, _ - .)", i,
                              t.name);
        }
        if (!names.insert(t.name).second) {
            return make_error(Errc::invalid_argument, "task[{}].name={}: declared twice", i, t.name);
        }
        if (t.data_size > kMaxByteCount) {
            return make_error(Errc::invalid_argument, "task[{}].data_size={}: larger than 1 PB", i, t.data_size);
        }
        if (t.data_size % 8 != 0) {
            return make_error(Errc::invalid_argument,
                              "task[{}].data_size={}: not a multiple of 8 bytes (data is written as 64-bit words)", i,
                              t.data_size);
        }
        if (t.period_us > 60'000'000) {
            return make_error(Errc::invalid_argument, "task[{}].period_us={}: longer than a minute", i, t.period_us);
        }
    }
    return {};
}

using EdgePairs = std::set<std::pair<std::string_view, std::string_view>>;

// Edge i against the tasks and the edges before it (their ends in `pairs`).
Result<void> validate_edge(const Workflow& wf, std::size_t i, EdgePairs& pairs) {
    const auto& e = wf.edges[i];
    const int from = wf.task_index(e.from);
    const int to = wf.task_index(e.to);
    if (from < 0) {
        return make_error(Errc::invalid_argument, "edge[{}].from={}: no task of that name", i, e.from);
    }
    if (to < 0) {
        return make_error(Errc::invalid_argument, "edge[{}].to={}: no task of that name", i, e.to);
    }
    if (from == to) {
        return make_error(Errc::invalid_argument, "edge[{}].to={}: a task cannot consume its own data (a cycle)", i,
                          e.to);
    }
    if (!pairs.emplace(e.from, e.to).second) {
        return make_error(Errc::invalid_argument, "edge[{}]: {} -> {} declared twice", i, e.from, e.to);
    }
    if (wf.tasks[static_cast<std::size_t>(from)].data_size == 0) {
        return make_error(Errc::invalid_argument,
                          "edge[{}].from={}: the task produces no data (give it a data_size > 0)", i, e.from);
    }
    if (e.method == Method::dsm) {
        return make_error(Errc::invalid_argument,
                          "edge[{}].method=dsm: the DSM carries edges across nodes only, chosen by the placement "
                          "(strata run --nodes ... --across dsm), not by the workflow file",
                          i);
    }
    if ((e.method == Method::threads) != (wf.edges.front().method == Method::threads)) {
        return make_error(Errc::invalid_argument,
                          "edge[{}].method={}: threads cannot be mixed with process methods (edge[0] uses {}); "
                          "with threads the whole workflow is one process",
                          i, to_string(e.method), to_string(wf.edges.front().method));
    }
    for (std::size_t j = 0; j < i; ++j) {
        if (wf.edges[j].from == e.from && wf.edges[j].method != e.method) {
            return make_error(Errc::invalid_argument,
                              "edge[{}].method={}: {} already sends with {} (edge[{}]); a producer writes its data "
                              "one way, so all its edges use one method",
                              i, to_string(e.method), e.from, to_string(wf.edges[j].method), j);
        }
    }
    return {};
}

Result<void> validate_edges(const Workflow& wf) {
    if (wf.edges.empty()) {
        return make_error(Errc::invalid_argument, "edge: none declared (a workflow needs at least one edge)");
    }
    EdgePairs pairs;
    for (std::size_t i = 0; i < wf.edges.size(); ++i) {
        if (auto ok = validate_edge(wf, i, pairs); !ok) {
            return ok;
        }
    }
    return {};
}

Result<void> validate_acyclic(const Workflow& wf) {
    if (wf.topological_order().size() == wf.tasks.size()) {
        return {};
    }
    // Name one edge on the cycle: an edge between two tasks that never became ready.
    const auto order = wf.topological_order();
    std::set<int> done(order.begin(), order.end());
    for (std::size_t i = 0; i < wf.edges.size(); ++i) {
        const auto& e = wf.edges[i];
        if (!done.contains(wf.task_index(e.from)) && !done.contains(wf.task_index(e.to))) {
            return make_error(Errc::invalid_argument, "edge[{}]: {} -> {} closes a cycle (a workflow must be a DAG)", i,
                              e.from, e.to);
        }
    }
    return make_error(Errc::invalid_argument, "edge: the graph has a cycle (a workflow must be a DAG)");
}

Result<void> validate_segment(const Workflow& wf) {
    if (wf.uses_segment() && wf.segment_bytes_needed() == std::numeric_limits<std::size_t>::max()) {
        return make_error(Errc::invalid_argument,
                          "workflow.slots={}: the ports of the producers that send through the segment would need "
                          "more than 2^64 bytes (slots x data_size summed over producers)",
                          wf.slots);
    }
    if (wf.uses_segment() && wf.segment_size != 0 && wf.segment_size < wf.segment_bytes_needed()) {
        return make_error(Errc::invalid_argument,
                          "workflow.segment_size={}: too small for the ports, which need {} bytes ({} slots per "
                          "producer that sends through the segment)",
                          wf.segment_size, wf.segment_bytes_needed(), wf.slots);
    }
    return {};
}

}  // namespace

Result<void> validate(const Workflow& wf) {
    for (auto step : {validate_settings, validate_tasks, validate_edges, validate_acyclic, validate_segment}) {
        if (auto ok = step(wf); !ok) {
            return ok;
        }
    }
    return {};
}

Result<Workflow> generate(const GenerateOptions& o) {
    Workflow wf;
    wf.iterations = o.iterations;
    wf.wait = o.wait;
    std::size_t n = o.shape == Shape::simple ? 2 : o.tasks;
    const std::size_t min = o.shape == Shape::scatter_gather ? 3 : 2;
    if (n < min || n > kMaxTasks) {
        return make_error(Errc::invalid_argument, "tasks={}: a {} workflow has between {} and {} tasks", n,
                          to_string(o.shape), min, kMaxTasks);
    }
    for (std::size_t i = 0; i < n; ++i) {
        wf.tasks.push_back({fmt::format("t{}", i), o.period_us, o.data_size});
    }
    if (o.shape == Shape::scatter_gather) {
        for (std::size_t i = 1; i + 1 < n; ++i) {
            wf.edges.push_back({"t0", fmt::format("t{}", i), o.method});
            wf.edges.push_back({fmt::format("t{}", i), fmt::format("t{}", n - 1), o.method});
        }
    } else {
        for (std::size_t i = 0; i + 1 < n; ++i) {
            wf.edges.push_back({fmt::format("t{}", i), fmt::format("t{}", i + 1), o.method});
        }
    }
    // The sink produces nothing.
    wf.tasks.back().data_size = 0;
    if (auto r = validate(wf); !r) {
        return std::unexpected(r.error());
    }
    return wf;
}

}  // namespace strata::workflow
