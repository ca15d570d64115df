// SPDX-License-Identifier: MIT
// fuse: /dev/fuse opens, fusermount3 runs, and a real low-level file system
// mounts and answers the kernel.
//
// The file system is served by a forked child, so a server that hangs or
// crashes can be killed without taking the doctor with it; the parent stats
// the mount point from a helper thread so that stat, too, is bounded. Killing
// the server closes its /dev/fuse descriptor, which aborts the connection and
// releases any stat still waiting in the kernel.

// 3.12 is the newest API level libfuse 3.14 defines.
#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>

#include <fmt/format.h>

#include "probe.hpp"
#include "system.hpp"

namespace strata::doctor {

namespace {

using namespace std::chrono_literals;

// Values no kernel default would produce, so seeing them proves that our
// getattr answered.
constexpr mode_t kRootMode = S_IFDIR | 0751;
constexpr nlink_t kRootLinks = 7;
constexpr auto kMountTimeout = 5s;
constexpr char kMountedMark[] = "strata-doctor: mounted\n";

void answer_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* /*fi*/) {
    if (ino != FUSE_ROOT_ID) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    struct stat st {};
    st.st_ino = FUSE_ROOT_ID;
    st.st_mode = kRootMode;
    st.st_nlink = kRootLinks;
    st.st_uid = ::getuid();
    st.st_gid = ::getgid();
    fuse_reply_attr(req, &st, 0.0);
}

// Runs in the forked child. libfuse writes its errors to stderr, which is the
// status pipe, so the parent can quote them.
[[noreturn]] void serve_test_fs(const char* mount_point, int status_fd) {
    ::dup2(status_fd, STDERR_FILENO);
    fuse_lowlevel_ops ops{};
    ops.getattr = answer_getattr;
    std::array<char, 16> arg0{"strata-doctor"};
    std::array<char*, 2> argv{arg0.data(), nullptr};
    fuse_args args = FUSE_ARGS_INIT(1, argv.data());

    fuse_session* se = fuse_session_new(&args, &ops, sizeof(ops), nullptr);
    if (se == nullptr) ::_exit(2);
    // SIGTERM from the parent ends the loop; the session then unmounts.
    if (fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, mount_point) != 0) {
        fuse_session_destroy(se);
        ::_exit(3);
    }
    if (::write(status_fd, kMountedMark, sizeof(kMountedMark) - 1) < 0) ::_exit(4);
    const int rc = fuse_session_loop(se);
    fuse_remove_signal_handlers(se);
    fuse_session_unmount(se);
    fuse_session_destroy(se);
    ::_exit(rc == 0 ? 0 : 5);
}

// Reads the child's status pipe until the mount mark, EOF or the deadline.
// Returns whether it mounted; `messages` gets whatever else the child said.
bool wait_until_mounted(int fd, std::chrono::steady_clock::time_point deadline, std::string& messages) {
    std::string text;
    while (text.find(kMountedMark) == std::string::npos) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd pfd{fd, POLLIN, 0};
        if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
        std::array<char, 512> buf{};
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n == 0) break;
        if (n > 0) text.append(buf.data(), static_cast<std::size_t>(n));
    }
    const auto mark = text.find(kMountedMark);
    messages = first_line(mark == std::string::npos ? text : text.erase(mark, sizeof(kMountedMark) - 1));
    return mark != std::string::npos;
}

