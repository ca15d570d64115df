// SPDX-License-Identifier: MIT
// unregistered = "temporary" (paper 000: unregistered files "treated as a
// temporary file"): a real program writes a file of its own beside its output
// on the strata-fsd mount and renames it onto the output, as tools that write
// atomically do. Expected bytes are written here by hand, never by strata.
#include <gtest/gtest.h>

#include "external_support.hpp"
#include "support/capability.hpp"

namespace strata::test {
namespace {

// printf a header into DIR/out.part, append the input, mv it onto the output,
// then list DIR on stdout (output 1): the temporary must be gone.
constexpr const char* kAtomicWriter =
    "[t]\ncommand = \"sh -c 'd=$(dirname \\\"$1\\\"); printf head: > \\\"$d/out.part\\\" && "
    "cat \\\"$2\\\" >> \\\"$d/out.part\\\" && mv \\\"$d/out.part\\\" \\\"$1\\\" && ls \\\"$d\\\"' sh [out:0] "
    "[in:0]\"\nstdout = \"[out:1]\"\n";

class ExternalTemporaries : public ::testing::Test {
protected:
    void SetUp() override {
        STRATA_REQUIRE(::access("/dev/fuse", R_OK | W_OK) == 0, "/dev/fuse (FUSE, for strata-fsd)");
    }
};

TEST_F(ExternalTemporaries, a_program_renames_its_temporary_file_onto_its_output_and_the_block_holds_its_bytes) {
    ExternalScenario sc;  // exposure auto: a task with temporaries goes through strata-fsd
    sc.config = std::string(kAtomicWriter) + "unregistered = \"temporary\"\n";
    sc.inputs = {bytes_of("the input block")};
    sc.outputs = 2;
    auto out = run_external(sc);
    ASSERT_EQ(out.status.state, OCR_EXTERNAL_OK) << "exit code " << out.status.exitCode;
    ASSERT_TRUE(out.outputs.at(0).has_value() && out.outputs.at(1).has_value());
    EXPECT_EQ(text_of(*out.outputs[0]), "head:the input block");
    const std::string listing = text_of(*out.outputs[1]);
    EXPECT_EQ(listing.find("out.part"), std::string::npos) << "the renamed temporary is still listed:\n" << listing;
}

TEST_F(ExternalTemporaries, without_the_key_the_same_program_cannot_create_the_file_and_the_task_fails) {
    ExternalScenario sc;
    sc.exposure = "fuse";
    sc.config = kAtomicWriter;
    sc.inputs = {bytes_of("x")};
    sc.outputs = 2;
    auto out = run_external(sc);
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_EXIT);
    EXPECT_NE(out.status.exitCode, 0);
    EXPECT_FALSE(out.outputs.at(0).has_value()) << "a failed task delivered a block";
}

TEST_F(ExternalTemporaries, with_exposure_memfd_from_the_environment_the_task_does_not_start) {
    ExternalScenario sc;
    sc.exposure = "memfd";
    sc.config = std::string(kAtomicWriter) + "unregistered = \"temporary\"\n";
    sc.inputs = {bytes_of("x")};
    sc.outputs = 2;
    auto out = run_external(sc);
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_NO_START);
    EXPECT_FALSE(out.outputs.at(0).has_value());
}

}  // namespace
}  // namespace strata::test
