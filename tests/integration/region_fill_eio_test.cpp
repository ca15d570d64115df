// SPDX-License-Identifier: MIT
// A direct region filled behind the program over a file whose device fails:
// the file lives on a real FUSE mount (tests/support/eio_fs.cpp) whose reads
// fail with EIO from 4 MiB on, so the kernel hands the fill a real I/O error
// (not a shortened file, as in region_fill_behind_test). The fill stops with
// io_error naming the file, the offset and EIO; a page past the error raises
// SIGBUS in the program instead of reading zeros, and a page before it holds
// the file's bytes or raises SIGBUS too (the fill may have stopped before its
// piece), never anything else; sync and close fail and write nothing back.
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/capability.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"
#include "support/system.hpp"

namespace {

using strata::Region;
using strata::StorageOptions;
using strata::Writeback;
using strata::test::make_pattern;
using strata::test::pattern_mismatch;

constexpr std::size_t mib = std::size_t{1} << 20;

/// strata_test_eio_fs mounted on `target` in this process's mount namespace;
/// unmounted (and the daemon reaped) on destruction.
class EioMount {
public:
    EioMount(std::filesystem::path target, std::size_t eio_after) : target_(std::move(target)) {
        std::filesystem::create_directories(target_);
        if (!strata::test::enter_private_mount_namespace()) {
            error_ = "cannot enter a private mount namespace";
            return;
        }
        struct stat before {};
        ::stat(target_.c_str(), &before);
        daemon_ = ::fork();
        if (daemon_ == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // a test killed mid-way leaves no daemon (nor mount) behind
            ::setenv("STRATA_TEST_EIO_AFTER", std::to_string(eio_after).c_str(), 1);
            ::execl(STRATA_TEST_EIO_FS, STRATA_TEST_EIO_FS, target_.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < deadline) {
            struct stat now {};
            if (::stat(target_.c_str(), &now) == 0 && now.st_dev != before.st_dev) {
                mounted_ = true;
                return;
            }
            if (int status = 0; ::waitpid(daemon_, &status, WNOHANG) == daemon_) {
                daemon_ = -1;
                error_ = "strata_test_eio_fs exited with status " + std::to_string(status);
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        error_ = "strata_test_eio_fs did not mount " + target_.string() + " in 10 s";
    }
    EioMount(const EioMount&) = delete;
    EioMount& operator=(const EioMount&) = delete;
    ~EioMount() {
        if (mounted_ && ::umount2(target_.c_str(), 0) != 0) {
            ::umount2(target_.c_str(), MNT_DETACH);
        }
        if (daemon_ > 0) {
            if (!mounted_) ::kill(daemon_, SIGKILL);
            int status = 0;
            ::waitpid(daemon_, &status, 0);
        }
    }

    [[nodiscard]] bool ok() const { return mounted_; }
    [[nodiscard]] const std::string& error() const { return error_; }
    [[nodiscard]] std::filesystem::path operator/(std::string_view name) const { return target_ / name; }

private:
    std::filesystem::path target_;
    pid_t daemon_ = -1;
    bool mounted_ = false;
    std::string error_;
};

TEST(RegionFillEio, a_read_error_of_the_device_makes_unread_pages_raise_sigbus_and_sync_and_close_fail) {
    STRATA_REQUIRE(strata::test::is_root(), "root, to mount a FUSE file system");
    const std::size_t size = 16 * mib;
    strata::test::TempDir dir;
    EioMount mount(dir / "eio", 4 * mib);
    ASSERT_TRUE(mount.ok()) << mount.error();
    const auto path = mount / "data.bin";
    strata::test::write_file(path, 0, make_pattern(size, 1));
    ASSERT_EQ(std::filesystem::file_size(path), size);

    auto created = Region::storage(size, StorageOptions{.path = path, .writeback = Writeback::direct, .fill = true});
    ASSERT_TRUE(created.has_value()) << created.error().what();
    Region sut = std::move(*created);
    STRATA_REQUIRE(sut.fills_behind(), "userfaultfd that handles kernel faults (CAP_SYS_PTRACE), Linux 6.7+");
    auto filled = sut.wait_filled();
    ASSERT_FALSE(filled.has_value()) << "the fill read past the failing offset";
    EXPECT_EQ(filled.error().code, strata::Errc::io_error);
    const std::string& message = filled.error().message;
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find("EIO"), std::string::npos) << message;
    // Whichever failing piece a reader met first: at or past 4 MiB, inside the file.
    const auto at = message.find("failed at offset ");
    ASSERT_NE(at, std::string::npos) << message;
    const auto offset = std::stoull(message.substr(at + 17));
    EXPECT_GE(offset, 4 * mib) << message;
    EXPECT_LT(offset, size) << message;
    EXPECT_TRUE(message.starts_with("Region::wait_filled:")) << message;

    // In a child each (a SIGBUS kills it): the last byte, past the error,
    // and the first 64 KiB, before it.
    const auto touch = [&](bool first) {
        const pid_t child = ::fork();
        if (child == 0) {
            ::alarm(30);
            // The kernel's verdict, not a sanitizer's: ASan catches SIGBUS to report it.
            struct sigaction default_action {};
            default_action.sa_handler = SIG_DFL;
            ::sigaction(SIGBUS, &default_action, nullptr);
            if (first) ::_exit(pattern_mismatch(sut.bytes().subspan(0, 64 * 1024), 1, 0).empty() ? 0 : 3);
            ::_exit(std::to_integer<int>(sut.data()[size - 1]) == 0 ? 2 : 3);
        }
        int status = -1;
        if (child < 0 || ::waitpid(child, &status, 0) != child) return -1;
        return status;
    };
    const int past = touch(false);
    EXPECT_TRUE(WIFSIGNALED(past) && WTERMSIG(past) == SIGBUS) << "child status " << past;
    const int before = touch(true);
    EXPECT_TRUE((WIFEXITED(before) && WEXITSTATUS(before) == 0) || (WIFSIGNALED(before) && WTERMSIG(before) == SIGBUS))
        << "the first 64 KiB neither held the file's bytes nor raised SIGBUS: child status " << before;

    auto synced = sut.sync();
    ASSERT_FALSE(synced.has_value());
    EXPECT_EQ(synced.error().code, strata::Errc::io_error);
    auto closed = sut.close();
    ASSERT_FALSE(closed.has_value());
    EXPECT_EQ(closed.error().code, strata::Errc::io_error);
    EXPECT_EQ(std::filesystem::file_size(path), size) << "close changed the file";
    const auto head = strata::test::read_file(path, 0, mib);
    EXPECT_EQ(pattern_mismatch(head, 1, 0), "") << "close wrote over the file's first MiB";
}

}  // namespace
