// SPDX-License-Identifier: MIT
// STRATA_MONITOR, STRATA_MONITOR_THRESHOLD_US, STRATA_MONITOR_PERIOD_US, and
// what auto chooses.
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "strata/monitor.hpp"
#include "support/result.hpp"

namespace {

using strata::Errc;
using strata::monitor::Backend;
using strata::monitor::options_from_env;
using strata::test::fails_with;

// Sets the three variables for one test and restores the environment after it.
class MonitorEnv : public ::testing::Test {
protected:
    void TearDown() override {
        for (const char* name : {"STRATA_MONITOR", "STRATA_MONITOR_THRESHOLD_US", "STRATA_MONITOR_PERIOD_US"})
            ::unsetenv(name);
    }
    static void set(const char* name, const char* value) { ::setenv(name, value, 1); }
};

TEST_F(MonitorEnv, an_explicit_backend_is_taken_as_given_and_named_as_the_reason) {
    set("STRATA_MONITOR", "off");
    STRATA_ASSERT_ASSIGN(off, options_from_env());
    EXPECT_EQ(off.backend, Backend::off);
    EXPECT_EQ(off.reason, "STRATA_MONITOR=off");

    set("STRATA_MONITOR", "proc");
    STRATA_ASSERT_ASSIGN(proc, options_from_env());
    EXPECT_EQ(proc.backend, Backend::proc);

    set("STRATA_MONITOR", "ebpf");
    STRATA_ASSERT_ASSIGN(ebpf, options_from_env());
    EXPECT_EQ(ebpf.backend, Backend::ebpf);
}

TEST_F(MonitorEnv, defaults_are_auto_no_threshold_and_a_one_millisecond_period) {
    STRATA_ASSERT_ASSIGN(sut, options_from_env());
    EXPECT_NE(sut.backend, Backend::off);
    EXPECT_TRUE(sut.reason.starts_with("auto: ")) << sut.reason;
    EXPECT_EQ(sut.threshold.count(), 0);
    EXPECT_EQ(sut.proc_period.count(), 1000);
}

TEST_F(MonitorEnv, auto_and_unset_choose_the_same_backend) {
    STRATA_ASSERT_ASSIGN(unset, options_from_env());
    set("STRATA_MONITOR", "auto");
    STRATA_ASSERT_ASSIGN(automatic, options_from_env());
    EXPECT_EQ(unset.backend, automatic.backend);
    EXPECT_EQ(unset.reason, automatic.reason);
}

TEST_F(MonitorEnv, threshold_and_period_are_read_in_microseconds) {
    set("STRATA_MONITOR", "off");
    set("STRATA_MONITOR_THRESHOLD_US", "250");
    set("STRATA_MONITOR_PERIOD_US", "500");
    STRATA_ASSERT_ASSIGN(sut, options_from_env());
    EXPECT_EQ(sut.threshold, std::chrono::microseconds(250));
    EXPECT_EQ(sut.proc_period, std::chrono::microseconds(500));
}

TEST_F(MonitorEnv, an_unknown_backend_is_an_error_naming_the_variable_and_value) {
    set("STRATA_MONITOR", "kernel");
    EXPECT_TRUE(fails_with(options_from_env(), Errc::invalid_argument, {"STRATA_MONITOR", "kernel"}));
}

TEST_F(MonitorEnv, a_threshold_that_is_not_a_number_is_an_error_naming_the_variable_and_value) {
    set("STRATA_MONITOR", "off");
    set("STRATA_MONITOR_THRESHOLD_US", "10ms");
    EXPECT_TRUE(fails_with(options_from_env(), Errc::invalid_argument, {"STRATA_MONITOR_THRESHOLD_US", "10ms"}));
}

TEST_F(MonitorEnv, a_negative_threshold_is_an_error) {
    set("STRATA_MONITOR", "off");
    set("STRATA_MONITOR_THRESHOLD_US", "-5");
    EXPECT_TRUE(fails_with(options_from_env(), Errc::invalid_argument, {"STRATA_MONITOR_THRESHOLD_US", "-5"}));
}

TEST_F(MonitorEnv, a_period_below_ten_microseconds_is_an_error) {
    set("STRATA_MONITOR", "proc");
    set("STRATA_MONITOR_PERIOD_US", "0");
    EXPECT_TRUE(fails_with(options_from_env(), Errc::invalid_argument, {"STRATA_MONITOR_PERIOD_US", "0"}));
}

TEST_F(MonitorEnv, an_empty_period_means_the_default) {
    set("STRATA_MONITOR", "proc");
    set("STRATA_MONITOR_PERIOD_US", "");
    STRATA_ASSERT_ASSIGN(sut, options_from_env());
    EXPECT_EQ(sut.proc_period.count(), 1000);
}

TEST(MonitorBackendNames, every_backend_has_its_environment_name) {
    EXPECT_EQ(strata::monitor::to_string(Backend::off), "off");
    EXPECT_EQ(strata::monitor::to_string(Backend::proc), "proc");
    EXPECT_EQ(strata::monitor::to_string(Backend::ebpf), "ebpf");
}

}  // namespace
