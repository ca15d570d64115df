// SPDX-License-Identifier: MIT
// The corpus replay driver: runs a fuzz target's LLVMFuzzerTestOneInput once
// on every file named on the command line (or found in a directory named
// there), like a libFuzzer binary given files. It lets the default GCC build
// replay tests/fuzz/corpus/ in CI without clang's libFuzzer (docs/fuzzing.md).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace {

int run_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
        return 1;
    }
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // A copy of exactly the input's size, so a read past its end is one past a heap block.
    std::vector<std::uint8_t> data(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(data.empty() ? nullptr : data.data(), data.size());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (LLVMFuzzerInitialize != nullptr) {
        LLVMFuzzerInitialize(&argc, &argv);
    }
    std::size_t count = 0;
    int failures = 0;
    for (int i = 1; i < argc; ++i) {
        const std::filesystem::path arg(argv[i]);
        if (std::filesystem::is_directory(arg)) {
            std::vector<std::filesystem::path> files;
            for (const auto& entry : std::filesystem::directory_iterator(arg)) {
                if (entry.is_regular_file()) {
                    files.push_back(entry.path());
                }
            }
            std::sort(files.begin(), files.end());
            for (const auto& file : files) {
                failures += run_file(file);
                ++count;
            }
        } else {
            failures += run_file(arg);
            ++count;
        }
    }
    if (count == 0) {
        std::fprintf(stderr, "replay: no input given (usage: %s FILE_OR_DIR...)\n", argv[0]);
        return 1;
    }
    std::printf("replay: %zu inputs ran\n", count);
    return failures == 0 ? 0 : 1;
}
