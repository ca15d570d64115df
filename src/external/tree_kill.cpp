// SPDX-License-Identifier: MIT
// kill_trees (tree_kill.hpp): /proc read with raw system calls.
#include "tree_kill.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cstdint>

namespace strata::external {

namespace {

constexpr std::size_t kMaxMembers = 8192;
constexpr int kMaxScans = 16;

struct LinuxDirent64 {
    std::uint64_t d_ino;
    std::int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[1];
};

// A decimal name ("1234") as a pid, or 0.
pid_t pid_of(const char* name) {
    pid_t pid = 0;
    for (; *name != '\0'; ++name) {
        if (*name < '0' || *name > '9' || pid > 100'000'000) {
            return 0;
        }
        pid = pid * 10 + (*name - '0');
    }
    return pid;
}

// "/proc/<pid>/stat" into `path` (no snprintf: not async-signal-safe).
void stat_path(pid_t pid, char (&path)[32]) {
    char digits[12];
    int n = 0;
    do {
        digits[n++] = static_cast<char>('0' + pid % 10);
        pid /= 10;
    } while (pid > 0 && n < 11);
    const char prefix[] = "/proc/";
    int at = 0;
    for (const char* p = prefix; *p != '\0'; ++p) {
        path[at++] = *p;
    }
    while (n > 0) {
        path[at++] = digits[--n];
    }
    for (const char* p = "/stat"; *p != '\0'; ++p) {
        path[at++] = *p;
    }
    path[at] = '\0';
}

// /proc/<pid>/stat read into `buffer`: what follows the command name, from the
// state letter on ("S ppid pgrp ..."), or nullptr if the process is gone or
// the line is not one. The command name may hold spaces and ')': the last ')' ends it.
const char* stat_after_comm(pid_t pid, char (&buffer)[512]) {
    char path[32];
    stat_path(pid, path);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return nullptr;
    }
    const ssize_t n = ::read(fd, buffer, sizeof(buffer) - 1);
    ::close(fd);
    if (n <= 0) {
        return nullptr;
    }
    buffer[n] = '\0';
    const char* p = nullptr;
    for (const char* q = buffer; *q != '\0'; ++q) {
        if (*q == ')') {
            p = q;
        }
    }
    if (p == nullptr || p[1] != ' ' || p[2] == '\0') {
        return nullptr;
    }
    return p + 2;
}

// Parent and process group of `pid` from /proc/<pid>/stat; false if it is gone.
bool parent_and_group(pid_t pid, pid_t& ppid, pid_t& pgid) {
    char buffer[512];
    const char* p = stat_after_comm(pid, buffer);
    if (p == nullptr || p[1] != ' ') {
        return false;
    }
    p += 2;  // past "S "
    long fields[2] = {0, 0};
    for (long& field : fields) {
        if (*p < '0' || *p > '9') {
            return false;
        }
        while (*p >= '0' && *p <= '9') {
            field = field * 10 + (*p++ - '0');
        }
        if (*p++ != ' ') {
            return false;
        }
    }
    ppid = static_cast<pid_t>(fields[0]);
    pgid = static_cast<pid_t>(fields[1]);
    return true;
}

// False once `pid` is gone or a zombie (it has ended); true while it runs or is still dying.
bool still_running(pid_t pid) {
    char buffer[512];
    const char* state = stat_after_comm(pid, buffer);
    return state != nullptr && *state != 'Z' && *state != 'X';
}

template <std::size_t N>
bool contains(const std::array<pid_t, N>& set, std::size_t n, pid_t pid) {
    for (std::size_t i = 0; i < n; ++i) {
        if (set[i] == pid) {
            return true;
        }
    }
    return false;
}

}  // namespace

pid_t parent_of(pid_t pid) noexcept {
    pid_t ppid = -1;
    pid_t pgid = -1;
    return parent_and_group(pid, ppid, pgid) ? ppid : -1;
}

std::size_t kill_trees(const pid_t* groups, std::size_t n) noexcept {
    std::array<pid_t, kMaxMembers> members;  // 32 KiB of stack: reentrant, no allocation
    std::size_t count = 0;
    std::size_t outside = 0;
    bool any_group = false;
    for (std::size_t i = 0; i < n; ++i) {
        if (groups[i] > 0) {
            ::kill(-groups[i], SIGSTOP);
            any_group = true;
        }
    }
    const int proc = any_group ? ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    for (int scan = 0; proc >= 0 && scan < kMaxScans; ++scan) {
        bool found = false;
        ::lseek(proc, 0, SEEK_SET);
        alignas(8) char entries[8192];
        for (;;) {
            const long got = ::syscall(SYS_getdents64, proc, entries, sizeof(entries));
            if (got <= 0) {
                break;
            }
            for (long at = 0; at < got;) {
                const auto* d = reinterpret_cast<const LinuxDirent64*>(entries + at);
                at += d->d_reclen;
                const pid_t pid = pid_of(d->d_name);
                pid_t ppid = 0;
                pid_t pgid = 0;
                if (pid <= 0 || contains(members, count, pid) || !parent_and_group(pid, ppid, pgid)) {
                    continue;
                }
                bool in_group = false;
                for (std::size_t i = 0; i < n && !in_group; ++i) {
                    in_group = groups[i] > 0 && groups[i] == pgid;
                }
                if (!in_group && !contains(members, count, ppid)) {
                    continue;
                }
                if (count == members.size()) {
                    break;
                }
                members[count++] = pid;
                found = true;
                if (!in_group) {
                    ::kill(pid, SIGSTOP);
                    ++outside;
                }
            }
        }
        if (!found) {
            break;
        }
    }
    if (proc >= 0) {
        ::close(proc);
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (groups[i] > 0) {
            ::kill(-groups[i], SIGKILL);
        }
    }
    for (std::size_t i = 0; i < count; ++i) {
        ::kill(members[i], SIGKILL);
    }
    // SIGKILL is delivered at once, but a process ends only when it next runs; on a loaded machine
    // that can be after the caller went on (the OCR program even exited, and a killed program it
    // ran was still there for a moment: a proof run saw it). Wait until each has ended, at most 2 s.
    const timespec pause{0, 2'000'000};
    for (int round = 0; round < 1000; ++round) {
        bool any = false;
        for (std::size_t i = 0; i < count && !any; ++i) {
            any = still_running(members[i]);
        }
        if (!any) {
            break;
        }
        ::nanosleep(&pause, nullptr);
    }
    return outside;
}

}  // namespace strata::external
