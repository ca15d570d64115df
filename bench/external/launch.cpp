// SPDX-License-Identifier: MIT
// `strata bench external --mode launch`: what launching a program as an
// external task costs beyond starting the same program by hand.
//
// By hand: posix_spawn + waitpid of the program, one after another, N times.
// As external tasks: a chain of N external tasks in one OCR run, each task's
// input the previous task's output (so they run one after another, as by
// hand); the time from the first task's end to the last's, over N - 1, is the
// time per task: expanding the command, exposing the files, spawning, the
// reactor seeing the exit, adopting the output as a data block, and
// satisfying the next task's input. Two programs:
//   - `true`: no files (the task's output is allowed empty);
//   - bench_external_touch IN OUT: reads a 4 KiB input, writes it to its
//     output; by hand on tmpfs files (/dev/shm), as tasks through the memfd
//     path and through strata-fsd.
// Configurations are interleaved within each repeat, in an order rotated per
// repeat.
//
//   bench_external_launch --bin-dir DIR --out FILE [--tasks 200] [--repeats 7]
#include <fcntl.h>
#include <spawn.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ocr/extensions/ocr-external.h"
#include "ocr/ocr.h"
#include "strata/runtime/ocr.hpp"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr std::size_t kInputBytes = 4096;

std::string loadavg() {
    std::ifstream in("/proc/loadavg");
    std::string text;
    std::getline(in, text);
    return text;
}

// ---- by hand ---------------------------------------------------------------

double by_hand_per_task(const std::vector<std::string>& args, int tasks) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const auto start = Clock::now();
    for (int i = 0; i < tasks; ++i) {
        pid_t pid = 0;
        if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
            throw std::runtime_error(fmt::format("cannot start {}", args[0]));
        }
        int status = 0;
        ::waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            throw std::runtime_error(fmt::format("{} failed (status {:#x})", args[0], status));
        }
    }
    return std::chrono::duration<double>(Clock::now() - start).count() / tasks;
}

// ---- as a chain of external tasks ------------------------------------------

struct Chain {
    std::string config;
    int tasks = 0;
    std::vector<ocrGuid_t> task_guids;
    Clock::time_point first_done, last_done;
    std::atomic<int> ok{0};
    std::size_t last_size = 0;
};
Chain g_chain;

ocrGuid_t tap_edt(u32, u64*, u32, ocrEdtDep_t[]) {
    g_chain.first_done = Clock::now();
    return NULL_GUID;
}

