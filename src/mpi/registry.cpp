// SPDX-License-Identifier: MIT
#include "mpi/registry.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

namespace strata::mpi {

std::vector<Segment> WindowRecord::segments() const {
    const std::lock_guard lock(mutex_);
    return segments_;
}

void WindowRecord::attach(Segment segment) {
    const std::lock_guard lock(mutex_);
    segments_.push_back(std::move(segment));
}

void WindowRecord::detach(const void* base) {
    const std::lock_guard lock(mutex_);
    // One detach undoes one attach of that address.
    if (const auto it = std::ranges::find(segments_, base, &Segment::base); it != segments_.end()) {
        segments_.erase(it);
    }
}

HintMap WindowRecord::reported_now() const {
    const std::lock_guard lock(mutex_);
    return reported;
}

void WindowRecord::forget_reported(const std::string& key) {
    static constexpr std::array<std::string_view, 6> storage_keys{"alloc_type", "storage_alloc_", "access_style",
                                                                  "file_perm",  "striping_",      "strata_"};
    if (std::ranges::any_of(storage_keys, [&](std::string_view prefix) { return key.starts_with(prefix); })) {
        return;
    }
    const std::lock_guard lock(mutex_);
    reported.erase(key);
}

void WindowRecord::translate(std::vector<Target> by_rank, void* base, MPI_Aint size, MPI_Aint disp_unit) {
    translated = true;
    targets = std::move(by_rank);
    own_base = base;
    own_size = size;
    own_disp_unit = static_cast<int>(std::min<MPI_Aint>(disp_unit, INT_MAX));
}

std::shared_ptr<WindowRecord> make_record(int flavor, int rank) {
    auto record = std::make_shared<WindowRecord>();
    record->flavor = flavor;
    record->rank = rank;
    return record;
}

Registry& Registry::instance() {
    // Never destroyed: windows the program leaves open at exit keep their
    // mappings until the process ends, and MPI may still call in during exit.
    static auto* registry = new Registry;
    return *registry;
}

void Registry::add_window(MPI_Win win, std::shared_ptr<WindowRecord> record) {
    const std::lock_guard lock(mutex_);
    if (record->translated) {
        translated_.fetch_add(1, std::memory_order_relaxed);
    }
    if (windows_.insert_or_assign(win, std::move(record)).second) {
        count_.fetch_add(1, std::memory_order_relaxed);
    }
}

std::shared_ptr<WindowRecord> Registry::find_window(MPI_Win win) const {
    if (count_.load(std::memory_order_relaxed) == 0) {
        return nullptr;
    }
    const std::shared_lock lock(mutex_);
    const auto it = windows_.find(win);
    return it == windows_.end() ? nullptr : it->second;
}

MPI_Aint Registry::target_displacement(MPI_Win win, int target, MPI_Aint disp) const {
    if (translated_.load(std::memory_order_relaxed) == 0) {
        return disp;
    }
    const std::shared_lock lock(mutex_);
    const auto it = windows_.find(win);
    if (it == windows_.end() || !it->second->translated || target < 0 ||
        static_cast<std::size_t>(target) >= it->second->targets.size()) {
        return disp;  // not ours, MPI_PROC_NULL, or an invalid rank MPI will report
    }
    return it->second->targets[static_cast<std::size_t>(target)].displacement(disp);
}

std::shared_ptr<WindowRecord> Registry::take_window(MPI_Win win) {
    if (count_.load(std::memory_order_relaxed) == 0) {
        return nullptr;
    }
    const std::lock_guard lock(mutex_);
    const auto it = windows_.find(win);
    if (it == windows_.end()) {
        return nullptr;
    }
    auto record = std::move(it->second);
    windows_.erase(it);
    count_.fetch_sub(1, std::memory_order_relaxed);
    if (record->translated) {
        translated_.fetch_sub(1, std::memory_order_relaxed);
    }
    return record;
}

std::shared_ptr<WindowRecord> Registry::dynamic_window(MPI_Win win, int rank) {
    const std::lock_guard lock(mutex_);
    auto& slot = windows_[win];
    if (!slot) {
        slot = make_record(MPI_WIN_FLAVOR_DYNAMIC, rank);
        count_.fetch_add(1, std::memory_order_relaxed);
    }
    return slot;
}

void Registry::add_allocation(const void* base, std::shared_ptr<Allocation> allocation) {
    const std::lock_guard lock(mutex_);
    if (allocations_.insert_or_assign(static_cast<const std::byte*>(base), std::move(allocation)).second) {
        count_.fetch_add(1, std::memory_order_relaxed);
    }
}

std::shared_ptr<Allocation> Registry::take_allocation(const void* base) {
    if (count_.load(std::memory_order_relaxed) == 0) {
        return nullptr;
    }
    const std::lock_guard lock(mutex_);
    const auto it = allocations_.find(static_cast<const std::byte*>(base));
    if (it == allocations_.end()) {
        return nullptr;
    }
    auto allocation = std::move(it->second);
    allocations_.erase(it);
    count_.fetch_sub(1, std::memory_order_relaxed);
    return allocation;
}

std::shared_ptr<Allocation> Registry::allocation_holding(const void* address, std::size_t length) const {
    if (count_.load(std::memory_order_relaxed) == 0) {
        return nullptr;
    }
    const auto* p = static_cast<const std::byte*>(address);
    const std::shared_lock lock(mutex_);
    auto it = allocations_.upper_bound(p);
    if (it == allocations_.begin()) {
        return nullptr;
    }
    --it;
    const auto offset = static_cast<std::size_t>(p - it->first);
    const std::size_t size = it->second->part->size();
    return offset <= size && length <= size - offset ? it->second : nullptr;
}

namespace {

class Flusher {
public:
    void add(const std::shared_ptr<StoragePart>& part) {
        const std::lock_guard lock(mutex_);
        parts_.push_back(part);
        if (!running_) {
            if (thread_.joinable()) {
                thread_.join();  // the previous thread has ended (running_ is false)
            }
            running_ = true;
            thread_ = std::thread([this] { run(); });
        }
    }

private:
    // A bad value never gets here: the hints of an async window check it first.
    static std::chrono::milliseconds interval() {
        return flush_interval_from_env().value_or(std::chrono::milliseconds(1000));
    }

    void run() {
        const auto period = interval();
        std::unique_lock lock(mutex_);
        while (true) {
            wake_.wait_for(lock, period);
            std::erase_if(parts_, [](const std::weak_ptr<StoragePart>& p) { return p.expired(); });
            if (parts_.empty()) {
                running_ = false;
                return;
            }
            std::vector<std::shared_ptr<StoragePart>> now;
            for (const auto& weak : parts_) {
                if (auto part = weak.lock()) {
                    now.push_back(std::move(part));
                }
            }
            lock.unlock();
            for (const auto& part : now) {
                if (auto flushed = part->flush_async(); !flushed) {
                    detail::log().warn("background write-back of {}: {}", part->path().string(),
                                       flushed.error().what());
                }
            }
            now.clear();  // drop our references before sleeping, so freed parts expire
            lock.lock();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<std::weak_ptr<StoragePart>> parts_;
    bool running_ = false;
    std::thread thread_;
};

}  // namespace

void flush_in_background(const std::shared_ptr<StoragePart>& part) {
    // Never destroyed, like the registry: a joinable thread must not meet a
    // destructor during exit while a window is still open.
    static auto* flusher = new Flusher;
    flusher->add(part);
}

}  // namespace strata::mpi
