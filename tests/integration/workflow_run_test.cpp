// SPDX-License-Identifier: MIT
// `strata run` end to end: every method with real mpiexec (MPICH) processes,
// the example files, and bad input through the command line.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/capability.hpp"
#include "support/resources.hpp"

namespace {

struct Outcome {
    int status = -1;
    std::string out;
};

Outcome run(const std::string& args) {
    Outcome o;
    FILE* pipe = ::popen(("timeout 120 " STRATA_CLI " " + args + " 2>&1").c_str(), "r");
    if (pipe == nullptr) {
        return o;
    }
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
        o.out += buffer;
    }
    const int s = ::pclose(pipe);
    o.status = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
    return o;
}

std::set<std::string> workflow_segments() {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
        if (e.path().filename().string().starts_with("strata.strata-workflow-")) {
            names.insert(e.path().filename().string());
        }
    }
    return names;
}

// Segments that appeared since `before` and are still there 3 s later (a run
// of a test in parallel has its segment for a moment, between create and unlink).
std::set<std::string> leftover_segments(const std::set<std::string>& before) {
    std::set<std::string> left;
    for (int i = 0; i < 30; ++i) {
        left.clear();
        for (const auto& name : workflow_segments()) {
            if (!before.contains(name)) {
                left.insert(name);
            }
        }
        if (left.empty()) {
            break;
        }
        ::usleep(100'000);
    }
    return left;
}

class WorkflowRun : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override { STRATA_REQUIRE(!strata::test::find_program("mpiexec").empty(), "mpiexec (MPICH) in PATH"); }
};

TEST_P(WorkflowRun, each_shape_completes_with_no_checksum_error_and_no_leftover_segment) {
    const auto before = workflow_segments();
    for (const char* shape : {"simple", "pipeline --tasks 3", "scatter-gather --tasks 4"}) {
        const auto o = run("run --json --iterations 40 --data-size 256KiB --shape " + std::string(shape) +
                           " --method " + GetParam());
        ASSERT_EQ(o.status, 0) << shape << ": " << o.out;
        const auto report = nlohmann::json::parse(o.out);
        EXPECT_EQ(report["iterations"], 40);
        EXPECT_EQ(report["checksum_errors"], 0);
        EXPECT_GT(report["throughput_mb_s"].get<double>(), 0);
        for (const auto& e : report["edges"]) {
            EXPECT_EQ(e["samples"], 40) << shape;
            EXPECT_EQ(e["method"], GetParam());
        }
    }
    EXPECT_TRUE(leftover_segments(before).empty());
}

INSTANTIATE_TEST_SUITE_P(Workflow, WorkflowRun,
                         ::testing::Values("shm", "copy-into", "copy-from", "copy", "mpi", "threads"),
                         [](const auto& param_info) {
                             std::string name = param_info.param;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

TEST(WorkflowRunExamples, every_example_file_runs) {
    STRATA_REQUIRE(!strata::test::find_program("mpiexec").empty(), "mpiexec (MPICH) in PATH");
    for (const auto& e : std::filesystem::directory_iterator(STRATA_EXAMPLES "/workflows")) {
        const auto o = run("run --iterations 20 " + e.path().string());
        EXPECT_EQ(o.status, 0) << e.path() << ": " << o.out;
        EXPECT_NE(o.out.find("checksum errors 0"), std::string::npos) << o.out;
    }
}

// 2.5 GiB is 335,544,321 words with the stamp: it travels as three MPI calls
// of at most 1 GiB (mpi_pieces.hpp) and arrives whole (every word checked).
TEST(WorkflowRunLarge, an_mpi_message_of_2_5_GiB_arrives_whole_with_no_checksum_error) {
    STRATA_REQUIRE(!strata::test::find_program("mpiexec").empty(), "mpiexec (MPICH) in PATH");
    const auto o = run("run --json --iterations 1 --data-size 2.5GiB --shape simple --method mpi");
    ASSERT_EQ(o.status, 0) << o.out;
    const auto report = nlohmann::json::parse(o.out);
    EXPECT_EQ(report["checksum_errors"], 0);
    ASSERT_EQ(report["edges"].size(), 1U);
    EXPECT_EQ(report["edges"][0]["samples"], 1);
    EXPECT_DOUBLE_EQ(report["bytes"].get<double>(), 2.5 * 1024 * 1024 * 1024);
}

TEST(WorkflowRunErrors, a_timeout_beyond_an_int_fails_naming_the_variable_instead_of_wrapping) {
    STRATA_REQUIRE(!strata::test::find_program("mpiexec").empty(), "mpiexec (MPICH) in PATH");
    const auto o = run("run --iterations 2 --data-size 8KiB --shape simple --method shm");
    ASSERT_EQ(o.status, 0) << o.out;
    ::setenv("STRATA_WORKFLOW_TIMEOUT_MS", "4294967297", 1);  // atoi gave 1 ms
    const auto bad = run("run --iterations 2 --data-size 8KiB --shape simple --method shm");
    ::unsetenv("STRATA_WORKFLOW_TIMEOUT_MS");
    EXPECT_EQ(bad.status, 2) << "refused before any task starts: " << bad.out;
    EXPECT_NE(bad.out.find("STRATA_WORKFLOW_TIMEOUT_MS=4294967297"), std::string::npos) << bad.out;
}

TEST(WorkflowRunErrors, a_bad_file_fails_naming_the_key_and_runs_nothing) {
    strata::test::TempDir dir;
    const auto file = dir.path() / "bad.toml";
    std::ofstream(file) << "[[task]]\nname = \"a\"\ndata_size = 8\n[[task]]\nname = \"b\"\n"
                           "[[edge]]\nfrom = \"a\"\nto = \"nobody\"\nmethod = \"shm\"\n";
    const auto o = run("run " + file.string());
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.out.find("edge[0].to=nobody: no task of that name"), std::string::npos) << o.out;
}

TEST(WorkflowRunErrors, a_missing_file_and_a_bad_option_fail) {
    auto o = run("run /nonexistent.toml");
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.out.find("/nonexistent.toml"), std::string::npos) << o.out;
    o = run("run --shape ring");
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.out.find("--shape=ring"), std::string::npos) << o.out;
    o = run("run --shape simple --data-size 10QB");
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.out.find("--data-size=10QB"), std::string::npos) << o.out;
}