ocrGuid_t sink_edt(u32, u64*, u32, ocrEdtDep_t depv[]) {
    g_chain.last_done = Clock::now();
    u64 size = 0;
    if (!ocrGuidIsNull(depv[0].guid)) {
        auto info = strata::ocr::db_info(depv[0].guid);
        size = info ? info->size : 0;
    }
    g_chain.last_size = size;
    for (const ocrGuid_t task : g_chain.task_guids) {
        ocrExternalStatus_t st{};
        if (ocrExternalTaskStatus(task, &st) == 0 && st.state == OCR_EXTERNAL_OK) g_chain.ok.fetch_add(1);
    }
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t chain_main(u32, u64*, u32, ocrEdtDep_t[]) {
    Chain& c = g_chain;
    ocrGuid_t tpl, tap_tpl, sink_tpl, tap, sink, input;
    if (ocrExternalConfigLoad(c.config.c_str()) != 0 || ocrExternalTemplateCreate(&tpl, "t", 1, 1) != 0) {
        ocrAbort(2);
        return NULL_GUID;
    }
    std::vector<ocrGuid_t> outs(static_cast<std::size_t>(c.tasks));
    for (auto& e : outs) ocrEventCreate(&e, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
    ocrEdtTemplateCreate(&tap_tpl, tap_edt, 0, 1);
    ocrEdtTemplateCreate(&sink_tpl, sink_edt, 0, 1);
    ocrEdtCreate(&tap, tap_tpl, 0, nullptr, 1, &outs.front(), EDT_PROP_NONE, NULL_HINT, nullptr);
    ocrEdtCreate(&sink, sink_tpl, 0, nullptr, 1, &outs.back(), EDT_PROP_NONE, NULL_HINT, nullptr);
    c.task_guids.assign(outs.size(), NULL_GUID);
    // Last to first, so each output event has its consumer before it can fire.
    for (std::size_t i = outs.size(); i-- > 1;) {
        ocrExternalTaskCreate(&c.task_guids[i], tpl, 1, &outs[i - 1], 1, &outs[i]);
    }
    void* p = nullptr;
    ocrDbCreate(&input, &p, kInputBytes, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    std::memset(p, 'x', kInputBytes);
    ocrDbRelease(input);
    ocrExternalTaskCreate(&c.task_guids[0], tpl, 1, &input, 1, &outs[0]);
    ocrExternalTemplateDestroy(tpl);
    ocrEdtTemplateDestroy(tap_tpl);
    ocrEdtTemplateDestroy(sink_tpl);
    return NULL_GUID;
}

double external_per_task(const std::filesystem::path& dir, const std::string& entry, const char* exposure, int tasks,
                         bool expect_bytes) {
    g_chain.config = (dir / "launch.toml").string();
    std::ofstream(g_chain.config) << "[t]\n" << entry << "exposure = \"" << exposure << "\"\n";
    g_chain.tasks = tasks;
    g_chain.ok = 0;
    g_chain.last_size = 0;
    auto options = strata::ocr::OcrOptions::from_env();
    if (!options) throw std::runtime_error(options.error().message);
    char name[] = "launch";
    char* argv[] = {name, nullptr};
    auto code = strata::ocr::run_ocr(chain_main, 1, argv, *options);
    if (!code || *code != 0 || g_chain.ok.load() != tasks || g_chain.last_size != (expect_bytes ? kInputBytes : 0)) {
        throw std::runtime_error(
            fmt::format("the chain through {} failed: exit {}, {} of {} tasks ok, last output "
                        "{} bytes",
                        exposure, code ? *code : -1, g_chain.ok.load(), tasks, g_chain.last_size));
    }
    return std::chrono::duration<double>(g_chain.last_done - g_chain.first_done).count() / (tasks - 1);
}

}  // namespace

int main(int argc, char** argv) {
    std::string bin_dir, out;
    int tasks = 200, repeats = 7;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i];
        if (key == "--bin-dir") {
            bin_dir = argv[i + 1];
        } else if (key == "--out") {
            out = argv[i + 1];
        } else if (key == "--tasks") {
            tasks = std::atoi(argv[i + 1]);
        } else if (key == "--repeats") {
            repeats = std::atoi(argv[i + 1]);
        } else {
            fmt::print(stderr, "bench_external_launch: unknown option {}\n", key);
            return 2;
        }
    }
    if (bin_dir.empty() || out.empty() || tasks < 2 || repeats < 1) {
        fmt::print(stderr, "usage: bench_external_launch --bin-dir DIR --out FILE [--tasks N>=2] [--repeats N>=1]\n");
        return 2;
    }
    std::filesystem::path dir;
    try {
        // On tmpfs, like the memfds: the by-hand baseline's files cost no disk.
        std::string templ = "/dev/shm/strata-bench-launch-XXXXXX";
        if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        dir = templ;
        const std::string touch = bin_dir + "/bench_external_touch";
        const auto in = dir / "in";
        std::ofstream(in) << std::string(kInputBytes, 'x');
        const std::string touch_entry = fmt::format("command = \"{} [in:0] [out:0]\"\n", touch);
        // The same binary both ways, named by its path (no PATH search on either side).
        const std::string true_path = "/bin/true";
        const std::string true_entry = "command = \"/bin/true\"\nallow_empty_outputs = true\n";
        const std::vector<std::pair<std::string, std::function<double()>>> configs{
            {"true-by-hand", [&] { return by_hand_per_task({true_path}, tasks); }},
            {"true-memfd", [&] { return external_per_task(dir, true_entry, "memfd", tasks, false); }},
            {"touch-by-hand",
             [&] {
                 return by_hand_per_task({touch, in.string(), (dir / "out").string()}, tasks);
             }},
            {"touch-memfd", [&] { return external_per_task(dir, touch_entry, "memfd", tasks, true); }},
            {"touch-fuse", [&] { return external_per_task(dir, touch_entry, "fuse", tasks, true); }},
        };
        json doc;
        const char* command = std::getenv("STRATA_BENCH_COMMAND");
        doc["command"] = command != nullptr ? command : "bench_external_launch";
        doc["parameters"] = {{"tasks", tasks}, {"repeats", repeats}, {"input_bytes", kInputBytes}};
        utsname u{};
        ::uname(&u);
        doc["machine"] = {
            {"kernel", u.release}, {"cpus", ::sysconf(_SC_NPROCESSORS_ONLN)}, {"loadavg_start", loadavg()}};
        json samples = json::array();
        for (int rep = 0; rep < repeats; ++rep) {
            for (std::size_t k = 0; k < configs.size(); ++k) {
                const auto& [name, body] = configs[(k + static_cast<std::size_t>(rep)) % configs.size()];
                fmt::print(stderr, "launch repeat {}/{}: {}\n", rep + 1, repeats, name);
                samples.push_back({{"config", name}, {"rep", rep}, {"seconds_per_task", body()}});
            }
        }
        doc["samples"] = samples;
        doc["machine"]["loadavg_end"] = loadavg();
        std::filesystem::remove_all(dir);
        std::ofstream(out) << doc.dump(1) << "\n";
    } catch (const std::exception& e) {
        fmt::print(stderr, "bench_external_launch: {}\n", e.what());
        std::error_code ignored;
        if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
        return 1;
    }
    return 0;
}
