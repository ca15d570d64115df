// SPDX-License-Identifier: MIT
// strata-fsd when processes die: the daemon killed while a program reads,
// the runtime killed while it holds a mount, and stale mounts cleaned by the
// next run or by `strata fs ls`.
#include <sys/syscall.h>

#include <cerrno>
#include <fstream>

#include "external/fsd/client.hpp"
#include "external_fs_support.hpp"

namespace strata::test {
namespace {

// What a forked owner tells the test: its daemon's pid and mount point, one line on a pipe.
struct DaemonReport {
    pid_t daemon = 0;
    std::string mount;
};

void send_report(int fd, pid_t daemon, const std::string& mount) {
    const std::string line = fmt::format("{} {}\n", daemon, mount);
    (void)!::write(fd, line.data(), line.size());
}

DaemonReport receive_report(int fd) {
    char buf[512] = {};
    const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
    ::close(fd);
    const std::string line(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
    const auto space = line.find(' ');
    if (space == std::string::npos) {
        return {};
    }
    return {std::stoi(line), line.substr(space + 1, line.find('\n') - space - 1)};
}

class ExternalFsCrash : public ::testing::Test {
protected:
    void SetUp() override { STRATA_REQUIRE(fuse_available(), "/dev/fuse (kernel FUSE)"); }
};

TEST_F(ExternalFsCrash, killing_the_daemon_mid_read_fails_the_program_and_the_runtime_and_removes_the_mount) {
    FuseExposure sut(fuse_options(FuseOptions::Channel::shared, false));
    const MemfdBlock block(8 * 1024 * 1024, 7);
    auto files = sut.new_task();
    ASSERT_TRUE(files) << files.error().what();
    auto path = (*files)->add_input(block.view(11));
    ASSERT_TRUE(path) << path.error().what();
    ASSERT_TRUE((*files)->add_output(12));
    auto mount = sut.mount_point();
    ASSERT_TRUE(mount);
    const pid_t daemon = sut.daemon_pid();
    ASSERT_GT(daemon, 0);

    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    ForkedTask task([&] {
        const int fd = ::open(path->c_str(), O_RDONLY);
        std::vector<char> chunk(1 << 20);
        if (fd < 0 || ::read(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size())) {
            return 2;
        }
        (void)!::write(ready[1], "r", 1);
        ::sleep(1);  // the daemon is killed meanwhile
        const ssize_t n = ::read(fd, chunk.data(), chunk.size());
        return n < 0 && (errno == ENOTCONN || errno == EIO || errno == ECONNABORTED) ? 0 : 3;
    });
    ASSERT_TRUE((*files)->started(task.pid()));
    task.go();
    char byte = 0;
    ASSERT_EQ(::read(ready[0], &byte, 1), 1);
    ASSERT_EQ(::kill(daemon, SIGKILL), 0);
    EXPECT_EQ(task.wait(), 0) << "the program's read after the daemon died did not fail";

    auto out = (*files)->take_output(0);
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error().code, Errc::peer_dead);
    EXPECT_NE(out.error().message.find("strata-fsd"), std::string::npos) << out.error().message;
    EXPECT_TRUE(eventually([&] { return !is_mounted(*mount); })) << *mount << " is still mounted";
    EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(*mount).parent_path()));
    ::close(ready[0]);
    ::close(ready[1]);

    // The next task gets a new daemon.
    auto again = sut.new_task();
    ASSERT_TRUE(again) << again.error().what();
    auto path2 = (*again)->add_input(block.view(13));
    ASSERT_TRUE(path2) << path2.error().what();
    EXPECT_NE(sut.daemon_pid(), daemon);
}

