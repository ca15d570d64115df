// SPDX-License-Identifier: MIT
// ocrDbCheckpoint (ocr-db-checkpoint.h): a block saved in one run is restored
// into a new block of a later run, for every placement; a SAVE killed at any
// moment leaves the previous checkpoint whole, and the next SAVE removes its
// temporary file; bad requests are refused naming the path and the cause.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "ocr/extensions/ocr-db-checkpoint.h"
#include "ocr/ocr.h"
#include "support/process.hpp"
#include "support/resources.hpp"
#include "unit/runtime_ocr_support.hpp"

namespace {

namespace fs = std::filesystem;
using strata::ocr::DbPlacement;
using strata::test::run_ocr_program;

constexpr u64 block_bytes = (8U << 20U) + 123U;  // not a page multiple: the file keeps the exact size

std::string g_path;
std::atomic<int> g_save_rc{-1};
std::atomic<int> g_restore_rc{-1};
std::atomic<u64> g_wrong{~u64{0}};
std::optional<strata::RegionKind> g_kind;  // of the saved block; nullopt: heap, memfd

unsigned char pattern(u64 i, unsigned seed) {
    return static_cast<unsigned char>((i * 131U + seed) >> 3U);
}

// Run 1: fills a new block with pattern(seed 7) and saves it.
ocrGuid_t save_edt(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t db;
    unsigned char* data = nullptr;
    ocrDbCreate(&db, reinterpret_cast<void**>(&data), block_bytes, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    for (u64 i = 0; i < block_bytes; ++i) data[i] = pattern(i, 7);
    auto info = strata::ocr::db_info(db);
    g_kind = info && (info->kind != strata::RegionKind::memory) ? std::optional(info->kind) : std::nullopt;
    g_save_rc = ocrDbCheckpoint(db, g_path.c_str(), OCR_DB_CHECKPOINT_SAVE);
    ocrDbDestroy(db);
    ocrShutdown();
    return NULL_GUID;
}

// Run 2 (the restart): a new block of the same size, restored, then checked.
ocrGuid_t restore_edt(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t db;
    unsigned char* data = nullptr;
    ocrDbCreate(&db, reinterpret_cast<void**>(&data), block_bytes, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    g_restore_rc = ocrDbCheckpoint(db, g_path.c_str(), OCR_DB_CHECKPOINT_RESTORE);
    u64 wrong = 0;
    for (u64 i = 0; i < block_bytes; ++i) wrong += data[i] != pattern(i, 7) ? 1U : 0U;
    g_wrong = wrong;
    ocrDbDestroy(db);
    ocrShutdown();
    return NULL_GUID;
}

template <ocrEdt_t F>
int run_one(DbPlacement placement) {
    return run_ocr_program(
        [](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
            ocrGuid_t tpl, edt;
            ocrEdtTemplateCreate(&tpl, F, 0, 0);
            ocrEdtCreate(&edt, tpl, 0, nullptr, 0, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
            return NULL_GUID;
        },
        {}, placement);
}

class RuntimeOcrDbCheckpoint : public ::testing::TestWithParam<DbPlacement> {};

TEST_P(RuntimeOcrDbCheckpoint, a_block_saved_in_one_run_is_restored_into_a_new_block_of_the_next_run) {
    strata::test::TempDir dir;
    g_path = (dir / "field.ckpt").string();
    g_save_rc = g_restore_rc = -1;
    ASSERT_EQ(run_one<save_edt>(GetParam()), 0);
    ASSERT_EQ(g_save_rc.load(), 0);
    switch (GetParam()) {
        case DbPlacement::storage: EXPECT_EQ(g_kind, strata::RegionKind::storage); break;
        case DbPlacement::combined: EXPECT_EQ(g_kind, strata::RegionKind::combined); break;
        case DbPlacement::shared: EXPECT_EQ(g_kind, strata::RegionKind::shared); break;
        default: EXPECT_EQ(g_kind, std::nullopt); break;
    }
    // The file holds exactly the block, read here without strata.
    std::ifstream file(g_path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    ASSERT_EQ(bytes.size(), block_bytes);
    for (u64 i = 0; i < block_bytes; ++i) {
        ASSERT_EQ(static_cast<unsigned char>(bytes[i]), pattern(i, 7)) << "byte " << i;
    }
    struct stat st {};
    ASSERT_EQ(::stat(g_path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777U, 0600U);
    ASSERT_EQ(run_one<restore_edt>(GetParam()), 0);
    EXPECT_EQ(g_restore_rc.load(), 0);
    EXPECT_EQ(g_wrong.load(), 0U) << "bytes that differ after the restore";
    EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1)
        << "a temporary file was left beside the checkpoint";
}

INSTANTIATE_TEST_SUITE_P(Placements, RuntimeOcrDbCheckpoint,
                         ::testing::Values(DbPlacement::storage, DbPlacement::combined, DbPlacement::memory,
                                           DbPlacement::shared, DbPlacement::memfd),
                         [](const auto& param) { return std::string(strata::ocr::to_string(param.param)); });

// The child's program: a 32 MiB storage block filled with round r's value,
// saved, for r = 1, 2, ... until it is killed.
ocrGuid_t save_forever(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t db;
    unsigned char* data = nullptr;
    constexpr u64 size = 32U << 20U;
    ocrDbCreate(&db, reinterpret_cast<void**>(&data), size, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    for (unsigned round = 1;; ++round) {
        std::memset(data, static_cast<int>(round & 0xFFU), size);
        if (ocrDbCheckpoint(db, g_path.c_str(), OCR_DB_CHECKPOINT_SAVE) != 0) std::_Exit(3);
    }
}

TEST(RuntimeOcrDbCheckpointCrash, a_save_killed_midway_leaves_the_previous_checkpoint_whole) {
    strata::test::TempDir dir;
    g_path = (dir / "field.ckpt").string();
    const std::string tmp_prefix = "field.ckpt.tmp-";
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        run_one<save_forever>(DbPlacement::storage);
        std::_Exit(2);
    }
    // Kill it while a later save is under way: a checkpoint exists and a temporary file too.
    bool saving = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!saving && std::chrono::steady_clock::now() < deadline) {
        bool tmp = false;
        for (const auto& e : fs::directory_iterator(dir.path()))
            tmp = tmp || e.path().filename().string().starts_with(tmp_prefix);
        saving = tmp && fs::exists(g_path);
        if (!saving) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    ::kill(child, SIGKILL);
    const auto status = strata::test::wait_for_child(child);
    ASSERT_TRUE(saving) << "no save was seen under way in 60 s";
    ASSERT_TRUE(status.signaled) << "the saving child ended by itself (exit " << status.exit_code << ")";
    // The checkpoint is one whole round: every byte the same, nonzero value.
    std::ifstream file(g_path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    ASSERT_EQ(bytes.size(), 32U << 20U);
    const char round = bytes[0];
    EXPECT_NE(round, 0);
    EXPECT_EQ(std::count(bytes.begin(), bytes.end(), round), static_cast<std::ptrdiff_t>(bytes.size()))
        << "the checkpoint mixes two rounds";
    // The next save (another process: this one) removes the dead child's temporary file.
    g_save_rc = -1;
    ASSERT_EQ(run_one<save_edt>(DbPlacement::memory), 0);
    EXPECT_EQ(g_save_rc.load(), 0);
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(dir.path())) left.push_back(e.path().filename().string());
    EXPECT_EQ(left, std::vector<std::string>{"field.ckpt"});
}

std::atomic<int> g_rc_a{-1}, g_rc_b{-1}, g_rc_c{-1}, g_rc_d{-1};

ocrGuid_t bad_requests(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t db;
    void* data = nullptr;
    ocrDbCreate(&db, &data, 4096, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    g_rc_a = ocrDbCheckpoint(db, "", OCR_DB_CHECKPOINT_SAVE);
    g_rc_b = ocrDbCheckpoint(db, g_path.c_str(), OCR_DB_CHECKPOINT_RESTORE);  // holds 5 bytes
    g_rc_c = ocrDbCheckpoint(db, (g_path + ".link").c_str(), OCR_DB_CHECKPOINT_RESTORE);
    g_rc_d = ocrDbCheckpoint(db, (g_path + "/no/such/dir/x").c_str(), OCR_DB_CHECKPOINT_SAVE);
    ocrDbDestroy(db);
    ocrShutdown();
    return NULL_GUID;
}

TEST(RuntimeOcrDbCheckpointErrors, bad_requests_are_refused_naming_the_path_and_the_cause_and_leave_nothing) {
    strata::test::TempDir dir;
    g_path = (dir / "small").string();
    { std::ofstream(g_path) << "12345"; }
    fs::create_symlink(g_path, g_path + ".link");
    testing::internal::CaptureStderr();
    ASSERT_EQ(run_one<bad_requests>(DbPlacement::memory), 0);
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_EQ(g_rc_a.load(), OCR_EINVAL);
    EXPECT_NE(log.find("path is empty"), std::string::npos) << log;
    EXPECT_EQ(g_rc_b.load(), OCR_EINVAL);
    EXPECT_NE(log.find("path=" + g_path + ": holds 5 bytes, the data block 4096"), std::string::npos) << log;
    EXPECT_EQ(g_rc_c.load(), OCR_EACCES);
    EXPECT_NE(log.find(g_path + ".link: a symbolic link"), std::string::npos) << log;
    EXPECT_NE(g_rc_d.load(), 0);
    EXPECT_NE(log.find("creating the temporary file"), std::string::npos) << log;
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(dir.path())) left.push_back(e.path().filename().string());
    std::sort(left.begin(), left.end());
    EXPECT_EQ(left, (std::vector<std::string>{"small", "small.link"}));
}

}  // namespace
