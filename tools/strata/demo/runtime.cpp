// SPDX-License-Identifier: MIT
// The runtime section of `strata demo`: tasks that block keep their cores
// busy with the monitor, an OCR program in-process, and an unmodified OCR
// binary through `strata ocr`.
#include <sys/wait.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "command.hpp"
#include "ocr/ocr.h"
#include "paths.hpp"
#include "sections.hpp"
#include "strata/runtime.hpp"
#include "strata/runtime/ocr.hpp"

namespace strata::cli {

namespace {

using namespace std::chrono_literals;

void spin_for(std::chrono::microseconds duration) {
    const auto end = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < end) {
    }
}

// Tasks that compute 2 ms and then sleep 2 ms (a blocking call) on every CPU.
Result<std::pair<double, std::string>> blocking_mix(runtime::MonitorFactory monitor) {
    runtime::Options options;
    options.monitor = std::move(monitor);
    auto rt = runtime::Runtime::start(std::move(options));
    if (!rt) return std::unexpected(rt.error());
    const int tasks = 40 * static_cast<int>((*rt)->cpus().size());
    std::atomic<int> done{0};
    runtime::TaskGroup group;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < tasks; ++i) {
        (*rt)->spawn(
            [&] {
                spin_for(2000us);
                std::this_thread::sleep_for(2ms);
                done.fetch_add(1);
            },
            &group);
    }
    (*rt)->wait(group);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (done.load() != tasks) {
        return make_error(Errc::internal, "{} of {} tasks ran", done.load(), tasks);
    }
    return std::pair{seconds, std::string((*rt)->monitor_backend())};
}

std::atomic<u64> g_sum{0};

ocrGuid_t add_edt(u32, u64* paramv, u32, ocrEdtDep_t[]) {
    g_sum.fetch_add(paramv[0]);
    return NULL_GUID;
}

ocrGuid_t report_edt(u32, u64*, u32, ocrEdtDep_t[]) {
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t spawner_edt(u32, u64*, u32, ocrEdtDep_t[]) {
    ocrGuid_t tpl, edt;
    ocrEdtTemplateCreate(&tpl, add_edt, 1, 0);
    for (u64 i = 1; i <= 1000; ++i) {
        ocrEdtCreate(&edt, tpl, 1, &i, 0, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    }
    ocrEdtTemplateDestroy(tpl);
    return NULL_GUID;
}

// A finish EDT creates 1000 EDTs; its output event starts the reporter.
ocrGuid_t demo_main(u32, u64*, u32, ocrEdtDep_t[]) {
    ocrGuid_t finish_tpl, report_tpl, finish, report, done;
    ocrEdtTemplateCreate(&finish_tpl, spawner_edt, 0, 1);
    ocrEdtTemplateCreate(&report_tpl, report_edt, 0, 1);
    // The finish EDT waits on slot 0 until the reporter depends on its output
    // event: a ONCE event satisfied before anyone depends on it is gone.
    ocrEdtCreate(&finish, finish_tpl, 0, nullptr, 1, nullptr, EDT_PROP_FINISH, NULL_HINT, &done);
    ocrEdtCreate(&report, report_tpl, 0, nullptr, 1, &done, EDT_PROP_NONE, NULL_HINT, nullptr);
    ocrAddDependence(NULL_GUID, finish, 0, DB_MODE_NULL);
    return NULL_GUID;
}

}  // namespace

void tour_runtime(Tour& tour) {
    const std::string section = "runtime: tasks that block keep cores busy; OCR programs (docs/runtime.md)";

    tour.run(section, "blocking tasks: monitor vs off", [&]() -> Result<std::string> {
        auto off = blocking_mix(runtime::no_monitor());
        if (!off) return std::unexpected(off.error());
        auto on = blocking_mix(runtime::monitor_from_env());
        if (!on) return std::unexpected(on.error());
        return fmt::format("2 ms compute + 2 ms sleep per task: off {:.0f} ms, {} {:.0f} ms ({:.2f}x)",
                           off->first * 1e3, on->second, on->first * 1e3, off->first / on->first);
    });

    tour.run(section, "OCR: a finish EDT waits for 1000 EDTs", [&]() -> Result<std::string> {
        g_sum = 0;
        auto options = ocr::OcrOptions::from_env();
        if (!options) return std::unexpected(options.error());
        char name[] = "demo";
        char* argv[] = {name, nullptr};
        auto code = ocr::run_ocr(demo_main, 1, argv, *options);
        if (!code) return std::unexpected(code.error());
        if (*code != 0 || g_sum.load() != 500500) {
            return make_error(Errc::internal, "exit code {}, sum {} instead of 500500", *code, g_sum.load());
        }
        return std::string("sum of 1..1000 = 500500 when the finish EDT's output event fired");
    });

    tour.run(section, "strata ocr ./ocr_fibonacci 20 (unmodified C)", [&]() -> Result<std::string> {
        const auto found = paths::find_helper("ocr_fibonacci");
        if (!found) {
            return make_error(Errc::not_found, "ocr_fibonacci: not in {} (tests/ocr, STRATA_BUILD_TESTS)",
                              paths::helper_dir().string());
        }
        const auto program = *found;
        const auto self = std::filesystem::read_symlink("/proc/self/exe");
        const std::string command =
            fmt::format("{} ocr {} 20", shell_quoted(self.string()), shell_quoted(program.string()));
        const auto run = run_command(command);
        const std::string& output = run.output;
        if (!WIFEXITED(run.status) || WEXITSTATUS(run.status) != 0 ||
            output.find("fib(20) = 6765") == std::string::npos) {
            return make_error(Errc::internal, "{}: status {}, output: {}", command, run.status, output);
        }
        return output.substr(0, output.find('\n'));
    });
}

}  // namespace strata::cli
