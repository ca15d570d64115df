// SPDX-License-Identifier: MIT
// OCI bundles run by crun (container.hpp).
#include "container/container.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/scope_guard.hpp"

namespace strata::container {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kDefaultRootfs = "/var/cache/strata/container-image/rootfs";
constexpr const char* kImageHint = "build it with scripts/container-image as root (scripts/bootstrap does)";

fs::path search_program(const std::string& name) {
    std::string search = "/usr/local/sbin:/usr/sbin:/sbin";
    if (const char* path = std::getenv("PATH"); path != nullptr) {
        search = std::string(path) + ":" + search;
    }
    std::size_t begin = 0;
    while (begin <= search.size()) {
        const std::size_t end = std::min(search.find(':', begin), search.size());
        const fs::path candidate = fs::path(search.substr(begin, end - begin)) / name;
        if (end > begin && ::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
        begin = end + 1;
    }
    return {};
}

// crun refuses a "hybrid" cgroup layout (v1 controllers beside a cgroup2
// hierarchy at /sys/fs/cgroup/unified that holds controllers too), even with
// cgroups disabled. strata's containers use no cgroup, so on such a machine crun
// runs in a private mount namespace of its own where that hierarchy is
// unmounted: the machine's mounts stay as they are.
bool hybrid_cgroups() {
    struct statfs fs_info {};
    if (::statfs("/sys/fs/cgroup/unified", &fs_info) != 0 || fs_info.f_type != CGROUP2_SUPER_MAGIC) {
        return false;
    }
    std::ifstream controllers("/sys/fs/cgroup/unified/cgroup.controllers");
    std::string first;
    return static_cast<bool>(controllers >> first);
}

std::vector<std::string> runtime_command(const fs::path& runtime, const fs::path& state) {
    std::vector<std::string> argv;
    if (hybrid_cgroups()) {
        const fs::path unshare = search_program("unshare");
        argv = {unshare.empty() ? "/usr/bin/unshare" : unshare.string(),
                "--mount",
                "--propagation",
                "private",
                "/bin/sh",
                "-c",
                R"(umount -l /sys/fs/cgroup/unified && exec "$0" "$@")"};
    }
    argv.insert(argv.end(), {runtime.string(), "--root", state.string(), "--cgroup-manager=disabled"});
    return argv;
}

// Runs argv to completion with stdout and stderr discarded; its exit status, or -1.
int run_quietly(const std::vector<std::string>& args) {
    const pid_t pid = ::fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
            ::dup2(null, STDIN_FILENO);
            ::dup2(null, STDOUT_FILENO);
            ::dup2(null, STDERR_FILENO);
        }
        std::vector<char*> argv;
        argv.reserve(args.size() + 1);
        for (const auto& a : args) {
            argv.push_back(const_cast<char*>(a.c_str()));
        }
        argv.push_back(nullptr);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

json tmpfs(const std::string& destination, const std::string& mode, bool devices = false) {
    json options = json::array({"nosuid", mode});
    if (!devices) {
        options.push_back("nodev");
    }
    return {{"destination", destination}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", options}};
}

json bind_mount(const fs::path& source, const fs::path& destination, bool read_only) {
    json options = json::array({"rbind", "nosuid", "nodev", read_only ? "ro" : "rw"});
    return {{"destination", destination.string()}, {"type", "bind"}, {"source", source.string()}, {"options", options}};
}

Result<> check_spec(const Spec& spec) {
    if (spec.args.empty() || spec.args.front().empty()) {
        return make_error(Errc::invalid_argument, "container: args is empty: the container needs a program to run");
    }
    if (spec.name_prefix.empty() ||
        spec.name_prefix.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") !=
            std::string::npos) {
        return make_error(Errc::invalid_argument, "container: name_prefix='{}': expected letters, digits and '-'",
                          spec.name_prefix);
    }
    if (spec.preserve_fds < 0) {
        return make_error(Errc::invalid_argument, "container: preserve_fds={}: must be 0 or more", spec.preserve_fds);
    }
    for (const auto& [path, what] : {std::pair{spec.strata_root, "strata_root"}, {spec.segment_dir, "segment_dir"}}) {
        if (!path.empty() && !fs::is_directory(path)) {
            return make_error(Errc::not_found, "container: {}={}: not a directory", what, path.string());
        }
    }
    for (const Bind& b : spec.binds) {
        if (!fs::exists(b.source)) {
            return make_error(Errc::not_found, "container: bind source={}: does not exist", b.source.string());
        }
        if (!b.destination.is_absolute() || b.destination.string().find("..") != std::string::npos) {
            return make_error(Errc::invalid_argument,
                              "container: bind destination={}: not an absolute path without '..'",
                              b.destination.string());
        }
    }
    return {};
}

}  // namespace

namespace {

// An image others could change would run their code as root: refused.
Result<fs::path> check_rootfs(fs::path rootfs, std::string_view origin, bool need_stamp) {
    struct stat st {};
    if (::stat(rootfs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        return make_error(Errc::not_found, "container: {}={}: no root file system there{}", origin, rootfs.string(),
                          need_stamp ? fmt::format(": {}", kImageHint) : std::string());
    }
    if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        return make_error(Errc::permission_denied,
                          "container: {}={}: the root file system must be owned by root and writable by nobody else "
                          "(uid {}, mode {:04o}): another user could change what runs in the containers",
                          origin, rootfs.string(), st.st_uid, st.st_mode & 07777);
    }
    if (need_stamp && !fs::exists(rootfs / ".strata-image")) {
        return make_error(Errc::not_found,
                          "container: {}={}: not an image of scripts/container-image (no .strata-image): {}", origin,
                          rootfs.string(), kImageHint);
    }
    return rootfs;
}

}  // namespace

Result<fs::path> default_rootfs() {
    const char* env = std::getenv("STRATA_CONTAINER_ROOTFS");
    if (env != nullptr && *env != '\0') {
        return check_rootfs(env, "STRATA_CONTAINER_ROOTFS", true);
    }
    return check_rootfs(kDefaultRootfs, "the default image", true);
}

Result<fs::path> find_runtime() {
    if (const char* env = std::getenv("STRATA_CONTAINER_RUNTIME"); env != nullptr && *env != '\0') {
        if (::access(env, X_OK) != 0) {
            return make_sys_error(errno, "container: STRATA_CONTAINER_RUNTIME={}: not an executable", env);
        }
        return fs::path(env);
    }
    fs::path crun = search_program("crun");
    if (crun.empty()) {
        return make_error(Errc::not_found,
                          "container: crun is not installed (apt-get install crun; scripts/bootstrap does)");
    }
    return crun;
}

Result<std::string> oci_config(const Spec& spec, const fs::path& rootfs) {
    if (auto ok = check_spec(spec); !ok) {
        return std::unexpected(ok.error());
    }
    json env = json::array({"PATH=/opt/strata/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                            "LD_LIBRARY_PATH=/opt/strata/lib", "HOME=/tmp"});
    for (const auto& [k, v] : spec.env) {
        if (k.empty() || k.find('=') != std::string::npos) {
            return make_error(Errc::invalid_argument, "container: env name '{}': empty or contains '='", k);
        }
        env.push_back(fmt::format("{}={}", k, v));
    }
    // Few capabilities, as crun's own default: the task needs none to use segments.
    const json caps = json::array({"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"});
    json mounts = json::array();
    mounts.push_back({{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}});
    mounts.push_back(tmpfs("/dev", "mode=755", /*devices=*/true));  // crun makes /dev/null and friends there
    mounts.push_back({{"destination", "/dev/pts"},
                      {"type", "devpts"},
                      {"source", "devpts"},
                      {"options", json::array({"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"})}});
    mounts.push_back(tmpfs("/dev/shm", "mode=1777"));
    if (!spec.segment_dir.empty()) {
        // Where Segment::open looks by default (default_segment_dir()), so programs inside need no setting.
        mounts.push_back(bind_mount(spec.segment_dir, fmt::format("/dev/shm/strata-{}", ::geteuid()), false));
    }
    mounts.push_back(tmpfs("/tmp", "mode=1777"));
    mounts.push_back({{"destination", "/sys"},
                      {"type", "sysfs"},
                      {"source", "sysfs"},
                      {"options", json::array({"nosuid", "noexec", "nodev", "ro"})}});
    if (!spec.strata_root.empty()) {
        mounts.push_back(bind_mount(spec.strata_root, kStrataRoot, true));
    }
    // Further binds go under a tmpfs at /strata, so their mount points are made
    // there and never in the shared, read-only image.
    mounts.push_back(tmpfs("/strata", "mode=755"));
    for (const Bind& b : spec.binds) {
        mounts.push_back(bind_mount(b.source, b.destination, b.read_only));
    }
    const json config = {
        {"ociVersion", "1.0.2"},
        {"process",
         {{"terminal", false},
          {"user", {{"uid", ::getuid()}, {"gid", ::getgid()}}},
          {"args", spec.args},
          {"env", env},
          {"cwd", spec.cwd},
          {"capabilities", {{"bounding", caps}, {"effective", caps}, {"permitted", caps}}},
          {"noNewPrivileges", true}}},
        {"root", {{"path", rootfs.string()}, {"readonly", true}}},
        {"hostname", "strata"},
        {"mounts", mounts},
        {"linux",
         {{"namespaces", json::array({{{"type", "pid"}}, {{"type", "ipc"}}, {{"type", "uts"}}, {{"type", "mount"}}})},
          {"maskedPaths", json::array({"/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"})},
          {"readonlyPaths", json::array({"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"})}}}};
    return config.dump(2);
}

Result<Bundle> Bundle::create(const Spec& spec) {
    auto runtime = find_runtime();
    if (!runtime) {
        return std::unexpected(runtime.error());
    }
    if (::geteuid() != 0) {
        return make_error(Errc::permission_denied,
                          "container: crun runs strata's containers as root only (uid {}): run as root", ::geteuid());
    }
    auto rootfs = spec.rootfs.empty() ? default_rootfs() : check_rootfs(spec.rootfs, "rootfs", false);
    if (!rootfs) {
        return std::unexpected(rootfs.error());
    }
    auto config = oci_config(spec, *rootfs);
    if (!config) {
        return std::unexpected(config.error());
    }
    static std::atomic<unsigned> counter{0};
    const std::string id = fmt::format("{}-{}-{}", spec.name_prefix, ::getpid(), counter++);
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/{}-XXXXXX", tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", id);
    if (::mkdtemp(pattern.data()) == nullptr) {
        return make_sys_error(errno, "container: mkdtemp {}", pattern);
    }
    Bundle bundle;
    bundle.runtime_ = *runtime;
    bundle.dir_ = pattern;
    bundle.id_ = id;
    bundle.preserve_fds_ = spec.preserve_fds;
    const int fd =
        ::open((bundle.dir_ / "config.json").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        return make_sys_error(errno, "container: cannot create {}", (bundle.dir_ / "config.json").string());
    }
    const ssize_t n = ::write(fd, config->data(), config->size());
    const int err = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(config->size())) {
        return make_sys_error(n < 0 ? err : EIO, "container: cannot write {}", (bundle.dir_ / "config.json").string());
    }
    return bundle;
}

Bundle::Bundle(Bundle&& other) noexcept
    : runtime_(std::move(other.runtime_)),
      dir_(std::exchange(other.dir_, {})),
      id_(std::move(other.id_)),
      preserve_fds_(other.preserve_fds_) {}

Bundle& Bundle::operator=(Bundle&& other) noexcept {
    if (this != &other) {
        remove();
        std::error_code ignored;
        if (!dir_.empty()) {
            fs::remove_all(dir_, ignored);
        }
        runtime_ = std::move(other.runtime_);
        dir_ = std::exchange(other.dir_, {});
        id_ = std::move(other.id_);
        preserve_fds_ = other.preserve_fds_;
    }
    return *this;
}

Bundle::~Bundle() {
    if (dir_.empty()) {
        return;
    }
    remove();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
}

std::vector<std::string> Bundle::run_argv() const {
    std::vector<std::string> argv = runtime_command(runtime_, dir_ / "state");
    argv.insert(argv.end(), {"run", "--bundle", dir_.string()});
    if (preserve_fds_ > 0) {
        argv.push_back(fmt::format("--preserve-fds={}", preserve_fds_));
    }
    argv.push_back(id_);
    return argv;
}

Result<> Bundle::kill(int sig) const {
    auto argv = runtime_command(runtime_, dir_ / "state");
    argv.insert(argv.end(), {"kill", id_, std::to_string(sig)});
    const int rc = run_quietly(argv);
    if (rc != 0) {
        return make_error(Errc::not_found, "container {}: crun kill {} failed (exit {}): not running", id_, sig, rc);
    }
    return {};
}

void Bundle::remove() const {
    if (dir_.empty() || !fs::exists(dir_ / "state" / id_)) {
        return;
    }
    auto argv = runtime_command(runtime_, dir_ / "state");
    argv.insert(argv.end(), {"delete", "--force", id_});
    run_quietly(argv);
}

}  // namespace strata::container
