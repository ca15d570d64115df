// SPDX-License-Identifier: MIT
// The boundaries a segment keeps: read_only is enforced by the kernel, files
// and directories of other users are refused, many attachments work, and
// errors name their condition with a code of its own and a message.
#include <algorithm>
#include <array>
#include <csignal>
#include <fstream>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "support/capability.hpp"
#include "support/process.hpp"
#include "unit/shm_test_support.hpp"

namespace strata {
namespace {

using test::fails_with;

constexpr uid_t kNobody = 65534;

/// Access mode (O_RDONLY, O_RDWR) of every descriptor of this process open on `path`.
std::vector<int> access_modes_of(const std::filesystem::path& path) {
    std::vector<int> modes;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code error;
        if (std::filesystem::read_symlink(entry.path(), error) != path) {
            continue;
        }
        std::ifstream info("/proc/self/fdinfo/" + entry.path().filename().string());
        std::string key;
        std::string value;
        while (info >> key >> value) {
            if (key == "flags:") {
                modes.push_back(static_cast<int>(std::stoul(value, nullptr, 8)) & O_ACCMODE);
            }
        }
    }
    return modes;
}

TEST(ShmBoundary, read_only_opens_both_files_read_only_and_maps_nothing_writable) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(writer, f.open(SegmentMode::create_only));
    STRATA_ASSERT_OK(writer.simple<double>("pi", 3.25));
    STRATA_ASSERT_ASSIGN(sut, f.open(SegmentMode::read_only, 0));
    STRATA_ASSERT_ASSIGN(pi, sut.find<double>("pi"));
    EXPECT_EQ(*pi, 3.25);

    const auto maps = test::read_maps();
    std::size_t mapped = 0;
    for (const auto& m : maps) {
        const auto base = test::address_of(sut.base());
        if (m.start >= base && m.end <= base + sut.size()) {
            EXPECT_EQ(m.perms, "r--s") << m.line;
            mapped += m.end - m.start;
        }
    }
    EXPECT_EQ(mapped, sut.size()) << "the whole segment, header and allocator included, is read-only";
    // The writer holds both files O_RDWR; the reader adds one O_RDONLY descriptor to each.
    for (const auto& file : {f.seg_file(), f.lock_file()}) {
        auto modes = access_modes_of(file);
        std::sort(modes.begin(), modes.end());
        EXPECT_EQ(modes, (std::vector<int>{O_RDONLY, O_RDWR})) << file;
    }
}

TEST(ShmBoundary, a_store_into_the_header_of_a_read_only_segment_faults) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(writer, f.open(SegmentMode::create_only));
    const auto status = test::run_in_child([&] {
        auto sut = f.open(SegmentMode::read_only, 0);
        STRATA_CHILD_CHECK_OK(sut);
        struct sigaction default_action {};
        default_action.sa_handler = SIG_DFL;
        ::sigaction(SIGSEGV, &default_action, nullptr);
        // Byte 64 is in the segment's header (users, broken flag): a reader must not reach it.
        *reinterpret_cast<volatile std::byte*>(sut->base() + 64) = std::byte{1};
        return 0;
    });
    EXPECT_TRUE(status.signaled && status.signal == SIGSEGV) << status.describe();
}

TEST(ShmBoundary, a_reader_finds_names_while_a_writer_keeps_adding_them) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(writer, f.open(SegmentMode::create_only));
    STRATA_ASSERT_ASSIGN(sut, f.open(SegmentMode::read_only, 0));
    for (int i = 0; i < 200; ++i) {
        STRATA_ASSERT_OK(writer.simple<int>(fmt::format("n{}", i), i));
        STRATA_ASSERT_ASSIGN(found, sut.find<int>(fmt::format("n{}", i)));
        ASSERT_EQ(*found, i);
    }
    EXPECT_TRUE(fails_with(sut.find<int>("absent"), Errc::not_found, {"absent"}));
    EXPECT_TRUE(fails_with(sut.port("p", PortRole::consumer), Errc::permission_denied, {"read_only"}));
}