// Mounts, stats, unmounts. Returns an empty string on success, else the reason.
std::string mount_test_fs() {
    std::string dir_template = (std::filesystem::temp_directory_path() / "strata-doctor-fuse-XXXXXX").string();
    if (::mkdtemp(dir_template.data()) == nullptr)
        return fmt::format("mkdtemp {}: {}", dir_template, errno_text(errno));
    const std::string mount_point = dir_template;
    ScopeExit remove_dir([&] { ::rmdir(mount_point.c_str()); });

    std::array<int, 2> fds{};
    if (::pipe2(fds.data(), O_CLOEXEC) != 0) return fmt::format("pipe: {}", errno_text(errno));
    UniqueFd status_read(fds[0]);
    UniqueFd status_write(fds[1]);

    const pid_t child = ::fork();
    if (child < 0) return fmt::format("fork: {}", errno_text(errno));
    if (child == 0) serve_test_fs(mount_point.c_str(), status_write.get());
    status_write.reset();

    // Unmount and reap on every path: ask nicely, then force. A lazy unmount
    // covers a child that died while mounted.
    ScopeExit stop_server([&] {
        ::kill(child, SIGTERM);
        if (!wait_for_exit(child, 2s)) kill_and_reap(child);
        if (is_mount_point(mount_point) && ::umount2(mount_point.c_str(), MNT_DETACH) != 0) {
            if (const auto fusermount = find_in_path("fusermount3"))
                run_command({*fusermount, "-u", "-z", mount_point}, 2s);
        }
    });

    const auto deadline = std::chrono::steady_clock::now() + kMountTimeout;
    std::string messages;
    if (!wait_until_mounted(status_read.get(), deadline, messages))
        return messages.empty() ? std::string("the test file system did not mount within 5 s")
                                : "mount failed: " + messages;

    auto stat_result = std::async(std::launch::async, [&mount_point] {
        struct stat st {};
        const int rc = ::stat(mount_point.c_str(), &st);
        return std::pair{rc == 0 ? 0 : errno, st};
    });
    if (stat_result.wait_until(deadline) != std::future_status::ready) {
        kill_and_reap(child);  // aborts the connection, which releases the stat
        stat_result.wait();
        return "stat of the mount point got no answer within 5 s";
    }
    const auto [err, st] = stat_result.get();
    if (err != 0) return fmt::format("stat {}: {}", mount_point, errno_text(err));
    if (st.st_mode != kRootMode || st.st_nlink != kRootLinks)
        return fmt::format("stat saw mode {:o} nlink {}, not the test file system's {:o} and {}", st.st_mode,
                           st.st_nlink, kRootMode, kRootLinks);
    return {};
}

}  // namespace

Capability probe_fuse() {
    Capability cap("fuse", true);
    {
        const UniqueFd dev(::open("/dev/fuse", O_RDWR | O_CLOEXEC));
        if (!dev.valid()) {
            const int err = errno;
            cap.detail = "open /dev/fuse: " + errno_text(err);
            cap.fix = err == ENOENT ? "modprobe fuse (in a container: --device /dev/fuse)"
                                    : "run as root, or chmod 0666 /dev/fuse";
            return cap;
        }
    }
    cap.detail = "/dev/fuse";

    std::string fusermount_detail;
    const auto fusermount = find_in_path("fusermount3");
    if (fusermount) {
        const auto result = run_command({*fusermount, "-V"}, 5s);
        const auto line = first_line(result.output);
        const auto pos = line.find("version: ");
        fusermount_detail = result.succeeded() && pos != std::string::npos ? "fusermount3 " + line.substr(pos + 9)
                                                                           : "fusermount3 -V failed: " + line;
    }

    if (const auto failure = mount_test_fs(); !failure.empty()) {
        cap.detail += ", test mount failed: " + failure;
        cap.fix = fusermount ? "run as root or in a container with --cap-add SYS_ADMIN --device /dev/fuse"
                             : "apt-get install fuse3";
        return cap;
    }
    if (!fusermount) {
        // Root mounts without the helper; everyone else needs it.
        cap.status = Status::degraded;
        cap.detail += ", fusermount3 not in PATH (only root can mount), test mount served getattr";
        cap.fix = "apt-get install fuse3";
        return cap;
    }
    cap.status = Status::ok;
    cap.detail += ", " + fusermount_detail + ", test mount served getattr";
    return cap;
}

}  // namespace strata::doctor
