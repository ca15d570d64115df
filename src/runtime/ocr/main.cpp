// SPDX-License-Identifier: MIT
// main() of libstrata-ocr: runs the program's mainEdt (ocr-std.h).
#include <fmt/format.h>

#include "ocr/ocr.h"
#include "strata/runtime/ocr.hpp"

// Weak, so that a legacy program (extensions/ocr-legacy.h) with its own main()
// and no mainEdt links against libstrata-ocr too.
#pragma weak mainEdt

int main(int argc, char** argv) {
    if (&mainEdt == nullptr) {
        fmt::print(stderr, "strata-ocr: the program defines neither mainEdt nor its own main()\n");
        return 2;
    }
    auto options = strata::ocr::OcrOptions::from_env();
    if (!options) {
        fmt::print(stderr, "strata-ocr: {}\n", options.error().what());
        return 2;
    }
    auto code = strata::ocr::run_ocr(mainEdt, argc, argv, *options);
    if (!code) {
        fmt::print(stderr, "strata-ocr: {}\n", code.error().what());
        return 2;
    }
    return *code;
}
