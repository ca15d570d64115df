// SPDX-License-Identifier: MIT
// Reports as JSON (the task executable hands its report to `strata run` this way).
#include <nlohmann/json.hpp>

#include "strata/workflow.hpp"

namespace strata::workflow {

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
                         {"max_ns", e.max_ns}});
    }
    const nlohmann::json doc{{"iterations", r.iterations},
                             {"tasks", r.tasks},
                             {"seconds", r.seconds},
                             {"bytes", r.bytes},
                             {"throughput_mb_s", r.throughput_mb_s},
                             {"iterations_per_s", r.iterations_per_s},
                             {"checksum_errors", r.checksum_errors},
                             {"edges", edges}};
    return doc.dump(2);
}

Result<Report> report_from_json(std::string_view text) {
    try {
        const auto doc = nlohmann::json::parse(text);
        Report r;
        r.iterations = doc.at("iterations").get<std::uint64_t>();
        r.tasks = doc.at("tasks").get<std::size_t>();
        r.seconds = doc.at("seconds").get<double>();
        r.bytes = doc.at("bytes").get<double>();
        r.throughput_mb_s = doc.at("throughput_mb_s").get<double>();
        r.iterations_per_s = doc.at("iterations_per_s").get<double>();
        r.checksum_errors = doc.at("checksum_errors").get<std::uint64_t>();
        for (const auto& e : doc.at("edges")) {
            auto method = parse_method(e.at("method").get<std::string>());
            if (!method) {
                return std::unexpected(method.error());
            }
            r.edges.push_back({e.at("from").get<std::string>(), e.at("to").get<std::string>(), *method,
                               e.at("samples").get<std::uint64_t>(), e.at("p50_ns").get<double>(),
                               e.at("p90_ns").get<double>(), e.at("p99_ns").get<double>(),
                               e.at("max_ns").get<double>()});
        }
        return r;
    } catch (const nlohmann::json::exception& e) {
        return make_error(Errc::invalid_argument, "report: not a workflow report: {}", e.what());
    }
}

}  // namespace strata::workflow
