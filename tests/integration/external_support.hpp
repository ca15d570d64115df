// SPDX-License-Identifier: MIT
// Running one external task inside a real OCR run from a gtest: a config
// file in a private directory, input blocks made by mainEdt, a sink EDT that
// copies each output block out and reads the task's status.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ocr/extensions/ocr-external.h"
#include "ocr/ocr.h"
#include "strata/runtime/ocr.hpp"
#include "support/resources.hpp"

namespace strata::test {

using Bytes = std::vector<unsigned char>;

inline Bytes bytes_of(std::string_view text) {
    return Bytes(text.begin(), text.end());
}
/// `size` pseudo-random bytes, the same for the same `seed` (a block that is not all one value).
inline Bytes pattern(std::size_t size, unsigned seed) {
    Bytes out(size);
    std::uint32_t x = seed * 2654435761U + 1;
    for (auto& b : out) {
        x = x * 1103515245U + 12345U;
        b = static_cast<unsigned char>(x >> 24);
    }
    return out;
}
inline std::string text_of(const Bytes& bytes) {
    return std::string(bytes.begin(), bytes.end());
}

/// The python with numpy (the project's venv), for tests that need it.
inline std::string venv_python() {
    return std::string(STRATA_SOURCE_DIR) + "/.venv/bin/python";
}

inline void write_text(const std::filesystem::path& path, std::string_view text) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr) << path;
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
}

struct ExternalOutcome {
    int exit_code = -1;                         ///< of the OCR run
    ocrExternalStatus_t status{};               ///< of the task, read by the sink
    std::vector<std::optional<Bytes>> outputs;  ///< nullopt: the event carried NULL_GUID
};

struct ExternalScenario {
    std::string config;  ///< TOML text
    std::string entry = "t";
    std::vector<Bytes> inputs;
    u32 outputs = 1;
    ocr::DbPlacement placement = ocr::DbPlacement::memory;
    std::string exposure;  ///< "memfd" or "fuse": set as STRATA_EXTERNAL_EXPOSURE for the run; empty: auto
};

