// SPDX-License-Identifier: MIT
// combined_region.cpp: strata's C++ API (C++23) from an installed strata.
//
// Build and run against an installed strata (docs/install.md):
//   c++ -std=c++23 combined_region.cpp $(pkg-config --cflags --libs strata) -o combined_region
//   ./combined_region /var/tmp
// or with CMake: find_package(strata CONFIG REQUIRED) and link strata::strata
// (examples/CMakeLists.txt).
//
// Makes an 8 MiB combined region in DIR/combined-<pid>.bin, half memory and
// half storage, fills it, syncs the storage half, checks that the file holds
// the bytes written, and removes the file. Exit code 0 when it does.
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <strata/region.hpp>
#include <strata/shm.hpp>  // shared objects: Boost.Interprocess comes with strata::strata

int main(int argc, char** argv) {
    const std::filesystem::path dir = argc > 1 ? argv[1] : ".";
    const auto path = dir / fmt::format("combined-{}.bin", ::getpid());
    constexpr std::size_t size = std::size_t{8} << 20;
    auto region = strata::Region::combined(size, {.storage = {.path = path}, .factor = strata::Factor::fixed(0.5)});
    if (!region) {
        fmt::print(stderr, "combined_region: {}\n", region.error().what());
        return 1;
    }
    std::byte* bytes = region->data();
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(i % 251);
    if (auto synced = region->sync(); !synced) {
        fmt::print(stderr, "combined_region: {}\n", synced.error().what());
        return 1;
    }
    auto stats = region->stats();
    if (!stats) {
        fmt::print(stderr, "combined_region: {}\n", stats.error().what());
        return 1;
    }
    // memory_first: the storage half is the second half, at offset 0 of the file.
    std::vector<char> file(stats->storage_bytes);
    std::ifstream(path, std::ios::binary).read(file.data(), static_cast<std::streamsize>(file.size()));
    const std::size_t first = size - stats->storage_bytes;
    for (std::size_t i = 0; i < file.size(); ++i) {
        if (static_cast<unsigned char>(file[i]) != static_cast<unsigned char>((first + i) % 251)) {
            fmt::print(stderr, "combined_region: byte {} of {} differs\n", i, path.string());
            return 1;
        }
    }
    fmt::print("combined region of {} bytes: {} in memory, {} on storage, verified in the file\n", size,
               stats->memory_bytes, stats->storage_bytes);
    if (auto closed = region->close({.unlink = true}); !closed) {
        fmt::print(stderr, "combined_region: {}\n", closed.error().what());
        return 1;
    }
    return 0;
}
