// SPDX-License-Identifier: MIT
// Direct regions filled behind the program (StorageOptions::fill where the
// process may handle missing pages with a userfaultfd): the factory returns
// before the file is read, every byte read through the region is the file's
// whatever the order and however many threads touch it, stores made during
// the fill are written back and nothing else, close stops a running fill, a
// child forked during a fill has every byte, and a file that shrinks under the
// fill makes the pages not read raise SIGBUS and sync/close fail; a process
// that may not handle kernel faults (no CAP_SYS_PTRACE) reads the whole part
// at creation instead, as before. The file is written and read back with
// pwrite/pread, independently of strata.
#include <linux/capability.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <atomic>
#include <cstddef>
#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/capability.hpp"
#include "support/process.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace {

using strata::Region;
using strata::StorageOptions;
using strata::Writeback;
using strata::test::make_pattern;
using strata::test::page_size;
using strata::test::pattern_mismatch;
using strata::test::read_file;
using strata::test::write_file;

constexpr std::size_t mib = std::size_t{1} << 20;

class RegionFillBehind : public ::testing::Test {
protected:
    /// A region over `size` bytes of pattern 1, filled behind the program.
    Region filled_region(std::size_t size) {
        write_file(path_, 0, make_pattern(size, 1));
        auto r = Region::storage(size, options_);
        EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().what());
        return std::move(*r);
    }

    /// Checks that this process fills behind the program (root in CI).
    static bool fills_behind(const Region& r) { return r.fills_behind(); }

    /// Reads every page from the last to the first and says where a byte is not pattern 1.
    static std::string read_backwards(const Region& r) {
        for (std::size_t at = r.size(); at > 0;) {
            const std::size_t length = std::min(page_size(), at);
            at -= length;
            if (auto wrong = pattern_mismatch(r.bytes().subspan(at, length), 1, at); !wrong.empty()) {
                return "page at " + std::to_string(at) + ": " + wrong;
            }
        }
        return {};
    }

    strata::test::TempDir dir_;
    std::filesystem::path path_ = dir_ / "data.bin";
    StorageOptions options_{.path = path_, .writeback = Writeback::direct, .fill = true};
};

TEST_F(RegionFillBehind, the_factory_returns_before_the_fill_ends_and_two_threads_reading_backwards_see_the_file) {
    Region sut = filled_region(128 * mib + 123);
    STRATA_REQUIRE(fills_behind(sut), "userfaultfd that handles kernel faults (CAP_SYS_PTRACE), Linux 6.7+");
    EXPECT_FALSE(sut.fill_complete()) << "128 MiB cannot have been read before the factory returned";
    std::string first;
    std::string second;
    std::thread a([&] { first = read_backwards(sut); });
    std::thread b([&] { second = read_backwards(sut); });
    a.join();
    b.join();
    EXPECT_EQ(first, "");
    EXPECT_EQ(second, "");
    STRATA_EXPECT_OK(sut.wait_filled());
    EXPECT_TRUE(sut.fill_complete());
    STRATA_EXPECT_OK(sut.close());
}

TEST_F(RegionFillBehind, a_fill_given_one_reader_still_sees_the_whole_file) {
    options_.fill_readers = 1;
    Region sut = filled_region(16 * mib + 4321);
    STRATA_REQUIRE(fills_behind(sut), "userfaultfd that handles kernel faults (CAP_SYS_PTRACE), Linux 6.7+");
    EXPECT_EQ(read_backwards(sut), "");
    STRATA_EXPECT_OK(sut.wait_filled());
    STRATA_EXPECT_OK(sut.close());
}

TEST(FillReaders, twice_the_cpus_are_shared_among_the_fills_running_at_once_between_one_and_eight) {
    EXPECT_EQ(strata::fill_readers_for(2, 1), 4U);
    EXPECT_EQ(strata::fill_readers_for(2, 0), 4U) << "no count given: this fill alone";
    EXPECT_EQ(strata::fill_readers_for(2, 2), 2U);
    EXPECT_EQ(strata::fill_readers_for(2, 4), 1U);
    EXPECT_EQ(strata::fill_readers_for(2, 8), 1U) << "never fewer than one reader";
    EXPECT_EQ(strata::fill_readers_for(16, 1), 8U) << "never more than eight";
    EXPECT_EQ(strata::fill_readers_for(16, 8), 4U);
    EXPECT_EQ(strata::fill_readers_for(0, 1), 2U) << "an unknown CPU count counts as one CPU";
}