// The pids of the strata-workflow-task processes descending from `root`.
std::vector<pid_t> task_processes(pid_t root) {
    std::vector<pid_t> found;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        std::ifstream cmd(e.path() / "cmdline");
        std::string cmdline;
        std::getline(cmd, cmdline, '\0');
        if (cmdline.find("strata-workflow-task") == std::string::npos) {
            continue;
        }
        // Walk up the parents to `root`.
        pid_t pid = std::stoi(name);
        for (int depth = 0; depth < 8 && pid > 1; ++depth) {
            std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
            std::string line;
            std::getline(stat, line);
            const auto close = line.rfind(')');
            if (close == std::string::npos) {
                break;
            }
            int ppid = 0;
            char state = 0;
            std::sscanf(line.c_str() + close + 2, "%c %d", &state, &ppid);
            if (ppid == root) {
                found.push_back(std::stoi(name));
                break;
            }
            pid = ppid;
        }
    }
    return found;
}

TEST(WorkflowRunErrors, a_task_killed_mid_run_fails_the_run_within_seconds_and_leaves_no_segment) {
    STRATA_REQUIRE(!strata::test::find_program("mpiexec").empty(), "mpiexec (MPICH) in PATH");
    const auto before = workflow_segments();
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, STDOUT_FILENO);
        ::dup2(null, STDERR_FILENO);
        ::execl(STRATA_CLI, STRATA_CLI, "run", "--shape", "pipeline", "--tasks", "3", "--method", "shm", "--iterations",
                "1000000", "--data-size", "64KiB", static_cast<char*>(nullptr));
        ::_exit(127);
    }
    std::vector<pid_t> tasks;
    for (int i = 0; i < 200 && tasks.size() < 3; ++i) {
        ::usleep(50'000);
        tasks = task_processes(child);
    }
    ASSERT_EQ(tasks.size(), 3U) << "the three task processes did not start";
    ::usleep(300'000);  // mid-run
    ASSERT_EQ(::kill(tasks[1], SIGKILL), 0);
    int status = 0;
    pid_t done = 0;
    for (int i = 0; i < 300 && done == 0; ++i) {  // 15 s
        ::usleep(50'000);
        done = ::waitpid(child, &status, WNOHANG);
    }
    if (done == 0) {
        ::kill(child, SIGKILL);
        ::waitpid(child, &status, 0);
        FAIL() << "strata run still running 15 s after a task was killed";
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
    EXPECT_TRUE(leftover_segments(before).empty());
}

TEST(WorkflowRunWrite, write_produces_a_file_that_runs) {
    strata::test::TempDir dir;
    const auto file = dir.path() / "sg.toml";
    auto o = run("run --shape scatter-gather --tasks 5 --method mpi --data-size 8KiB --write " + file.string());
    ASSERT_EQ(o.status, 0) << o.out;
    o = run("run --iterations 10 " + file.string());
    EXPECT_EQ(o.status, 0) << o.out;
    EXPECT_NE(o.out.find("5 tasks, 6 edges"), std::string::npos) << o.out;
}

}  // namespace
