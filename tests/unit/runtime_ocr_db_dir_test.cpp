// SPDX-License-Identifier: MIT
// Storage data blocks never reuse a planted file (docs/runtime.md, "Data
// blocks on storage"): each run's blocks live in its own mkdtemp directory
// (0700), created O_EXCL; the directory goes with the run, and the directory
// of a run that was killed is removed by the next run and by collect_db_dirs
// (what `strata shm gc` calls), never one of a live run.
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runtime_ocr_support.hpp"
#include "support/process.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace {

using strata::ocr::DbPlacement;
using strata::test::run_ocr_program;

std::filesystem::path g_base;
std::string g_block_path;
struct stat g_dir_stat {};
struct stat g_file_stat {};

int run_in(const std::filesystem::path& base, ocrEdt_t main_edt) {
    strata::ocr::OcrOptions options;
    options.runtime.monitor = strata::runtime::no_monitor();
    options.db_placement = DbPlacement::storage;
    options.db_dir = base;
    char name[] = "test";
    char* argv[] = {name};
    auto code = strata::ocr::run_ocr(main_edt, 1, argv, options);
    EXPECT_TRUE(code.has_value()) << (code ? "" : code.error().what());
    return code ? *code : -1;
}

// Creates a storage block, records where it lives, writes it, shuts down.
ocrGuid_t one_storage_block(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t db;
    u64* data = nullptr;
    if (ocrDbCreate(&db, reinterpret_cast<void**>(&data), 1 << 16, DB_PROP_NONE, NULL_HINT, NO_ALLOC) != 0) {
        ocrAbort(3);
        return NULL_GUID;
    }
    data[0] = 42;
    auto info = strata::ocr::db_info(db);
    if (info) {
        g_block_path = info->path.string();
        ::lstat(info->path.parent_path().c_str(), &g_dir_stat);
        ::lstat(info->path.c_str(), &g_file_stat);
    }
    ocrShutdown();
    return NULL_GUID;
}

std::vector<std::string> entries_of(const std::filesystem::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
    return names;
}

TEST(RuntimeOcrDbDir, a_storage_block_lives_in_a_private_mkdtemp_directory_of_the_run_removed_at_its_end) {
    strata::test::TempDir base;
    ASSERT_EQ(run_in(base.path(), one_storage_block), 0);
    const std::filesystem::path block(g_block_path);
    const std::string dir_name = block.parent_path().filename().string();
    EXPECT_EQ(block.parent_path().parent_path(), base.path()) << g_block_path;
    EXPECT_TRUE(dir_name.starts_with(fmt::format("strata-ocr-{}-", ::getpid()))) << dir_name;
    EXPECT_EQ(dir_name.size(), fmt::format("strata-ocr-{}-XXXXXX", ::getpid()).size()) << dir_name;
    EXPECT_TRUE(S_ISDIR(g_dir_stat.st_mode)) << "the block's directory is a directory, not " << g_dir_stat.st_mode;
    EXPECT_EQ(g_dir_stat.st_mode & 07777, 0700U);
    EXPECT_EQ(g_dir_stat.st_uid, ::geteuid());
    EXPECT_TRUE(S_ISREG(g_file_stat.st_mode));
    EXPECT_EQ(g_file_stat.st_mode & 07777, 0600U);
    EXPECT_EQ(entries_of(base.path()), std::vector<std::string>{}) << "the run leaves neither file nor directory";
}

TEST(RuntimeOcrDbDir, links_and_files_planted_at_the_old_predictable_names_are_neither_followed_nor_changed) {
    strata::test::TempDir base;
    const auto victim = base / "victim";
    { std::ofstream(victim) << "keep"; }
    // The names the runtime used to take, for the first blocks of this process.
    for (int n = 0; n < 64; ++n) {
        const auto planted = base / fmt::format("strata-ocr-{}-{}.db", ::getpid(), n);
        ASSERT_EQ(::symlink(victim.c_str(), planted.c_str()), 0);
    }
    ASSERT_EQ(run_in(base.path(), one_storage_block), 0);
    EXPECT_EQ(std::filesystem::file_size(victim), 4U) << "a block was placed in the planted link's target";
    std::ifstream in(victim);
    std::string content;
    in >> content;
    EXPECT_EQ(content, "keep");
    EXPECT_NE(std::filesystem::path(g_block_path).parent_path(), base.path());
    EXPECT_EQ(entries_of(base.path()).size(), 65U) << "the run removed only what it made";
}

