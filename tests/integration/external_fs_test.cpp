// SPDX-License-Identifier: MIT
// strata-fsd through FuseExposure on real kernel FUSE mounts: what a task's
// programs can read and write, and who is refused.
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "external_fs_support.hpp"
#include "support/result.hpp"

namespace strata::test {
namespace {

struct Channel {
    FuseOptions::Channel channel;
    bool page_cache;
    const char* name;
};

class ExternalFsChannels : public ::testing::TestWithParam<Channel> {
protected:
    void SetUp() override { STRATA_REQUIRE(fuse_available(), "/dev/fuse (kernel FUSE)"); }
};

TEST_P(ExternalFsChannels, a_program_reads_a_registered_input_byte_for_byte) {
    const auto param = GetParam();
    FuseExposure sut(fuse_options(param.channel, param.page_cache));
    const MemfdBlock block(3 * 1024 * 1024 + 123, 5);
    auto files = sut.new_task();
    ASSERT_TRUE(files) << files.error().what();
    auto path = (*files)->add_input(block.view(41, param.channel != FuseOptions::Channel::vm));
    ASSERT_TRUE(path) << path.error().what();
    EXPECT_TRUE(path->ends_with("/db/41")) << *path;

    // A real program (cat) copies the file; we compare what it wrote with the pattern.
    TempDir dir;
    const auto copy = dir.path() / "copy";
    const pid_t pid = spawn_program({"cat", *path}, copy);
    ASSERT_TRUE((*files)->started(pid));
    ASSERT_EQ(wait_exit_code(pid), 0) << read_file(copy, 0, 200).size();
    const auto bytes = read_file(copy, 0, block.size + 10);
    ASSERT_EQ(bytes.size(), block.size);
    EXPECT_EQ(pattern_mismatch(bytes, 5), "");
}

TEST_P(ExternalFsChannels, a_program_maps_an_exposed_input_and_sees_the_block) {
    const auto param = GetParam();
    FuseExposure sut(fuse_options(param.channel, param.page_cache));
    const MemfdBlock block(1024 * 1024 + 7, 9);
    auto files = sut.new_task();
    ASSERT_TRUE(files) << files.error().what();
    auto path = (*files)->add_input(block.view(42, param.channel != FuseOptions::Channel::vm));
    ASSERT_TRUE(path) << path.error().what();
    ForkedTask task([&] {
        const int fd = ::open(path->c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            return 2;
        }
        // Direct-I/O files (no page cache) can only be mapped privately on libfuse 3.14.
        const int flags = param.page_cache ? MAP_SHARED : MAP_PRIVATE;
        void* map = ::mmap(nullptr, block.size, PROT_READ, flags, fd, 0);
        if (map == MAP_FAILED) {
            return 3;
        }
        return pattern_mismatch({static_cast<const std::byte*>(map), block.size}, 9).empty() ? 0 : 4;
    });
    ASSERT_TRUE((*files)->started(task.pid()));
    task.go();
    EXPECT_EQ(task.wait(), 0);
}

INSTANTIATE_TEST_SUITE_P(DataChannels, ExternalFsChannels,
                         ::testing::Values(Channel{FuseOptions::Channel::shared, false, "shared_memory"},
                                           Channel{FuseOptions::Channel::vm, false, "process_vm_readv"},
                                           Channel{FuseOptions::Channel::shared, true, "shared_memory_page_cache"},
                                           Channel{FuseOptions::Channel::vm, true, "process_vm_readv_page_cache"}),
                         [](const auto& test) { return std::string(test.param.name); });

class ExternalFs : public ::testing::Test {
protected:
    void SetUp() override { STRATA_REQUIRE(fuse_available(), "/dev/fuse (kernel FUSE)"); }
    FuseExposure sut;
};

TEST_F(ExternalFs, an_output_grows_as_the_program_writes_and_comes_back_as_an_owned_descriptor) {
    auto files = sut.new_task();
    ASSERT_TRUE(files) << files.error().what();
    auto path = (*files)->add_output(77);
    ASSERT_TRUE(path) << path.error().what();
    constexpr std::size_t kSize = 5 * 1024 * 1024 + 321;
    ForkedTask task([&] {
        const int fd = ::open(path->c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0) {
            return 2;
        }
        // Odd-sized appends, so the file grows through many sizes.
        const auto bytes = make_pattern(kSize, 3);
        for (std::size_t at = 0; at < kSize;) {
            const std::size_t n = std::min<std::size_t>(kSize - at, 77777);
            if (::write(fd, bytes.data() + at, n) != static_cast<ssize_t>(n)) {
                return 3;
            }
            at += n;
        }
        return ::close(fd) == 0 ? 0 : 4;
    });
    ASSERT_TRUE((*files)->started(task.pid()));
    task.go();
    ASSERT_EQ(task.wait(), 0);
    auto out = (*files)->take_output(0);
    ASSERT_TRUE(out) << out.error().what();
    ASSERT_EQ(out->size, kSize);
    void* map = ::mmap(nullptr, out->size, PROT_READ, MAP_SHARED, out->fd, 0);
    ASSERT_NE(map, MAP_FAILED);
    EXPECT_EQ(pattern_mismatch({static_cast<const std::byte*>(map), out->size}, 3), "");
    ::munmap(map, out->size);
    ::close(out->fd);
}

TEST_F(ExternalFs, an_unregistered_path_does_not_exist_and_nothing_can_be_created) {
    auto files = sut.new_task();
    ASSERT_TRUE(files) << files.error().what();
    const MemfdBlock block(4096, 1);
    auto path = (*files)->add_input(block.view(5));
    ASSERT_TRUE(path) << path.error().what();
    const std::string db = std::filesystem::path(*path).parent_path().string();
    ForkedTask task([&] {
        if (::open((db + "/6").c_str(), O_RDONLY) >= 0 || errno != ENOENT) {
            return 2;
        }
        if (::open((db + "/new").c_str(), O_WRONLY | O_CREAT, 0600) >= 0 || errno != EACCES) {
            return 3;
        }
        if (::open((db + "/5").c_str(), O_WRONLY) >= 0 || errno != EACCES) {
            return 4;  // inputs are read-only
        }
        if (::unlink((db + "/5").c_str()) == 0 || errno != EACCES) {
            return 5;
        }
        return 0;
    });
    ASSERT_TRUE((*files)->started(task.pid()));
    task.go();
    EXPECT_EQ(task.wait(), 0);
}

TEST_F(ExternalFs, a_process_outside_the_task_tree_is_refused_while_a_grandchild_of_the_task_and_the_runtime_read) {
    auto files = sut.new_task();
    ASSERT_TRUE(files) << files.error().what();
    const MemfdBlock block(64 * 1024, 2);
    auto path = (*files)->add_input(block.view(8));
    ASSERT_TRUE(path) << path.error().what();
    ForkedTask task([&] {
        // The task's own child reads: descendants belong to the task.
        const pid_t grandchild = ::fork();
        if (grandchild == 0) {
            std::vector<std::byte> bytes;
            ::_exit(read_whole(*path, bytes) == 0 && pattern_mismatch(bytes, 2).empty() ? 0 : 1);
        }
        int status = 0;
        ::waitpid(grandchild, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 9;
    });
    ForkedTask stranger([&] {
        std::vector<std::byte> bytes;
        return read_whole(*path, bytes) == EACCES ? 0 : 1;
    });
    ASSERT_TRUE((*files)->started(task.pid()));
    task.go();
    stranger.go();
    EXPECT_EQ(task.wait(), 0);
    EXPECT_EQ(stranger.wait(), 0) << "a sibling process was not refused";
    // The runtime that registered the file may open it (to route a program's
    // stdout into an output, say); its other children may not (the sibling above).
    std::vector<std::byte> bytes;
    EXPECT_EQ(read_whole(*path, bytes), 0);
    EXPECT_EQ(pattern_mismatch(bytes, 2), "");
}

TEST_F(ExternalFs, another_user_is_refused_even_inside_the_task_tree) {
    const auto setpriv = find_program("setpriv");
    STRATA_REQUIRE(!setpriv.empty() && is_root(), "setpriv and root (to become nobody)");
    auto files = sut.new_task();
    ASSERT_TRUE(files) << files.error().what();
    const MemfdBlock block(4096, 4);
    auto path = (*files)->add_input(block.view(9));
    ASSERT_TRUE(path) << path.error().what();
    TempDir dir;
    const auto out = dir.path() / "out";
    ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
    const pid_t pid =
        spawn_program({setpriv.string(), "--reuid=nobody", "--regid=nogroup", "--clear-groups", "cat", *path}, out);
    ASSERT_TRUE((*files)->started(pid));
    EXPECT_NE(wait_exit_code(pid), 0);
    const auto said = read_file(out, 0, 4096);
    const std::string text(reinterpret_cast<const char*>(said.data()), said.size());
    EXPECT_NE(text.find("Permission denied"), std::string::npos) << text;
}

TEST_F(ExternalFs, a_program_that_opens_before_started_waits_for_its_pid) {
    auto files = sut.new_task();
    ASSERT_TRUE(files) << files.error().what();
    const MemfdBlock block(100000, 6);
    auto path = (*files)->add_input(block.view(10));
    ASSERT_TRUE(path) << path.error().what();
    ForkedTask task([&] {
        std::vector<std::byte> bytes;
        return read_whole(*path, bytes) == 0 && pattern_mismatch(bytes, 6).empty() ? 0 : 1;
    });
    task.go();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_TRUE((*files)->started(task.pid()));
    EXPECT_EQ(task.wait(), 0);
}

TEST_F(ExternalFs, a_second_task_on_a_shared_input_may_open_it_before_its_pid_is_known) {
    // One block read by two tasks at once: the first task's pid is known, the
    // second's program opens before the runtime has sent its started().
    auto first = sut.new_task();
    auto second = sut.new_task();
    ASSERT_TRUE(first && second);
    const MemfdBlock block(100000, 8);
    auto path1 = (*first)->add_input(block.view(21));
    auto path2 = (*second)->add_input(block.view(21));
    ASSERT_TRUE(path1 && path2);
    ASSERT_EQ(*path1, *path2) << "one file for one block";
    ForkedTask holder([] {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        return 0;
    });
    holder.go();
    ASSERT_TRUE((*first)->started(holder.pid()));
    ForkedTask reader([&] {
        std::vector<std::byte> bytes;
        return read_whole(*path2, bytes) == 0 && pattern_mismatch(bytes, 8).empty() ? 0 : 1;
    });
    reader.go();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_TRUE((*second)->started(reader.pid()));
    EXPECT_EQ(reader.wait(), 0) << "the second task's program was refused while its pid was on its way";
    EXPECT_EQ(holder.wait(), 0);
}

TEST_F(ExternalFs, with_the_page_cache_an_open_input_is_read_while_the_daemon_is_stopped) {
    // The fast path's promise: after registration the bytes are in the kernel's
    // page cache, so reads never reach strata-fsd. A stopped daemon proves it.
    const MemfdBlock block(16 * 1024 * 1024, 12);
    auto files = sut.new_task();
    ASSERT_TRUE(files) << files.error().what();
    auto path = (*files)->add_input(block.view(30));
    ASSERT_TRUE(path) << path.error().what();
    int opened[2];
    int stopped[2];
    ASSERT_EQ(::pipe(opened), 0);
    ASSERT_EQ(::pipe(stopped), 0);
    ForkedTask task([&] {
        const int fd = ::open(path->c_str(), O_RDONLY);
        (void)!::write(opened[1], "o", 1);
        char byte = 0;
        if (fd < 0 || ::read(stopped[0], &byte, 1) != 1) {
            return 2;
        }
        std::vector<std::byte> bytes(block.size);
        for (std::size_t at = 0; at < bytes.size();) {
            const ssize_t n = ::read(fd, bytes.data() + at, bytes.size() - at);
            if (n <= 0) {
                return 3;
            }
            at += static_cast<std::size_t>(n);
        }
        // Report before close: closing may talk to the daemon, reading must not.
        const char result = pattern_mismatch(bytes, 12).empty() ? '0' : '4';
        (void)!::write(opened[1], &result, 1);
        return result - '0';
    });
    ASSERT_TRUE((*files)->started(task.pid()));
    task.go();
    char byte = 0;
    ASSERT_EQ(::read(opened[0], &byte, 1), 1);
    ASSERT_EQ(::kill(sut.daemon_pid(), SIGSTOP), 0);
    ASSERT_EQ(::write(stopped[1], "s", 1), 1);
    // Bounded: a read that went to the stopped daemon would hang until SIGCONT.
    pollfd done{opened[0], POLLIN, 0};
    const bool finished = ::poll(&done, 1, 3000) == 1 && ::read(opened[0], &byte, 1) == 1;
    ::kill(sut.daemon_pid(), SIGCONT);
    EXPECT_TRUE(finished) << "the reader waited for the stopped daemon: the page cache did not serve it";
    EXPECT_EQ(byte, '0');
    EXPECT_EQ(task.wait(), 0);
    for (const int fd : {opened[0], opened[1], stopped[0], stopped[1]}) {
        ::close(fd);
    }
}

TEST_F(ExternalFs, bad_registrations_fail_naming_the_value_and_register_nothing) {
    FuseExposure shared_only(fuse_options(FuseOptions::Channel::shared));
    auto files = shared_only.new_task();
    ASSERT_TRUE(files) << files.error().what();
    std::vector<char> memory(100);
    auto no_fd = (*files)->add_input(BlockView{.id = 1, .data = memory.data(), .size = memory.size()});
    ASSERT_FALSE(no_fd);
    EXPECT_EQ(no_fd.error().code, Errc::invalid_argument);
    EXPECT_NE(no_fd.error().message.find("fd=-1"), std::string::npos) << no_fd.error().message;

    FuseExposure vm(fuse_options(FuseOptions::Channel::vm));
    auto vm_files = vm.new_task();
    ASSERT_TRUE(vm_files) << vm_files.error().what();
    auto bad = (*vm_files)->add_input(BlockView{.id = 2, .data = reinterpret_cast<void*>(0x10), .size = 100});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("address=0x10"), std::string::npos) << bad.error().message;
    auto mount = vm.mount_point();
    ASSERT_TRUE(mount);
    EXPECT_FALSE(std::filesystem::exists(*mount + "/db/2"));

    ASSERT_TRUE((*vm_files)->add_output(3));
    auto twice = (*vm_files)->add_output(3);
    ASSERT_FALSE(twice);
    EXPECT_EQ(twice.error().code, Errc::already_exists);
    auto beyond = (*vm_files)->take_output(1);
    ASSERT_FALSE(beyond);
    EXPECT_NE(beyond.error().message.find("k=1"), std::string::npos) << beyond.error().message;
}

}  // namespace
}  // namespace strata::test
