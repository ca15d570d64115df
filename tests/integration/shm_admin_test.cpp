// SPDX-License-Identifier: MIT
// `strata shm ls` and `strata shm gc` (list_segments, collect_segments): users
// alive, orphaned segments removed, segments in use never removed.
#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "integration/shm_process.hpp"
#include "unit/shm_test_support.hpp"

namespace strata {
namespace {

using test::fails_with;

/// A child that attaches to the segment and waits to be killed.
pid_t attached_child(const test::ShmFixture& f) {
    int ready[2];
    if (::pipe(ready) != 0) {
        return -1;
    }
    const pid_t pid = test::spawn([&] {
        auto seg = f.open(SegmentMode::open_or_create);
        STRATA_CHILD_CHECK_OK(seg);
        STRATA_CHILD_CHECK(::write(ready[1], "x", 1) == 1);
        for (;;) {
            ::pause();
        }
    });
    char c = 0;
    (void)!::read(ready[0], &c, 1);
    ::close(ready[0]);
    ::close(ready[1]);
    return pid;
}

std::string run_cli(const std::string& args) {
    std::string out;
    FILE* p = ::popen((std::string(STRATA_CLI) + " " + args).c_str(), "r");
    if (p == nullptr) {
        return out;
    }
    char buffer[4096];
    for (std::size_t n = 0; (n = std::fread(buffer, 1, sizeof buffer, p)) > 0;) {
        out.append(buffer, n);
    }
    ::pclose(p);
    return out;
}

TEST(ShmAdmin, list_segments_shows_size_users_alive_and_age) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(first, f.open(SegmentMode::create_only));
    STRATA_ASSERT_ASSIGN(second, f.open(SegmentMode::open_only, 0));
    STRATA_ASSERT_ASSIGN(listed, list_segments(f.dir.path()));
    ASSERT_EQ(listed.size(), 1U);
    EXPECT_EQ(listed[0].name, f.name);
    EXPECT_EQ(listed[0].size, test::kSegmentBytes);
    EXPECT_EQ(listed[0].users_alive, 2U);
    EXPECT_GE(listed[0].age_seconds, 0.0);
    EXPECT_LT(listed[0].age_seconds, 60.0);
    EXPECT_TRUE(listed[0].complete);
    EXPECT_EQ(listed[0].broken_reason, "");
}

TEST(ShmAdmin, gc_removes_a_segment_whose_users_all_died_and_never_one_in_use) {
    test::ShmFixture orphan;
    test::ShmFixture in_use;
    in_use.options.dir = orphan.dir.path();
    const pid_t victim = attached_child(orphan);
    ASSERT_GT(victim, 0);
    STRATA_ASSERT_ASSIGN(kept, in_use.open(SegmentMode::create_only));
    ::kill(victim, SIGKILL);
    test::wait_for_child(victim);

    STRATA_ASSERT_ASSIGN(before, list_segments(orphan.dir.path()));
    ASSERT_EQ(before.size(), 2U);
    for (const auto& s : before) {
        EXPECT_EQ(s.users_alive, s.name == orphan.name ? 0U : 1U) << s.name;
    }
    STRATA_ASSERT_ASSIGN(removed, collect_segments(orphan.dir.path()));
    EXPECT_EQ(removed, std::vector<std::string>{orphan.name});
    STRATA_ASSERT_ASSIGN(after, list_segments(orphan.dir.path()));
    ASSERT_EQ(after.size(), 1U);
    EXPECT_EQ(after[0].name, in_use.name);
    STRATA_EXPECT_OK(kept.simple<int>("still usable", 1));
}

TEST(ShmAdmin, gc_with_a_name_prefix_removes_only_the_dead_segments_it_names) {
    test::ShmFixture named;
    test::ShmFixture other;
    other.options.dir = named.dir.path();
    named.name = "job-a-" + named.name.substr(0, 100);
    other.name = "job-b-" + other.name.substr(0, 100);
    for (const auto* f : {&named, &other}) {
        const pid_t victim = attached_child(*f);
        ASSERT_GT(victim, 0);
        ::kill(victim, SIGKILL);
        test::wait_for_child(victim);
    }
    STRATA_ASSERT_ASSIGN(removed, collect_segments(named.dir.path(), "job-a-"));
    EXPECT_EQ(removed, std::vector<std::string>{named.name});
    STRATA_ASSERT_ASSIGN(after, list_segments(named.dir.path()));
    ASSERT_EQ(after.size(), 1U);
    EXPECT_EQ(after[0].name, other.name);
}

TEST(ShmAdmin, gc_with_a_name_prefix_removes_a_lock_file_whose_creator_died_before_the_segment_file) {
    test::ShmFixture f;
    const auto held = f.dir / "strata.job-a-held.lock";
    std::ofstream(f.dir / "strata.job-a-orphan.lock");
    std::ofstream(f.dir / "strata.job-b-orphan.lock");
    std::ofstream(held.string());
    const int fd = ::open(held.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_len = 1;
    ASSERT_EQ(::fcntl(fd, F_OFD_SETLK, &fl), 0);  // a creator at work holds the guard
    STRATA_ASSERT_ASSIGN(unscoped, collect_segments(f.dir.path()));
    EXPECT_TRUE(unscoped.empty());
    STRATA_ASSERT_ASSIGN(removed, collect_segments(f.dir.path(), "job-a-"));
    EXPECT_EQ(removed, std::vector<std::string>{"job-a-orphan"});
    EXPECT_TRUE(std::filesystem::exists(held));
    EXPECT_TRUE(std::filesystem::exists(f.dir / "strata.job-b-orphan.lock"));
    ::close(fd);
}

TEST(ShmAdmin, gc_removes_a_segment_file_without_a_lock_file_or_header) {
    test::ShmFixture f;
    std::ofstream(f.seg_file()) << "not a segment";
    STRATA_ASSERT_ASSIGN(listed, list_segments(f.dir.path()));
    ASSERT_EQ(listed.size(), 1U);
    EXPECT_FALSE(listed[0].complete);
    STRATA_ASSERT_ASSIGN(removed, collect_segments(f.dir.path()));
    EXPECT_EQ(removed.size(), 1U);
    EXPECT_TRUE(f.dir.entries().empty());
}

TEST(ShmAdmin, a_missing_directory_is_an_error_naming_it) {
    EXPECT_TRUE(fails_with(list_segments("/nonexistent/strata-shm"), Errc::not_found, {"/nonexistent/strata-shm"}));
    EXPECT_TRUE(fails_with(collect_segments("/nonexistent/strata-shm"), Errc::not_found, {"/nonexistent/strata-shm"}));
}

TEST(ShmAdmin, strata_shm_ls_and_gc_print_json) {
    test::ShmFixture f;
    const pid_t victim = attached_child(f);
    ASSERT_GT(victim, 0);
    const auto ls = nlohmann::json::parse(run_cli("shm ls --json --dir " + f.dir.path().string()));
    ASSERT_EQ(ls["segments"].size(), 1U);
    EXPECT_EQ(ls["segments"][0]["name"], f.name);
    EXPECT_EQ(ls["segments"][0]["users_alive"], 1);
    EXPECT_EQ(ls["segments"][0]["size"], test::kSegmentBytes);
    const auto gc_in_use = nlohmann::json::parse(run_cli("shm gc --json --dir " + f.dir.path().string()));
    EXPECT_TRUE(gc_in_use["removed"].empty()) << "never one in use";
    ::kill(victim, SIGKILL);
    test::wait_for_child(victim);
    const auto gc = nlohmann::json::parse(run_cli("shm gc --json --dir " + f.dir.path().string()));
    ASSERT_EQ(gc["removed"].size(), 1U);
    EXPECT_EQ(gc["removed"][0], f.name);
    const std::string table = run_cli("shm ls --dir " + f.dir.path().string());
    EXPECT_NE(table.find("no strata segments"), std::string::npos) << table;
}

}  // namespace
}  // namespace strata
