// main() of libstrata-ocr: runs the program's mainEdt (ocr-std.h).
#include <fmt/format.h>

#include "ocr/ocr.h"
#include "strata/runtime/ocr.hpp"

int main(int argc, char** argv) {
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
