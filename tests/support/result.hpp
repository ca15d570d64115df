// SPDX-License-Identifier: MIT
// Assertions on strata::Result and readable printing of strata's enums.
//
//   STRATA_ASSERT_ASSIGN(sut, Region::memory(size));   // Region sut, or a fatal failure
//   EXPECT_TRUE(fails_with(result, Errc::invalid_argument, {"size", "0"}));
//
// fails_with() checks the code and that the message names every given text
// (the parameter and its value, as error.hpp promises), and prints the actual
// error when it does not match.
#pragma once

#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include <gtest/gtest.h>

#include "strata/error.hpp"
#include "strata/region.hpp"

/// Assert that a Result (an expression, evaluated once) holds a value; prints the error otherwise.
#define STRATA_ASSERT_OK(result) ASSERT_TRUE(::strata::test::succeeded(result))
#define STRATA_EXPECT_OK(result) EXPECT_TRUE(::strata::test::succeeded(result))

/// Declares `var` from the value of a Result expression, or fails the test fatally.
#define STRATA_ASSERT_ASSIGN(var, expression) \
    auto var##_result_ = (expression);        \
    STRATA_ASSERT_OK(var##_result_);          \
    auto var = std::move(*var##_result_)

namespace strata {

inline void PrintTo(Errc code, std::ostream* os) {
    *os << to_string(code);
}
inline void PrintTo(Tier tier, std::ostream* os) {
    *os << to_string(tier);
}
inline void PrintTo(RegionKind kind, std::ostream* os) {
    *os << to_string(kind);
}
inline void PrintTo(Order order, std::ostream* os) {
    *os << to_string(order);
}
inline void PrintTo(Writeback writeback, std::ostream* os) {
    *os << to_string(writeback);
}
inline void PrintTo(Advice advice, std::ostream* os) {
    *os << to_string(advice);
}

namespace test {

/// Success when `result` holds a value, else a failure carrying the error.
template <class T>
::testing::AssertionResult succeeded(const Result<T>& result) {
    if (result.has_value()) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << result.error().what();
}

/// Success when `result` holds an error with `code` whose message contains every text of `mentions`.
template <class T>
::testing::AssertionResult fails_with(const Result<T>& result, Errc code,
                                      std::initializer_list<std::string_view> mentions) {
    if (result.has_value()) {
        return ::testing::AssertionFailure() << "succeeded, expected " << to_string(code);
    }
    const Error& error = result.error();
    if (error.code != code) {
        return ::testing::AssertionFailure() << "failed with " << to_string(error.code) << ", expected "
                                             << to_string(code) << " (" << error.what() << ")";
    }
    for (const std::string_view text : mentions) {
        if (error.message.find(text) == std::string::npos) {
            return ::testing::AssertionFailure() << "message does not name \"" << text << "\": " << error.what();
        }
    }
    return ::testing::AssertionSuccess() << error.what();
}

}  // namespace test
}  // namespace strata
