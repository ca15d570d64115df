// SPDX-License-Identifier: MIT
// The demo's report: each layer's section runs steps through a Tour, which
// times them, prints one line each (or collects JSON) and counts failures.
// A planning Tour runs no step and only counts them: the demo walks its
// sections once that way to know N for the progress line's "step k of N".
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "progress.hpp"
#include "strata/error.hpp"

namespace strata::cli {

struct Step {
    std::string section;
    std::string name;
    bool ok = false;
    std::string detail;
    double seconds = 0;
};

class Tour {
public:
    /// A Tour that counts the steps of the sections given to it and runs none.
    static Tour planning_only() { return Tour(); }
    /// `line` (may be null) shows "[k/steps] section: step" while each step runs.
    Tour(bool json, progress::Line* line, std::size_t steps) : json_(json), line_(line), planned_(steps) {}

    /// true for a planning Tour: a section must not skip its later steps because an earlier one did not
    /// run (it ran none).
    [[nodiscard]] bool planning() const { return planning_; }
    /// The steps run (or, planning, counted) so far.
    [[nodiscard]] std::size_t steps() const { return planning_ ? counted_ : steps_.size(); }

    /// Runs body as one step of section; its value is the step's detail line,
    /// its error marks the step failed. Never throws.
    void run(const std::string& section, const std::string& name, const std::function<Result<std::string>()>& body);

    /// Prints the summary (or the JSON report); 0 when every step passed.
    int finish() const;

private:
    Tour() : json_(false), planning_(true) {}

    bool json_;
    bool planning_ = false;
    std::size_t counted_ = 0;
    progress::Line* line_ = nullptr;
    std::size_t planned_ = 0;
    std::string last_section_;
    std::vector<Step> steps_;
};

}  // namespace strata::cli
