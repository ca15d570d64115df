// SPDX-License-Identifier: MIT
#include "tour.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "strata/version.hpp"

namespace strata::cli {

void Tour::run(const std::string& section, const std::string& name, const std::function<Result<std::string>()>& body) {
    if (planning_) {
        ++counted_;
        return;
    }
    if (!json_ && section != last_section_) {
        fmt::print("\n{}\n", section);
        last_section_ = section;
    }
    if (line_ != nullptr) {
        // The section's title is what comes before its colon ("regions", "MPI storage windows").
        line_->show(fmt::format("[{}/{}] {}: {}", steps_.size() + 1, std::max(planned_, steps_.size() + 1),
                                section.substr(0, section.find(':')), name));
    }
    const auto start = std::chrono::steady_clock::now();
    auto outcome = body();
    if (line_ != nullptr) {
        line_->clear();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Step step{section, name, outcome.has_value(), outcome ? *outcome : outcome.error().what(), seconds};
    if (!json_) {
        fmt::print("  {:4}  {:<44} {:>8.1f} ms  {}\n", step.ok ? "ok" : "FAIL", name, seconds * 1e3, step.detail);
    }
    steps_.push_back(std::move(step));
}

int Tour::finish() const {
    const auto failed = std::count_if(steps_.begin(), steps_.end(), [](const Step& s) { return !s.ok; });
    if (json_) {
        nlohmann::json doc{{"version", version_string}, {"ok", failed == 0}, {"steps", nlohmann::json::array()}};
        for (const auto& s : steps_) {
            doc["steps"].push_back(
                {{"section", s.section}, {"name", s.name}, {"ok", s.ok}, {"detail", s.detail}, {"seconds", s.seconds}});
        }
        fmt::print("{}\n", doc.dump(2));
    } else {
        fmt::print("\n{} steps, {} failed\n", steps_.size(), failed);
    }
    return failed == 0 ? 0 : 1;
}

}  // namespace strata::cli
