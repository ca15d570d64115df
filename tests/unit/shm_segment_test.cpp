// SPDX-License-Identifier: MIT
// Segment::open modes, permissions, names, sizes and lifecycle.
#include <sys/stat.h>

#include <csignal>

#include <gtest/gtest.h>

#include "support/process.hpp"
#include "unit/shm_test_support.hpp"

namespace strata {
namespace {

using test::fails_with;

mode_t permissions_of(const std::filesystem::path& p) {
    struct stat st {};
    ::stat(p.c_str(), &st);
    return st.st_mode & 0777;
}

TEST(ShmSegment, create_only_makes_a_segment_file_and_a_lock_file_readable_only_by_the_owner) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(sut, f.open(SegmentMode::create_only));
    EXPECT_EQ(sut.size(), test::kSegmentBytes);
    EXPECT_EQ(sut.name(), f.name);
    EXPECT_NE(sut.id(), 0U);
    EXPECT_EQ(permissions_of(f.seg_file()), 0600U);
    EXPECT_EQ(permissions_of(f.lock_file()), 0600U);
    EXPECT_GT(sut.free_bytes(), test::kSegmentBytes / 2);
    EXPECT_EQ(sut.broken_reason(), "");
}

TEST(ShmSegment, group_access_creates_the_files_readable_and_writable_by_the_group) {
    test::ShmFixture f;
    f.options.group_access = true;
    STRATA_ASSERT_ASSIGN(sut, f.open(SegmentMode::create_only));
    EXPECT_EQ(permissions_of(f.seg_file()), 0660U);
    EXPECT_EQ(permissions_of(f.lock_file()), 0660U);
}

TEST(ShmSegment, create_only_on_an_existing_segment_fails_with_already_exists) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(first, f.open(SegmentMode::create_only));
    EXPECT_TRUE(fails_with(f.open(SegmentMode::create_only), Errc::already_exists, {f.name, "create_only"}));
    EXPECT_EQ(first.broken_reason(), "");
}

TEST(ShmSegment, open_only_on_a_missing_segment_fails_with_not_found_and_leaves_no_file) {
    test::ShmFixture f;
    EXPECT_TRUE(fails_with(f.open(SegmentMode::open_only, 0), Errc::not_found, {f.name, "open_only"}));
    EXPECT_TRUE(fails_with(f.open(SegmentMode::read_only, 0), Errc::not_found, {f.name, "read_only"}));
    EXPECT_TRUE(f.dir.entries().empty());
}

TEST(ShmSegment, open_or_create_creates_once_and_then_opens_the_same_segment) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(first, f.open(SegmentMode::open_or_create));
    STRATA_ASSERT_ASSIGN(second, f.open(SegmentMode::open_or_create, 8U << 20U));
    EXPECT_EQ(first.id(), second.id());
    EXPECT_EQ(second.size(), test::kSegmentBytes) << "opening never resizes";
    EXPECT_NE(first.user_slot(), second.user_slot());
}

TEST(ShmSegment, open_only_maps_the_segment_at_another_address_and_sees_the_same_objects) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(writer, f.open(SegmentMode::create_only));
    STRATA_ASSERT_ASSIGN(reader, f.open(SegmentMode::open_only, 0));
    EXPECT_NE(writer.base(), reader.base());
    STRATA_ASSERT_ASSIGN(value, writer.simple<int>("answer", 42));
    STRATA_ASSERT_ASSIGN(seen, reader.find<int>("answer"));
    EXPECT_EQ(*seen, 42);
    *value = 43;
    EXPECT_EQ(*seen, 43);
}

TEST(ShmSegment, recreate_replaces_the_segment_with_a_new_one) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(old_user, f.open(SegmentMode::create_only));
    STRATA_ASSERT_OK(old_user.simple<int>("x", 1));
    STRATA_ASSERT_ASSIGN(sut, f.open(SegmentMode::recreate));
    EXPECT_NE(sut.id(), old_user.id());
    EXPECT_TRUE(fails_with(sut.find<int>("x"), Errc::not_found, {"x"}));
    STRATA_ASSERT_ASSIGN(x, old_user.find<int>("x"));
    EXPECT_EQ(*x, 1) << "the old user keeps its mapping";
    STRATA_ASSERT_OK(old_user.close());
    EXPECT_TRUE(std::filesystem::exists(f.seg_file())) << "closing the old segment must not remove the new one";
}

TEST(ShmSegment, read_only_finds_objects_but_creates_and_erases_nothing) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(writer, f.open(SegmentMode::create_only));
    STRATA_ASSERT_OK(writer.simple<double>("pi", 3.25));
    STRATA_ASSERT_ASSIGN(sut, f.open(SegmentMode::read_only, 0));
    EXPECT_TRUE(sut.is_read_only());
    STRATA_ASSERT_ASSIGN(pi, sut.find<double>("pi"));
    EXPECT_EQ(*pi, 3.25);
    EXPECT_TRUE(fails_with(sut.simple<int>("new", 1), Errc::permission_denied, {"read_only"}));
    EXPECT_TRUE(fails_with(sut.erase<double>("pi"), Errc::permission_denied, {"read_only"}));
}

