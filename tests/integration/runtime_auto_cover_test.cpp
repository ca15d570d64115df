// SPDX-License-Identifier: MIT
// The automatic cover priority with the real BPF monitor: a job that shows
// it owns its cores (a real exclusive cgroup v1 cpuset, or an affinity
// narrower than the online CPUs) gets a standby worker per core
// (idle+standby, issue 29); a job on cores it shares gets idle alone.
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "runtime_cover_support.hpp"
#include "strata/runtime.hpp"
#include "support/capability.hpp"

namespace strata::runtime {
namespace {

namespace fs = std::filesystem;
const fs::path kCpusetRoot = "/sys/fs/cgroup/cpuset";

std::string read_line(const fs::path& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

bool write_line(const fs::path& path, const std::string& value) {
    std::ofstream out(path);
    out << value << '\n';
    out.flush();
    return static_cast<bool>(out);
}

// This process in an exclusive child cpuset of the root holding all of the
// root's CPUs, as a batch system gives a job its cores; back in the root
// cpuset and the child removed when it goes, also on a failed assertion.
class ExclusiveCpuset {
public:
    ExclusiveCpuset() : path_(kCpusetRoot / ("strata-test-" + std::to_string(::getpid()))) {
        if (!fs::create_directory(path_)) {
            error_ = "cannot make " + path_.string();
            return;
        }
        if (!write_line(path_ / "cpuset.cpus", read_line(kCpusetRoot / "cpuset.cpus")) ||
            !write_line(path_ / "cpuset.mems", read_line(kCpusetRoot / "cpuset.mems")) ||
            !write_line(path_ / "cpuset.cpu_exclusive", "1") ||
            !write_line(path_ / "cgroup.procs", std::to_string(::getpid()))) {
            error_ = "cannot set up the exclusive cpuset " + path_.string() + " (another cpuset overlapping it?)";
        }
    }
    ~ExclusiveCpuset() {
        (void)write_line(kCpusetRoot / "cgroup.procs", std::to_string(::getpid()));
        std::error_code ignored;
        fs::remove(path_, ignored);
    }
    ExclusiveCpuset(const ExclusiveCpuset&) = delete;
    ExclusiveCpuset& operator=(const ExclusiveCpuset&) = delete;
    [[nodiscard]] const std::string& error() const { return error_; }
    [[nodiscard]] std::string name() const { return "/" + path_.filename().string(); }

private:
    fs::path path_;
    std::string error_;
};

int online_cpus() {
    return static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
}

TEST(RuntimeAutoCover, a_job_in_an_exclusive_cpuset_gets_a_standby_worker_per_core) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor and to make a cpuset cgroup");
    STRATA_REQUIRE(fs::exists(kCpusetRoot / "cpuset.cpu_exclusive"), "the cgroup v1 cpuset controller");
    const ExclusiveCpuset job;
    ASSERT_EQ(job.error(), "");
    auto sut = test::start_with_ebpf(sched_getcpu(), CoverPriority::automatic);
    ASSERT_NE(sut, nullptr);
    EXPECT_EQ(sut->cover_priority(), CoverPriority::idle_standby) << sut->cover_reason();
    EXPECT_NE(sut->cover_reason().find(job.name()), std::string::npos) << sut->cover_reason();
}

TEST(RuntimeAutoCover, a_job_bound_to_fewer_cpus_than_are_online_gets_a_standby_worker_per_core) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor");
    STRATA_REQUIRE(online_cpus() >= 2, "two online CPUs");
    cpu_set_t saved;
    ASSERT_EQ(::sched_getaffinity(0, sizeof(saved), &saved), 0);
    const int cpu = sched_getcpu();
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(static_cast<unsigned>(cpu), &one);
    ASSERT_EQ(::sched_setaffinity(0, sizeof(one), &one), 0);  // the runtime's threads inherit it
    auto sut = test::start_with_ebpf(cpu, CoverPriority::automatic);
    ASSERT_EQ(::sched_setaffinity(0, sizeof(saved), &saved), 0);
    ASSERT_NE(sut, nullptr);
    EXPECT_EQ(sut->cover_priority(), CoverPriority::idle_standby) << sut->cover_reason();
    EXPECT_NE(sut->cover_reason().find("bound to CPUs " + std::to_string(cpu)), std::string::npos)
        << sut->cover_reason();
}

TEST(RuntimeAutoCover, a_job_on_every_online_cpu_outside_a_job_cpuset_gets_idle_alone) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor");
    cpu_set_t set;
    ASSERT_EQ(::sched_getaffinity(0, sizeof(set), &set), 0);
    STRATA_REQUIRE(CPU_COUNT(&set) == online_cpus(), "a test process allowed on every online CPU");
    STRATA_REQUIRE(read_line("/proc/self/cpuset") == "/", "a test process in the root cpuset");
    auto sut = test::start_with_ebpf(sched_getcpu(), CoverPriority::automatic);
    ASSERT_NE(sut, nullptr);
    EXPECT_EQ(sut->cover_priority(), CoverPriority::idle) << sut->cover_reason();
    EXPECT_NE(sut->cover_reason().find("does not show that it owns its cores"), std::string::npos)
        << sut->cover_reason();
}

}  // namespace
}  // namespace strata::runtime