namespace detail {
inline ExternalScenario g_scenario;
inline ExternalOutcome g_outcome;
inline std::string g_config_path;

inline ocrGuid_t external_sink(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    g_outcome.outputs.assign(depc, std::nullopt);
    for (u32 i = 0; i < depc; ++i) {
        if (depv[i].guid.guid == 0) continue;
        auto info = ocr::db_info(depv[i].guid);
        const auto* p = static_cast<const unsigned char*>(depv[i].ptr);
        g_outcome.outputs[i] = Bytes(p, p + (info ? info->size : 0));
        ocrDbDestroy(depv[i].guid);
    }
    ocrExternalTaskStatus(ocrGuid_t{static_cast<intptr_t>(paramv[0])}, &g_outcome.status);
    ocrShutdown();
    return NULL_GUID;
}

inline ocrGuid_t external_main(u32, u64*, u32, ocrEdtDep_t[]) {
    const ExternalScenario& sc = g_scenario;
    if (ocrExternalConfigLoad(g_config_path.c_str()) != 0) {
        ocrAbort(3);
        return NULL_GUID;
    }
    ocrGuid_t tpl;
    if (ocrExternalTemplateCreate(&tpl, sc.entry.c_str(), static_cast<u32>(sc.inputs.size()), sc.outputs) != 0) {
        ocrAbort(4);
        return NULL_GUID;
    }
    std::vector<ocrGuid_t> outs(sc.outputs);
    for (auto& e : outs) ocrEventCreate(&e, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
    ocrGuid_t task;
    if (ocrExternalTaskCreate(&task, tpl, static_cast<u32>(sc.inputs.size()), nullptr, sc.outputs, outs.data()) != 0) {
        ocrAbort(5);
        return NULL_GUID;
    }
    ocrGuid_t sink_tpl, sink;
    ocrEdtTemplateCreate(&sink_tpl, external_sink, 1, sc.outputs);
    u64 param = static_cast<u64>(task.guid);
    ocrEdtCreate(&sink, sink_tpl, 1, &param, sc.outputs, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    for (u32 k = 0; k < sc.outputs; ++k) ocrAddDependence(outs[k], sink, k, DB_MODE_RO);
    if (sc.outputs == 0) {
        // Nothing to wait on: the sink cannot see the end; poll the status from a chain instead.
        ocrAbort(6);
    }
    for (std::size_t i = 0; i < sc.inputs.size(); ++i) {
        ocrGuid_t db;
        void* p = nullptr;
        ocrDbCreate(&db, &p, sc.inputs[i].size(), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
        if (!sc.inputs[i].empty()) std::memcpy(p, sc.inputs[i].data(), sc.inputs[i].size());
        ocrDbRelease(db);
        ocrAddDependence(db, task, static_cast<u32>(i), DB_MODE_RO);
    }
    ocrExternalTemplateDestroy(tpl);
    ocrEdtTemplateDestroy(sink_tpl);
    return NULL_GUID;
}
}  // namespace detail

/// Descriptors of this process that are memfds strata made (should be none between runs).
inline std::vector<std::string> strata_memfds() {
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        const auto target = std::filesystem::read_symlink(entry.path(), ec).string();
        if (!ec && target.starts_with("/memfd:strata-")) found.push_back(target);
    }
    return found;
}

/// The parent pid of `pid`, or 0 when it is gone.
inline pid_t parent_of(pid_t pid) {
    std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (f == nullptr) return 0;
    char line[1024];
    const bool got = std::fgets(line, sizeof line, f) != nullptr;
    std::fclose(f);
    const char* close = got ? std::strrchr(line, ')') : nullptr;
    char state = 0;
    int ppid = 0;
    return close != nullptr && std::sscanf(close + 1, " %c %d", &state, &ppid) == 2 ? static_cast<pid_t>(ppid) : 0;
}

/// strata-fsd mounts whose daemon is a child of this process (mount source
/// "strata-fsd:<pid>").
inline int strata_fsd_mounts_of_this_process() {
    std::FILE* f = std::fopen("/proc/self/mountinfo", "r");
    if (f == nullptr) return -1;
    int count = 0;
    char line[4096];
    constexpr std::string_view tag = " - fuse.strata-fsd strata-fsd:";
    while (std::fgets(line, sizeof line, f) != nullptr) {
        const char* at = std::strstr(line, tag.data());
        if (at == nullptr) continue;
        const pid_t daemon = static_cast<pid_t>(std::atoi(at + tag.size()));
        // Ours (alive or a zombie). A dead daemon's stale mount cannot be told
        // apart from another test binary's, which run at the same time.
        if (parent_of(daemon) == ::getpid()) ++count;
    }
    std::fclose(f);
    return count;
}

/// Runs the scenario on 2 workers without a monitor.
inline ExternalOutcome run_external(ExternalScenario scenario) {
    TempDir dir;
    detail::g_config_path = (dir / "external.toml").string();
    write_text(detail::g_config_path, scenario.config);
    detail::g_scenario = std::move(scenario);
    detail::g_outcome = {};
    ocr::OcrOptions options;
    options.runtime.monitor = runtime::no_monitor();
    options.db_placement = detail::g_scenario.placement;
    char arg0[] = "test";
    char* argv[] = {arg0, nullptr};
    if (detail::g_scenario.exposure.empty()) {
        ::unsetenv("STRATA_EXTERNAL_EXPOSURE");
    } else {
        ::setenv("STRATA_EXTERNAL_EXPOSURE", detail::g_scenario.exposure.c_str(), 1);
    }
    auto code = ocr::run_ocr(detail::external_main, 1, argv, options);
    ::unsetenv("STRATA_EXTERNAL_EXPOSURE");
    EXPECT_TRUE(code.has_value());
    detail::g_outcome.exit_code = code ? *code : -1;
    EXPECT_EQ(strata_memfds(), std::vector<std::string>{}) << "a memfd outlived the run";
    EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1) << "a child process (program or strata-fsd) outlived the run";
    EXPECT_EQ(strata_fsd_mounts_of_this_process(), 0) << "a strata-fsd mount of this run outlived it";
    return detail::g_outcome;
}

/// Processes whose command line contains `marker` (for leftovers of killed groups);
/// with `kill_them`, also sends each SIGKILL (a failed test cleans up what it started).
inline int processes_with(std::string_view marker, bool kill_them = false) {
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::FILE* f = std::fopen((entry.path() / "cmdline").c_str(), "r");
        if (f == nullptr) continue;
        std::string cmdline(4096, '\0');
        cmdline.resize(std::fread(cmdline.data(), 1, cmdline.size(), f));
        std::fclose(f);
        for (char& c : cmdline) {
            if (c == '\0') c = ' ';
        }
        if (cmdline.find(marker) != std::string::npos) {
            ++count;
            if (kill_them) ::kill(static_cast<pid_t>(std::stoi(name)), SIGKILL);
        }
    }
    return count;
}

}  // namespace strata::test
