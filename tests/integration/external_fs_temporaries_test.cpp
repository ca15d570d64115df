// SPDX-License-Identifier: MIT
// Temporary files on strata-fsd (TaskFiles::allow_temporary_files): what a
// task's program may create, rename and remove under /db, and what stays
// refused. Each program is forked code making the system calls itself, so
// every errno is checked exactly.
#include <sys/syscall.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "external_fs_support.hpp"

namespace strata::test {
namespace {

class ExternalFsTemporaries : public ::testing::Test {
protected:
    void SetUp() override { STRATA_REQUIRE(fuse_available(), "/dev/fuse (kernel FUSE)"); }
    FuseExposure sut;
};

// Writes `text` into a new file at `path` (O_EXCL); 0 or the errno.
int create_with(const std::string& path, const std::string& text) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        return errno;
    }
    const bool wrote = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    return ::close(fd) == 0 && wrote ? 0 : EIO;
}

std::string text_at(const std::string& path) {
    std::vector<std::byte> bytes;
    if (read_whole(path, bytes) != 0) {
        return "<unreadable>";
    }
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// The daemon's open temporary memfds ("strata-fsd-tmp-<name>"), read from /proc.
int daemon_temporaries(pid_t daemon) {
    int count = 0;
    std::error_code ec;
    for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(daemon) + "/fd", ec)) {
        const auto target = std::filesystem::read_symlink(fd.path(), ec);
        if (!ec && target.string().find("memfd:strata-fsd-tmp-") != std::string::npos) {
            ++count;
        }
    }
    return count;
}

// The kernel sends FUSE RELEASE for a closed file asynchronously, after the
// program's close() returned, and an open handle keeps its memfd: wait for the
// count to settle (bounded) instead of reading it once.
int settled_temporaries(pid_t daemon, int expected) {
    int count = daemon_temporaries(daemon);
    for (int i = 0; i < 600 && count != expected; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        count = daemon_temporaries(daemon);
    }
    return count;
}

TEST_F(ExternalFsTemporaries, a_temporary_written_and_renamed_onto_the_output_becomes_the_output) {
    auto files = sut.new_task();
    ASSERT_TRUE(files) << files.error().what();
    ASSERT_TRUE((*files)->allow_temporary_files());
    auto out = (*files)->add_output(70);
    ASSERT_TRUE(out) << out.error().what();
    const std::string db = std::filesystem::path(*out).parent_path().string();
    ForkedTask task([&] {
        const std::string part = db + "/result.part";
        if (create_with(part, "first ") != 0) {
            return 2;
        }
        const int fd = ::open(part.c_str(), O_WRONLY | O_APPEND);  // reopened by name
        if (fd < 0 || ::write(fd, "second", 6) != 6 || ::close(fd) != 0) {
            return 3;
        }
        if (text_at(part) != "first second") {
            return 4;
        }
        if (::rename(part.c_str(), out->c_str()) != 0) {
            return 5;
        }
        if (::access(part.c_str(), F_OK) == 0 || errno != ENOENT) {
            return 6;  // the old name is gone
        }
        return text_at(*out) == "first second" ? 0 : 7;
    });
    ASSERT_TRUE((*files)->started(task.pid()));
    task.go();
    ASSERT_EQ(task.wait(), 0);
    auto bytes = (*files)->take_output(0);
    ASSERT_TRUE(bytes) << bytes.error().what();
    ASSERT_EQ(bytes->size, 12U);
    char got[12];
    ASSERT_EQ(::pread(bytes->fd, got, sizeof got, 0), 12);
    EXPECT_EQ(std::string(got, 12), "first second");
    ::close(bytes->fd);
}

TEST_F(ExternalFsTemporaries, two_tasks_have_their_own_names_a_stranger_sees_neither_and_they_end_with_the_task) {
    auto first = sut.new_task();
    auto second = sut.new_task();
    ASSERT_TRUE(first && second);
    ASSERT_TRUE((*first)->allow_temporary_files());
    ASSERT_TRUE((*second)->allow_temporary_files());
    auto mount = sut.mount_point();
    ASSERT_TRUE(mount) << mount.error().what();
    const std::string scratch = *mount + "/db/scratch";
    auto writer = [&](const char* text) {
        return [&scratch, text] {
            if (const int err = create_with(scratch, text); err != 0) {
                return err == EEXIST ? 2 : 3;  // EEXIST: the other task's file leaked into this one's names
            }
            return text_at(scratch) == text ? 0 : 4;
        };
    };
    ForkedTask a(writer("from a"));
    ASSERT_TRUE((*first)->started(a.pid()));
    a.go();
    ASSERT_EQ(a.wait(), 0);
    ForkedTask b(writer("from b"));
    ASSERT_TRUE((*second)->started(b.pid()));
    b.go();
    ASSERT_EQ(b.wait(), 0);
    ForkedTask stranger([&] {
        if (::access(scratch.c_str(), F_OK) == 0 || errno != ENOENT) {
            return 2;
        }
        return create_with(*mount + "/db/mine", "x") == EACCES ? 0 : 3;
    });
    stranger.go();
    EXPECT_EQ(stranger.wait(), 0) << "a process outside both tasks saw or created a temporary";
    EXPECT_EQ(settled_temporaries(sut.daemon_pid(), 2), 2);
    (*first)->release();
    EXPECT_EQ(settled_temporaries(sut.daemon_pid(), 1), 1) << "the first task ended but its temporary stayed";
    (*second)->release();
    EXPECT_EQ(settled_temporaries(sut.daemon_pid(), 0), 0);
}

TEST_F(ExternalFsTemporaries, registered_files_reserved_names_directories_and_exchanges_stay_refused) {
    auto files = sut.new_task();
    ASSERT_TRUE(files) << files.error().what();
    ASSERT_TRUE((*files)->allow_temporary_files());
    const MemfdBlock block(4096, 3);
    auto input = (*files)->add_input(block.view(5));
    ASSERT_TRUE(input) << input.error().what();
    const std::string db = std::filesystem::path(*input).parent_path().string();
    ForkedTask task([&] {
        const std::string a = db + "/a";
        const std::string b = db + "/b";
        if (create_with(db + "/123", "x") != EACCES) return 2;  // digits: data block ids only
        if (::mkdir((db + "/d").c_str(), 0700) == 0 || errno != EACCES) return 3;
        if (create_with(a, "aaa") != 0 || create_with(b, "bbb") != 0) return 4;
        if (::rename(a.c_str(), input->c_str()) == 0 || errno != EACCES) return 5;  // never onto an input
        if (::rename(input->c_str(), (db + "/c").c_str()) == 0 || errno != EACCES) return 6;
        if (::unlink(input->c_str()) == 0 || errno != EACCES) return 7;
        if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0 || errno != EINVAL) return 8;
        if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_NOREPLACE) == 0 || errno != EEXIST) return 9;
        if (::rename(a.c_str(), b.c_str()) != 0 || text_at(b) != "aaa") return 10;
        if (::unlink(b.c_str()) != 0) return 11;
        if (::access(b.c_str(), F_OK) == 0 || errno != ENOENT) return 12;
        return text_at(*input).size() == 4096 ? 0 : 13;  // the input is untouched
    });
    ASSERT_TRUE((*files)->started(task.pid()));
    task.go();
    EXPECT_EQ(task.wait(), 0) << "see the step numbers in the test body";
    EXPECT_EQ(settled_temporaries(sut.daemon_pid(), 0), 0) << "an unlinked or replaced temporary is still open";
}

}  // namespace
}  // namespace strata::test
