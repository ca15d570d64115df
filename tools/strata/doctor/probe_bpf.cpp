// SPDX-License-Identifier: MIT
// bpf: privilege, kernel BTF, and the embedded doctor_probe skeleton loaded,
// attached to sched_switch and seen counting this process's context switches.
//
// Not required by the defaults: the blocking monitor falls back to /proc when
// BPF is unavailable. The report still says exactly what failed.
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <string>

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "doctor_probe.skel.h"
#include "monitor/libbpf_log.hpp"
#include "probe.hpp"
#include "system.hpp"

namespace strata::doctor {

namespace {

constexpr char kPrivilegeFix[] = "run as root or grant CAP_BPF+CAP_PERFMON";

// Effective capabilities through capget(2), which needs no libcap.
bool has_capability(int cap) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    std::array<__user_cap_data_struct, _LINUX_CAPABILITY_U32S_3> data{};
    if (::syscall(SYS_capget, &header, data.data()) != 0) return false;
    const auto index = static_cast<std::size_t>(cap / 32);
    return (data[index].effective & (1U << (cap % 32))) != 0;
}

// Reads the BTF header's magic: proves the file is real BTF, not just present.
bool kernel_btf_readable(std::uint64_t& size, std::string& problem) {
    const UniqueFd fd(::open("/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) {
        problem = "/sys/kernel/btf/vmlinux: " + errno_text(errno);
        return false;
    }
    std::uint16_t magic = 0;
    if (::read(fd.get(), &magic, sizeof(magic)) != static_cast<ssize_t>(sizeof(magic)) || magic != 0xeB9F) {
        problem = "/sys/kernel/btf/vmlinux does not start with the BTF magic";
        return false;
    }
    struct stat st {};
    size = ::fstat(fd.get(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
    return true;
}

// Loads, attaches, provokes context switches, reads the counter. Returns the
// number of switches seen, or a negative errno with `problem` set.
long long run_skeleton(std::string& problem) {
    doctor_probe* skel = doctor_probe__open();
    if (skel == nullptr) {
        const int err = errno;
        problem = "open skeleton: " + errno_text(err);
        return -err;
    }
    ScopeExit destroy([skel] { doctor_probe__destroy(skel); });
    skel->rodata->target_tgid = static_cast<std::uint32_t>(::getpid());
    if (const int err = doctor_probe__load(skel); err != 0) {
        problem = "load: " + errno_text(-err);
        return err;
    }
    if (const int err = doctor_probe__attach(skel); err != 0) {
        problem = "attach tp_btf/sched_switch: " + errno_text(-err);
        return err;
    }
    // Each sleep blocks this thread, so the scheduler must switch away from it.
    for (int i = 0; i < 20; ++i) ::usleep(500);
    doctor_probe__detach(skel);
    return static_cast<long long>(__atomic_load_n(&skel->bss->switch_count, __ATOMIC_RELAXED));
}

}  // namespace

Capability probe_bpf() {
    Capability cap("bpf", false);
    const bool privileged =
        ::geteuid() == 0 || has_capability(CAP_SYS_ADMIN) || (has_capability(CAP_BPF) && has_capability(CAP_PERFMON));

    std::uint64_t btf_size = 0;
    std::string problem;
    if (!kernel_btf_readable(btf_size, problem)) {
        cap.detail = problem;
        cap.fix = "boot a kernel built with CONFIG_DEBUG_INFO_BTF=y (the blocking monitor uses /proc meanwhile)";
        return cap;
    }

    // libbpf's first warning names why a load failed (verifier log, missing
    // BTF); captured for the report instead of interleaving with the table.
    long long switches = 0;
    std::string libbpf_warning;
    {
        const monitor::detail::CaptureLibbpfWarnings capture;
        switches = run_skeleton(problem);
        libbpf_warning = first_line(capture.first_warning());
    }

    utsname uts{};
    ::uname(&uts);
    const auto versions = fmt::format("kernel {}, BTF {}, libbpf {}.{}", uts.release, human_bytes(btf_size),
                                      libbpf_major_version(), libbpf_minor_version());
    if (switches < 0) {
        cap.detail = problem;
        if (!libbpf_warning.empty()) cap.detail += " (libbpf: " + libbpf_warning + ")";
        cap.detail += "; " + versions;
        if (!privileged) cap.detail += "; not privileged";
        cap.fix = (!privileged || switches == -EPERM || switches == -EACCES)
                      ? kPrivilegeFix
                      : "a kernel with CONFIG_BPF_SYSCALL=y and BTF-enabled tracepoints (5.5 or newer)";
        return cap;
    }
    if (switches == 0) {
        cap.detail = "tp_btf/sched_switch attached but counted no switches of this process; " + versions;
        cap.fix = "check that the kernel runs tracing programs (kernel.bpf_stats, lockdown mode)";
        return cap;
    }
    cap.status = Status::ok;
    cap.detail = fmt::format("{}, tp_btf/sched_switch counted {} switches of this process", versions, switches);
    return cap;
}

}  // namespace strata::doctor
