// SPDX-License-Identifier: MIT
// Workflow files: TOML (toml++) to Workflow and back.
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "strata/workflow.hpp"

namespace strata::workflow {

namespace {

Result<void> reject_unknown_keys(const toml::table& table, std::string_view where,
                                 std::initializer_list<std::string_view> known) {
    for (const auto& [key, value] : table) {
        bool found = false;
        for (auto k : known) {
            found = found || k == key.str();
        }
        if (!found) {
            std::string list;
            for (auto k : known) {
                list += (list.empty() ? "" : ", ") + std::string(k);
            }
            return make_error(Errc::invalid_argument, "{}.{}: unknown key (expected one of {})", where, key.str(),
                              list);
        }
    }
    return {};
}

std::string describe(const toml::node& node) {
    std::ostringstream out;
    node.visit([&](const auto& v) { out << v; });
    return out.str();
}

// A byte count: an integer or a string with a unit. Checked in the full
// 64-bit width of the TOML integer before it becomes a size_t, with the same
// upper bound as parse_size().
Result<std::size_t> read_size(const toml::node& node, const std::string& key) {
    if (const auto* i = node.as_integer()) {
        const std::int64_t value = i->get();
        if (value < 0) {
            return make_error(Errc::invalid_argument, "{}={}: a byte count cannot be negative", key, value);
        }
        if (static_cast<std::uint64_t>(value) > kMaxByteCount) {
            return make_error(Errc::invalid_argument, "{}={}: larger than 1 PB", key, value);
        }
        return static_cast<std::size_t>(value);
    }
    if (const auto* s = node.as_string()) {
        return parse_size(s->get(), key);
    }
    return make_error(Errc::invalid_argument, "{}={}: not a byte count (expected an integer or a string like \"10MB\")",
                      key, describe(node));
}

// An integer in [min, max], compared in the full 64-bit width of the TOML
// integer, so a value is never narrowed before it is checked.
Result<std::uint64_t> read_count(const toml::node& node, const std::string& key, std::int64_t min,
                                 std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
    const auto* i = node.as_integer();
    if (i == nullptr) {
        return make_error(Errc::invalid_argument, "{}={}: not an integer", key, describe(node));
    }
    if (max != std::numeric_limits<std::int64_t>::max() && (i->get() < min || i->get() > max)) {
        return make_error(Errc::invalid_argument, "{}={}: must be between {} and {}", key, i->get(), min, max);
    }
    if (i->get() < min) {
        return make_error(Errc::invalid_argument, "{}={}: must be at least {}", key, i->get(), min);
    }
    return static_cast<std::uint64_t>(i->get());
}

Result<std::string> read_string(const toml::node& node, const std::string& key) {
    const auto* s = node.as_string();
    if (s == nullptr) {
        return make_error(Errc::invalid_argument, "{}={}: not a string", key, describe(node));
    }
    return s->get();
}

Result<void> read_settings(const toml::table& table, Workflow& wf) {
    if (auto r = reject_unknown_keys(table, "workflow", {"iterations", "warmup", "segment_size", "slots", "wait"});
        !r) {
        return r;
    }
    if (const auto* n = table.get("iterations")) {
        auto v = read_count(*n, "workflow.iterations", 1);
        if (!v) {
            return std::unexpected(v.error());
        }
        wf.iterations = *v;
    }
    if (const auto* n = table.get("warmup")) {
        auto v = read_count(*n, "workflow.warmup", 0);
        if (!v) {
            return std::unexpected(v.error());
        }
        wf.warmup = *v;
    }
    if (const auto* n = table.get("segment_size")) {
        auto v = read_size(*n, "workflow.segment_size");
        if (!v) {
            return std::unexpected(v.error());
        }
        wf.segment_size = *v;
    }
    if (const auto* n = table.get("slots")) {
        auto v = read_count(*n, "workflow.slots", 1, kMaxSlots);
        if (!v) {
            return std::unexpected(v.error());
        }
        wf.slots = static_cast<std::uint32_t>(*v);  // at most kMaxSlots: fits
    }
    if (const auto* n = table.get("wait")) {
        auto s = read_string(*n, "workflow.wait");
        if (!s) {
            return std::unexpected(s.error());
        }
        auto w = parse_wait(*s, "workflow.wait");
        if (!w) {
            return std::unexpected(w.error());
        }
        wf.wait = *w;
    }
    return {};
}

Result<Task> read_task(const toml::table& table, std::size_t index) {
    const std::string where = fmt::format("task[{}]", index);
    if (auto r = reject_unknown_keys(table, where, {"name", "period_us", "data_size"}); !r) {
        return std::unexpected(r.error());
    }
    Task task;
    const auto* name = table.get("name");
    if (name == nullptr) {
        return make_error(Errc::invalid_argument, "{}.name: missing (every task needs a name)", where);
    }
    auto n = read_string(*name, where + ".name");
    if (!n) {
        return std::unexpected(n.error());
    }
    task.name = *n;
    if (const auto* p = table.get("period_us")) {
        auto v = read_count(*p, where + ".period_us", 0);
        if (!v) {
            return std::unexpected(v.error());
        }
        task.period_us = *v;
    }
    if (const auto* d = table.get("data_size")) {
        auto v = read_size(*d, where + ".data_size");
        if (!v) {
            return std::unexpected(v.error());
        }
        task.data_size = *v;
    }
    return task;
}

Result<Edge> read_edge(const toml::table& table, std::size_t index) {
    const std::string where = fmt::format("edge[{}]", index);
    if (auto r = reject_unknown_keys(table, where, {"from", "to", "method"}); !r) {
        return std::unexpected(r.error());
    }
    Edge edge;
    for (const char* key : {"from", "to", "method"}) {
        const auto* node = table.get(key);
        if (node == nullptr) {
            return make_error(Errc::invalid_argument, "{}.{}: missing (an edge needs from, to and method)", where, key);
        }
        auto s = read_string(*node, where + "." + key);
        if (!s) {
            return std::unexpected(s.error());
        }
        if (std::string_view(key) == "from") {
            edge.from = *s;
        } else if (std::string_view(key) == "to") {
            edge.to = *s;
        } else {
            auto m = parse_method(*s, where + ".method");
            if (!m) {
                return std::unexpected(m.error());
            }
            edge.method = *m;
        }
    }
    return edge;
}

// An array of tables: [[task]] / [[edge]].
Result<const toml::array*> table_array(const toml::table& root, std::string_view key) {
    const auto* node = root.get(key);
    if (node == nullptr) {
        return make_error(Errc::invalid_argument, "{}: missing (write one [[{}]] table per {})", key, key, key);
    }
    const auto* array = node->as_array();
    if (array == nullptr || !array->is_array_of_tables()) {
        return make_error(Errc::invalid_argument, "{}: not an array of tables (write [[{}]] sections)", key, key);
    }
    return array;
}

}  // namespace

Result<Workflow> parse(std::string_view toml_text, std::string_view source) {
    toml::table root;
    try {
        root = toml::parse(toml_text, source);
    } catch (const toml::parse_error& e) {
        const auto& where = e.source().begin;
        return make_error(Errc::invalid_argument, "{}:{}:{}: not valid TOML: {}", source, where.line, where.column,
                          e.description());
    }
    if (auto r = reject_unknown_keys(root, std::string(source), {"workflow", "task", "edge"}); !r) {
        return std::unexpected(r.error());
    }
    Workflow wf;
    if (const auto* settings = root.get("workflow")) {
        if (!settings->is_table()) {
            return make_error(Errc::invalid_argument, "workflow: not a table (write a [workflow] section)");
        }
        if (auto r = read_settings(*settings->as_table(), wf); !r) {
            return std::unexpected(r.error());
        }
    }
    auto tasks = table_array(root, "task");
    if (!tasks) {
        return std::unexpected(tasks.error());
    }
    for (std::size_t i = 0; i < (*tasks)->size(); ++i) {
        auto t = read_task(*(*tasks)->get(i)->as_table(), i);
        if (!t) {
            return std::unexpected(t.error());
        }
        wf.tasks.push_back(std::move(*t));
    }
    auto edges = table_array(root, "edge");
    if (!edges) {
        return std::unexpected(edges.error());
    }
    for (std::size_t i = 0; i < (*edges)->size(); ++i) {
        auto e = read_edge(*(*edges)->get(i)->as_table(), i);
        if (!e) {
            return std::unexpected(e.error());
        }
        wf.edges.push_back(std::move(*e));
    }
    if (auto r = validate(wf); !r) {
        return std::unexpected(r.error());
    }
    return wf;
}

Result<Workflow> load(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) {
        return make_sys_error(errno, "workflow file={}: cannot open", path.string());
    }
    std::ostringstream text;
    text << in.rdbuf();
    return parse(text.str(), path.string());
}

std::string to_toml(const Workflow& wf) {
    std::string out =
        fmt::format("[workflow]\niterations = {}\nwarmup = {}\nsegment_size = {}\nslots = {}\nwait = \"{}\"\n",
                    wf.iterations, wf.warmup, wf.segment_size, wf.slots, to_string(wf.wait));
    for (const auto& t : wf.tasks) {
        out += fmt::format("\n[[task]]\nname = \"{}\"\nperiod_us = {}\ndata_size = {}\n", t.name, t.period_us,
                           t.data_size);
    }
    for (const auto& e : wf.edges) {
        out +=
            fmt::format("\n[[edge]]\nfrom = \"{}\"\nto = \"{}\"\nmethod = \"{}\"\n", e.from, e.to, to_string(e.method));
    }
    return out;
}

}  // namespace strata::workflow
