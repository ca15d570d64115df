// SPDX-License-Identifier: MIT
// Whether the job owns its CPUs (src/runtime/ownership.hpp): the facts that
// let the automatic cover priority keep a standby worker per core.
#include <sched.h>

#include <gtest/gtest.h>

#include "runtime/ownership.hpp"

namespace strata::runtime::detail {
namespace {

CpuFacts two_cpus() {
    CpuFacts facts;
    facts.allowed = {0, 1};
    facts.online = {0, 1};
    facts.cpuset = "/";
    facts.cpuset_exclusive = true;  // the root cpuset always is
    return facts;
}

TEST(CoreOwnership, the_root_cpuset_shows_no_ownership_though_it_is_exclusive) {
    EXPECT_FALSE(owned_cores(two_cpus()));
}

TEST(CoreOwnership, an_exclusive_job_cpuset_shows_ownership_and_is_named) {
    auto facts = two_cpus();
    facts.cpuset = "/slurm/job_42";
    const auto owned = owned_cores(facts);
    ASSERT_TRUE(owned);
    EXPECT_NE(owned->find("/slurm/job_42"), std::string::npos) << *owned;
}

TEST(CoreOwnership, a_job_cpuset_that_is_not_exclusive_shows_no_ownership) {
    auto facts = two_cpus();
    facts.cpuset = "/user.slice";
    facts.cpuset_exclusive = false;
    EXPECT_FALSE(owned_cores(facts));
}

TEST(CoreOwnership, an_affinity_narrower_than_the_online_cpus_shows_ownership) {
    auto facts = two_cpus();
    facts.cpuset_exclusive = false;
    facts.allowed = {1};
    const auto owned = owned_cores(facts);
    ASSERT_TRUE(owned);
    EXPECT_NE(owned->find("bound to CPUs 1 of the online 0-1"), std::string::npos) << *owned;
}

TEST(CoreOwnership, facts_that_could_not_be_read_show_no_ownership) {
    CpuFacts facts;
    facts.allowed = {0};
    EXPECT_FALSE(owned_cores(facts));
}

TEST(CoreOwnership, the_facts_of_this_thread_name_its_affinity_and_a_cpuset_path) {
    const auto facts = read_cpu_facts();
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(::sched_getaffinity(0, sizeof(set), &set), 0);
    EXPECT_EQ(facts.allowed.size(), static_cast<std::size_t>(CPU_COUNT(&set)));
    EXPECT_GE(facts.online.size(), facts.allowed.size());
    ASSERT_FALSE(facts.cpuset.empty());
    EXPECT_EQ(facts.cpuset.front(), '/');
}

}  // namespace
}  // namespace strata::runtime::detail
