// SPDX-License-Identifier: MIT
// Reusing a storage file (docs/regions.md, "Reusing a file"): a symbolic link
// or a file another user planted is refused, naming the file, its owner and
// its mode, and left as it was; allow_other_owner accepts it on purpose;
// create_only never opens an existing file. The planter runs as nobody
// through setpriv (root needed: a failure under CI=true, else skipped).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/capability.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace {

using strata::Errc;
using strata::Region;
using strata::StorageOptions;
using strata::test::fails_with;
using strata::test::page_size;

constexpr uid_t kNobody = 65534;

std::string content_of(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A directory anyone may write to (like /tmp), where nobody plants `name`.
class RegionFileOwner : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_EQ(::chmod(dir_.path().c_str(), 01777), 0); }

    // Runs `script` as nobody (sh -c) and checks that it ran as nobody.
    void plant_as_nobody(const std::string& script) {
        STRATA_REQUIRE(strata::test::is_root() && !strata::test::find_program("setpriv").empty(),
                       "root and setpriv, to run a planter as nobody");
        const std::string command =
            fmt::format("setpriv --reuid={0} --regid={0} --clear-groups sh -c 'umask 0; {1}'", kNobody, script);
        ASSERT_EQ(std::system(command.c_str()), 0) << command;
    }

    strata::test::TempDir dir_;
    std::filesystem::path path_ = dir_ / "restart.bin";
};

TEST_F(RegionFileOwner, a_file_planted_by_nobody_is_refused_naming_owner_and_mode_and_left_unchanged) {
    plant_as_nobody(fmt::format("printf PLANTED > {}", path_.string()));
    if (HasFatalFailure() || IsSkipped()) return;
    ASSERT_EQ(strata::test::stat_of(path_).st_uid, kNobody) << "the planter really ran as nobody";

    for (bool read_only : {false, true}) {
        auto sut = Region::storage(page_size(), {.path = path_, .read_only = read_only});
        EXPECT_TRUE(
            fails_with(sut, Errc::permission_denied,
                       {"Region::storage", path_.string(), "uid 65534 (nobody)", "mode 0666", "allow_other_owner"}))
            << "read_only=" << read_only;
    }
    auto combined = Region::combined(4 * page_size(), {.storage = {.path = path_}});
    EXPECT_TRUE(fails_with(combined, Errc::permission_denied, {path_.string(), "uid 65534"}));
    EXPECT_EQ(content_of(path_), "PLANTED") << "the refused calls neither grew nor wrote the file";
    EXPECT_EQ(strata::test::stat_of(path_).st_uid, kNobody);
}

TEST_F(RegionFileOwner, allow_other_owner_maps_another_user_s_file_and_sees_its_data) {
    plant_as_nobody(fmt::format("printf PLANTED > {}", path_.string()));
    if (HasFatalFailure() || IsSkipped()) return;
    STRATA_ASSERT_ASSIGN(sut, Region::storage(7, {.path = path_, .read_only = true, .allow_other_owner = true}));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(sut.data()), 7), "PLANTED");
}

TEST_F(RegionFileOwner, a_symbolic_link_planted_by_nobody_is_refused_and_its_target_untouched) {
    const auto target = dir_ / "victim.bin";
    { std::ofstream(target) << "keep"; }
    plant_as_nobody(fmt::format("ln -s {} {}", target.string(), path_.string()));
    if (HasFatalFailure() || IsSkipped()) return;
    for (bool read_only : {false, true}) {
        auto sut = Region::storage(page_size(), {.path = path_, .read_only = read_only, .allow_other_owner = true});
        EXPECT_TRUE(fails_with(sut, Errc::permission_denied, {path_.string(), "symbolic link"}))
            << "read_only=" << read_only;
    }
    EXPECT_EQ(content_of(target), "keep");
    EXPECT_TRUE(std::filesystem::is_symlink(path_));
}

TEST(RegionFileReuse, a_symbolic_link_of_the_caller_is_refused_too_and_a_dangling_one_is_not_followed) {
    strata::test::TempDir dir;
    const auto link = dir / "link.bin";
    const auto missing = dir / "would-be-created.bin";
    ASSERT_EQ(::symlink(missing.c_str(), link.c_str()), 0);
    auto sut = Region::storage(page_size(), {.path = link});
    EXPECT_TRUE(fails_with(sut, Errc::permission_denied, {link.string(), "symbolic link"}));
    EXPECT_FALSE(std::filesystem::exists(missing)) << "O_CREAT followed the dangling link";
}

TEST(RegionFileReuse, create_only_refuses_an_existing_file_and_creates_a_new_one_0600) {
    strata::test::TempDir dir;
    const auto path = dir / "fresh.bin";
    { std::ofstream(path) << "old"; }
    auto refused = Region::storage(page_size(), {.path = path, .create_only = true});
    EXPECT_TRUE(fails_with(refused, Errc::already_exists, {path.string(), "create_only"}));
    EXPECT_EQ(content_of(path), "old");
    ASSERT_EQ(::unlink(path.c_str()), 0);
    STRATA_ASSERT_ASSIGN(sut, Region::storage(page_size(), {.path = path, .create_only = true}));
    EXPECT_EQ(strata::test::permissions_of(path), 0600U);
}

TEST(RegionFileReuse, the_caller_s_own_file_is_reused_as_before) {
    strata::test::TempDir dir;
    const auto path = dir / "own.bin";
    { std::ofstream(path) << "RESTART"; }
    STRATA_ASSERT_ASSIGN(sut, Region::storage(7, {.path = path}));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(sut.data()), 7), "RESTART");
}

}  // namespace
