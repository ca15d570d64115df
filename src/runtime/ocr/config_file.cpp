// SPDX-License-Identifier: MIT
// The reference runtime's configuration: `-ocr:cfg FILE` or $OCR_CONFIG, of
// which strata reads the worker count (include/strata/runtime/ocr.hpp).
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "strata/runtime/ocr.hpp"

namespace strata::ocr {

namespace {

std::string_view trim(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) {
        return {};
    }
    return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

bool parse_number(std::string_view text, int& value) {
    text = trim(text);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc{} && end == text.data() + text.size() && value >= 0;
}

// The number of ids in "a" or "a-b"; 0 when malformed or backwards.
int id_count(std::string_view value) {
    const auto dash = value.find('-');
    int first = 0;
    int last = 0;
    if (!parse_number(value.substr(0, dash), first)) {
        return 0;
    }
    last = first;
    if (dash != std::string_view::npos && !parse_number(value.substr(dash + 1), last)) {
        return 0;
    }
    return last >= first ? last - first + 1 : 0;
}

}  // namespace

Result<int> reference_config_workers(const std::filesystem::path& file, std::string_view source) {
    std::ifstream in(file);
    if (!in) {
        const int err = errno;
        return make_sys_error(err, "{}: cannot read it", source);
    }
    constexpr int most = 4096;  // as STRATA_WORKERS
    int workers = 0;
    bool in_worker = false;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        std::string_view text = trim(std::string_view(line).substr(0, line.find('#')));
        if (text.starts_with('[')) {
            in_worker = text.starts_with("[WorkerInst");
            continue;
        }
        const auto equals = text.find('=');
        if (!in_worker || equals == std::string_view::npos || trim(text.substr(0, equals)) != "id") {
            continue;
        }
        const std::string_view value = trim(text.substr(equals + 1));
        const int count = id_count(value);
        if (count == 0 || workers + count > most) {
            return make_error(Errc::invalid_argument,
                              "{}: {}:{}: id = {}: not a worker id or range a-b with a <= b (at most {} workers)",
                              source, file.string(), number, value, most);
        }
        workers += count;
    }
    if (workers == 0) {
        return make_error(Errc::invalid_argument,
                          "{}: no [WorkerInst*] section with an id (the worker count is the sum of their id ranges)",
                          source);
    }
    return workers;
}

Result<void> apply_reference_config(int& argc, char** argv, OcrOptions& options) {
    std::string file;
    std::string source;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "-ocr:cfg") != 0) {
            continue;
        }
        if (i + 1 >= argc) {
            return make_error(Errc::invalid_argument, "-ocr:cfg: missing the configuration file (-ocr:cfg FILE)");
        }
        file = argv[i + 1];
        source = "-ocr:cfg=" + file;
        // The program sees its arguments without these two, as with the reference.
        for (int j = i; j + 2 <= argc; ++j) {
            argv[j] = argv[j + 2];
        }
        argc -= 2;
        break;
    }
    if (file.empty()) {
        const char* env = std::getenv("OCR_CONFIG");
        if (env == nullptr || *env == '\0') {
            return {};
        }
        file = env;
        source = "OCR_CONFIG=" + file;
    }
    auto workers = reference_config_workers(file, source);
    if (!workers) {
        return std::unexpected(workers.error());
    }
    // STRATA_WORKERS (`strata ocr --workers`) is the explicit choice; the file only sets a default.
    if (options.runtime.workers == 0) {
        options.runtime.workers = *workers;
    }
    return {};
}

}  // namespace strata::ocr