// A child runs a storage block and is killed inside its EDT, or waits there
// until `release` is written: a dead or a live run's directory.
ocrGuid_t block_then_kill(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t db;
    void* data = nullptr;
    ocrDbCreate(&db, &data, 4096, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    ::raise(SIGKILL);
    return NULL_GUID;
}

int g_release_fd = -1;
int g_ready_fd = -1;
ocrGuid_t block_then_wait(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t db;
    void* data = nullptr;
    ocrDbCreate(&db, &data, 4096, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    char byte = 1;
    (void)!::write(g_ready_fd, &byte, 1);
    (void)!::read(g_release_fd, &byte, 1);
    ocrShutdown();
    return NULL_GUID;
}

std::vector<std::filesystem::path> run_dirs(const std::filesystem::path& base) {
    std::vector<std::filesystem::path> dirs;
    for (const auto& e : std::filesystem::directory_iterator(base)) {
        if (e.path().filename().string().starts_with("strata-ocr-")) dirs.push_back(e.path());
    }
    return dirs;
}

TEST(RuntimeOcrDbDir, the_directory_of_a_killed_run_is_removed_by_the_next_run_and_a_live_run_s_is_kept) {
    strata::test::TempDir base;
    const auto killed = strata::test::run_in_child([&] { return run_in(base.path(), block_then_kill); });
    ASSERT_TRUE(killed.signaled && killed.signal == SIGKILL) << killed.describe();
    const auto stale = run_dirs(base.path());
    ASSERT_EQ(stale.size(), 1U) << "the killed run left its directory";
    ASSERT_EQ(entries_of(stale[0]).size(), 2U) << "and its blocks' files (the argument block and the EDT's)";

    int ready[2], release[2];
    ASSERT_EQ(::pipe(ready), 0);
    ASSERT_EQ(::pipe(release), 0);
    const pid_t live = ::fork();
    ASSERT_GE(live, 0);
    if (live == 0) {
        ::close(ready[0]);
        ::close(release[1]);  // a parent that dies ends the wait
        g_ready_fd = ready[1];
        g_release_fd = release[0];
        ::_exit(run_in(base.path(), block_then_wait) == 0 ? 0 : 1);
    }
    char byte = 0;
    ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "the live run made its block";
    const auto left = run_dirs(base.path());
    ASSERT_EQ(left.size(), 1U) << "the next run (the live one) removed the killed run's directory";
    EXPECT_NE(left[0], stale[0]);
    EXPECT_TRUE(left[0].filename().string().starts_with(fmt::format("strata-ocr-{}-", live))) << left[0];

    // Another run beside the live one keeps the live run's directory and removes its own.
    ASSERT_EQ(run_in(base.path(), one_storage_block), 0);
    EXPECT_EQ(run_dirs(base.path()), left);

    // collect_db_dirs (strata shm gc) keeps the live run's directory too.
    STRATA_ASSERT_ASSIGN(collected, strata::ocr::collect_db_dirs(base.path()));
    EXPECT_TRUE(collected.empty());
    ASSERT_EQ(::write(release[1], &byte, 1), 1);
    const auto status = strata::test::wait_for_child(live);
    EXPECT_TRUE(status.succeeded()) << status.describe();
    EXPECT_TRUE(run_dirs(base.path()).empty()) << "the live run removed its own directory at its end";
    for (int fd : {ready[0], ready[1], release[0], release[1]}) ::close(fd);
}

TEST(RuntimeOcrDbDir, collect_db_dirs_removes_a_killed_run_s_directory_and_ignores_other_names) {
    strata::test::TempDir base;
    const auto killed = strata::test::run_in_child([&] { return run_in(base.path(), block_then_kill); });
    ASSERT_TRUE(killed.signaled) << killed.describe();
    const auto stale = run_dirs(base.path());
    ASSERT_EQ(stale.size(), 1U);
    ASSERT_EQ(::mkdir((base / "strata-ocr-notapid-abcdef").c_str(), 0700), 0);
    { std::ofstream(base / "strata-ocr-1-2.db") << "an old-style file is not ours to judge"; }
    STRATA_ASSERT_ASSIGN(collected, strata::ocr::collect_db_dirs(base.path()));
    ASSERT_EQ(collected.size(), 1U);
    EXPECT_EQ(collected[0], stale[0]);
    EXPECT_FALSE(std::filesystem::exists(stale[0]));
    EXPECT_EQ(entries_of(base.path()).size(), 2U) << "other names are left alone";
}

}  // namespace
