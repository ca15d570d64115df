// SPDX-License-Identifier: MIT
#include "paths.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <system_error>

#include "strata/error.hpp"

// Relative paths from the installed bindir, set by tools/strata/CMakeLists.txt
// from GNUInstallDirs (e.g. "../libexec/strata", "../share/strata").
#ifndef STRATA_REL_LIBEXECDIR
#error "STRATA_REL_LIBEXECDIR must be defined by the build"
#endif
#ifndef STRATA_REL_DATADIR
#error "STRATA_REL_DATADIR must be defined by the build"
#endif

namespace strata::cli::paths {

namespace {

bool is_executable(const std::filesystem::path& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::filesystem::path self_dir() {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::filesystem::path{} : exe.parent_path();
}

std::filesystem::path helper_dir() {
    const auto self = self_dir();
    const auto installed = (self / STRATA_REL_LIBEXECDIR).lexically_normal();
    std::error_code ec;
    if (!self.empty() && std::filesystem::is_directory(installed, ec)) {
        return installed;
    }
    return self;
}

std::optional<std::filesystem::path> find_helper(std::string_view name) {
    const auto self = self_dir();
    if (self.empty()) {
        return std::nullopt;
    }
    for (const auto& dir : {self, (self / STRATA_REL_LIBEXECDIR).lexically_normal()}) {
        if (auto path = dir / name; is_executable(path)) {
            return path;
        }
    }
    return std::nullopt;
}

std::filesystem::path library_dir() {
    Dl_info info{};
    // Any function of libstrata locates the file it was loaded from.
    if (::dladdr(reinterpret_cast<void*>(&strata::errc_from_errno), &info) == 0 || info.dli_fname == nullptr) {
        return {};
    }
    std::error_code ec;
    auto path = std::filesystem::canonical(info.dli_fname, ec);
    return ec ? std::filesystem::path(info.dli_fname).parent_path() : path.parent_path();
}

std::filesystem::path bench_dir() {
    if (const char* env = std::getenv("STRATA_BENCH_DIR"); env != nullptr && *env != '\0') {
        return env;
    }
    return (self_dir() / STRATA_REL_DATADIR / "bench").lexically_normal();
}

std::filesystem::path flagship_dir() {
    return (self_dir() / STRATA_REL_DATADIR / "flagship").lexically_normal();
}

}  // namespace strata::cli::paths
