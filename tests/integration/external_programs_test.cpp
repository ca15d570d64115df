// SPDX-License-Identifier: MIT
// Real programs as external tasks of a real OCR run: their inputs are data
// blocks exposed as files (memfd paths, or strata-fsd's FUSE mount), their
// outputs become data blocks. Each test runs for both exposures and for blocks
// in private memory and in memfds. Expected values come from independent
// programs (Python's hashlib, numpy written by hand), never from strata.
#include <array>
#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>

#include "external_support.hpp"
#include "support/capability.hpp"

namespace strata::test {
namespace {

// sha256 of `bytes` as Python's hashlib computes it.
std::string python_sha256(const Bytes& bytes) {
    TempDir dir;
    const auto path = dir / "data";
    {
        std::FILE* f = std::fopen(path.c_str(), "wb");
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
    }
    const std::string command =
        "python3 -c \"import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],'rb').read())"
        ".hexdigest())\" " +
        path.string();
    std::FILE* p = ::popen(command.c_str(), "r");
    std::array<char, 128> line{};
    std::string out = std::fgets(line.data(), line.size(), p) != nullptr ? line.data() : "";
    EXPECT_EQ(::pclose(p), 0);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

struct ProgramsParam {
    const char* exposure;  ///< memfd | fuse
    ocr::DbPlacement placement;
};

class ExternalPrograms : public ::testing::TestWithParam<ProgramsParam> {
protected:
    void SetUp() override {
        if (std::string_view(GetParam().exposure) == "fuse") {
            STRATA_REQUIRE(::access("/dev/fuse", R_OK | W_OK) == 0, "/dev/fuse (FUSE, for strata-fsd)");
        }
    }
    // A scenario for this test's exposure and placement.
    [[nodiscard]] static ExternalScenario scenario() {
        ExternalScenario sc;
        sc.exposure = GetParam().exposure;
        sc.placement = GetParam().placement;
        return sc;
    }
    [[nodiscard]] static bool fuse() { return std::string_view(GetParam().exposure) == "fuse"; }
};

TEST_P(ExternalPrograms, sha256sum_of_an_input_block_matches_pythons_hashlib) {
    const Bytes input = pattern(3 * 1024 * 1024 + 17, 7);
    ExternalScenario sc = scenario();
    sc.config = "[t]\ncommand = \"sha256sum [in:0]\"\nstdout = \"[out:0]\"\n";
    sc.inputs = {input};
    auto out = run_external(sc);
    ASSERT_EQ(out.exit_code, 0);
    ASSERT_EQ(out.status.state, OCR_EXTERNAL_OK);
    ASSERT_TRUE(out.outputs.at(0).has_value());
    const std::string line = text_of(*out.outputs[0]);
    EXPECT_EQ(line.substr(0, 64), python_sha256(input)) << line;
    if (fuse()) {
        EXPECT_NE(line.find("/mnt/db/"), std::string::npos) << "the program was given a strata-fsd path: " << line;
    } else {
        EXPECT_NE(line.find("/proc/self/fd/"), std::string::npos) << "the program was given a memfd path: " << line;
    }
}

TEST_P(ExternalPrograms, cp_from_an_input_to_an_output_gives_the_same_bytes) {
    const Bytes input = pattern(5 * 1024 * 1024 + 3, 11);
    ExternalScenario sc = scenario();
    sc.config = "[t]\ncommand = \"cp [in:0] [out:0]\"\n";
    sc.inputs = {input};
    auto out = run_external(sc);
    ASSERT_EQ(out.status.state, OCR_EXTERNAL_OK);
    ASSERT_TRUE(out.outputs.at(0).has_value());
    EXPECT_EQ(out.outputs[0]->size(), input.size());
    EXPECT_TRUE(*out.outputs[0] == input);
}

TEST_P(ExternalPrograms, a_python_script_writes_a_numpy_array_that_is_read_back_as_a_data_block) {
    STRATA_REQUIRE(::access(venv_python().c_str(), X_OK) == 0, "the project's venv python (scripts/bootstrap)");
    ExternalScenario sc = scenario();
    sc.config = "[t]\ncommand = \"" + venv_python() +
                " -c 'import sys, numpy as np; np.arange(int(sys.argv[2]), dtype=np.float64)"
                "[::-1].tofile(sys.argv[1])' [out:0] [arg:int:0]\"\n";
    const std::int64_t n = 100000;
    Bytes count(sizeof n);
    std::memcpy(count.data(), &n, sizeof n);
    sc.inputs = {count};
    auto out = run_external(sc);
    ASSERT_EQ(out.status.state, OCR_EXTERNAL_OK);
    ASSERT_TRUE(out.outputs.at(0).has_value());
    ASSERT_EQ(out.outputs[0]->size(), static_cast<std::size_t>(n) * sizeof(double));
    std::vector<double> values(static_cast<std::size_t>(n));
    std::memcpy(values.data(), out.outputs[0]->data(), out.outputs[0]->size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        ASSERT_EQ(values[i], static_cast<double>(n - 1 - static_cast<std::int64_t>(i))) << "at " << i;
    }
}

TEST_P(ExternalPrograms, outputs_grow_as_the_program_writes_them) {
    ExternalScenario sc = scenario();
    // 40 MiB in 4 KiB writes through stdout, plus a second output written by path.
    sc.config =
        "[t]\ncommand = \"sh -c 'head -c 41943040 /dev/zero; printf end; printf 12345 > \\\"$1\\\"' sh [out:1]\"\n"
        "stdout = \"[out:0]\"\n";
    sc.outputs = 2;
    auto out = run_external(sc);
    ASSERT_EQ(out.status.state, OCR_EXTERNAL_OK);
    ASSERT_TRUE(out.outputs.at(0).has_value() && out.outputs.at(1).has_value());
    ASSERT_EQ(out.outputs[0]->size(), 41943040U + 3U);
    EXPECT_EQ(text_of(Bytes(out.outputs[0]->end() - 3, out.outputs[0]->end())), "end");
    EXPECT_EQ(std::count(out.outputs[0]->begin(), out.outputs[0]->end() - 3, 0), 41943040);
    EXPECT_EQ(text_of(*out.outputs[1]), "12345");
}

TEST_P(ExternalPrograms, arguments_come_from_int_float_and_str_blocks) {
    ExternalScenario sc = scenario();
    sc.config =
        "[t]\ncommand = \"printf '%s|%s|%s' [arg:int:0] [arg:float:1] \\\"[arg:str:2] x\\\"\"\n"
        "stdout = \"[out:0]\"\n";
    const std::int32_t i = -7;
    const double d = 0.5;
    Bytes bi(sizeof i), bd(sizeof d);
    std::memcpy(bi.data(), &i, sizeof i);
    std::memcpy(bd.data(), &d, sizeof d);
    sc.inputs = {bi, bd, bytes_of("two words")};
    auto out = run_external(sc);
    ASSERT_EQ(out.status.state, OCR_EXTERNAL_OK);
    EXPECT_EQ(text_of(out.outputs.at(0).value()), "-7|0.5|two words x");
}

TEST_P(ExternalPrograms, env_and_cwd_reach_the_program) {
    TempDir dir;
    ExternalScenario sc = scenario();
    sc.config =
        "[t]\ncommand = \"sh -c 'printf \\\"%s %s\\\" \\\"$STRATA_T\\\" \\\"$(pwd)\\\"'\"\nstdout = \"[out:0]\"\n"
        "env = { STRATA_T = \"v a l\" }\ncwd = \"" +
        dir.path().string() + "\"\n";
    auto out = run_external(sc);
    ASSERT_EQ(out.status.state, OCR_EXTERNAL_OK);
    EXPECT_EQ(text_of(out.outputs.at(0).value()), "v a l " + dir.path().string());
}

TEST_P(ExternalPrograms, a_program_cannot_change_its_input_block) {
    ExternalScenario sc = scenario();
    // Writing through the path fails (sealed memfd; a read-only strata-fsd file); the shell reports it and exits 1
    // or 2.
    sc.config =
        "[t]\ncommand = \"sh -c 'printf changed > \\\"$1\\\" || exit 9; echo wrote' sh [in:0]\"\n"
        "stdout = \"[out:0]\"\nsuccess_exit_codes = [9]\n";
    sc.inputs = {bytes_of("original")};
    auto out = run_external(sc);
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_NO_OUTPUT) << "exit code " << out.status.exitCode;
    EXPECT_EQ(out.status.exitCode, 9) << "the write into the input was not refused";
}

// memory blocks reach strata-fsd through process_vm_readv, memfd blocks through
// the shared mapping; both are pushed into the page cache (the fast path).
INSTANTIATE_TEST_SUITE_P(
    ExposuresAndPlacements, ExternalPrograms,
    ::testing::Values(ProgramsParam{"memfd", ocr::DbPlacement::memory}, ProgramsParam{"memfd", ocr::DbPlacement::memfd},
                      ProgramsParam{"fuse", ocr::DbPlacement::memory}, ProgramsParam{"fuse", ocr::DbPlacement::memfd}),
    [](const auto& p) { return std::string(p.param.exposure) + "_" + std::string(ocr::to_string(p.param.placement)); });

TEST(ExternalFfmpeg, ffmpeg_transcodes_an_input_video_block_into_an_output_block) {
    const auto ffmpeg = find_program("ffmpeg");
    STRATA_REQUIRE(!ffmpeg.empty(), "ffmpeg (scripts/bootstrap)");
    TempDir dir;
    const auto source = dir / "in.avi";
    // The input video, made by ffmpeg itself from a test pattern: 2 s, 64x48, 10 fps.
    const std::string make = ffmpeg.string() +
                             " -loglevel error -f lavfi -i testsrc=size=64x48:rate=10:duration=2 "
                             "-c:v mjpeg -y " +
                             source.string();
    ASSERT_EQ(std::system(make.c_str()), 0);
    std::FILE* f = std::fopen(source.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    Bytes video;
    std::array<unsigned char, 65536> buf{};
    for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), f)) > 0;)
        video.insert(video.end(), buf.data(), buf.data() + n);
    std::fclose(f);
    for (const char* exposure : {"memfd", "fuse"}) {
        SCOPED_TRACE(exposure);
        ExternalScenario sc;
        // Raw gray frames out: 20 frames of 64x48 bytes, a size the test knows without strata.
        sc.config =
            "[t]\ncommand = \"ffmpeg -loglevel error -i [in:0] -f rawvideo -pix_fmt gray -y [out:0]\"\n"
            "timeout = 60\n";
        sc.inputs = {video};
        sc.placement = ocr::DbPlacement::memfd;
        sc.exposure = exposure;
        auto out = run_external(sc);
        ASSERT_EQ(out.status.state, OCR_EXTERNAL_OK);
        ASSERT_TRUE(out.outputs.at(0).has_value());
        EXPECT_EQ(out.outputs[0]->size(), 20U * 64U * 48U);
    }
}

}  // namespace
}  // namespace strata::test
