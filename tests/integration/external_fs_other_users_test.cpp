// SPDX-License-Identifier: MIT
// strata-fsd's mount against processes of another user (docs/external-fs.md "Security"): a
// throwaway user made for the test (useradd, removed after), with every directory above the mount
// point opened to it for the duration, so that the mount itself (no allow_other) is the only thing
// in its way. It is refused outside the task's tree and inside it, while the task's own process
// reads the same file.
#include <pwd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "external_fs_support.hpp"
#include "support/result.hpp"

namespace strata::test {
namespace {

/// A system user without home or shell, removed (userdel) when this goes.
class ThrowawayUser {
public:
    ThrowawayUser() : name_(fmt::format("strata-fsd-{}", ::getpid())) {
        const std::string add = fmt::format("'{}' --system --no-create-home --shell /usr/sbin/nologin '{}' 2>&1",
                                            find_program("useradd").string(), name_);
        made_ = std::system(add.c_str()) == 0;  // NOLINT(concurrency-mt-unsafe): one thread
        if (const passwd* pw = made_ ? ::getpwnam(name_.c_str()) : nullptr; pw != nullptr) {
            uid_ = pw->pw_uid;
            gid_ = pw->pw_gid;
        }
    }
    ~ThrowawayUser() {
        if (made_) {
            const std::string del = fmt::format("'{}' '{}' 2>&1", find_program("userdel").string(), name_);
            EXPECT_EQ(std::system(del.c_str()), 0) << "userdel " << name_;  // NOLINT(concurrency-mt-unsafe)
        }
    }
    ThrowawayUser(const ThrowawayUser&) = delete;
    ThrowawayUser& operator=(const ThrowawayUser&) = delete;
    [[nodiscard]] bool made() const { return made_ && uid_ != 0; }
    /// setpriv's arguments that run a command as this user, with no supplementary groups.
    [[nodiscard]] std::vector<std::string> as_user() const {
        return {find_program("setpriv").string(), fmt::format("--reuid={}", uid_), fmt::format("--regid={}", gid_),
                "--clear-groups"};
    }

private:
    std::string name_;
    bool made_ = false;
    uid_t uid_ = 0;
    gid_t gid_ = 0;
};

/// Adds o+x to every directory above `mount` that lacks it, and takes it back when this goes.
class OpenedAncestors {
public:
    explicit OpenedAncestors(const std::filesystem::path& mount) {
        for (auto dir = mount.parent_path(); dir != dir.root_path(); dir = dir.parent_path()) {
            struct stat st {};
            if (::stat(dir.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) == 0) {
                EXPECT_EQ(::chmod(dir.c_str(), (st.st_mode & 07777) | S_IXOTH), 0) << dir;
                changed_.emplace_back(dir, st.st_mode & 07777);
            }
        }
    }
    ~OpenedAncestors() {
        for (const auto& [dir, mode] : changed_) {
            EXPECT_EQ(::chmod(dir.c_str(), mode), 0) << dir;
        }
    }
    OpenedAncestors(const OpenedAncestors&) = delete;
    OpenedAncestors& operator=(const OpenedAncestors&) = delete;

private:
    std::vector<std::pair<std::filesystem::path, mode_t>> changed_;
};

std::string text_of(const std::filesystem::path& file) {
    const auto bytes = read_file(file, 0, 4096);
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

class ExternalFsOtherUsers : public ::testing::Test {
protected:
    void SetUp() override {
        STRATA_REQUIRE(fuse_available(), "/dev/fuse (kernel FUSE)");
        STRATA_REQUIRE(is_root() && !find_program("useradd").empty() && !find_program("setpriv").empty(),
                       "root, useradd and setpriv (to run a process as a throwaway user)");
        ASSERT_TRUE(user.made()) << "useradd failed";
    }
    ThrowawayUser user;
    FuseExposure sut;
};

TEST_F(ExternalFsOtherUsers, a_process_of_another_user_is_refused_by_the_mount_inside_and_outside_the_tree) {
    auto files = sut.new_task();
    ASSERT_TRUE(files) << files.error().what();
    const MemfdBlock block(8192, 3);
    auto path = (*files)->add_input(block.view(12));
    ASSERT_TRUE(path) << path.error().what();
    const std::filesystem::path mount = std::filesystem::path(*path).parent_path().parent_path();
    const OpenedAncestors opened(mount);
    TempDir dir;
    ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
    // Control: the directories are no obstacle to the other user; what refuses it below is the mount.
    auto reach = user.as_user();
    reach.insert(reach.end(), {"stat", "-c", "%i", mount.parent_path().string()});
    ASSERT_EQ(wait_exit_code(spawn_program(reach, dir.path() / "reach")), 0) << text_of(dir.path() / "reach");

    // The task: its root reads the file itself, then runs `cat` as the other user (a descendant).
    ForkedTask task([&] {
        std::vector<std::byte> bytes;
        if (read_whole(*path, bytes) != 0 || !pattern_mismatch(bytes, 3).empty()) return 1;
        auto argv = user.as_user();
        argv.emplace_back("cat");
        argv.emplace_back(*path);
        const pid_t child = spawn_program(argv, dir.path() / "inside");
        return wait_exit_code(child) != 0 ? 0 : 2;
    });
    ASSERT_TRUE((*files)->started(task.pid()));
    task.go();
    EXPECT_EQ(task.wait(), 0) << "the task's root could not read, or its child of another user could";

    // A process of the other user outside every task.
    auto argv = user.as_user();
    argv.emplace_back("cat");
    argv.emplace_back(*path);
    const pid_t stranger = spawn_program(argv, dir.path() / "outside");
    EXPECT_NE(wait_exit_code(stranger), 0);
    for (const char* name : {"inside", "outside"}) {
        const std::string said = text_of(dir.path() / name);
        EXPECT_NE(said.find("Permission denied"), std::string::npos) << name << ": " << said;
    }
}

TEST_F(ExternalFsOtherUsers, another_user_cannot_list_the_mount_or_see_a_file) {
    auto files = sut.new_task();
    ASSERT_TRUE(files) << files.error().what();
    const MemfdBlock block(4096, 4);
    auto path = (*files)->add_input(block.view(13));
    ASSERT_TRUE(path) << path.error().what();
    const std::filesystem::path db = std::filesystem::path(*path).parent_path();
    const OpenedAncestors opened(db.parent_path());
    TempDir dir;
    ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
    auto argv = user.as_user();
    argv.insert(argv.end(), {"stat", "-c", "%s", db.string(), *path});
    const pid_t stranger = spawn_program(argv, dir.path() / "out");
    EXPECT_NE(wait_exit_code(stranger), 0);
    const std::string said = text_of(dir.path() / "out");
    EXPECT_NE(said.find("Permission denied"), std::string::npos) << said;
    EXPECT_EQ(said.find("4096"), std::string::npos) << "the other user learned the file's size: " << said;
}

}  // namespace
}  // namespace strata::test
