// SPDX-License-Identifier: MIT
// Real containers for strata's tasks (docs/shm.md, "Containers"): an OCI
// bundle run by crun, whose root file system is the image scripts/container-image
// builds from Debian packages, with strata's build or install tree bound in
// read-only at /opt/strata and the segment directory bound in where
// Segment::open looks by default (/dev/shm/strata-<euid>, a tmpfs /dev/shm around it), so tasks in different containers
// share segments, ports and handles.
//
// Each container gets its own pid, mount, uts and ipc namespaces (the host's
// network, like `--network host`, so MPI launchers reach it). crun runs with a
// private state directory inside the bundle and without cgroups, so removing
// the bundle removes every trace of the container.
//
//   container::Spec spec;
//   spec.args = {"/opt/strata/bin/strata", "shm", "ls"};
//   spec.segment_dir = strata::default_segment_dir();      // the host's /dev/shm/strata-<euid> or $STRATA_SHM_DIR
//   auto bundle = container::Bundle::create(spec);      // config.json in a private 0700 directory
//   pid_t pid = spawn(bundle->run_argv());              // `crun run`: exits with the container's status
//   ...                                                 // ~Bundle: crun delete --force, the directory removed
//
// Thread safety: Bundle objects are independent; create() may run on several
// threads at once. Errors: invalid_argument (a bad Spec field, named),
// not_found (no crun, no image: the message says how to get it),
// permission_denied (not root, an image others may write), io_error.
#pragma once

#include <signal.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "strata/error.hpp"

namespace strata::container {

/// Where strata's tree appears inside every container.
inline constexpr const char* kStrataRoot = "/opt/strata";

struct Bind {
    std::filesystem::path source;       ///< on the host; must exist
    std::filesystem::path destination;  ///< absolute, inside the container
    bool read_only = true;
};

struct Spec {
    std::vector<std::string> args;                         ///< argv inside the container (required)
    std::vector<std::pair<std::string, std::string>> env;  ///< added to PATH/LD_LIBRARY_PATH/HOME
    std::filesystem::path rootfs;                          ///< empty: default_rootfs()
    std::filesystem::path strata_root;                     ///< bound at /opt/strata (bin/, lib/); empty: none
    std::filesystem::path segment_dir;                     ///< bound read-write at /dev/shm/strata-<euid>; empty: none
    std::vector<Bind> binds;                               ///< further bind mounts
    std::string cwd = "/";                                 ///< inside the container
    int preserve_fds = 0;                                  ///< descriptors 3 .. 2+N passed in at their numbers
    std::string name_prefix = "strata";                    ///< ids are <prefix>-<pid>-<n>, bundles $TMPDIR/<id>-XXXXXX
};

/// The image: $STRATA_CONTAINER_ROOTFS, else /var/cache/strata/container-image/rootfs
/// (scripts/container-image). Checked: a directory owned by root, not writable by
/// group or others, with the image's stamp file.
Result<std::filesystem::path> default_rootfs();

/// The OCI runtime: $STRATA_CONTAINER_RUNTIME, else crun in PATH or the sbin directories.
Result<std::filesystem::path> find_runtime();

/// One container's bundle and crun state; move-only. The destructor force-deletes
/// the container (killing what still runs in it) and removes the directory:
/// reap the `crun run` process first (or call remove() and then reap it), since
/// a crun still running may write into the bundle while it goes.
class Bundle {
public:
    static Result<Bundle> create(const Spec& spec);

    Bundle(Bundle&& other) noexcept;
    Bundle& operator=(Bundle&& other) noexcept;
    Bundle(const Bundle&) = delete;
    Bundle& operator=(const Bundle&) = delete;
    ~Bundle();

    /// The container's id (unique on this machine while the bundle lives).
    [[nodiscard]] const std::string& id() const { return id_; }
    /// The bundle directory (config.json, the runtime's state).
    [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
    /// `crun ... run --bundle DIR [--preserve-fds N] ID`: runs the container in the
    /// foreground; its exit status is the container process's.
    [[nodiscard]] std::vector<std::string> run_argv() const;
    /// `crun kill ID SIG`: the signal to the container's pid 1 (which, killed, ends the pid namespace).
    Result<> kill(int sig = SIGKILL) const;
    /// `crun delete --force ID`; done by the destructor too. Idempotent.
    void remove() const;

private:
    Bundle() = default;
    std::filesystem::path runtime_;
    std::filesystem::path dir_;
    std::string id_;
    int preserve_fds_ = 0;
};

/// The OCI configuration the bundle gets (exposed for the tests): JSON text.
Result<std::string> oci_config(const Spec& spec, const std::filesystem::path& rootfs);

}  // namespace strata::container
