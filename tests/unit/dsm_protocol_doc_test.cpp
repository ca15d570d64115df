// SPDX-License-Identifier: MIT
// docs/dsm.md lists both protocol tables; this test keeps the page and the
// code the same (every accepted pair, in the order of the enums). On a
// mismatch it prints the rows the page should have.
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "dsm/protocol_table.hpp"

namespace strata::dsm::proto {
namespace {

std::string section(const std::string& text, const std::string& name) {
    const std::string begin = "<!-- " + name + " -->\n";
    const std::string end = "<!-- /" + name + " -->";
    const auto b = text.find(begin);
    const auto e = text.find(end);
    if (b == std::string::npos || e == std::string::npos) {
        return "(section " + name + " missing)";
    }
    return text.substr(b + begin.size(), e - b - begin.size());
}

std::string expected_home() {
    std::string rows = "| directory state | message | rule |\n|---|---|---|\n";
    for (int s = 0; s < 5; ++s) {
        for (int m = 0; m < kMsgCount; ++m) {
            const auto rule = home_rule(static_cast<DState>(s), static_cast<Msg>(m));
            if (rule != "refuse") {
                rows += fmt::format("| {} | {} | {} |\n", to_string(static_cast<DState>(s)),
                                    to_string(static_cast<Msg>(m)), rule);
            }
        }
    }
    return rows;
}

std::string expected_client() {
    std::string rows = "| cache state | event | rule |\n|---|---|---|\n";
    for (int s = 0; s < 4; ++s) {
        for (int m = 0; m < kMsgCount; ++m) {
            const auto rule = client_rule(static_cast<CState>(s), static_cast<Msg>(m));
            if (rule != "refuse") {
                rows += fmt::format("| {} | {} | {} |\n", to_string(static_cast<CState>(s)),
                                    to_string(static_cast<Msg>(m)), rule);
            }
        }
    }
    return rows;
}

TEST(DsmProtocolDoc, the_tables_in_docs_dsm_md_are_the_tables_the_code_runs) {
    std::ifstream in(STRATA_DSM_DOC);
    ASSERT_TRUE(in) << STRATA_DSM_DOC;
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    const bool home_ok = section(text, "home-table") == expected_home();
    const bool client_ok = section(text, "client-table") == expected_client();
    EXPECT_TRUE(home_ok) << "docs/dsm.md's home table should read:\n" << expected_home();
    EXPECT_TRUE(client_ok) << "docs/dsm.md's client table should read:\n" << expected_client();
}

}  // namespace
}  // namespace strata::dsm::proto
