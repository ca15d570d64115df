// SPDX-License-Identifier: MIT
// Parsing of region options from text (command lines, config files, MPI_Info
// hints), the names of the enumerators, and the shape of errors.
#include <cmath>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "strata/error.hpp"
#include "strata/region.hpp"
#include "support/result.hpp"

namespace {

using strata::Advice;
using strata::Errc;
using strata::Factor;
using strata::Order;
using strata::RegionKind;
using strata::Tier;
using strata::Writeback;
using strata::test::fails_with;

TEST(FactorParse, fixed_and_automatic_factors_report_what_they_hold) {
    const Factor fixed = Factor::fixed(0.75);
    const Factor automatic = Factor::automatic();

    EXPECT_FALSE(fixed.is_auto());
    EXPECT_EQ(fixed.fraction(), 0.75);
    EXPECT_TRUE(automatic.is_auto());
}

struct ParsedFactor {
    std::string_view text;
    double fraction;
};

class FactorParseValid : public ::testing::TestWithParam<ParsedFactor> {};

TEST_P(FactorParseValid, a_fraction_in_range_parses_to_that_fixed_fraction) {
    const auto sut = Factor::parse(GetParam().text);

    STRATA_ASSERT_OK(sut);
    EXPECT_FALSE(sut->is_auto());
    EXPECT_EQ(sut->fraction(), GetParam().fraction);
}

INSTANTIATE_TEST_SUITE_P(Fractions, FactorParseValid,
                         ::testing::Values(ParsedFactor{"0", 0.0}, ParsedFactor{"0.25", 0.25}, ParsedFactor{"0.5", 0.5},
                                           ParsedFactor{"1", 1.0}, ParsedFactor{"1.0", 1.0},
                                           ParsedFactor{"0.125", 0.125}));

TEST(FactorParse, auto_parses_to_the_automatic_factor) {
    const auto sut = Factor::parse("auto");

    STRATA_ASSERT_OK(sut);
    EXPECT_TRUE(sut->is_auto());
}

class FactorParseInvalid : public ::testing::TestWithParam<std::string_view> {};

TEST_P(FactorParseInvalid, is_invalid_argument_naming_the_parameter_and_the_value) {
    const auto sut = Factor::parse(GetParam(), "memory_factor");

    EXPECT_TRUE(fails_with(sut, Errc::invalid_argument, {"memory_factor", GetParam()}));
}

INSTANTIATE_TEST_SUITE_P(Texts, FactorParseInvalid,
                         ::testing::Values("", "abc", "0.5x", "x0.5", "1.5", "-0.25", "nan", "inf", "-inf", "automatic",
                                           "1e400"));

TEST(FactorParse, default_parameter_name_is_factor) {
    EXPECT_TRUE(fails_with(Factor::parse("half"), Errc::invalid_argument, {"factor", "half"}));
}

TEST(OrderParse, both_orders_parse) {
    const auto memory_first = strata::parse_order("memory_first");
    const auto storage_first = strata::parse_order("storage_first");

    STRATA_ASSERT_OK(memory_first);
    STRATA_ASSERT_OK(storage_first);
    EXPECT_EQ(*memory_first, Order::memory_first);
    EXPECT_EQ(*storage_first, Order::storage_first);
}

TEST(OrderParse, unknown_text_is_invalid_argument_naming_the_parameter_and_the_value) {
    for (const std::string_view text : {"", "memory", "first", "storage_first ", "memory-first"}) {
        EXPECT_TRUE(fails_with(strata::parse_order(text, "--order"), Errc::invalid_argument, {"--order", text}));
    }
    EXPECT_TRUE(fails_with(strata::parse_order("sideways"), Errc::invalid_argument, {"order", "sideways"}));
}

TEST(WritebackParse, both_modes_parse) {
    const auto kernel = strata::parse_writeback("kernel");
    const auto explicit_sync = strata::parse_writeback("explicit_sync");

    STRATA_ASSERT_OK(kernel);
    STRATA_ASSERT_OK(explicit_sync);
    EXPECT_EQ(*kernel, Writeback::kernel);
    EXPECT_EQ(*explicit_sync, Writeback::explicit_sync);
}

TEST(WritebackParse, unknown_text_is_invalid_argument_naming_the_parameter_and_the_value) {
    for (const std::string_view text : {"", "explicit", "sync", "Kernel"}) {
        EXPECT_TRUE(fails_with(strata::parse_writeback(text, "strata_writeback"), Errc::invalid_argument,
                               {"strata_writeback", text}));
    }
    EXPECT_TRUE(fails_with(strata::parse_writeback("lazy"), Errc::invalid_argument, {"writeback", "lazy"}));
}

TEST(AdviceParse, every_advice_parses_from_its_name) {
    for (const Advice advice :
         {Advice::normal, Advice::sequential, Advice::random, Advice::read_mostly, Advice::write_mostly}) {
        const auto sut = strata::parse_advice(strata::to_string(advice));

        STRATA_ASSERT_OK(sut);
        EXPECT_EQ(*sut, advice);
    }
}

TEST(AdviceParse, unknown_text_is_invalid_argument_naming_the_parameter_and_the_value) {
    for (const std::string_view text : {"", "willneed", "read", "write-mostly"}) {
        EXPECT_TRUE(fails_with(strata::parse_advice(text, "hint"), Errc::invalid_argument, {"hint", text}));
    }
    EXPECT_TRUE(fails_with(strata::parse_advice("often"), Errc::invalid_argument, {"advice", "often"}));
}

TEST(RegionNames, every_enumerator_has_its_documented_name) {
    EXPECT_EQ(strata::to_string(RegionKind::memory), "memory");
    EXPECT_EQ(strata::to_string(RegionKind::shared), "shared");
    EXPECT_EQ(strata::to_string(RegionKind::storage), "storage");
    EXPECT_EQ(strata::to_string(RegionKind::combined), "combined");
    EXPECT_EQ(strata::to_string(Tier::memory), "memory");
    EXPECT_EQ(strata::to_string(Tier::shared), "shared");
    EXPECT_EQ(strata::to_string(Tier::storage), "storage");
    EXPECT_EQ(strata::to_string(Order::memory_first), "memory_first");
    EXPECT_EQ(strata::to_string(Order::storage_first), "storage_first");
    EXPECT_EQ(strata::to_string(Writeback::kernel), "kernel");
    EXPECT_EQ(strata::to_string(Writeback::explicit_sync), "explicit_sync");
    EXPECT_EQ(strata::to_string(Advice::normal), "normal");
    EXPECT_EQ(strata::to_string(Advice::sequential), "sequential");
    EXPECT_EQ(strata::to_string(Advice::random), "random");
    EXPECT_EQ(strata::to_string(Advice::read_mostly), "read_mostly");
    EXPECT_EQ(strata::to_string(Advice::write_mostly), "write_mostly");
}

TEST(RegionErrors, a_parse_error_carries_no_errno_and_what_is_code_then_message) {
    const auto sut = strata::parse_order("upside_down");

    ASSERT_FALSE(sut.has_value());
    EXPECT_EQ(sut.error().code, Errc::invalid_argument);
    EXPECT_EQ(sut.error().sys_errno, 0);
    EXPECT_EQ(sut.error().what(), "invalid_argument: " + sut.error().message);
}

}  // namespace
