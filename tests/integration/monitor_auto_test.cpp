// SPDX-License-Identifier: MIT
// STRATA_MONITOR=auto in a process without privilege for BPF: proc, with one
// line on stderr that says why.
#include <fcntl.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "strata/monitor.hpp"
#include "support/capability.hpp"

namespace {

using strata::monitor::Backend;

// auto's choice is cached per process, so the unprivileged run must be a fresh
// process: this binary again, running only the child half below.
constexpr char kChildVariable[] = "STRATA_TEST_MONITOR_AUTO_CHILD";

// The child half: asks three times, exits 0 when every answer was proc.
TEST(MonitorAutoChild, DISABLED_asks_for_auto_three_times) {
    if (std::getenv(kChildVariable) == nullptr) GTEST_SKIP() << "run by the test below";
    int failures = 0;
    for (int i = 0; i < 3; ++i) {
        auto options = strata::monitor::options_from_env();
        if (!options || options->backend != Backend::proc) ++failures;
        if (options) {
            auto monitor = strata::monitor::Monitor::start(*options, 1, {});
            if (!monitor || (*monitor)->backend() != Backend::proc) ++failures;
        }
    }
    std::_Exit(failures == 0 ? 0 : 1);
}

// Runs this binary's child half as nobody; returns what it wrote to stderr
// and its exit status (gtest's own output goes to /dev/null).
std::pair<std::string, int> run_unprivileged() {
    int out[2];
    if (::pipe(out) != 0) return {"pipe failed", -1};
    const pid_t child = ::fork();
    if (child == 0) {
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, STDOUT_FILENO);
        ::dup2(out[1], STDERR_FILENO);
        if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
            ::setresuid(65534, 65534, 65534) != 0)
            ::_exit(3);
        ::setenv(kChildVariable, "1", 1);
        ::unsetenv("STRATA_MONITOR");
        ::execl("/proc/self/exe", "monitor-auto-child", "--gtest_also_run_disabled_tests",
                "--gtest_filter=MonitorAutoChild.*", static_cast<char*>(nullptr));
        ::_exit(4);
    }
    ::close(out[1]);
    std::string text;
    char buf[1024];
    ssize_t n = 0;
    while ((n = ::read(out[0], buf, sizeof(buf))) > 0) text.append(buf, static_cast<std::size_t>(n));
    ::close(out[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    return {text, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

TEST(MonitorAuto, without_privilege_for_bpf_auto_falls_back_to_proc_with_one_line_saying_why) {
    STRATA_REQUIRE(strata::test::is_root(), "root, to drop to an unprivileged user");
    const auto [output, status] = run_unprivileged();
    ASSERT_EQ(status, 0) << output;
    // Asked three times, said once.
    EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1) << output;
    EXPECT_NE(output.find("auto: proc, because the BPF monitor cannot load"), std::string::npos) << output;
    EXPECT_NE(output.find("EPERM"), std::string::npos) << output;
    EXPECT_NE(output.find("CAP_BPF"), std::string::npos) << output;
}

TEST(MonitorAuto, as_root_auto_picks_ebpf_and_says_it_loaded) {
    STRATA_REQUIRE(strata::test::is_root(), "root, for the BPF monitor");
    const auto options = strata::monitor::choose_auto();
    EXPECT_EQ(options.backend, Backend::ebpf) << options.reason;
    EXPECT_NE(options.reason.find("loads and attaches"), std::string::npos) << options.reason;
}

}  // namespace
