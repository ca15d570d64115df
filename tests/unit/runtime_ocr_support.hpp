// SPDX-License-Identifier: MIT
// Running small OCR programs inside a gtest: EDT functions are plain
// functions, so they report through the globals of each test file.
#pragma once

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "ocr/ocr.h"
#include "strata/runtime/ocr.hpp"

namespace strata::test {

/// Runs `main_edt` as mainEdt with argv {"test", extra...}; the exit code, or -1 if the runtime did not start.
inline int run_ocr_program(ocrEdt_t main_edt, std::vector<std::string> extra = {},
                           ocr::DbPlacement placement = ocr::DbPlacement::memory) {
    ocr::OcrOptions options;
    options.runtime.monitor = runtime::no_monitor();
    options.db_placement = placement;
    std::vector<std::string> args{"test"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    auto code = ocr::run_ocr(main_edt, static_cast<int>(argv.size()), argv.data(), options);
    EXPECT_TRUE(code.has_value()) << (code ? "" : code.error().what());
    return code ? *code : -1;
}

/// Polls until `done()` or 30 s passed (a hang bound, far beyond any delay
/// load adds); false on timeout.
template <class F>
bool eventually(F done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return true;
}

inline u64 to_u64(ocrGuid_t g) {
    return static_cast<u64>(g.guid);
}
inline ocrGuid_t to_guid(u64 v) {
    return ocrGuid_t{static_cast<intptr_t>(v)};
}

}  // namespace strata::test