TEST(ShmBoundary, the_last_user_being_a_reader_still_removes_the_segment) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(writer, f.open(SegmentMode::create_only));
    STRATA_ASSERT_ASSIGN(sut, f.open(SegmentMode::read_only, 0));
    STRATA_ASSERT_OK(writer.close());
    EXPECT_TRUE(std::filesystem::exists(f.seg_file())) << "the reader still uses it";
    STRATA_ASSERT_OK(sut.close());
    EXPECT_TRUE(f.dir.entries().empty());
}

TEST(ShmBoundary, more_than_256_attachments_in_one_process_each_allocate) {
    test::ShmFixture f;
    std::vector<Segment> attachments;
    for (int i = 0; i < 300; ++i) {
        STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::open_or_create));
        attachments.push_back(std::move(seg));
    }
    for (std::size_t i = 0; i < attachments.size(); ++i) {
        STRATA_ASSERT_ASSIGN(value, attachments[i].make<strata::vector<int>>(std::size_t{4}));
        ASSERT_EQ(value->size(), 4U) << "attachment " << i;
    }
}

TEST(ShmBoundary, a_segment_whose_broken_flag_was_overwritten_is_corrupted_not_peer_dead) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(sut, f.open(SegmentMode::create_only));
    // The flag's offset in the header: magic 8, version 4, header_bytes 4,
    // segment_id 8, size 8, created 8, next_generation 8 = 48.
    auto* broken = reinterpret_cast<std::atomic<std::uint32_t>*>(sut.base() + 48);
    broken->store(77);
    EXPECT_TRUE(fails_with(sut.make<int>(1), Errc::corrupted, {f.name, "broken flag holds 77"}));
    broken->store(1);  // marked broken by a user that died before writing why
    auto error = sut.find<int>("x");
    EXPECT_TRUE(fails_with(error, Errc::broken, {f.name, "before writing why"}));
    broken->store(0);
}

TEST(ShmBoundary, every_error_code_has_its_own_name_and_too_many_descriptors_is_resource_exhausted) {
    std::set<std::string_view> names;
    for (int c = 0; c <= static_cast<int>(Errc::internal); ++c) {
        const auto name = to_string(static_cast<Errc>(c));
        EXPECT_NE(name, "unknown") << c;
        EXPECT_TRUE(names.insert(name).second) << name;
    }
    EXPECT_EQ(errc_from_errno(EMFILE), Errc::resource_exhausted);
    EXPECT_EQ(errc_from_errno(ENFILE), Errc::resource_exhausted);
}

TEST(ShmBoundary, no_failed_shm_call_returns_an_empty_message) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only));
    STRATA_ASSERT_ASSIGN(reader, f.open(SegmentMode::read_only, 0));
    STRATA_ASSERT_ASSIGN(in, seg.port("p", PortRole::consumer));
    std::vector<Error> errors;
    auto collect = [&](auto&& result) {
        ASSERT_FALSE(result.has_value());
        errors.push_back(result.error());
    };
    collect(f.open(SegmentMode::create_only));
    collect(Segment::open("", SegmentMode::create_only, test::kSegmentBytes, f.options));
    collect(Segment::open("x", SegmentMode::open_only, 0, f.options));
    collect(seg.find<int>("absent"));
    collect(seg.find<int>(std::string("a\0b", 3)));
    collect(seg.load<int>(Handle{}));
    collect(seg.load<int>(Handle{1, 2, 3, 4}));
    collect(seg.make<std::array<char, 64U << 20U>>());
    collect(reader.make<int>(1));
    collect(reader.port("p", PortRole::producer));
    collect(seg.port("p", PortRole::consumer));
    collect(seg.port("p", PortRole::consumer, {.slots = 9}));
    collect(in.recv(std::chrono::milliseconds(1)));
    collect(in.loan());
    collect(parse_port_sync("busy-poll"));
    for (const auto& e : errors) {
        EXPECT_NE(e.message, "") << to_string(e.code);
        EXPECT_GT(e.message.size(), 20U) << e.what();
    }
}

