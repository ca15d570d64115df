// SPDX-License-Identifier: MIT
// Placements: which node each task runs on, and so which edges cross nodes.
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "shm_ports.hpp"
#include "strata/workflow.hpp"

namespace strata::workflow {

namespace {

std::vector<std::string_view> split(std::string_view text, std::string_view separators) {
    std::vector<std::string_view> words;
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t start = text.find_first_not_of(separators, at);
        if (start == std::string_view::npos) {
            break;
        }
        const std::size_t end = std::min(text.find_first_of(separators, start), text.size());
        words.push_back(text.substr(start, end - start));
        at = end;
    }
    return words;
}

// Tasks `unplaced` (in task order) split into contiguous blocks over `nodes`.
void place_in_blocks(const std::vector<std::string>& nodes, const std::vector<std::size_t>& unplaced,
                     std::vector<std::string>& task_nodes) {
    const std::size_t per = unplaced.size() / nodes.size();
    const std::size_t extra = unplaced.size() % nodes.size();
    std::size_t next = 0;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
        for (std::size_t k = 0; k < per + (n < extra ? 1 : 0); ++k) {
            task_nodes[unplaced[next++]] = nodes[n];
        }
    }
}

}  // namespace

bool Placement::one_node() const noexcept {
    return std::ranges::all_of(task_nodes, [&](const std::string& n) { return n == task_nodes.front(); });
}

std::vector<std::string> Placement::nodes() const {
    std::vector<std::string> found;
    for (const auto& n : task_nodes) {
        if (std::ranges::find(found, n) == found.end()) {
            found.push_back(n);
        }
    }
    return found;
}

std::size_t Placement::node_of(std::size_t t) const {
    if (task_nodes.empty()) {
        return 0;
    }
    const auto all = nodes();
    return static_cast<std::size_t>(std::ranges::find(all, task_nodes.at(t)) - all.begin());
}

Result<void> check_node_name(std::string_view name, std::string_view param) {
    const bool ok = !name.empty() && name.size() <= 253 && name.front() != '-' && std::ranges::all_of(name, [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
               c == '.';
    });
    if (!ok) {
        return make_error(Errc::invalid_argument,
                          "{}: node '{}': expected 1-253 of A-Z a-z 0-9 . _ - not starting with '-' (a host name)",
                          param, name);
    }
    return {};
}

Result<Placement> placement_from_nodes(const Workflow& wf, std::string_view list, std::string_view param) {
    const auto words = split(list, ",");
    if (words.empty()) {
        return make_error(Errc::invalid_argument, "{}={}: no node named (give node names separated by commas)", param,
                          list);
    }
    std::vector<std::string> nodes;
    for (const auto w : words) {
        if (auto ok = check_node_name(w, fmt::format("{}={}", param, list)); !ok) {
            return std::unexpected(ok.error());
        }
        if (std::ranges::find(nodes, w) != nodes.end()) {
            return make_error(Errc::invalid_argument, "{}={}: node {} named twice", param, list, w);
        }
        nodes.emplace_back(w);
    }
    if (nodes.size() > wf.tasks.size()) {
        return make_error(Errc::invalid_argument, "{}={}: {} nodes for {} tasks (a node would have no task)", param,
                          list, nodes.size(), wf.tasks.size());
    }
    std::vector<std::size_t> all(wf.tasks.size());
    for (std::size_t t = 0; t < all.size(); ++t) {
        all[t] = t;
    }
    std::vector<std::string> task_nodes(wf.tasks.size());
    place_in_blocks(nodes, all, task_nodes);
    return Placement{std::move(task_nodes)};
}

