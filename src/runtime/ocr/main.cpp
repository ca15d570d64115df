// SPDX-License-Identifier: MIT
// main() of libstrata-ocr: runs the program's mainEdt (ocr-std.h).
#include <fmt/format.h>

#include "ocr/ocr.h"
#include "strata/runtime/ocr.hpp"

// The program defines mainEdt in whatever form it likes (no public header
// declares it, as in the reference); it is called as an ocrEdt_t. Weak, so
// that a legacy program (extensions/ocr-legacy.h) with its own main() and no
// mainEdt links against libstrata-ocr too.
// NOLINTNEXTLINE(readability-identifier-naming): the OCR API's name
extern "C" ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]);
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
    // The reference's configuration (-ocr:cfg FILE, OCR_CONFIG): the worker count.
    if (auto config = strata::ocr::apply_reference_config(argc, argv, *options); !config) {
        fmt::print(stderr, "strata-ocr: {}\n", config.error().what());
        return 2;
    }
    auto code = strata::ocr::run_ocr(mainEdt, argc, argv, *options);
    if (!code) {
        fmt::print(stderr, "strata-ocr: {}\n", code.error().what());
        return 2;
    }
    return *code;
}
