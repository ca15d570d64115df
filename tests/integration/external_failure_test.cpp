// SPDX-License-Identifier: MIT
// External tasks that fail: exit codes, signals, timeouts, missing outputs,
// bad arguments, programs that do not exist, a program killed mid-write. Each
// satisfies its output events with NULL_GUID, reports a status the OCR program
// reads, logs command, status and stderr tail, and leaves no process or memfd.
#include <signal.h>

#include <chrono>
#include <random>

#include <gtest/gtest.h>

#include "external_support.hpp"

namespace strata::test {
namespace {

using Clock = std::chrono::steady_clock;

// Runs the scenario and returns what the runtime printed on stderr.
std::string run_capturing_stderr(const ExternalScenario& sc, ExternalOutcome& out) {
    ::testing::internal::CaptureStderr();
    out = run_external(sc);
    return ::testing::internal::GetCapturedStderr();
}

std::string unique_seconds() {
    std::random_device rd;
    return std::to_string(1000 + rd() % 100000) + "." + std::to_string(rd() % 1000);
}

TEST(ExternalFailure, a_non_zero_exit_fails_the_task_and_logs_command_status_and_stderr_tail) {
    ExternalScenario sc;
    sc.config = "[t]\ncommand = \"sh -c 'echo first-line >&2; echo the-reason >&2; exit 3' [out:0]\"\n";
    ExternalOutcome out;
    const std::string log = run_capturing_stderr(sc, out);
    EXPECT_EQ(out.exit_code, 0) << "a failed external task is not a failed OCR program";
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_EXIT);
    EXPECT_EQ(out.status.exitCode, 3);
    EXPECT_FALSE(out.outputs.at(0).has_value()) << "the output event must carry NULL_GUID";
    EXPECT_NE(log.find("[t] failed"), std::string::npos) << log;
    EXPECT_NE(log.find("exited with 3"), std::string::npos) << log;
    EXPECT_NE(log.find("command: sh -c"), std::string::npos) << log;
    EXPECT_NE(log.find("the-reason"), std::string::npos) << log;
}

TEST(ExternalFailure, an_exit_code_listed_in_success_exit_codes_succeeds) {
    ExternalScenario sc;
    sc.config = "[t]\ncommand = \"sh -c 'printf ok; exit 3'\"\nstdout = \"[out:0]\"\nsuccess_exit_codes = [0, 3]\n";
    auto out = run_external(sc);
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_OK);
    EXPECT_EQ(out.status.exitCode, 3);
    EXPECT_EQ(text_of(out.outputs.at(0).value()), "ok");
}

TEST(ExternalFailure, a_program_killed_by_a_signal_reports_the_signal) {
    ExternalScenario sc;
    sc.config = "[t]\ncommand = \"sh -c 'printf partial; kill -TERM $$'\"\nstdout = \"[out:0]\"\n";
    ExternalOutcome out;
    const std::string log = run_capturing_stderr(sc, out);
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_SIGNAL);
    EXPECT_EQ(out.status.signal, SIGTERM);
    EXPECT_FALSE(out.outputs.at(0).has_value());
    EXPECT_NE(log.find("killed by signal 15"), std::string::npos) << log;
}

TEST(ExternalFailure, a_program_killed_mid_write_leaves_no_half_made_data_block) {
    ExternalScenario sc;
    // 8 MiB written, then SIGKILL in the middle of the output.
    sc.config =
        "[t]\ncommand = \"sh -c 'head -c 8388608 /dev/zero; kill -KILL $$; printf never'\"\n"
        "stdout = \"[out:0]\"\n";
    auto out = run_external(sc);  // checks that no memfd survives the run
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_SIGNAL);
    EXPECT_EQ(out.status.signal, SIGKILL);
    EXPECT_FALSE(out.outputs.at(0).has_value());
}

TEST(ExternalFailure, a_timeout_kills_the_whole_process_group_and_fails_the_task) {
    const std::string marker = unique_seconds();
    ExternalScenario sc;
    // A background grandchild and a foreground child, both far longer than the timeout.
    sc.config = "[t]\ncommand = \"sh -c 'sleep " + marker + " & exec sleep " + marker + "' [out:0]\"\ntimeout = 0.3\n";
    const auto start = Clock::now();
    ExternalOutcome out;
    const std::string log = run_capturing_stderr(sc, out);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(20)) << "the timeout did not end the task";
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_TIMEOUT);
    EXPECT_EQ(out.status.signal, SIGKILL);
    EXPECT_FALSE(out.outputs.at(0).has_value());
    EXPECT_NE(log.find("timeout"), std::string::npos) << log;
    EXPECT_EQ(processes_with("sleep " + marker), 0) << "a process of the group outlived its task";
}

