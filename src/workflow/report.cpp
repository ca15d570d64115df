// SPDX-License-Identifier: MIT
// Reports as JSON (the task executable hands its report to `strata run` this way).
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "strata/workflow.hpp"

namespace strata::workflow {

namespace {

// A count must be an integer >= 0 in the JSON: nlohmann's get<std::uint64_t>() converts any
// number, a negative one by wrapping and a double beyond 2^64 (1.1e82, found by
// tests/fuzz/workflow) with undefined behaviour.
std::uint64_t count_at(const nlohmann::json& doc, const char* key) {
    const auto& value = doc.at(key);
    if (!value.is_number_unsigned()) {
        throw std::invalid_argument(fmt::format("{}: {} is not a count (an integer >= 0)", key, value.dump()));
    }
    return value.get<std::uint64_t>();
}

}  // namespace

std::string to_json(const Report& r) {
    nlohmann::json edges = nlohmann::json::array();
    for (const auto& e : r.edges) {
        edges.push_back({{"from", e.from},
                         {"to", e.to},
                         {"method", to_string(e.method)},
                         {"samples", e.samples},
                         {"p50_ns", e.p50_ns},
                         {"p90_ns", e.p90_ns},
                         {"p99_ns", e.p99_ns},
                         {"max_ns", e.max_ns},
                         {"across_nodes", e.across_nodes},
                         {"digest", e.digest}});
    }
    const nlohmann::json doc{{"iterations", r.iterations},
                             {"tasks", r.tasks},
                             {"seconds", r.seconds},
                             {"bytes", r.bytes},
                             {"throughput_mb_s", r.throughput_mb_s},
                             {"iterations_per_s", r.iterations_per_s},
                             {"checksum_errors", r.checksum_errors},
                             {"edges", edges},
                             {"task_nodes", r.task_nodes}};
    return doc.dump(2);
}

Result<Report> report_from_json(std::string_view text) {
    try {
        const auto doc = nlohmann::json::parse(text);
        Report r;
        r.iterations = count_at(doc, "iterations");
        r.tasks = count_at(doc, "tasks");
        r.seconds = doc.at("seconds").get<double>();
        r.bytes = doc.at("bytes").get<double>();
        r.throughput_mb_s = doc.at("throughput_mb_s").get<double>();
        r.iterations_per_s = doc.at("iterations_per_s").get<double>();
        r.checksum_errors = count_at(doc, "checksum_errors");
        for (const auto& e : doc.at("edges")) {
            auto method = parse_method(e.at("method").get<std::string>());
            if (!method) {
                return std::unexpected(method.error());
            }
            r.edges.push_back({e.at("from").get<std::string>(), e.at("to").get<std::string>(), *method,
                               count_at(e, "samples"), e.at("p50_ns").get<double>(), e.at("p90_ns").get<double>(),
                               e.at("p99_ns").get<double>(), e.at("max_ns").get<double>(),
                               e.value("across_nodes", false), e.contains("digest") ? count_at(e, "digest") : 0});
        }
        if (doc.contains("task_nodes")) {
            r.task_nodes = doc.at("task_nodes").get<std::vector<std::string>>();
        }
        return r;
    } catch (const nlohmann::json::exception& e) {
        return make_error(Errc::invalid_argument, "report: not a workflow report: {}", e.what());
    } catch (const std::invalid_argument& e) {
        return make_error(Errc::invalid_argument, "report: not a workflow report: {}", e.what());
    }
}

}  // namespace strata::workflow
