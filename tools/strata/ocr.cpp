// `strata ocr [options] ./program args...`: runs an OCR program linked with
// -lstrata-ocr, with the runtime options given as flags instead of
// environment variables (docs/runtime.md).
#include <unistd.h>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "commands.hpp"
#include "strata/error.hpp"

namespace strata::cli {

namespace {

void set(const char* name, const std::string& value) {
    if (!value.empty()) {
        ::setenv(name, value.c_str(), 1);
    }
}

}  // namespace

int run_ocr_program(const OcrOptions& options, const std::vector<std::string>& command) {
    if (command.empty()) {
        fmt::print(stderr, "strata ocr: program: missing (usage: strata ocr [options] ./program args...)\n");
        return 2;
    }
    set("STRATA_MONITOR", options.monitor);
    set("STRATA_CPUS", options.cpus);
    set("STRATA_OCR_DB_PLACEMENT", options.db_placement);
    set("STRATA_OCR_DB_DIR", options.db_dir);
    if (options.stats) ::setenv("STRATA_STATS", "1", 1);
    if (options.verbose) ::setenv("STRATA_VERBOSE", "1", 1);
    std::vector<char*> argv;
    argv.reserve(command.size() + 1);
    for (const std::string& arg : command) {
        argv.push_back(const_cast<char*>(arg.c_str()));
    }
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    const int err = errno;
    fmt::print(stderr, "strata ocr: program={}: cannot run it: {}\n", command.front(), describe_errno(err));
    return err == ENOENT ? 127 : 126;
}

}  // namespace strata::cli