TEST(ExternalFailure, a_timeout_also_kills_a_child_that_left_the_group_with_setsid) {
    const std::string marker = unique_seconds();
    ExternalScenario sc;
    sc.config =
        "[t]\ncommand = \"sh -c 'setsid sleep " + marker + " & exec sleep " + marker + "' [out:0]\"\ntimeout = 0.3\n";
    ExternalOutcome out;
    const std::string log = run_capturing_stderr(sc, out);
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_TIMEOUT) << log;
    EXPECT_EQ(processes_with("sleep " + marker, true), 0) << "the setsid child outlived its task (killed now)";
}

TEST(ExternalFailure, a_grandchild_left_running_by_a_finished_program_is_killed) {
    const std::string marker = unique_seconds();
    ExternalScenario sc;
    sc.config = "[t]\ncommand = \"sh -c 'sleep " + marker + " & printf done'\"\nstdout = \"[out:0]\"\n";
    auto out = run_external(sc);
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_OK);
    EXPECT_EQ(processes_with("sleep " + marker), 0);
}

TEST(ExternalFailure, an_output_the_program_never_wrote_is_a_missing_output) {
    ExternalScenario sc;
    sc.config = "[t]\ncommand = \"sh -c 'printf x > \\\"$1\\\"' sh [out:0] [out:1]\"\n";
    sc.outputs = 2;
    auto out = run_external(sc);
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_NO_OUTPUT);
    EXPECT_EQ(out.status.output, 1U);
    EXPECT_FALSE(out.outputs.at(0).has_value()) << "no output is delivered when one is missing";
    EXPECT_FALSE(out.outputs.at(1).has_value());
}

TEST(ExternalFailure, allow_empty_outputs_delivers_an_empty_block) {
    ExternalScenario sc;
    sc.config = "[t]\ncommand = \"true [out:0]\"\nallow_empty_outputs = true\n";
    auto out = run_external(sc);
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_OK);
    ASSERT_TRUE(out.outputs.at(0).has_value());
    EXPECT_TRUE(out.outputs[0]->empty());
}

TEST(ExternalFailure, a_program_that_does_not_exist_fails_to_start_naming_it) {
    ExternalScenario sc;
    sc.config = "[t]\ncommand = \"strata-no-such-program-xyz [out:0]\"\n";
    ExternalOutcome out;
    const std::string log = run_capturing_stderr(sc, out);
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_NO_START);
    EXPECT_FALSE(out.outputs.at(0).has_value());
    EXPECT_NE(log.find("strata-no-such-program-xyz"), std::string::npos) << log;
    EXPECT_NE(log.find("ENOENT"), std::string::npos) << log;
}

TEST(ExternalFailure, an_arg_int_whose_block_is_not_an_integer_names_file_line_entry_key_value_and_cause) {
    ExternalScenario sc;
    sc.config = "\n[t]\ncommand = \"echo [arg:int:0] [out:0]\"\n";
    sc.inputs = {bytes_of("twelve")};
    ExternalOutcome out;
    const std::string log = run_capturing_stderr(sc, out);
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_NO_START);
    for (const char* mention : {"external.toml:3:", "entry [t]", "key command", "echo [arg:int:0] [out:0]",
                                "[arg:int:0]", "6 bytes", "not an integer"}) {
        EXPECT_NE(log.find(mention), std::string::npos) << "'" << mention << "' not in: " << log;
    }
}

TEST(ExternalFailure, a_template_naming_an_unknown_entry_or_index_is_refused_with_the_file_and_line) {
    ExternalScenario sc;
    sc.entry = "nope";
    sc.config = "[t]\ncommand = \"cat [in:0]\"\n";
    ExternalOutcome out;
    std::string log = run_capturing_stderr(sc, out);
    EXPECT_EQ(out.exit_code, 4) << "mainEdt aborts with 4 when ocrExternalTemplateCreate fails";
    EXPECT_NE(log.find("[nope]: unknown entry (the file has: t)"), std::string::npos) << log;

    sc.entry = "t";  // [in:0] but a template with no inputs
    log = run_capturing_stderr(sc, out);
    EXPECT_EQ(out.exit_code, 4);
    EXPECT_NE(log.find("external.toml:2: entry [t]: key command: value \"cat [in:0]\": [in:0] is beyond"),
              std::string::npos)
        << log;
}

TEST(ExternalFailure, a_config_file_with_an_error_is_refused_at_load) {
    ExternalScenario sc;
    sc.config = "[t]\ncommand = \"cat [in:0]\"\ntimeout = \"soon\"\n";
    ExternalOutcome out;
    const std::string log = run_capturing_stderr(sc, out);
    EXPECT_EQ(out.exit_code, 3) << "mainEdt aborts with 3 when ocrExternalConfigLoad fails";
    EXPECT_NE(log.find("external.toml:3: entry [t]: key timeout: value 'soon'"), std::string::npos) << log;
}

}  // namespace
}  // namespace strata::test
