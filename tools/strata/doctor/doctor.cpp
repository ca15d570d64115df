// SPDX-License-Identifier: MIT
// `strata doctor`: runs every probe in the order of the report, then prints it.
#include "doctor.hpp"

#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "probe.hpp"

namespace strata::doctor {

namespace {

// A probe that throws (out of memory, a library's exception) is reported as
// missing rather than ending the doctor: the other lines are still worth having.
template <class Probe>
void run_guarded(std::vector<Capability>& out, const char* name, bool required, Probe probe) {
    try {
        out.push_back(probe());
    } catch (const std::exception& error) {
        Capability failed(name, required);
        failed.detail = std::string("the probe failed: ") + error.what();
        out.push_back(std::move(failed));
    }
}

}  // namespace

int run(const Options& options) {
    std::vector<Capability> report;
    run_guarded(report, "fuse", true, probe_fuse);
    run_guarded(report, "bpf", false, probe_bpf);
    run_guarded(report, "monitor", false, probe_monitor);
    run_guarded(report, "cma", false, probe_cma);
    run_guarded(report, "memfd", true, probe_memfd);
    run_guarded(report, "userfaultfd", false, probe_userfaultfd);
    run_guarded(report, "shm", true, probe_shm);
    run_guarded(report, "mpi", true, probe_mpi);
    run_guarded(report, "zeromq", true, probe_zeromq);
    run_guarded(report, "external-exposure", false, probe_external_exposure);
    run_guarded(report, "loop-devices", false, probe_loop_devices);
    run_guarded(report, "netns", false, probe_netns);
    run_guarded(report, "syscall-counter", false, probe_syscall_counter);
    run_guarded(report, "container", false, probe_container);
    try {
        for (auto& capability : probe_cgroups()) report.push_back(std::move(capability));
    } catch (const std::exception& error) {
        for (const char* name : {"cgroup-cpu", "cgroup-memory", "cgroup-blkio", "cgroup-cpuset"}) {
            Capability failed(name, false);
            failed.detail = std::string("the probe failed: ") + error.what();
            report.push_back(std::move(failed));
        }
    }

    const auto text = options.json ? render_json(report) : render_text(report);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    return required_present(report) ? 0 : 1;
}

}  // namespace strata::doctor