TEST_F(RegionFillBehind, stores_made_during_the_fill_are_written_back_and_pages_only_read_are_not) {
    const std::size_t size = 64 * mib;
    Region sut = filled_region(size);
    STRATA_REQUIRE(fills_behind(sut), "userfaultfd that handles kernel faults (CAP_SYS_PTRACE), Linux 6.7+");
    const std::size_t last = size - page_size();
    strata::test::fill_pattern(sut.bytes().subspan(last), 2, last);  // waits for its chunk, then stores
    // A page the program never stores to, changed in the file behind the region.
    const std::size_t behind = 100 * page_size();
    write_file(path_, behind, make_pattern(page_size(), 3, behind));
    STRATA_ASSERT_OK(sut.sync());
    const auto file = read_file(path_, 0, size);
    ASSERT_EQ(file.size(), size);
    const std::span<const std::byte> bytes(file);
    EXPECT_EQ(pattern_mismatch(bytes.subspan(0, behind), 1), "");
    EXPECT_EQ(pattern_mismatch(bytes.subspan(behind, page_size()), 3, behind), "") << "a page only read was written";
    EXPECT_EQ(
        pattern_mismatch(bytes.subspan(behind + page_size(), last - behind - page_size()), 1, behind + page_size()),
        "");
    EXPECT_EQ(pattern_mismatch(bytes.subspan(last), 2, last), "") << "the store made during the fill was lost";
    STRATA_EXPECT_OK(sut.close());
}

TEST_F(RegionFillBehind, closing_while_the_fill_runs_stops_it_and_writes_nothing) {
    const std::size_t size = 128 * mib;
    Region sut = filled_region(size);
    STRATA_REQUIRE(fills_behind(sut), "userfaultfd that handles kernel faults (CAP_SYS_PTRACE), Linux 6.7+");
    EXPECT_EQ(pattern_mismatch(sut.bytes().subspan(size / 2, page_size()), 1, size / 2), "");
    STRATA_EXPECT_OK(sut.close());
    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 1), "");
}

TEST_F(RegionFillBehind, a_child_forked_during_the_fill_has_every_byte_and_never_waits_on_the_userfaultfd) {
    const std::size_t size = 128 * mib;
    Region sut = filled_region(size);
    STRATA_REQUIRE(fills_behind(sut), "userfaultfd that handles kernel faults (CAP_SYS_PTRACE), Linux 6.7+");
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::alarm(30);  // a child waiting on the parent's userfaultfd would hang here
        ::_exit(read_backwards(sut).empty() ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    EXPECT_EQ(read_backwards(sut), "");
    STRATA_EXPECT_OK(sut.close());
}

// While another thread keeps asking the fill for its state (as MPI_Win_sync
// does), a child and a grandchild can still ask too: the fork handlers take
// the fill's lock, so no child inherits it held by a thread it does not have.
TEST_F(RegionFillBehind, children_forked_while_another_thread_asks_for_the_fill_state_can_ask_too) {
    const std::size_t size = 8 * mib;
    Region sut = filled_region(size);
    STRATA_REQUIRE(fills_behind(sut), "userfaultfd that handles kernel faults (CAP_SYS_PTRACE), Linux 6.7+");
    std::atomic<bool> stop{false};
    std::thread asker([&] {
        while (!stop.load()) (void)sut.wait_filled();
    });
    int failed = 0;
    for (int i = 0; i < 50; ++i) {
        const pid_t child = ::fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
            ::alarm(10);  // an inherited held lock would hang wait_filled here
            if (!sut.wait_filled()) ::_exit(2);
            const pid_t grandchild = ::fork();
            if (grandchild == 0) ::_exit(sut.wait_filled() ? 0 : 3);
            int status = 0;
            ::_exit(grandchild > 0 && ::waitpid(grandchild, &status, 0) == grandchild && WIFEXITED(status) &&
                            WEXITSTATUS(status) == 0
                        ? 0
                        : 4);
        }
        int status = 0;
        ASSERT_EQ(::waitpid(child, &status, 0), child);
        failed += WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
    }
    stop = true;
    asker.join();
    EXPECT_EQ(failed, 0) << "children that could not ask for the fill's state (or hung)";
    STRATA_EXPECT_OK(sut.close({.discard = true}));
}

