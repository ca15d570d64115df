// SPDX-License-Identifier: MIT
// SIGINT / SIGTERM of an OCR program while external programs run: every
// program is killed, the program exits with 128 + the signal, and nothing of
// the run is left: no program, no strata-fsd daemon, no mount, no private
// directory. SIGKILL: the runtime's keeper process kills the programs and
// strata-fsd unmounts by itself. Each program also starts a child that left its
// process group and session (setsid): it must die with the tree as well. The OCR program is a real C program
// (tests/ocr/apps/external_dag.c `hold`) in its own process, signalled as a terminal or a batch system would.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "external/fsd/mounts.hpp"
#include "external_support.hpp"
#include "support/capability.hpp"

extern char** environ;

namespace strata::test {
namespace {

using Clock = std::chrono::steady_clock;

struct SignalParam {
    const char* exposure;
    int signal;
};

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    while (!condition()) {
        if (Clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

// The OCR program `external_dag hold <programs> <seconds>` in its own process,
// its output in `log`.
pid_t start_holding(const char* exposure, int programs, const std::string& seconds, const std::filesystem::path& log) {
    const std::string config_env = std::string("STRATA_EXTERNAL_CONFIG=") + STRATA_EXTERNAL_DAG_CONFIG;
    const std::string exposure_env = std::string("STRATA_EXTERNAL_EXPOSURE=") + exposure;
    std::vector<std::string> env_text{config_env, exposure_env};
    for (char** e = environ; *e != nullptr; ++e) {
        if (!std::string_view(*e).starts_with("STRATA_EXTERNAL_")) env_text.emplace_back(*e);
    }
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> args{STRATA_EXTERNAL_DAG, "hold", std::to_string(programs), seconds};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t runtime = 0;
    const int rc = ::posix_spawn(&runtime, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    return rc == 0 ? runtime : -1;
}

std::string unique_seconds() {
    std::random_device rd;
    return std::to_string(5000 + rd() % 90000) + "." + std::to_string(rd() % 1000);
}

// The strata-fsd mount whose daemon is a child of `runtime`, if any.
external::fsd::MountInfo mount_of(pid_t runtime) {
    for (const auto& m : external::fsd::list_mounts()) {
        if (m.alive && parent_of(m.daemon) == runtime) return m;
    }
    return {};
}

class ExternalSignals : public ::testing::TestWithParam<SignalParam> {};

TEST_P(ExternalSignals, a_signal_to_the_ocr_program_kills_every_running_program_and_leaves_no_daemon_or_mount) {
    const SignalParam param = GetParam();
    const bool fuse = std::string_view(param.exposure) == "fuse";
    if (fuse) STRATA_REQUIRE(::access("/dev/fuse", R_OK | W_OK) == 0, "/dev/fuse (strata-fsd)");
    constexpr int programs = 4;
    constexpr int sleeps = 2 * programs;  // each program and its setsid child
    const std::string seconds = unique_seconds();
    const std::string marker = "sleep " + seconds;
    TempDir dir;
    const auto log = dir / "log";
    const pid_t runtime = start_holding(param.exposure, programs, seconds, log);
    ASSERT_GT(runtime, 0);

    const bool all_running = eventually([&] { return processes_with(marker) == sleeps; }, std::chrono::seconds(20));
    const auto mount = mount_of(runtime);
    const std::string mount_point = mount.mount_point;
    const pid_t daemon = mount.daemon;
    if (!all_running) {
        ::kill(runtime, SIGKILL);
        ::waitpid(runtime, nullptr, 0);
        processes_with(marker, true);
        FAIL() << processes_with(marker) << " of " << sleeps << " sleeps started; log:\n" << read_text(log);
    }
    if (fuse) {
        EXPECT_NE(daemon, 0) << "no strata-fsd of the OCR program is mounted while its programs run";
    } else {
        EXPECT_EQ(daemon, 0) << "exposure=memfd started strata-fsd";
    }

    ASSERT_EQ(::kill(runtime, param.signal), 0);
    int status = 0;
    const bool ended =
        eventually([&] { return ::waitpid(runtime, &status, WNOHANG) == runtime; }, std::chrono::seconds(20));
    if (!ended) {
        ::kill(runtime, SIGKILL);
        ::waitpid(runtime, &status, 0);
    }
    ASSERT_TRUE(ended) << "the OCR program did not end within 20 s of the signal";
    const std::string text = read_text(log);
    ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status) << "; log:\n" << text;
    EXPECT_EQ(WEXITSTATUS(status), 128 + param.signal) << text;
    EXPECT_NE(text.find("killed every running external program"), std::string::npos) << text;
    EXPECT_EQ(processes_with(marker), 0) << "an external program or its setsid child outlived the OCR program";
    processes_with(marker, true);  // a failed run leaves nothing behind either
    if (daemon != 0) {
        // The runtime waits for its daemon to exit before it exits itself.
        EXPECT_EQ(read_text("/proc/" + std::to_string(daemon) + "/cmdline").find("strata-fsd"), std::string::npos)
            << "strata-fsd (pid " << daemon << ") outlived the OCR program";
        for (const auto& m : external::fsd::list_mounts()) {
            EXPECT_NE(m.mount_point, mount_point) << "the mount outlived the OCR program";
        }
        EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(mount_point).parent_path()))
            << "the daemon's private directory is left";
    }
}

class ExternalKill : public ::testing::TestWithParam<const char*> {};

TEST_P(ExternalKill, sigkill_of_the_ocr_program_still_kills_its_programs_and_removes_the_mount) {
    const bool fuse = std::string_view(GetParam()) == "fuse";
    if (fuse) STRATA_REQUIRE(::access("/dev/fuse", R_OK | W_OK) == 0, "/dev/fuse (strata-fsd)");
    constexpr int programs = 3;
    constexpr int sleeps = 2 * programs;  // each program and its setsid child
    const std::string seconds = unique_seconds();
    const std::string marker = "sleep " + seconds;
    TempDir dir;
    const pid_t runtime = start_holding(GetParam(), programs, seconds, dir / "log");
    ASSERT_GT(runtime, 0);
    const bool all_running = eventually([&] { return processes_with(marker) == sleeps; }, std::chrono::seconds(20));
    const auto mount = mount_of(runtime);
    // A program runs (exec'd) a moment before the worker that spawned it tells
    // the keeper its group (docs/external.md, Limits); on a loaded machine that
    // moment is milliseconds, so the kill comes a little later than "running".
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::kill(runtime, SIGKILL);
    ::waitpid(runtime, nullptr, 0);
    ASSERT_TRUE(all_running) << read_text(dir / "log");
    // Nothing of the runtime runs after SIGKILL: its keeper process does the killing.
    EXPECT_TRUE(eventually([&] { return processes_with(marker) == 0; }, std::chrono::seconds(5)))
        << processes_with(marker, true) << " programs or setsid children outlived a SIGKILLed OCR program (killed now)";
    if (fuse) {
        ASSERT_NE(mount.daemon, 0) << "no strata-fsd mount while the programs ran";
        EXPECT_TRUE(eventually(
            [&] {
                for (const auto& m : external::fsd::list_mounts()) {
                    if (m.mount_point == mount.mount_point) return false;
                }
                return true;
            },
            std::chrono::seconds(5)))
            << "the mount outlived the SIGKILLed OCR program";
    }
}

INSTANTIATE_TEST_SUITE_P(Exposures, ExternalKill, ::testing::Values("memfd", "fuse"),
                         [](const auto& p) { return std::string(p.param); });

INSTANTIATE_TEST_SUITE_P(ExposuresAndSignals, ExternalSignals,
                         ::testing::Values(SignalParam{"memfd", SIGINT}, SignalParam{"memfd", SIGTERM},
                                           SignalParam{"fuse", SIGINT}, SignalParam{"fuse", SIGTERM}),
                         [](const auto& p) {
                             return std::string(p.param.exposure) + (p.param.signal == SIGINT ? "_SIGINT" : "_SIGTERM");
                         });

}  // namespace
}  // namespace strata::test