TEST(ShmBoundary, the_private_directory_is_made_0700_and_refused_when_another_user_owns_it) {
    test::TempDir base;
    STRATA_ASSERT_ASSIGN(dir, private_segment_dir(base.path()));
    EXPECT_EQ(dir, base / fmt::format("strata-{}", ::geteuid()));
    struct stat st {};
    ASSERT_EQ(::lstat(dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700U);
    STRATA_REQUIRE(::geteuid() == 0, "root, to give the directory to another user");
    ASSERT_EQ(::chown(dir.c_str(), kNobody, kNobody), 0);
    EXPECT_TRUE(fails_with(private_segment_dir(base.path()), Errc::permission_denied,
                           {dir.string(), "uid 65534", "mode 0700", "not owned by this user"}));
    ASSERT_EQ(::chown(dir.c_str(), ::geteuid(), ::getegid()), 0);
    ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
    EXPECT_TRUE(fails_with(private_segment_dir(base.path()), Errc::permission_denied, {"mode 0777"}));
    ASSERT_EQ(::rmdir(dir.c_str()), 0);
    ASSERT_EQ(::symlink(base.path().c_str(), dir.c_str()), 0);
    EXPECT_TRUE(fails_with(private_segment_dir(base.path()), Errc::permission_denied, {"symbolic link"}));
}

TEST(ShmBoundary, a_symbolic_link_planted_as_a_segment_or_lock_file_is_refused_and_its_target_untouched) {
    test::ShmFixture f;
    const auto target = f.dir / "target";
    { std::ofstream(target) << "keep"; }
    for (const auto& planted : {f.seg_file(), f.lock_file()}) {
        // The other file is a genuine one of this user, so every mode gets as far as the link.
        const auto& other = planted == f.seg_file() ? f.lock_file() : f.seg_file();
        { std::ofstream(other) << ""; }
        ::chmod(other.c_str(), 0600);
        ASSERT_EQ(::symlink(target.c_str(), planted.c_str()), 0);
        for (auto mode : {SegmentMode::open_or_create, SegmentMode::open_only, SegmentMode::read_only}) {
            EXPECT_TRUE(fails_with(f.open(mode), Errc::permission_denied, {planted.string(), "symbolic link"}))
                << to_string(mode);
        }
        ASSERT_EQ(::unlink(planted.c_str()), 0);
        std::filesystem::remove(other);
    }
    std::ifstream in(target);
    std::string content;
    in >> content;
    EXPECT_EQ(content, "keep");
    EXPECT_EQ(std::filesystem::file_size(target), 4U);
}

TEST(ShmBoundary, a_file_another_user_owns_is_refused_naming_owner_and_mode_unless_group_access_allows_it) {
    STRATA_REQUIRE(::geteuid() == 0, "root, to give a file to another user");
    test::ShmFixture f;
    {
        STRATA_ASSERT_ASSIGN(made, f.open(SegmentMode::create_only));
        ASSERT_EQ(::chown(f.seg_file().c_str(), kNobody, ::getegid()), 0);
        ASSERT_EQ(::chmod(f.seg_file().c_str(), 0666), 0);
        EXPECT_TRUE(fails_with(f.open(SegmentMode::open_only, 0), Errc::permission_denied,
                               {f.seg_file().string(), "uid 65534", "mode 0666"}));
        f.options.group_access = true;
        EXPECT_TRUE(fails_with(f.open(SegmentMode::open_only, 0), Errc::permission_denied, {"mode 0666"}))
            << "others have access";
        ASSERT_EQ(::chmod(f.seg_file().c_str(), 0660), 0);
        STRATA_EXPECT_OK(f.open(SegmentMode::open_only, 0));
        f.options.group_access = false;
        EXPECT_TRUE(fails_with(f.open(SegmentMode::open_only, 0), Errc::permission_denied, {"uid 65534"}));
        ASSERT_EQ(::chown(f.seg_file().c_str(), ::geteuid(), ::getegid()), 0);
    }
    EXPECT_TRUE(f.dir.entries().empty());
}

}  // namespace
}  // namespace strata
