// SPDX-License-Identifier: MIT
// The demo's report: each layer's section runs steps through a Tour, which
// times them, prints one line each (or collects JSON) and counts failures.
#pragma once

#include <functional>
#include <string>
#include <vector>

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
    explicit Tour(bool json) : json_(json) {}

    /// Runs body as one step of section; its value is the step's detail line,
    /// its error marks the step failed. Never throws.
    void run(const std::string& section, const std::string& name, const std::function<Result<std::string>()>& body);

    /// Prints the summary (or the JSON report); 0 when every step passed.
    int finish() const;

private:
    bool json_;
    std::string last_section_;
    std::vector<Step> steps_;
};

}  // namespace strata::cli
