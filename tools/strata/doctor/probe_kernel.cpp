// SPDX-License-Identifier: MIT
// Kernel interfaces the tests, the demo and the benchmarks use beside the
// layers' own (scripts/kernel-setup sets up the ones a script can):
//
//   loop-devices     attach a file to a free loop device, read it back, detach
//                    (block-device regions and the file-system tests)
//   netns            a network namespace with a veth pair shaped by tc tbf, and
//                    netem for added delay (emulated nodes: apps/video/emulate)
//   syscall-counter  a perf counter on the raw_syscalls:sys_enter tracepoint
//                    counting one getppid(); the tracepoint's id from tracefs,
//                    mounted or — where nothing mounted it — mounted for the
//                    moment in a private mount namespace (the handoff tests)
#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "core/syscall_counter.hpp"
#include "probe.hpp"
#include "system.hpp"

namespace strata::doctor {

namespace {

using namespace std::chrono_literals;

constexpr char kLoopFix[] = "run scripts/kernel-setup as root (it makes /dev/loop-control), or load the loop module";

// A one-page file attached read-only to a free loop device; the device must
// read back what the file holds. Empty on success, else the step that failed.
std::string attach_read_detach(std::string& device) {
    char file[] = "/tmp/strata-doctor-loop-XXXXXX";
    const UniqueFd backing(::mkostemp(file, O_CLOEXEC));
    if (!backing.valid()) return "mkstemp: " + errno_text(errno);
    ScopeExit unlink([&file] { ::unlink(file); });
    std::array<char, 4096> page{};
    page.fill('s');
    if (::write(backing.get(), page.data(), page.size()) != static_cast<ssize_t>(page.size()))
        return "write the backing file: " + errno_text(errno);

    const UniqueFd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
    if (!control.valid()) return "/dev/loop-control: " + errno_text(errno);
    const int index = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (index < 0) return "LOOP_CTL_GET_FREE: " + errno_text(errno);
    device = fmt::format("/dev/loop{}", index);
    const UniqueFd loop(::open(device.c_str(), O_RDONLY | O_CLOEXEC));
    if (!loop.valid()) return device + ": " + errno_text(errno);
    loop_config config{};
    config.fd = static_cast<__u32>(backing.get());
    config.info.lo_flags = LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR;
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &config) != 0) return "LOOP_CONFIGURE " + device + ": " + errno_text(errno);
    ScopeExit detach([&loop] { ::ioctl(loop.get(), LOOP_CLR_FD, 0); });
    std::array<char, 4096> read_back{};
    if (::pread(loop.get(), read_back.data(), read_back.size(), 0) != static_cast<ssize_t>(read_back.size()))
        return "read " + device + ": " + errno_text(errno);
    if (read_back != page) return device + " reads other bytes than its backing file";
    return {};
}

// `ip`/`tc` with a deadline; empty on success, else the command and its first line of output.
std::string run_step(const std::vector<std::string>& argv) {
    const auto result = run_command(argv, 10s);
    if (result.succeeded()) return {};
    std::string command;
    for (const auto& arg : argv) command += (command.empty() ? "" : " ") + arg;
    if (result.spawn_errno != 0) return command + ": " + errno_text(result.spawn_errno);
    return command + (result.timed_out ? ": timed out" : ": " + first_line(result.output));
}

}  // namespace

Capability probe_loop_devices() {
    Capability cap("loop-devices", false);
    std::string device;
    if (const auto failure = attach_read_detach(device); !failure.empty()) {
        cap.detail = failure;
        cap.fix = ::geteuid() != 0 ? "run as root (loop devices need CAP_SYS_ADMIN)" : kLoopFix;
        return cap;
    }
    cap.status = Status::ok;
    cap.detail = fmt::format("attached a file to {}, read it back and detached it", device);
    return cap;
}

Capability probe_netns() {
    Capability cap("netns", false);
    if (::geteuid() != 0) {
        cap.detail = "not root: network namespaces need CAP_SYS_ADMIN";
        cap.fix = "run as root";
        return cap;
    }
    const auto ns = unique_name("ns");
    if (auto failure = run_step({"ip", "netns", "add", ns}); !failure.empty()) {
        cap.detail = failure;
        cap.fix = "apt-get install iproute2; a kernel with CONFIG_NET_NS";
        return cap;
    }
    ScopeExit remove([&ns] { run_command({"ip", "netns", "del", ns}, 10s); });
    for (const auto& [step, fix] : std::array<std::pair<std::vector<std::string>, const char*>, 3>{{
             {{"ip", "-n", ns, "link", "add", "name", "sd0", "type", "veth", "peer", "name", "sd1"},
              "a kernel with CONFIG_VETH"},
             {{"ip", "-n", ns, "link", "set", "sd0", "up"}, "a kernel with CONFIG_VETH"},
             {{"tc", "-n", ns, "qdisc", "add", "dev", "sd0", "root", "tbf", "rate", "1gbit", "burst", "256kb",
               "latency", "50ms"},
              "a kernel with CONFIG_NET_SCH_TBF"},
         }}) {
        if (auto failure = run_step(step); !failure.empty()) {
            cap.detail = failure;
            cap.fix = fix;
            return cap;
        }
    }
    const auto netem = run_step({"tc", "-n", ns, "qdisc", "add", "dev", "sd1", "root", "netem", "delay", "1ms"});
    cap.detail = "a namespace with a veth pair shaped by tc tbf";
    if (netem.empty()) {
        cap.status = Status::ok;
        cap.detail += " and netem";
        return cap;
    }
    cap.status = Status::degraded;
    cap.detail += "; no netem (" + netem + "): apps/video/emulate --delay is unavailable";
    cap.fix = "a kernel with CONFIG_NET_SCH_NETEM (only for added link delay)";
    return cap;
}

Capability probe_syscall_counter() {
    Capability cap("syscall-counter", false);
    const bool mounted = is_mount_point("/sys/kernel/tracing") || is_mount_point("/sys/kernel/debug/tracing");
    std::string why;
    auto counter = core::SyscallCounter::open("raw_syscalls/sys_enter", &why);
    if (!counter) {
        cap.detail = why;
        cap.fix = ::geteuid() != 0 ? "run as root (or CAP_PERFMON, and mount tracefs at /sys/kernel/tracing)"
                                   : "a kernel with CONFIG_FTRACE_SYSCALLS and perf events";
        return cap;
    }
    const auto before = counter->read();
    ::syscall(SYS_getppid);
    const auto calls = counter->read() - before - 1;  // the second read counts itself
    if (calls != 1) {
        cap.detail = fmt::format("counted {} system calls for one getppid()", calls);
        cap.fix = "check kernel.perf_event_paranoid and that tracepoints fire (lockdown mode)";
        return cap;
    }
    cap.status = Status::ok;
    cap.detail = fmt::format("perf tracepoint counter counted one getppid() as 1; tracefs {}",
                             mounted ? "mounted" : "not mounted, its id read in a private mount namespace");
    return cap;
}

}  // namespace strata::doctor