Result<Placement> placement_from_hosts(const Workflow& wf, std::string_view text, std::string_view source) {
    std::vector<std::string> task_nodes(wf.tasks.size());
    std::vector<std::string> nodes;
    std::vector<std::string> bare;  // nodes that take the tasks no line names
    std::size_t line_no = 0;
    for (const auto line : split(text, "\n")) {
        ++line_no;
        const auto words = split(line.substr(0, std::min(line.find('#'), line.size())), " \t\r");
        if (words.empty()) {
            continue;
        }
        const std::string where = fmt::format("{}:{}", source, line_no);
        if (auto ok = check_node_name(words[0], where); !ok) {
            return std::unexpected(ok.error());
        }
        if (std::ranges::find(nodes, words[0]) != nodes.end()) {
            return make_error(Errc::invalid_argument, "{}: node {} has a line already (one line per node)", where,
                              words[0]);
        }
        nodes.emplace_back(words[0]);
        if (words.size() == 1) {
            bare.emplace_back(words[0]);
        }
        for (std::size_t w = 1; w < words.size(); ++w) {
            const int t = wf.task_index(words[w]);
            if (t < 0) {
                return make_error(Errc::invalid_argument, "{}: task {}: the workflow has no task of that name", where,
                                  words[w]);
            }
            auto& node = task_nodes[static_cast<std::size_t>(t)];
            if (!node.empty()) {
                return make_error(Errc::invalid_argument, "{}: task {}: placed on {} already (a task runs once)", where,
                                  words[w], node);
            }
            node = std::string(words[0]);
        }
    }
    if (nodes.empty()) {
        return make_error(Errc::invalid_argument, "{}: no node (one line per node: NODE [TASK...])", source);
    }
    std::vector<std::size_t> unplaced;
    for (std::size_t t = 0; t < task_nodes.size(); ++t) {
        if (task_nodes[t].empty()) {
            unplaced.push_back(t);
        }
    }
    if (!unplaced.empty() && bare.empty()) {
        return make_error(Errc::invalid_argument,
                          "{}: task {} is on no node (name it on a line, or add a line with a node alone)", source,
                          wf.tasks[unplaced.front()].name);
    }
    if (unplaced.size() < bare.size()) {
        return make_error(Errc::invalid_argument, "{}: node {} would have no task ({} tasks left for {} nodes)", source,
                          bare[unplaced.size()], unplaced.size(), bare.size());
    }
    if (!bare.empty()) {
        place_in_blocks(bare, unplaced, task_nodes);
    }
    return Placement{std::move(task_nodes)};
}

Result<Placement> load_placement(const Workflow& wf, const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) {
        return make_error(Errc::not_found, "--hosts={}: cannot read the file", path.string());
    }
    std::stringstream text;
    text << in.rdbuf();
    return placement_from_hosts(wf, text.str(), fmt::format("--hosts={}", path.string()));
}

Result<Placement> placement_from_task_nodes(const Workflow& wf, std::string_view list, std::string_view param) {
    const auto words = split(list, ",");
    if (words.size() != wf.tasks.size()) {
        return make_error(Errc::invalid_argument, "{}={}: {} nodes for {} tasks (one node per task)", param, list,
                          words.size(), wf.tasks.size());
    }
    std::vector<std::string> task_nodes;
    for (const auto w : words) {
        if (auto ok = check_node_name(w, param); !ok) {
            return std::unexpected(ok.error());
        }
        task_nodes.emplace_back(w);
    }
    return Placement{std::move(task_nodes)};
}

bool across_nodes(const Workflow& wf, const Placement& p, std::size_t e) {
    if (p.task_nodes.empty()) {
        return false;
    }
    const auto& edge = wf.edges.at(e);
    return p.task_nodes.at(static_cast<std::size_t>(wf.task_index(edge.from))) !=
           p.task_nodes.at(static_cast<std::size_t>(wf.task_index(edge.to)));
}

Method edge_method(const Workflow& wf, const Placement& p, std::size_t e) {
    return across_nodes(wf, p, e) ? p.across : wf.edges.at(e).method;
}

Result<Method> parse_across(std::string_view text, std::string_view param) {
    if (text == "mpi") {
        return Method::mpi;
    }
    if (text == "dsm") {
        return Method::dsm;
    }
    return make_error(Errc::invalid_argument, "{}={}: edges across nodes run as mpi or dsm", param, text);
}

std::size_t dsm_servers(const Workflow& wf, const Placement& p) {
    for (std::size_t e = 0; e < wf.edges.size(); ++e) {
        if (edge_method(wf, p, e) == Method::dsm) {
            return p.nodes().size();
        }
    }
    return 0;
}

std::size_t segment_bytes_on_node(const Workflow& wf, const Placement& p, std::size_t node) {
    // The ports of the producers on `node` that send through the segment to a consumer on `node`.
    Workflow local = wf;
    local.edges.clear();
    for (std::size_t e = 0; e < wf.edges.size(); ++e) {
        const auto from = static_cast<std::size_t>(wf.task_index(wf.edges[e].from));
        if (p.node_of(from) == node && !across_nodes(wf, p, e)) {
            local.edges.push_back(wf.edges[e]);
        }
    }
    if (!local.uses_segment()) {
        return 0;
    }
    return wf.segment_size != 0 ? wf.segment_size : local.segment_bytes_needed();
}

std::string node_segment_name(std::string_view base, const Placement& p, std::size_t node) {
    return p.one_node() ? std::string(base) : fmt::format("{}-n{}", base, node);
}

}  // namespace strata::workflow
