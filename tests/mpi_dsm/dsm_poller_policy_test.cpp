// SPDX-License-Identifier: MIT
// The DSM's pollers run at SCHED_BATCH, so that their wakeups do not preempt
// a rank's compute ($STRATA_DSM_BATCH_POLLERS, docs/dsm.md "Transport"); the
// threads that call the API keep their policy.
//
// Usage: dsm_poller_policy_test batch|other — the policy every poller must
// have: a client's progress thread while the node is joined, and the server's
// thread inside serve(), which gets its own policy back when serve() returns.
#include <dirent.h>
#include <sched.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "dsm_test.hpp"

namespace {

// The scheduling policy of every thread of this process but `except`.
std::vector<int> policies_of_other_threads(pid_t except) {
    std::vector<int> out;
    DIR* dir = ::opendir("/proc/self/task");
    DSM_CHECK(dir != nullptr);
    while (const dirent* e = ::readdir(dir)) {
        const std::string_view name(e->d_name);
        if (name == "." || name == "..") {
            continue;
        }
        const pid_t tid = std::stoi(std::string(name));
        if (tid != except) {
            const int policy = ::sched_getscheduler(tid);
            if (policy >= 0) {  // a thread may have ended since readdir
                out.push_back(policy);
            }
        }
    }
    ::closedir(dir);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    dsm_test::init(&argc, &argv);
    DSM_CHECK(argc == 2);
    const std::string_view expect(argv[1]);
    DSM_CHECK(expect == "batch" || expect == "other");
    const int poller_policy = expect == "batch" ? SCHED_BATCH : SCHED_OTHER;
    const pid_t self = ::gettid();
    DSM_CHECK(::sched_getscheduler(self) == SCHED_OTHER);

    auto node = strata::dsm::Node::join(MPI_COMM_WORLD, {.servers = 1});
    DSM_CHECK_OK(node);
    if (node->is_server()) {
        // serve() runs on this thread: a watcher sees its policy while it serves.
        std::atomic<int> seen{-1};
        std::atomic<bool> done{false};
        std::thread watcher([&] {
            while (!done.load()) {
                const int policy = ::sched_getscheduler(self);
                if (policy != SCHED_OTHER || seen.load() == -1) {
                    seen.store(policy);
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        });
        MPI_Barrier(MPI_COMM_WORLD);  // the clients have checked theirs; they leave after this
        DSM_CHECK_OK(node->serve());
        done.store(true);
        watcher.join();
        DSM_CHECK(seen.load() == poller_policy);
        DSM_CHECK(::sched_getscheduler(self) == SCHED_OTHER);
    } else {
        // The calling thread keeps its policy; the progress thread (the only other DSM thread the
        // join starts, besides MPI's) has the pollers' policy.
        DSM_CHECK(::sched_getscheduler(self) == SCHED_OTHER);
        // The progress thread sets its policy as it starts, maybe after join returned: wait for it.
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        int batch = 0;
        do {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            batch = static_cast<int>(std::ranges::count(policies_of_other_threads(self), SCHED_BATCH));
        } while (batch == 0 && poller_policy == SCHED_BATCH && std::chrono::steady_clock::now() < give_up);
        DSM_CHECK(batch == (poller_policy == SCHED_BATCH ? 1 : 0));
        MPI_Barrier(MPI_COMM_WORLD);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the server serves meanwhile
        DSM_CHECK_OK(node->leave());
    }
    std::printf("rank %d: pollers at %s\n", dsm_test::g_rank, argv[1]);
    MPI_Finalize();
    return 0;
}
