// SPDX-License-Identifier: MIT
// Tasks in real containers (crun, the image of scripts/container-image) share
// segments through the segment directory bound into both: a port and a handle
// carry checked bytes from one container to the other, a killed container is
// named as a dead peer by the other, and `strata shm ls/gc` on the host sees
// and removes what a killed container left. Every container runs as pid 1 of
// its own pid namespace; each test ends with no container, bundle or segment left.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "integration/container_support.hpp"
#include "strata/shm/admin.hpp"
#include "support/resources.hpp"

namespace strata {
namespace {

namespace fs = std::filesystem;

// A container started by the test. Going, it kills the container and reaps its
// `crun run` before the bundle is removed: crun, still running, would otherwise
// write its state directory into a bundle being removed.
struct Task {
    std::optional<container::Bundle> bundle;
    pid_t pid = -1;
    fs::path out;

    Task() = default;
    Task(container::Bundle b, pid_t p, fs::path o) : bundle(std::move(b)), pid(p), out(std::move(o)) {}
    Task(Task&& other) noexcept
        : bundle(std::move(other.bundle)), pid(std::exchange(other.pid, -1)), out(std::move(other.out)) {}
    Task& operator=(Task&&) = delete;
    Task(const Task&) = delete;
    Task& operator=(const Task&) = delete;
    ~Task() {
        if (bundle) {
            bundle->remove();
        }
        if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
            test::wait_for_child(pid);
        }
    }
};

class ContainerShm : public ::testing::Test {
protected:
    void SetUp() override { STRATA_REQUIRE_CONTAINERS(); }

    Task start(const std::string& mode, std::size_t messages, std::size_t bytes, bool hold = false) {
        container::Spec spec;
        spec.args = {"/opt/strata/bin/strata_container_task",
                     mode,
                     segment,
                     "edge",
                     std::to_string(messages),
                     std::to_string(bytes)};
        spec.strata_root = test::strata_build_root();
        spec.segment_dir = segments.path();
        if (hold) {
            spec.args.emplace_back("--hold");
        }
        auto bundle = container::Bundle::create(spec);
        EXPECT_TRUE(bundle.has_value()) << (bundle ? "" : bundle.error().what());
        if (!bundle) {
            return {};
        }
        const fs::path out = logs / (mode + std::to_string(count++) + ".out");
        const pid_t pid = test::start_container(*bundle, out);
        bundles.push_back(bundle->dir());
        return Task{std::move(*bundle), pid, out};
    }

    // Everything the test made is gone: bundles (with the runtime's state) and segments.
    void TearDown() override {
        for (const auto& dir : bundles) {
            EXPECT_FALSE(fs::exists(dir)) << "bundle left behind: " << dir;
        }
        if (!segments.path().empty()) {
            auto left = list_segments(segments.path());
            ASSERT_TRUE(left.has_value());
            EXPECT_TRUE(left->empty()) << "segments left in " << segments.path();
        }
    }

