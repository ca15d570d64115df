// SPDX-License-Identifier: MIT
// Choosing the exposure of external tasks: the entry's key, then
// STRATA_EXTERNAL_EXPOSURE, then auto; a daemon that cannot start and a
// daemon that dies mid-run fail the tasks with a clear error, never a hang.
#include <signal.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "external/fsd/mounts.hpp"
#include "external_support.hpp"
#include "support/capability.hpp"

namespace strata::test {
namespace {

std::string run_capturing_stderr(const ExternalScenario& sc, ExternalOutcome& out) {
    ::testing::internal::CaptureStderr();
    out = run_external(sc);
    return ::testing::internal::GetCapturedStderr();
}

void require_fuse() {
    STRATA_REQUIRE(::access("/dev/fuse", R_OK | W_OK) == 0, "/dev/fuse (strata-fsd)");
}

TEST(ExternalExposure, auto_picks_the_memfd_path_where_memfds_can_be_sealed) {
    ExternalScenario sc;
    sc.config = "[t]\ncommand = \"printf %s [in:0]\"\nstdout = \"[out:0]\"\n";
    sc.inputs = {bytes_of("x")};
    auto out = run_external(sc);
    ASSERT_EQ(out.status.state, OCR_EXTERNAL_OK);
    EXPECT_TRUE(text_of(out.outputs.at(0).value()).starts_with("/proc/self/fd/")) << text_of(*out.outputs[0]);
}

TEST(ExternalExposure, the_entry_key_wins_over_STRATA_EXTERNAL_EXPOSURE) {
    require_fuse();
    ExternalScenario sc;
    sc.config = "[t]\ncommand = \"printf %s [in:0]\"\nstdout = \"[out:0]\"\nexposure = \"fuse\"\n";
    sc.inputs = {bytes_of("x")};
    sc.exposure = "memfd";
    auto out = run_external(sc);
    ASSERT_EQ(out.status.state, OCR_EXTERNAL_OK);
    EXPECT_NE(text_of(out.outputs.at(0).value()).find("/mnt/db/"), std::string::npos) << text_of(*out.outputs[0]);
}

TEST(ExternalExposure, an_unknown_STRATA_EXTERNAL_EXPOSURE_is_refused_naming_the_variable_and_value) {
    ExternalScenario sc;
    sc.config = "[t]\ncommand = \"true\"\nstdout = \"[out:0]\"\n";
    sc.exposure = "nfs";
    ExternalOutcome out;
    const std::string log = run_capturing_stderr(sc, out);
    EXPECT_EQ(out.exit_code, 3) << "ocrExternalConfigLoad must fail, so the test's mainEdt aborts with 3";
    EXPECT_NE(log.find("STRATA_EXTERNAL_EXPOSURE=nfs: not an exposure"), std::string::npos) << log;
}

TEST(ExternalExposure, a_daemon_that_cannot_start_fails_the_task_naming_the_entry_and_the_daemon) {
    ::setenv("STRATA_FSD", "/nonexistent/strata-fsd", 1);
    ExternalScenario sc;
    sc.config = "[t]\ncommand = \"cat [in:0]\"\nstdout = \"[out:0]\"\nexposure = \"fuse\"\n";
    sc.inputs = {bytes_of("x")};
    ExternalOutcome out;
    const std::string log = run_capturing_stderr(sc, out);
    ::unsetenv("STRATA_FSD");
    EXPECT_EQ(out.exit_code, 0);
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_NO_START);
    EXPECT_FALSE(out.outputs.at(0).has_value());
    EXPECT_NE(log.find("entry [t]: key exposure: value \"fuse\""), std::string::npos) << log;
    EXPECT_NE(log.find("/nonexistent/strata-fsd"), std::string::npos) << log;
}

// Kills every strata-fsd this process started, once a program is running.
void kill_our_daemon_when(const std::string& marker, std::atomic<bool>& done) {
    while (!done.load()) {
        if (processes_with(marker) > 0) {
            for (const auto& m : external::fsd::list_mounts()) {
                if (m.alive && parent_of(m.daemon) == ::getpid()) ::kill(m.daemon, SIGKILL);
            }
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

TEST(ExternalExposure, the_daemon_killed_while_a_program_waits_fails_that_task_and_the_run_ends) {
    require_fuse();
    const std::string seconds = "0.7" + std::to_string(::getpid() % 1000);
    ExternalScenario sc;
    // The program sleeps, then reads its input: the daemon is gone by then.
    sc.config = "[t]\ncommand = \"sh -c 'sleep " + seconds + "; cat \\\"$1\\\"' sh [in:0]\"\nstdout = \"[out:0]\"\n";
    sc.inputs = {bytes_of("payload")};
    sc.exposure = "fuse";
    std::atomic<bool> done{false};
    std::thread killer([&] { kill_our_daemon_when("sleep " + seconds, done); });
    ExternalOutcome out;
    const auto start = std::chrono::steady_clock::now();
    const std::string log = run_capturing_stderr(sc, out);
    done = true;
    killer.join();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
    EXPECT_EQ(out.exit_code, 0);
    EXPECT_NE(out.status.state, OCR_EXTERNAL_OK) << log;
    EXPECT_FALSE(out.outputs.at(0).has_value()) << "no output block from a task whose daemon died";
    EXPECT_NE(log.find("strata-fsd"), std::string::npos) << log;
}

}  // namespace
}  // namespace strata::test
