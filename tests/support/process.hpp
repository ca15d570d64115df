// SPDX-License-Identifier: MIT
// Child processes and views of this process's mappings and descriptors.
//
// run_in_child() forks, runs a callable returning an exit code in the child and
// leaves with _exit(), so a child never returns into gtest (it would run the
// rest of the suite a second time). Children report failures on stderr and
// through their exit code; gtest assertions belong in the parent only. A child
// dies with its parent (PR_SET_PDEATHSIG), so a test killed by its timeout
// leaves no process behind.
#pragma once

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

/// In a child's body: when `condition` is false, report it and exit with 1.
#define STRATA_CHILD_CHECK(condition)                                                                   \
    do {                                                                                                \
        if (!(condition)) {                                                                             \
            std::fprintf(stderr, "%s:%d: check failed in child: %s\n", __FILE__, __LINE__, #condition); \
            return 1;                                                                                   \
        }                                                                                               \
    } while (false)

/// In a child's body: when the Result holds an error, report it and exit with 1.
#define STRATA_CHILD_CHECK_OK(result)                                                            \
    do {                                                                                         \
        if (!(result).has_value()) {                                                             \
            std::fprintf(stderr, "%s:%d: %s failed in child: %s\n", __FILE__, __LINE__, #result, \
                         (result).error().what().c_str());                                       \
            return 1;                                                                            \
        }                                                                                        \
    } while (false)

namespace strata::test {

/// How a child process ended.
struct ChildStatus {
    bool exited = false;    ///< ended through exit/_exit
    int exit_code = -1;     ///< valid when exited
    bool signaled = false;  ///< killed by a signal
    int signal = 0;         ///< valid when signaled

    [[nodiscard]] bool succeeded() const { return exited && exit_code == 0; }
    [[nodiscard]] std::string describe() const {
        if (exited) {
            return fmt::format("exited with code {}", exit_code);
        }
        if (signaled) {
            return fmt::format("killed by signal {} ({})", signal, ::strsignal(signal));
        }
        return "did not end";
    }
};

inline ChildStatus wait_for_child(pid_t pid) {
    int status = 0;
    pid_t waited = -1;
    do {
        waited = ::waitpid(pid, &status, 0);
    } while (waited < 0 && errno == EINTR);
    ChildStatus result;
    if (waited != pid) {
        return result;
    }
    if (WIFEXITED(status)) {
        result.exited = true;
        result.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        result.signaled = true;
        result.signal = WTERMSIG(status);
    }
    return result;
}

/// Forks; the child runs `body` (returning its exit code) and _exits. An
/// escaping exception exits with 126. Waits for the child and returns how it ended.
template <class Body>
ChildStatus run_in_child(Body&& body) {
    std::fflush(nullptr);
    std::cout.flush();
    std::cerr.flush();
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        return {};
    }
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) {
            ::_exit(125);
        }
        int code = 126;
        try {
            code = body();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "exception in child: %s\n", e.what());
        } catch (...) {
            std::fprintf(stderr, "unknown exception in child\n");
        }
        std::fflush(nullptr);
        ::_exit(code);
    }
    return wait_for_child(pid);
}

/// The one-letter state ('R', 'S', 'T', ...) that a /proc stat file gives, '?'
/// when it cannot be read (the task is gone). The command name before it is in
/// parentheses and may hold spaces and ')', so the state is read after the last ')'.
inline char proc_state(const std::string& stat_path) {
    std::ifstream in(stat_path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto paren = text.rfind(')');
    return paren == std::string::npos || paren + 2 >= text.size() ? '?' : text[paren + 2];
}

/// One line of /proc/self/maps.
struct Mapping {
    std::uintptr_t start = 0;
    std::uintptr_t end = 0;
    std::string perms;  ///< "rw-p", "rw-s", ...
    std::uint64_t offset = 0;
    std::string device;  ///< "fd:01"
    std::uint64_t inode = 0;
    std::string path;  ///< empty for anonymous memory
    std::string line;  ///< the whole line, for messages

    [[nodiscard]] bool contains(std::uintptr_t address) const { return start <= address && address < end; }
    [[nodiscard]] bool is_shared() const { return perms.size() == 4 && perms[3] == 's'; }
    [[nodiscard]] bool is_anonymous() const { return inode == 0 && (path.empty() || path.starts_with("[anon:")); }
};

namespace detail {
inline std::string_view next_field(std::string_view& rest) {
    const std::size_t begin = std::min(rest.find_first_not_of(' '), rest.size());
    rest.remove_prefix(begin);
    const std::size_t end = std::min(rest.find(' '), rest.size());
    const std::string_view field = rest.substr(0, end);
    rest.remove_prefix(end);
    return field;
}
inline std::uint64_t parse_number(std::string_view text, int base) {
    std::uint64_t value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value, base);
    return value;
}
}  // namespace detail

