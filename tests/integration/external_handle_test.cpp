// SPDX-License-Identifier: MIT
// [handle:K]: an external Python task opens a shared data block by its handle
// with strata and reads it with no copy - its anonymous memory does not grow
// by the block, its shared memory does (the block's own pages) - and a block
// that is not shared is refused naming the placeholder, the block and why.
#include <cstdlib>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "integration/external_support.hpp"
#include "support/capability.hpp"

namespace strata::test {
namespace {

// 64 MiB by default; STRATA_TEST_HANDLE_BLOCK_MIB sets another size for a
// manual run (docs/runtime.md quotes one of 1024).
std::size_t block_bytes() {
    const char* mib = std::getenv("STRATA_TEST_HANDLE_BLOCK_MIB");
    return (mib != nullptr ? std::strtoull(mib, nullptr, 10) : 64) << 20U;
}

Bytes pattern(std::size_t size) {
    Bytes bytes(size);
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>((i * 131U + 7U) >> 3U);
    return bytes;
}

// The sum of the block's native 64-bit words, modulo 2^64, as numpy computes it.
std::uint64_t word_sum(const Bytes& bytes) {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i + 8 <= bytes.size(); i += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, bytes.data() + i, 8);
        sum += word;
    }
    return sum;
}

// The text of the number after "key": in the reader's JSON line; empty when absent.
const char* number_at(const std::string& json, const std::string& key) {
    const auto at = json.find("\"" + key + "\": ");
    return at == std::string::npos ? "" : json.c_str() + at + key.size() + 4;
}
long long field(const std::string& json, const std::string& key) {
    return std::strtoll(number_at(json, key), nullptr, 10);
}

std::string reader_config() {
    return "[t]\ncommand = \"" + venv_python() + " " + STRATA_SOURCE_DIR +
           "/tests/support/read_block_by_handle.py [handle:0]\"\nstdout = \"[out:0]\"\nenv = { PYTHONPATH = \"" +
           STRATA_PYTHON_DIR + "\" }\n";
}

TEST(ExternalHandle, a_python_task_reads_a_shared_block_by_handle_without_copying_it) {
    STRATA_REQUIRE(::access(venv_python().c_str(), X_OK) == 0, "the project's venv python (scripts/bootstrap)");
    const std::size_t size = block_bytes();
    ExternalScenario sc;
    sc.config = reader_config();
    sc.inputs = {pattern(size)};
    sc.placement = ocr::DbPlacement::shared;
    const std::uint64_t expected = word_sum(sc.inputs[0]);
    auto out = run_external(std::move(sc));
    ASSERT_EQ(out.status.state, OCR_EXTERNAL_OK) << "exit " << out.status.exitCode;
    ASSERT_TRUE(out.outputs.at(0).has_value());
    const std::string json = text_of(*out.outputs[0]);
    std::printf("reader (block of %zu MiB): %s", size >> 20U, json.c_str());
    EXPECT_EQ(field(json, "size"), static_cast<long long>(size)) << json;
    EXPECT_NE(json.find("\"dtype\": \"uint8\""), std::string::npos) << json;
    EXPECT_EQ(std::strtoull(number_at(json, "checksum"), nullptr, 10), expected) << json;
    EXPECT_NE(json.find("\"write_refused\": true"), std::string::npos)
        << "an input's handle must be read-only: " << json;
    // Zero-copy: every page of the block became resident as shared memory
    // (mapped from the segment), and anonymous memory grew by far less than
    // one copy of it.
    EXPECT_GE(field(json, "shmem_growth"), static_cast<long long>(size)) << json;
    EXPECT_LT(field(json, "anon_growth"), static_cast<long long>(size / 8)) << json;
}

TEST(ExternalHandle, a_handle_placeholder_on_a_block_in_memory_is_refused_naming_the_placeholder_and_the_placement) {
    ExternalScenario sc;
    sc.config = "[t]\ncommand = \"cat [handle:0]\"\nstdout = \"[out:0]\"\n";
    sc.inputs = {bytes_of("12345678")};
    sc.placement = ocr::DbPlacement::memory;
    testing::internal::CaptureStderr();
    auto out = run_external(std::move(sc));
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_EQ(out.status.state, OCR_EXTERNAL_NO_START);
    EXPECT_NE(log.find("[handle:0]"), std::string::npos) << log;
    EXPECT_NE(log.find("placed in memory (heap), not in shared memory"), std::string::npos) << log;
    EXPECT_NE(log.find("OCR_HINT_DB_INTER or STRATA_OCR_DB_PLACEMENT=shared"), std::string::npos) << log;
}

}  // namespace
}  // namespace strata::test
