// SPDX-License-Identifier: MIT
// strata-fsd's registered files and who may open them (see registry.hpp).
#include "registry.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <set>
#include <string>

namespace strata::external::fsd {

Entry::~Entry() {
    if (pin_fd >= 0) {
        ::close(pin_fd);
    }
    if (memfd >= 0) {
        ::close(memfd);
    }
}

std::uint64_t Entry::current_size() {
    if (!output) {
        return source->size();
    }
    const std::lock_guard lock(size_mutex);
    return size;
}

std::shared_ptr<Entry> Registry::insert_locked(std::uint64_t task, const std::string& name) {
    auto entry = std::make_shared<Entry>();
    entry->ino = next_ino_++;
    entry->name = name;
    entry->tasks.insert(task);
    by_name_[name] = entry;
    by_ino_[entry->ino] = entry;
    return entry;
}

int Registry::add_input(std::uint64_t task, const std::string& name, std::unique_ptr<Source> source, bool cache,
                        std::shared_ptr<Entry>& out) {
    const std::lock_guard lock(mutex_);
    task_pid_.try_emplace(task, 0);
    if (const auto it = by_name_.find(name); it != by_name_.end()) {
        if (it->second->output) {
            return EEXIST;
        }
        // The same block read by another task: one file, both trees may open it.
        it->second->tasks.insert(task);
        out = it->second;
        return 0;
    }
    out = insert_locked(task, name);
    out->source = std::move(source);
    out->cache = cache;
    return 0;
}

int Registry::add_output(std::uint64_t task, const std::string& name, std::shared_ptr<Entry>& out) {
    const std::lock_guard lock(mutex_);
    if (by_name_.contains(name)) {
        return EEXIST;
    }
    const int fd = ::memfd_create(("strata-fsd-out-" + name).c_str(), MFD_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    task_pid_.try_emplace(task, 0);
    out = insert_locked(task, name);
    out->output = true;
    out->memfd = fd;
    return 0;
}

int Registry::started(std::uint64_t task, pid_t pid) {
    {
        const std::lock_guard lock(mutex_);
        const auto it = task_pid_.find(task);
        if (it == task_pid_.end()) {
            return ENOENT;
        }
        it->second = pid;
        ++started_count_;
    }
    started_cv_.notify_all();
    return 0;
}

void Registry::allow_temporaries(std::uint64_t task) {
    const std::lock_guard lock(mutex_);
    task_pid_.try_emplace(task, 0);
    temporaries_allowed_.insert(task);
}

std::uint64_t Registry::temporaries_task_of(pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + started_wait_;
    std::unique_lock lock(mutex_);
    for (;;) {
        if (temporaries_allowed_.empty()) {
            return 0;  // the common case: no /proc read for an unregistered lookup
        }
        const std::uint64_t seen = started_count_;
        std::vector<std::pair<std::uint64_t, pid_t>> roots;
        bool any_unknown = false;
        for (const auto task : temporaries_allowed_) {
            const pid_t root = task_pid_[task];
            any_unknown = any_unknown || root == 0;
            if (root > 0) {
                roots.emplace_back(task, root);
            }
        }
        lock.unlock();  // /proc reads without the lock
        for (const auto& [task, root] : roots) {
            if (in_process_tree(pid, root)) {
                return task;
            }
        }
        lock.lock();
        if (!any_unknown || !started_cv_.wait_until(lock, deadline, [&] { return started_count_ != seen; })) {
            return 0;
        }
    }
}

std::shared_ptr<Entry> Registry::find_temporary(std::uint64_t task, const std::string& name) {
    const std::lock_guard lock(mutex_);
    const auto it = temporaries_.find({task, name});
    return it == temporaries_.end() ? nullptr : it->second;
}

namespace {

// Names of registered files are data block ids: a temporary may not take one.
bool reserved_name(const std::string& name) {
    return name.empty() || std::ranges::all_of(name, [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

int Registry::create_temporary(std::uint64_t task, const std::string& name, std::shared_ptr<Entry>& out) {
    if (reserved_name(name) || name.find('/') != std::string::npos) {
        return EACCES;
    }
    const std::lock_guard lock(mutex_);
    if (!temporaries_allowed_.contains(task)) {
        return EACCES;
    }
    if (by_name_.contains(name) || temporaries_.contains({task, name})) {
        return EEXIST;
    }
    const int fd = ::memfd_create(("strata-fsd-tmp-" + name).c_str(), MFD_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    auto entry = std::make_shared<Entry>();
    entry->ino = next_ino_++;
    entry->name = name;
    entry->output = true;
    entry->temporary = true;
    entry->memfd = fd;
    entry->tasks.insert(task);
    temporaries_[{task, name}] = entry;
    by_ino_[entry->ino] = entry;
    out = entry;
    return 0;
}

int Registry::remove_temporary(std::uint64_t task, const std::string& name) {
    const std::lock_guard lock(mutex_);
    const auto it = temporaries_.find({task, name});
    if (it == temporaries_.end()) {
        return by_name_.contains(name) ? EACCES : ENOENT;
    }
    by_ino_.erase(it->second->ino);
    temporaries_.erase(it);
    return 0;
}

int Registry::rename_temporary(std::uint64_t task, const std::string& from, const std::string& to, bool no_replace) {
    const std::lock_guard lock(mutex_);
    const auto source = temporaries_.find({task, from});
    if (source == temporaries_.end()) {
        return by_name_.contains(from) ? EACCES : ENOENT;
    }
    if (from == to) {
        return 0;
    }
    const std::shared_ptr<Entry> entry = source->second;
    if (const auto target = by_name_.find(to); target != by_name_.end()) {
        // Onto a registered file: only an output of this task alone.
        const auto& output = target->second;
        if (!output->output || output->temporary || output->tasks != std::set<std::uint64_t>{task}) {
            return EACCES;
        }
        if (no_replace) {
            return EEXIST;
        }
        // The temporary becomes the output: same name, its inode and bytes; the
        // output's old memfd closes with the last open handle of it.
        by_ino_.erase(output->ino);
        temporaries_.erase(source);
        entry->name = to;
        entry->temporary = false;
        target->second = entry;
        return 0;
    }
    if (reserved_name(to) || to.find('/') != std::string::npos) {
        return EACCES;
    }
    if (const auto target = temporaries_.find({task, to}); target != temporaries_.end()) {
        if (no_replace) {
            return EEXIST;
        }
        by_ino_.erase(target->second->ino);
        temporaries_.erase(target);
    }
    temporaries_.erase({task, from});
    entry->name = to;
    temporaries_[{task, to}] = entry;
    return 0;
}

std::shared_ptr<Entry> Registry::find(const std::string& name) {
    const std::lock_guard lock(mutex_);
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
}

std::shared_ptr<Entry> Registry::find(std::uint64_t ino) {
    const std::lock_guard lock(mutex_);
    const auto it = by_ino_.find(ino);
    return it == by_ino_.end() ? nullptr : it->second;
}

std::shared_ptr<Entry> Registry::find_for_task(std::uint64_t task, const std::string& name) {
    const std::lock_guard lock(mutex_);
    const auto it = by_name_.find(name);
    return it == by_name_.end() || !it->second->tasks.contains(task) ? nullptr : it->second;
}

std::vector<std::shared_ptr<Entry>> Registry::end(std::uint64_t task) {
    std::vector<std::shared_ptr<Entry>> dropped;
    const std::lock_guard lock(mutex_);
    task_pid_.erase(task);
    temporaries_allowed_.erase(task);
    for (auto it = temporaries_.lower_bound({task, std::string()});
         it != temporaries_.end() && it->first.first == task;) {
        dropped.push_back(it->second);
        by_ino_.erase(it->second->ino);
        it = temporaries_.erase(it);
    }
    for (auto it = by_name_.begin(); it != by_name_.end();) {
        it->second->tasks.erase(task);
        if (it->second->tasks.empty()) {
            dropped.push_back(it->second);
            by_ino_.erase(it->second->ino);
            it = by_name_.erase(it);
        } else {
            ++it;
        }
    }
    return dropped;
}

std::vector<std::shared_ptr<Entry>> Registry::all() {
    std::vector<std::shared_ptr<Entry>> entries;
    const std::lock_guard lock(mutex_);
    for (const auto& [name, entry] : by_name_) {
        entries.push_back(entry);
    }
    return entries;
}

std::vector<std::pair<std::string, std::uint64_t>> Registry::visible_to(pid_t pid) {
    std::vector<std::pair<std::string, std::uint64_t>> names;
    std::vector<std::pair<std::shared_ptr<Entry>, std::vector<pid_t>>> candidates;
    {
        const std::lock_guard lock(mutex_);
        for (const auto& [key, entry] : temporaries_) {
            candidates.emplace_back(entry, std::vector<pid_t>{task_pid_[key.first]});
        }
        for (const auto& [name, entry] : by_name_) {
            std::vector<pid_t> roots;
            for (const auto task : entry->tasks) {
                roots.push_back(task_pid_[task]);
            }
            candidates.emplace_back(entry, roots);
        }
    }
    for (const auto& [entry, roots] : candidates) {
        if (in_process_tree(pid, ::getpid()) ||
            std::ranges::any_of(roots, [&](pid_t root) { return root > 0 && in_process_tree(pid, root); })) {
            names.emplace_back(entry->name, entry->ino);
        }
    }
    return names;
}

bool Registry::may_access(const Entry& entry, pid_t pid) {
    // One /proc read for the two cheap cases; every open pays for this check,
    // so the caller's own ancestry is walked only when its task needs it.
    const pid_t group = thread_group_of(pid);
    if (group == ::getpid()) {
        return true;  // the daemon pins cached files by opening them itself (it has no children)
    }
    if (owner_ > 0 && group == owner_) {
        return true;  // the runtime itself, not its other children
    }
    // A program may open its files before the runtime has told us its pid;
    // with several tasks on one file, the caller's task may be the one still
    // unknown while the others are known: wait until the caller is in a known
    // tree, or every task is known, or the wait is over.
    const auto deadline = std::chrono::steady_clock::now() + started_wait_;
    std::unique_lock lock(mutex_);
    for (;;) {
        const std::uint64_t seen = started_count_;
        std::vector<pid_t> roots;
        bool any_unknown = false;
        for (const auto task : entry.tasks) {
            const auto it = task_pid_.find(task);
            const pid_t root = it == task_pid_.end() ? 0 : it->second;
            any_unknown = any_unknown || root == 0;
            if (root > 0) {
                roots.push_back(root);
            }
        }
        lock.unlock();  // /proc reads without the lock
        if (std::ranges::any_of(roots, [&](pid_t root) { return in_process_tree(pid, root); })) {
            return true;
        }
        lock.lock();
        if (!any_unknown || !started_cv_.wait_until(lock, deadline, [&] { return started_count_ != seen; })) {
            return false;
        }
    }
}

namespace {

// Reads "Tgid:" and "PPid:" of /proc/<pid>/status (works for thread ids too).
bool tgid_and_ppid(pid_t pid, pid_t& tgid, pid_t& ppid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string key;
    int found = 0;
    while (found < 2 && status >> key) {
        if (key == "Tgid:") {
            status >> tgid;
            ++found;
        } else if (key == "PPid:") {
            status >> ppid;
            ++found;
        } else {
            status.ignore(4096, '\n');
        }
    }
    return found == 2;
}

}  // namespace

pid_t thread_group_of(pid_t pid) {
    pid_t tgid = 0;
    pid_t ppid = 0;
    return tgid_and_ppid(pid, tgid, ppid) ? tgid : 0;
}

bool in_process_tree(pid_t pid, pid_t root) {
    // FUSE reports the calling thread's id; the ancestry is the thread group's.
    for (int depth = 0; depth < 128 && pid > 1; ++depth) {
        pid_t tgid = 0;
        pid_t ppid = 0;
        if (!tgid_and_ppid(pid, tgid, ppid)) {
            return false;
        }
        if (tgid == root || pid == root) {
            return true;
        }
        pid = ppid;
    }
    return false;
}

}  // namespace strata::external::fsd