    test::TempDir segments;
    test::TempDir logs;
    std::string segment = test::unique_name("ctr").substr(0, 100);
    std::vector<fs::path> bundles;
    int count = 0;
};

std::string ns_line(const std::string& text) {
    const auto at = text.find("ns pid:[");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
}

TEST_F(ContainerShm, a_port_and_a_handle_carry_checked_bytes_from_one_container_to_another) {
    constexpr std::size_t kMessages = 200;
    constexpr std::size_t kBytes = 64 * 1024;
    {
        Task producer = start("produce", kMessages, kBytes);
        Task consumer = start("consume", kMessages, kBytes);
        const auto p = test::wait_for_child(producer.pid);
        const auto c = test::wait_for_child(consumer.pid);
        const std::string p_out = test::read_text(producer.out);
        const std::string c_out = test::read_text(consumer.out);
        EXPECT_TRUE(p.exited && p.exit_code == 0) << p_out;
        EXPECT_TRUE(c.exited && c.exit_code == 0) << c_out;
        EXPECT_NE(p_out.find("sent 200"), std::string::npos) << p_out;
        EXPECT_NE(c_out.find("received 200 ok"), std::string::npos) << c_out;
        // Two pid namespaces, neither the host's: the locks' owners are told apart all the same.
        std::error_code ec;
        const std::string host = "ns " + fs::read_symlink("/proc/self/ns/pid", ec).string();
        ASSERT_FALSE(ns_line(p_out).empty()) << p_out;
        EXPECT_NE(ns_line(p_out), ns_line(c_out));
        EXPECT_NE(ns_line(p_out), host);
        EXPECT_NE(ns_line(c_out), host);
    }
}

TEST_F(ContainerShm, a_killed_consumer_container_is_named_as_a_dead_peer_by_the_producer) {
    constexpr std::size_t kBytes = 4096;
    Task consumer = start("consume", 1000, kBytes, /*hold=*/true);
    Task producer = start("produce", 0, kBytes);  // sends until an error
    ASSERT_TRUE(test::wait_for_text(consumer.out, "holding", consumer.pid)) << test::read_text(consumer.out);
    ASSERT_TRUE(consumer.bundle->kill(SIGKILL).has_value());
    const auto c = test::wait_for_child(consumer.pid);
    EXPECT_FALSE(c.exited && c.exit_code == 0) << "the killed container's crun reports its death";
    const auto p = test::wait_for_child(producer.pid);
    const std::string p_out = test::read_text(producer.out);
    EXPECT_TRUE(p.exited && p.exit_code == 3) << p_out;
    EXPECT_NE(p_out.find("error: peer_dead"), std::string::npos) << p_out;
    EXPECT_NE(p_out.find("consumer 0"), std::string::npos) << p_out;
    // The pid in the message is the dead user's own: pid 1 of its container.
    EXPECT_NE(p_out.find("(pid 1 "), std::string::npos) << p_out;
}

TEST_F(ContainerShm, strata_shm_ls_and_gc_on_the_host_see_and_remove_what_a_killed_container_left) {
    Task holder = start("produce", 1, 4096, /*hold=*/true);
    ASSERT_TRUE(test::wait_for_text(holder.out, "holding", holder.pid)) << test::read_text(holder.out);
    const std::string dir = segments.path().string();
    const auto run = [](const std::string& args) {
        FILE* p = ::popen((std::string(STRATA_CLI) + " " + args).c_str(), "r");
        std::string text;
        char buffer[4096];
        while (p != nullptr && std::fgets(buffer, sizeof buffer, p) != nullptr) {
            text += buffer;
        }
        if (p != nullptr) {
            ::pclose(p);
        }
        return nlohmann::json::parse(text);
    };
    const auto alive = run("shm ls --json --dir " + dir);
    ASSERT_EQ(alive["segments"].size(), 1U) << alive.dump();
    EXPECT_EQ(alive["segments"][0]["name"], segment);
    EXPECT_EQ(alive["segments"][0]["users_alive"], 1) << "the container's lock is seen from the host";
    EXPECT_TRUE(run("shm gc --json --dir " + dir)["removed"].empty()) << "never a segment in use";
    ASSERT_TRUE(holder.bundle->kill(SIGKILL).has_value());
    test::wait_for_child(holder.pid);
    const auto dead = run("shm ls --json --dir " + dir);
    ASSERT_EQ(dead["segments"].size(), 1U) << dead.dump();
    EXPECT_EQ(dead["segments"][0]["users_alive"], 0) << dead.dump();
    const auto gc = run("shm gc --json --dir " + dir);
    ASSERT_EQ(gc["removed"].size(), 1U) << gc.dump();
    EXPECT_EQ(gc["removed"][0], segment);
}

TEST_F(ContainerShm, a_bundle_removes_its_container_and_directory_however_the_container_ended) {
    fs::path dir;
    {
        Task task = start("consume", 1, 16, /*hold=*/false);  // waits for a producer that never comes
        dir = task.bundle->dir();
        ASSERT_TRUE(fs::exists(dir / "config.json"));
        // The runtime's state lives in the bundle: nothing of it outside.
        ASSERT_TRUE(test::wait_for_text(task.out, "ns pid:[", task.pid)) << test::read_text(task.out);
        EXPECT_TRUE(fs::exists(dir / "state" / task.bundle->id()));
        // Destroyed while the container runs: crun delete --force kills it.
    }
    EXPECT_FALSE(fs::exists(dir));
}

TEST_F(ContainerShm, a_bad_spec_is_refused_naming_the_field_and_leaves_nothing) {
    const test::TempDir tmp;  // bundles are made under $TMPDIR: this one, checked empty at the end
    const char* saved = std::getenv("TMPDIR");
    const std::string old = saved != nullptr ? saved : "";
    ::setenv("TMPDIR", tmp.path().c_str(), 1);
    const auto no_args = container::Bundle::create(container::Spec{});
    ASSERT_FALSE(no_args.has_value());
    EXPECT_EQ(no_args.error().code, Errc::invalid_argument);
    EXPECT_NE(no_args.error().message.find("args"), std::string::npos) << no_args.error().message;
    container::Spec spec;
    spec.args = {"true"};
    spec.segment_dir = "/nonexistent/strata-seg";
    const auto missing = container::Bundle::create(spec);
    ASSERT_FALSE(missing.has_value());
    EXPECT_EQ(missing.error().code, Errc::not_found);
    EXPECT_NE(missing.error().message.find("segment_dir=/nonexistent/strata-seg"), std::string::npos);
    spec.segment_dir.clear();
    spec.binds = {{"/tmp", "relative/path"}};
    const auto relative = container::Bundle::create(spec);
    ASSERT_FALSE(relative.has_value());
    EXPECT_NE(relative.error().message.find("destination=relative/path"), std::string::npos);
    if (saved != nullptr) {
        ::setenv("TMPDIR", old.c_str(), 1);
    } else {
        ::unsetenv("TMPDIR");
    }
    EXPECT_TRUE(tmp.entries().empty()) << "a refused spec left " << tmp.entries().front();
}

}  // namespace
}  // namespace strata