TEST_F(ExternalFsCrash, killing_the_runtime_leaves_no_daemon_mount_or_directory) {
    int report[2];
    ASSERT_EQ(::pipe(report), 0);
    ForkedTask owner([&] {
        FuseExposure exposure;
        const MemfdBlock block(1 << 20, 8);
        auto files = exposure.new_task();
        if (!files || !(*files)->add_input(block.view(1)) || !(*files)->add_output(2)) {
            return 2;
        }
        send_report(report[1], exposure.daemon_pid(), *exposure.mount_point());
        ::pause();
        return 0;
    });
    ::close(report[1]);
    owner.go();
    const auto [daemon, mount] = receive_report(report[0]);
    ASSERT_TRUE(is_mounted(mount)) << mount;

    ASSERT_EQ(::kill(owner.pid(), SIGKILL), 0);
    owner.wait();
    EXPECT_TRUE(eventually([&] { return !external::fsd::daemon_alive(daemon); })) << "strata-fsd outlived its owner";
    EXPECT_TRUE(eventually([&] { return !is_mounted(mount); })) << mount << " is still mounted";
    EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(mount).parent_path()));
}

TEST_F(ExternalFsCrash, a_mount_whose_daemon_died_with_its_owner_is_removed_by_strata_fs_ls) {
    // A daemon without an owner (as `strata fs mount` starts it), killed together with the
    // process that watched it: nobody unmounts, the mount stays behind, stale.
    int report[2];
    ASSERT_EQ(::pipe(report), 0);
    ForkedTask owner([&] {
        auto c = external::fsd::Client::start({.executable = {}, .owned = false});
        if (!c) {
            return 2;
        }
        send_report(report[1], (*c)->pid(), (*c)->mount_point());
        ::pause();
        return 0;
    });
    ::close(report[1]);
    owner.go();
    const auto [stale_daemon, stale] = receive_report(report[0]);
    ASSERT_GT(stale_daemon, 0);
    ASSERT_EQ(::kill(owner.pid(), SIGKILL), 0);
    owner.wait();
    ASSERT_EQ(::kill(stale_daemon, SIGKILL), 0);
    ASSERT_TRUE(eventually([&] { return !external::fsd::daemon_alive(stale_daemon); }));
    ASSERT_TRUE(is_mounted(stale)) << "no stale mount to clean";

    TempDir dir;
    const auto out = dir.path() / "ls";
    const pid_t ls = spawn_program({STRATA_CLI, "fs", "ls"}, out);
    EXPECT_EQ(wait_exit_code(ls), 0);
    const auto said = read_file(out, 0, 65536);
    const std::string text(reinterpret_cast<const char*>(said.data()), said.size());
    EXPECT_NE(text.find(stale), std::string::npos) << text;
    EXPECT_FALSE(is_mounted(stale)) << text;
    EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(stale).parent_path()));
}

TEST_F(ExternalFsCrash, strata_fs_mount_starts_a_daemon_that_strata_fs_umount_stops) {
    TempDir dir;
    const auto out = dir.path() / "mount";
    ASSERT_EQ(wait_exit_code(spawn_program({STRATA_CLI, "fs", "mount", "--json"}, out)), 0);
    const auto said = read_file(out, 0, 4096);
    const std::string text(reinterpret_cast<const char*>(said.data()), said.size());
    const auto key = text.find("\"mount_point\":\"");
    ASSERT_NE(key, std::string::npos) << text;
    const auto begin = key + 15;
    const std::string mount = text.substr(begin, text.find('"', begin) - begin);
    const pid_t daemon = std::stoi(text.substr(text.find("\"daemon\":") + 9));
    ASSERT_TRUE(is_mounted(mount)) << text;
    EXPECT_TRUE(external::fsd::daemon_alive(daemon));

    const auto umount_out = dir.path() / "umount";
    EXPECT_EQ(wait_exit_code(spawn_program({STRATA_CLI, "fs", "umount", mount}, umount_out)), 0);
    EXPECT_FALSE(is_mounted(mount));
    EXPECT_TRUE(eventually([&] { return !external::fsd::daemon_alive(daemon); }));
    EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(mount).parent_path()));
    EXPECT_NE(wait_exit_code(spawn_program({STRATA_CLI, "fs", "umount", mount}, umount_out)), 0)
        << "a path that is no strata-fsd mount must be an error";
}

}  // namespace
}  // namespace strata::test
