// SPDX-License-Identifier: MIT
// The doctor's two output formats. The text table is for people; the JSON
// document is the stable interface for scripts and tests.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "probe.hpp"
#include "strata/version.hpp"

namespace strata::doctor {

std::string_view to_string(Status status) noexcept {
    switch (status) {
        case Status::ok: return "ok";
        case Status::degraded: return "degraded";
        case Status::missing: return "missing";
    }
    return "missing";
}

bool required_present(const std::vector<Capability>& capabilities) {
    return std::ranges::all_of(capabilities,
                               [](const Capability& c) { return !c.required || c.status != Status::missing; });
}

std::string render_text(const std::vector<Capability>& capabilities) {
    std::size_t name_width = 10;
    for (const auto& c : capabilities) name_width = std::max(name_width, c.name.size());

    std::string out = fmt::format("strata {} doctor\n\n", version_string);
    out += fmt::format("  {:<9}{:<{}}  {:<10}{}\n", "status", "capability", name_width, "defaults", "detail");
    std::vector<std::string> missing;
    std::vector<std::string> degraded;
    for (const auto& c : capabilities) {
        out += fmt::format("  {:<9}{:<{}}  {:<10}{}\n", to_string(c.status), c.name, name_width,
                           c.required ? "required" : "optional", c.detail);
        if (!c.fix.empty()) out += fmt::format("  {:<9}{:<{}}  {:<10}fix: {}\n", "", "", name_width, "", c.fix);
        if (c.required && c.status == Status::missing) missing.push_back(c.name);
        if (c.required && c.status == Status::degraded) degraded.push_back(c.name);
    }
    out += '\n';
    if (!missing.empty())
        out += fmt::format("Missing what the defaults require: {}.\n", fmt::join(missing, ", "));
    else if (!degraded.empty())
        out += fmt::format("Everything the defaults require is present; degraded: {}.\n", fmt::join(degraded, ", "));
    else
        out += "Everything the defaults require is present.\n";
    return out;
}

std::string render_json(const std::vector<Capability>& capabilities) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& c : capabilities) {
        list.push_back({{"name", c.name},
                        {"status", std::string(to_string(c.status))},
                        {"required", c.required},
                        {"detail", c.detail},
                        {"fix", c.fix}});
    }
    const nlohmann::ordered_json document{
        {"version", version_string}, {"ok", required_present(capabilities)}, {"capabilities", list}};
    return document.dump(2) + "\n";
}

}  // namespace strata::doctor