/// Parses "start-end perms offset dev inode   pathname".
inline Mapping parse_maps_line(const std::string& line) {
    Mapping m;
    m.line = line;
    std::string_view rest(line);
    const std::string_view range = detail::next_field(rest);
    const std::size_t dash = range.find('-');
    m.start = static_cast<std::uintptr_t>(detail::parse_number(range.substr(0, dash), 16));
    m.end = static_cast<std::uintptr_t>(detail::parse_number(range.substr(dash + 1), 16));
    m.perms = std::string(detail::next_field(rest));
    m.offset = detail::parse_number(detail::next_field(rest), 16);
    m.device = std::string(detail::next_field(rest));
    m.inode = detail::parse_number(detail::next_field(rest), 10);
    const std::size_t path_begin = std::min(rest.find_first_not_of(' '), rest.size());
    m.path = std::string(rest.substr(path_begin));
    return m;
}

inline std::vector<Mapping> read_maps() {
    std::vector<Mapping> maps;
    std::ifstream in("/proc/self/maps");
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) {
            maps.push_back(parse_maps_line(line));
        }
    }
    return maps;
}

inline std::uintptr_t address_of(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p);
}

inline std::optional<Mapping> mapping_at(const std::vector<Mapping>& maps, std::uintptr_t address) {
    const auto it = std::find_if(maps.begin(), maps.end(), [&](const Mapping& m) { return m.contains(address); });
    if (it == maps.end()) {
        return std::nullopt;
    }
    return *it;
}

/// Whether any mapping of this process covers `address`.
inline bool is_mapped(std::uintptr_t address) {
    return mapping_at(read_maps(), address).has_value();
}

/// Descriptor numbers open in this process (the one reading the directory excluded).
inline std::set<int> open_descriptors() {
    std::set<int> fds;
    std::vector<int> seen;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
        seen.push_back(static_cast<int>(detail::parse_number(entry.path().filename().string(), 10)));
    }
    std::sort(seen.begin(), seen.end());
    // The iterator's own descriptor is the one whose link no longer resolves now that it is closed.
    for (const int fd : seen) {
        std::error_code link_error;
        const auto target = std::filesystem::read_symlink(fmt::format("/proc/self/fd/{}", fd), link_error);
        if (!link_error && !target.empty()) {
            fds.insert(fd);
        }
    }
    return fds;
}

/// Sanitizer allocators map and split anonymous memory on their own whenever
/// the test allocates, so under them only file-backed mappings are compared.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool anonymous_mappings_are_comparable = false;
#else
inline constexpr bool anonymous_mappings_are_comparable = true;
#endif

/// What a failed call must leave as it found: mappings and descriptors.
struct ProcessResources {
    std::size_t mapping_count = 0;
    std::vector<std::string> fixed_mappings;  ///< maps lines, except [heap] and [stack] that move by themselves
    std::set<int> descriptors;

    bool operator==(const ProcessResources&) const = default;
};

inline ProcessResources snapshot_resources() {
    ProcessResources r;
    for (const auto& m : read_maps()) {
        if (!anonymous_mappings_are_comparable && m.inode == 0 && m.path.empty()) {
            continue;
        }
        ++r.mapping_count;
        if (m.path != "[heap]" && m.path != "[stack]") {
            r.fixed_mappings.push_back(m.line);
        }
    }
    r.descriptors = open_descriptors();
    return r;
}

/// "" when both snapshots match, else what changed.
inline std::string resources_difference(const ProcessResources& before, const ProcessResources& after) {
    std::string out;
    if (before.mapping_count != after.mapping_count) {
        out += fmt::format("mappings: {} before, {} after; ", before.mapping_count, after.mapping_count);
    }
    for (const auto& line : after.fixed_mappings) {
        if (std::find(before.fixed_mappings.begin(), before.fixed_mappings.end(), line) ==
            before.fixed_mappings.end()) {
            out += fmt::format("new mapping: {}; ", line);
        }
    }
    for (const auto& line : before.fixed_mappings) {
        if (std::find(after.fixed_mappings.begin(), after.fixed_mappings.end(), line) == after.fixed_mappings.end()) {
            out += fmt::format("mapping gone or changed: {}; ", line);
        }
    }
    for (const int fd : after.descriptors) {
        if (!before.descriptors.contains(fd)) {
            std::error_code error;
            const auto target = std::filesystem::read_symlink(fmt::format("/proc/self/fd/{}", fd), error);
            out += fmt::format("new descriptor {} -> {}; ", fd, target.string());
        }
    }
    for (const int fd : before.descriptors) {
        if (!after.descriptors.contains(fd)) {
            out += fmt::format("descriptor {} closed; ", fd);
        }
    }
    return out;
}

}  // namespace strata::test
