// SPDX-License-Identifier: MIT
// External tasks in real containers (`container = "strata"`, docs/external.md):
// the program runs as pid 1 of its own pid namespace in the image of
// scripts/container-image, reads its input block and writes its output
// through the exposure (memfd descriptors passed in, or the FUSE mount bound
// in), a timeout kills the container, a bad image does not start the task,
// and no container, bundle or process is left.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "integration/container_support.hpp"
#include "integration/external_support.hpp"

namespace strata::test {
namespace {

namespace fs = std::filesystem;

/// Bundle directories of this process's external tasks ($TMPDIR/strata-external-<pid>-*).
int bundles_left() {
    int count = 0;
    const std::string prefix = "strata-external-" + std::to_string(::getpid()) + "-";
    for (const auto& entry : fs::directory_iterator(fs::temp_directory_path())) {
        count += entry.path().filename().string().starts_with(prefix) ? 1 : 0;
    }
    return count;
}

class ExternalContainer : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override {
        STRATA_REQUIRE_CONTAINERS();
        if (std::string_view(GetParam()) == "fuse") {
            STRATA_REQUIRE(::access("/dev/fuse", R_OK | W_OK) == 0, "/dev/fuse (FUSE, for strata-fsd)");
        }
    }
    void TearDown() override { EXPECT_EQ(bundles_left(), 0) << "a container bundle outlived its task"; }
    [[nodiscard]] static ExternalScenario scenario(const std::string& config) {
        ExternalScenario sc;
        sc.exposure = GetParam();
        sc.config = config;
        return sc;
    }
};

TEST_P(ExternalContainer, a_program_in_a_container_copies_its_input_block_into_its_output) {
    const Bytes input = pattern(2 * 1024 * 1024 + 5, 13);
    // Output 1 tells where the program ran: the container's hostname, its own pid and pid namespace.
    ExternalScenario sc = scenario(
        "[t]\ncontainer = \"strata\"\n"
        "command = '''sh -c 'cp \"$1\" \"$2\" && { cat /proc/sys/kernel/hostname; echo $$; readlink /proc/self/ns/pid; "
        "} > \"$3\"' sh [in:0] [out:0] [out:1]'''\n");
    sc.inputs = {input};
    sc.outputs = 2;
    auto out = run_external(sc);
    ASSERT_EQ(out.exit_code, 0);
    ASSERT_EQ(out.status.state, OCR_EXTERNAL_OK) << "exit code " << out.status.exitCode;
    ASSERT_TRUE(out.outputs.at(0).has_value() && out.outputs.at(1).has_value());
    EXPECT_TRUE(*out.outputs[0] == input) << "the copy differs (" << out.outputs[0]->size() << " bytes)";
    std::error_code ec;
    const std::string host_ns = fs::read_symlink("/proc/self/ns/pid", ec).string();
    const std::string where = text_of(*out.outputs[1]);
    EXPECT_TRUE(where.starts_with("strata\n1\npid:[")) << where;
    EXPECT_EQ(where.find(host_ns), std::string::npos) << where;
}

TEST_P(ExternalContainer, a_timeout_kills_the_program_and_its_container) {
    const std::string marker = "3" + std::to_string(::getpid() % 1000) + ".25";  // a unique sleep argument
    ExternalScenario sc = scenario("[t]\ncontainer = \"strata\"\ntimeout = 0.5\ncommand = \"sleep " + marker +
                                   "\"\nstdout = \"[out:0]\"\n");
    auto out = run_external(sc);
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_TIMEOUT);
    EXPECT_FALSE(out.outputs.at(0).has_value());
    EXPECT_EQ(processes_with("sleep " + marker, /*kill_them=*/true), 0) << "the container's program outlived it";
}

TEST_P(ExternalContainer, an_image_that_is_not_there_does_not_start_the_task) {
    ExternalScenario sc = scenario("[t]\ncontainer = \"/nonexistent/strata-rootfs\"\ncommand = \"true\"\n");
    sc.outputs = 1;
    sc.config += "stdout = \"[out:0]\"\n";
    auto out = run_external(sc);
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_NO_START);
    EXPECT_FALSE(out.outputs.at(0).has_value());
}

TEST_P(ExternalContainer, a_relative_container_path_is_refused_when_the_file_is_loaded) {
    ExternalScenario sc = scenario("[t]\ncontainer = \"rootfs\"\ncommand = \"true\"\nstdout = \"[out:0]\"\n");
    auto out = run_external(sc);
    EXPECT_EQ(out.exit_code, 3) << "ocrExternalConfigLoad refuses the file";
}

// A FUSE mount outside /tmp (TMPDIR elsewhere) cannot keep its path in the
// container, whose image is read-only: it is bound at /strata/fsd and the
// command's paths follow it.
TEST(ExternalContainerFuse, a_mount_outside_tmp_is_bound_at_strata_fsd_and_the_command_follows_it) {
    STRATA_REQUIRE_CONTAINERS();
    STRATA_REQUIRE(::access("/dev/fuse", R_OK | W_OK) == 0, "/dev/fuse (FUSE, for strata-fsd)");
    char dir[] = "/var/tmp/strata-test-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    const char* saved = std::getenv("TMPDIR");
    const std::string old_tmpdir = saved != nullptr ? saved : "";
    ::setenv("TMPDIR", dir, 1);
    ExternalScenario sc;
    sc.exposure = "fuse";
    sc.config =
        "[t]\ncontainer = \"strata\"\n"
        "command = '''sh -c 'cp \"$1\" \"$2\" && echo \"$1\" > \"$3\"' sh [in:0] [out:0] [out:1]'''\n";
    const Bytes input = pattern(64 * 1024 + 3, 17);
    sc.inputs = {input};
    sc.outputs = 2;
    auto out = run_external(sc);
    const int left = bundles_left();
    if (old_tmpdir.empty()) {
        ::unsetenv("TMPDIR");
    } else {
        ::setenv("TMPDIR", old_tmpdir.c_str(), 1);
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    EXPECT_EQ(left, 0) << "a container bundle outlived its task";
    ASSERT_EQ(out.status.state, OCR_EXTERNAL_OK) << "exit code " << out.status.exitCode;
    ASSERT_TRUE(out.outputs.at(0).has_value() && out.outputs.at(1).has_value());
    EXPECT_TRUE(*out.outputs[0] == input) << "the copy differs (" << out.outputs[0]->size() << " bytes)";
    EXPECT_TRUE(text_of(*out.outputs[1]).starts_with("/strata/fsd/")) << text_of(*out.outputs[1]);
}

INSTANTIATE_TEST_SUITE_P(Exposures, ExternalContainer, ::testing::Values("memfd", "fuse"),
                         [](const auto& p) { return std::string(p.param); });

}  // namespace
}  // namespace strata::test
