// SPDX-License-Identifier: MIT
// The sync agent: one thread per process, running while a window with
// storage_alloc_remote_sync exists, that answers other ranks' requests to
// sync this rank's part of such windows (remote_sync.hpp).
//
// MPICH's blocking receive polls a core for as long as it waits, and ranks
// share cores with the program's threads, so the agent polls with
// MPI_Improbe and sleeps between polls: 10 us after a request, doubling to
// 1 ms while none comes. An idle rank costs about a thousand probes a second;
// a request waits at most one period before it is served. The polls also
// drive MPI's progress for RMA that needs the target (MPI_Win_flush of a
// target that computes outside MPI completes within a period).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <thread>

#include "mpi/registry.hpp"

namespace strata::mpi {

namespace {

class Agent {
public:
    void add(std::shared_ptr<WindowRecord> record) {
        const std::lock_guard lock(mutex_);
        records_.push_back(std::move(record));
        if (!thread_.joinable()) {
            stopping_ = false;
            thread_ = std::thread([this] { run(); });
        }
    }

    void remove(const WindowRecord* record) {
        std::unique_lock lock(mutex_);  // the agent holds it for a whole pass
        std::erase_if(records_, [&](const auto& r) { return r.get() == record; });
        if (records_.empty()) {
            stop(lock);
        }
    }

    void stop_all() {
        std::unique_lock lock(mutex_);
        records_.clear();
        stop(lock);
    }

private:
    void stop(std::unique_lock<std::mutex>& lock) {
        if (!thread_.joinable()) {
            return;
        }
        stopping_ = true;
        wake_.notify_all();
        std::thread thread = std::move(thread_);
        lock.unlock();
        thread.join();
        lock.lock();
    }

    void run() {
        using namespace std::chrono_literals;
        auto period = 10us;
        std::unique_lock lock(mutex_);
        while (!stopping_) {
            bool served = false;
            for (const auto& record : records_) {
                served = record->remote->serve(*record) || served;
            }
            period = served ? 10us : std::min<std::chrono::microseconds>(period * 2, 1ms);
            wake_.wait_for(lock, period, [&] { return stopping_; });
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<std::shared_ptr<WindowRecord>> records_;
    bool stopping_ = false;
    std::thread thread_;
};

Agent& agent() {
    static auto* instance = new Agent;  // never destroyed: a joinable thread must not meet a destructor at exit
    return *instance;
}

}  // namespace

void start_serving(std::shared_ptr<WindowRecord> record) {
    agent().add(std::move(record));
}

void stop_serving(const WindowRecord* record) {
    agent().remove(record);
}

void stop_all_serving() noexcept {
    try {
        agent().stop_all();
    } catch (...) {  // a failing lock at finalize: the process ends anyway
        detail::log().warn("MPI_Finalize: the sync agent could not be stopped");
    }
}

}  // namespace strata::mpi
