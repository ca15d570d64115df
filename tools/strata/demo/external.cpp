// SPDX-License-Identifier: MIT
// The external section of `strata demo`: an external program (a shell
// script, started without a shell of strata's) reads a 1 MiB data block as a
// file through each exposure, the memfd path and strata-fsd's FUSE mount, and
// writes two outputs that come back as data blocks: a copy of the block and
// the path it was given.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "external/auto_exposure.hpp"
#include "external/memfd_exposure.hpp"
#include "ocr/extensions/ocr-external.h"
#include "ocr/ocr.h"
#include "sections.hpp"
#include "strata/runtime/ocr.hpp"

namespace strata::cli {

namespace {

constexpr std::size_t kBlockSize = 1 << 20;

std::string g_config;
std::vector<unsigned char> g_copy;
std::string g_path;
ocrExternalStatus_t g_status{};

unsigned char pattern(std::size_t i) {
    return static_cast<unsigned char>((i * 131U + 7U) >> 3);
}

std::string text(const ocrEdtDep_t& dep) {
    auto info = ocr::db_info(dep.guid);
    return info ? std::string(static_cast<const char*>(dep.ptr), info->size) : std::string();
}

ocrGuid_t sink_edt(u32, u64* paramv, u32, ocrEdtDep_t depv[]) {
    ocrExternalTaskStatus(ocrGuid_t{static_cast<intptr_t>(paramv[0])}, &g_status);
    if (!ocrGuidIsNull(depv[0].guid)) {
        const std::string copy = text(depv[0]);
        g_copy.assign(copy.begin(), copy.end());
    }
    if (!ocrGuidIsNull(depv[1].guid)) g_path = text(depv[1]);
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t external_main(u32, u64*, u32, ocrEdtDep_t[]) {
    if (ocrExternalConfigLoad(g_config.c_str()) != 0) {
        ocrAbort(3);
        return NULL_GUID;
    }
    ocrGuid_t tpl, task, outs[2], sink_tpl, sink, block;
    ocrExternalTemplateCreate(&tpl, "copy", 1, 2);
    for (auto& out : outs) ocrEventCreate(&out, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
    ocrExternalTaskCreate(&task, tpl, 1, nullptr, 2, outs);
    u64 param = static_cast<u64>(task.guid);
    ocrEdtTemplateCreate(&sink_tpl, sink_edt, 1, 2);
    ocrEdtCreate(&sink, sink_tpl, 1, &param, 2, outs, EDT_PROP_NONE, NULL_HINT, nullptr);
    void* p = nullptr;
    ocrDbCreate(&block, &p, kBlockSize, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    for (std::size_t i = 0; i < kBlockSize; ++i) static_cast<unsigned char*>(p)[i] = pattern(i);
    ocrDbRelease(block);
    ocrAddDependence(block, task, 0, DB_MODE_RO);
    ocrExternalTemplateDestroy(tpl);
    ocrEdtTemplateDestroy(sink_tpl);
    return NULL_GUID;
}

// One run: the program copies its input to output 0 and writes the path it got to output 1.
Result<std::string> read_through(const std::filesystem::path& dir, const char* exposure) {
    g_config = (dir / fmt::format("external-{}.toml", exposure)).string();
    if (std::FILE* f = std::fopen(g_config.c_str(), "wx"); f != nullptr) {
        fmt::print(f,
                   "[copy]\ncommand = '''sh -c 'cat \"$1\" > \"$2\"; printf %s \"$1\" > \"$3\"' sh [in:0] "
                   "[out:0] [out:1]'''\nexposure = \"{}\"\n",
                   exposure);
        std::fclose(f);
    } else {
        return make_sys_error(errno, "{}: cannot create it", g_config);
    }
    g_copy.clear();
    g_path.clear();
    g_status = {};
    auto options = ocr::OcrOptions::from_env();
    if (!options) return std::unexpected(options.error());
    char name[] = "demo";
    char* argv[] = {name, nullptr};
    const auto start = std::chrono::steady_clock::now();
    auto code = ocr::run_ocr(external_main, 1, argv, *options);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::filesystem::remove(g_config);
    if (!code) return std::unexpected(code.error());
    if (*code != 0 || g_status.state != OCR_EXTERNAL_OK) {
        return make_error(Errc::internal, "exit code {}, task state {} (exit code {})", *code,
                          static_cast<int>(g_status.state), g_status.exitCode);
    }
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < g_copy.size(); ++i) wrong += g_copy[i] != pattern(i) ? 1U : 0U;
    if (g_copy.size() != kBlockSize || wrong != 0) {
        return make_error(Errc::internal, "the copy has {} bytes, {} differ from the block", g_copy.size(), wrong);
    }
    return fmt::format(
        "the program read the 1 MiB block as {} and its copy came back byte for byte ({:.0f} ms "
        "for the whole OCR run)",
        g_path, ms);
}

}  // namespace

void tour_external(Tour& tour, const std::filesystem::path& dir) {
    const std::string section = "external: programs as OCR tasks, data blocks as files (docs/external.md)";

    tour.run(section, "exposure = auto picks", []() -> Result<std::string> {
        const auto pick = external::pick_automatic(external::MemfdExposure::probe(), [] {
            return make_error(Errc::unsupported, "not tried by the demo (see strata doctor)");
        });
        if (!pick.kind) return make_error(Errc::unsupported, "{}", pick.reason);
        return pick.reason;
    });
    tour.run(section, "memfd path: a program reads a block", [&] { return read_through(dir, "memfd"); });
    tour.run(section, "strata-fsd (FUSE): a program reads a block", [&] { return read_through(dir, "fuse"); });
}

}  // namespace strata::cli