TEST(ShmSegment, a_store_through_a_read_only_segment_faults) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(writer, f.open(SegmentMode::create_only));
    STRATA_ASSERT_OK(writer.simple<double>("pi", 3.25));
    const auto status = test::run_in_child([&] {
        auto sut = f.open(SegmentMode::read_only, 0);
        STRATA_CHILD_CHECK_OK(sut);
        auto pi = sut->find<double>("pi");
        STRATA_CHILD_CHECK_OK(pi);
        // The kernel's verdict, not a sanitizer's: ASan catches SIGSEGV to
        // report it and exits instead of dying by the signal.
        struct sigaction default_action {};
        default_action.sa_handler = SIG_DFL;
        ::sigaction(SIGSEGV, &default_action, nullptr);
        *const_cast<volatile double*>(*pi) = 1.0;
        return 0;
    });
    EXPECT_TRUE(status.signaled && status.signal == SIGSEGV) << status.describe();
}

TEST(ShmSegment, bad_names_are_invalid_arguments_naming_the_value) {
    test::ShmFixture f;
    EXPECT_TRUE(fails_with(Segment::open("", SegmentMode::create_only, test::kSegmentBytes, f.options),
                           Errc::invalid_argument, {"name="}));
    EXPECT_TRUE(fails_with(Segment::open("a/b", SegmentMode::create_only, test::kSegmentBytes, f.options),
                           Errc::invalid_argument, {"a/b", "'/'"}));
    EXPECT_TRUE(
        fails_with(Segment::open(std::string(201, 'x'), SegmentMode::create_only, test::kSegmentBytes, f.options),
                   Errc::invalid_argument, {"1..200"}));
    EXPECT_TRUE(fails_with(Segment::open("..", SegmentMode::create_only, test::kSegmentBytes, f.options),
                           Errc::invalid_argument, {".."}));
    EXPECT_TRUE(f.dir.entries().empty());
}

TEST(ShmSegment, a_size_below_one_mebibyte_is_an_invalid_argument_when_creating) {
    test::ShmFixture f;
    EXPECT_TRUE(fails_with(f.open(SegmentMode::create_only, 4096), Errc::invalid_argument, {"size=4096", "1 MiB"}));
    EXPECT_TRUE(fails_with(f.open(SegmentMode::open_or_create, 0), Errc::invalid_argument, {"size=0"}));
    EXPECT_TRUE(f.dir.entries().empty());
}

TEST(ShmSegment, a_missing_directory_is_not_found) {
    test::ShmFixture f;
    f.options.dir = f.dir / "missing";
    EXPECT_TRUE(fails_with(f.open(SegmentMode::create_only), Errc::not_found, {"missing"}));
}

TEST(ShmSegment, a_mode_outside_the_enum_is_an_invalid_argument) {
    test::ShmFixture f;
    EXPECT_TRUE(fails_with(f.open(static_cast<SegmentMode>(17)), Errc::invalid_argument, {"mode=17"}));
}

TEST(ShmSegment, the_segment_disappears_when_its_last_user_detaches) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(first, f.open(SegmentMode::create_only));
    STRATA_ASSERT_ASSIGN(second, f.open(SegmentMode::open_only, 0));
    STRATA_ASSERT_OK(first.close());
    EXPECT_TRUE(std::filesystem::exists(f.seg_file()));
    EXPECT_TRUE(std::filesystem::exists(f.lock_file()));
    STRATA_ASSERT_OK(second.close());
    EXPECT_TRUE(f.dir.entries().empty());
    EXPECT_FALSE(second.is_open());
    EXPECT_TRUE(fails_with(second.simple<int>("x"), Errc::invalid_argument, {"closed"}));
}

TEST(ShmSegment, a_failed_open_leaves_no_mapping_or_descriptor) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(first, f.open(SegmentMode::create_only));
    const auto before = test::snapshot_resources();
    EXPECT_FALSE(f.open(SegmentMode::create_only).has_value());
    EXPECT_FALSE(Segment::open("other", SegmentMode::open_only, 0, f.options).has_value());
    EXPECT_EQ(test::resources_difference(before, test::snapshot_resources()), "");
}

TEST(ShmSegment, the_default_directory_is_a_private_one_in_dev_shm_unless_strata_shm_dir_says_otherwise) {
    ::unsetenv("STRATA_SHM_DIR");
    EXPECT_EQ(default_segment_dir(), fmt::format("/dev/shm/strata-{}", ::geteuid()));
    {
        const std::string name = test::unique_name("default-dir");
        STRATA_ASSERT_ASSIGN(sut, Segment::open(name, SegmentMode::create_only, test::kSegmentBytes));
        EXPECT_EQ(sut.path(), default_segment_dir() / ("strata." + name + ".seg"));
        struct stat st {};
        ASSERT_EQ(::lstat(default_segment_dir().c_str(), &st), 0);
        EXPECT_TRUE(S_ISDIR(st.st_mode));
        EXPECT_EQ(st.st_uid, ::geteuid());
        EXPECT_EQ(st.st_mode & 07777, 0700U) << "only its user may list, create or remove segments there";
    }
    test::ShmFixture f;
    ::setenv("STRATA_SHM_DIR", f.dir.path().c_str(), 1);
    EXPECT_EQ(default_segment_dir(), f.dir.path());
    {
        STRATA_ASSERT_ASSIGN(sut, Segment::open(f.name, SegmentMode::create_only, test::kSegmentBytes));
        EXPECT_EQ(sut.path(), f.seg_file());
    }
    ::unsetenv("STRATA_SHM_DIR");
}

TEST(ShmSegment, segment_modes_parse_and_print) {
    STRATA_ASSERT_ASSIGN(mode, parse_segment_mode("recreate"));
    EXPECT_EQ(mode, SegmentMode::recreate);
    EXPECT_EQ(to_string(SegmentMode::read_only), "read_only");
    EXPECT_TRUE(fails_with(parse_segment_mode("bogus"), Errc::invalid_argument, {"mode=bogus", "open_or_create"}));
}

}  // namespace
}  // namespace strata