TEST_F(RegionFillBehind, a_page_dropped_after_the_fill_reads_zero_as_anonymous_memory_does) {
    const std::size_t size = 8 * mib;
    Region sut = filled_region(size);
    STRATA_REQUIRE(fills_behind(sut), "userfaultfd that handles kernel faults (CAP_SYS_PTRACE), Linux 6.7+");
    STRATA_ASSERT_OK(sut.wait_filled());
    std::byte* page = sut.data() + 5 * page_size();
    ASSERT_EQ(::madvise(page, page_size(), MADV_DONTNEED), 0);
    EXPECT_EQ(strata::test::nonzero_byte({page, page_size()}), "");
    EXPECT_EQ(pattern_mismatch(sut.bytes().subspan(6 * page_size(), page_size()), 1, 6 * page_size()), "");
    STRATA_EXPECT_OK(sut.close({.discard = true}));
}

TEST_F(RegionFillBehind, a_file_that_shrinks_under_the_fill_makes_unread_pages_raise_sigbus_and_sync_and_close_fail) {
    const std::size_t size = 128 * mib;
    Region sut = filled_region(size);
    STRATA_REQUIRE(fills_behind(sut), "userfaultfd that handles kernel faults (CAP_SYS_PTRACE), Linux 6.7+");
    ASSERT_EQ(::truncate(path_.c_str(), static_cast<off_t>(mib)), 0);
    auto filled = sut.wait_filled();
    ASSERT_FALSE(filled.has_value()) << "the fill read 128 MiB before the file was shortened";
    EXPECT_EQ(filled.error().code, strata::Errc::io_error);
    EXPECT_NE(filled.error().message.find(path_.string()), std::string::npos) << filled.error().message;
    EXPECT_NE(filled.error().message.find("held 134217728 bytes"), std::string::npos) << filled.error().message;
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::alarm(30);
        // The kernel's verdict, not a sanitizer's: ASan catches SIGBUS to
        // report it and exits instead of dying by the signal.
        struct sigaction default_action {};
        default_action.sa_handler = SIG_DFL;
        ::sigaction(SIGBUS, &default_action, nullptr);
        const auto last = std::to_integer<int>(sut.data()[size - 1]);  // never read: SIGBUS
        ::_exit(last == 0 ? 2 : 3);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) << "child status " << status;
    auto synced = sut.sync();
    ASSERT_FALSE(synced.has_value());
    EXPECT_EQ(synced.error().code, strata::Errc::io_error);
    EXPECT_TRUE(synced.error().message.starts_with("Region::sync:")) << synced.error().message;
    auto closed = sut.close();
    ASSERT_FALSE(closed.has_value());
    EXPECT_EQ(closed.error().code, strata::Errc::io_error);
    EXPECT_EQ(std::filesystem::file_size(path_), mib) << "close wrote back over the shortened file";
}

TEST_F(RegionFillBehind, a_process_without_cap_sys_ptrace_reads_the_whole_part_at_creation) {
    const std::size_t size = 16 * mib + 123;
    write_file(path_, 0, make_pattern(size, 1));
    STRATA_REQUIRE(::geteuid() == 0, "root, to drop CAP_SYS_PTRACE in a child");
    const auto status = strata::test::run_in_child([&] {
        // Without it (and with vm.unprivileged_userfaultfd=0) the kernel
        // refuses a userfaultfd that handles kernel faults.
        __user_cap_header_struct header{.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        std::array<__user_cap_data_struct, 2> caps{};
        STRATA_CHILD_CHECK(::syscall(SYS_capget, &header, caps.data()) == 0);
        caps[0].effective &= ~(1U << CAP_SYS_PTRACE);
        caps[0].permitted &= ~(1U << CAP_SYS_PTRACE);
        STRATA_CHILD_CHECK(::syscall(SYS_capset, &header, caps.data()) == 0);
        auto sut = Region::storage(size, options_);
        STRATA_CHILD_CHECK_OK(sut);
        STRATA_CHILD_CHECK(sut->filled());
        STRATA_CHILD_CHECK(!sut->fills_behind());
        STRATA_CHILD_CHECK(sut->fill_complete());
        STRATA_CHILD_CHECK(read_backwards(*sut).empty());
        STRATA_CHILD_CHECK(sut->close().has_value());
        return 0;
    });
    EXPECT_TRUE(status.succeeded()) << status.describe();
}

}  // namespace
