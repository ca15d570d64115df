// SPDX-License-Identifier: MIT
// What a doctor probe reports, and the list of probes.
//
// Each probe exercises the capability for real (mounts, loads, maps, spawns)
// rather than testing that a file exists, is bounded in time, and leaves
// nothing behind — no mount, directory, cgroup, child process or shm name —
// whether it succeeds or fails. Probes run one after another on the calling
// thread; none is thread-safe against another running concurrently.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::doctor {

enum class Status {
    ok,        ///< works as strata needs it
    degraded,  ///< works, with a limit worth knowing (counts as present)
    missing,   ///< does not work here
};

/// "ok", "degraded", "missing": the words of the report and the JSON.
std::string_view to_string(Status status) noexcept;

struct Capability {
    /// Starts as missing with no detail; the probe fills in what it found.
    Capability(std::string name_, bool required_) : name(std::move(name_)), required(required_) {}

    std::string name;  ///< short, stable: "fuse", "cgroup-cpu"
    Status status = Status::missing;
    bool required = false;  ///< whether strata's default configuration needs it
    std::string detail;     ///< versions, sizes, or what failed and why
    std::string fix;        ///< how to get it when not ok; empty when ok
};

// One function per capability; each sets name and required itself.
Capability probe_fuse();
Capability probe_bpf();
Capability probe_monitor();
Capability probe_cma();
Capability probe_memfd();
Capability probe_userfaultfd();
Capability probe_shm();
Capability probe_mpi();
Capability probe_zeromq();
/// Which exposure external tasks get with exposure = "auto", and whether fuse works.
Capability probe_external_exposure();
/// Kernel interfaces beside the layers' own (probe_kernel.cpp).
Capability probe_loop_devices();
Capability probe_netns();
Capability probe_syscall_counter();
/// A real container as `strata container run` makes it (probe_container.cpp).
Capability probe_container();
/// cgroup-cpu, cgroup-memory, cgroup-blkio, cgroup-cpuset, in that order.
std::vector<Capability> probe_cgroups();

/// The aligned table, one line per capability plus a `fix:` line under each
/// that is not ok, and a closing summary.
std::string render_text(const std::vector<Capability>& capabilities);

/// {"version", "ok", "capabilities": [{"name","status","required","detail","fix"}]}
std::string render_json(const std::vector<Capability>& capabilities);

/// True when every required capability is ok or degraded.
bool required_present(const std::vector<Capability>& capabilities);

}  // namespace strata::doctor
