// SIGINT / SIGTERM of an OCR program while external programs run: every
// program is killed, the program exits with 128 + the signal, and nothing of
// the run is left: no program, no strata-fsd daemon, no mount, no private
// directory. The OCR program is a real C program (tests/ocr/apps/external_dag.c
// `hold`) in its own process, signalled as a terminal or a batch system would.
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

class ExternalSignals : public ::testing::TestWithParam<SignalParam> {};

TEST_P(ExternalSignals, a_signal_to_the_ocr_program_kills_every_running_program_and_leaves_no_daemon_or_mount) {
    const SignalParam param = GetParam();
    const bool fuse = std::string_view(param.exposure) == "fuse";
    if (fuse) STRATA_REQUIRE(::access("/dev/fuse", R_OK | W_OK) == 0, "/dev/fuse (strata-fsd)");
    constexpr int programs = 4;
    std::random_device rd;
    const std::string seconds = std::to_string(5000 + rd() % 90000) + "." + std::to_string(rd() % 1000);
    const std::string marker = "sleep " + seconds;

    TempDir dir;
    const auto log = dir / "log";
    const std::string config_env = std::string("STRATA_EXTERNAL_CONFIG=") + STRATA_EXTERNAL_DAG_CONFIG;
    const std::string exposure_env = std::string("STRATA_EXTERNAL_EXPOSURE=") + param.exposure;
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
    ASSERT_EQ(::posix_spawn(&runtime, argv[0], &actions, nullptr, argv.data(), envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);

    const bool all_running = eventually([&] { return processes_with(marker) == programs; }, std::chrono::seconds(20));
    std::string mount_point;
    pid_t daemon = 0;
    for (const auto& m : external::fsd::list_mounts()) {
        if (m.alive && parent_of(m.daemon) == runtime) {
            mount_point = m.mount_point;
            daemon = m.daemon;
        }
    }
    if (!all_running) {
        ::kill(runtime, SIGKILL);
        ::waitpid(runtime, nullptr, 0);
        FAIL() << processes_with(marker) << " of " << programs << " programs started; log:\n" << read_text(log);
    }
    if (fuse) {
        EXPECT_NE(daemon, 0) << "no strata-fsd of the OCR program is mounted while its programs run";
    } else {
        EXPECT_EQ(daemon, 0) << "exposure=memfd started strata-fsd";
    }

    ASSERT_EQ(::kill(runtime, param.signal), 0);
    int status = 0;
    const bool ended = eventually([&] { return ::waitpid(runtime, &status, WNOHANG) == runtime; },
                                  std::chrono::seconds(20));
    if (!ended) {
        ::kill(runtime, SIGKILL);
        ::waitpid(runtime, &status, 0);
    }
    ASSERT_TRUE(ended) << "the OCR program did not end within 20 s of the signal";
    const std::string text = read_text(log);
    ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status) << "; log:\n" << text;
    EXPECT_EQ(WEXITSTATUS(status), 128 + param.signal) << text;
    EXPECT_NE(text.find("killed every running external program"), std::string::npos) << text;
    EXPECT_EQ(processes_with(marker), 0) << "an external program outlived the OCR program";
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

INSTANTIATE_TEST_SUITE_P(ExposuresAndSignals, ExternalSignals,
                         ::testing::Values(SignalParam{"memfd", SIGINT}, SignalParam{"memfd", SIGTERM},
                                           SignalParam{"fuse", SIGINT}, SignalParam{"fuse", SIGTERM}),
                         [](const auto& p) {
                             return std::string(p.param.exposure) + (p.param.signal == SIGINT ? "_SIGINT" : "_SIGTERM");
                         });

}  // namespace
}  // namespace strata::test
