// SPDX-License-Identifier: MIT
// strata-fsd's table of registered files and the tasks allowed to open them.
//
// Every file lives under /db/<id>. An input's bytes come from the owner's
// memory (Source); an output's bytes accumulate in a memfd the daemon owns.
// A task allowed temporary files (allow_temporaries) may also create files of
// its own under /db (paper 000: unregistered files "treated as a temporary
// file"): each task has its own namespace of them, only its tree sees them,
// they live in memfds, and they vanish when the task ends, unless the program
// renamed one onto one of its registered outputs, which it then becomes.
// A file belongs to one or more tasks (the same input block may feed several
// tasks at once); a task is identified by the runtime's task number and, once
// started, by its root pid. Only that pid's process tree may open the file.
//
// Thread safety: every method may be called from any FUSE worker thread and
// from the control thread at once; entries are shared_ptrs so an open file
// stays valid after its registration ends.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "source.hpp"

namespace strata::external::fsd {

inline constexpr std::uint64_t kRootIno = 1;
inline constexpr std::uint64_t kDbIno = 2;

struct Entry {
    std::uint64_t ino = 0;
    std::string name;  ///< "<id>"
    bool output = false;
    bool temporary = false;         ///< created by a task's program; guarded by the registry's mutex
    std::set<std::uint64_t> tasks;  ///< guarded by the registry's mutex
    // Input: where its bytes come from; fixed size.
    std::unique_ptr<Source> source;
    bool cache = false;
    int pin_fd = -1;  ///< the daemon's own open file that keeps the cached inode alive
    // Output: the growing file.
    int memfd = -1;
    std::mutex size_mutex;
    std::uint64_t size = 0;

    Entry() = default;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    ~Entry();
    [[nodiscard]] std::uint64_t current_size();
};

class Registry {
public:
    /// `started_wait`: how long an open waits for started(pid) of a task that has none yet.
    explicit Registry(std::chrono::milliseconds started_wait) : started_wait_(started_wait) {}

    /// Adds an input; an id already registered as input gains the task. Returns the entry or an errno.
    int add_input(std::uint64_t task, const std::string& name, std::unique_ptr<Source> source, bool cache,
                  std::shared_ptr<Entry>& out);
    /// Adds an output (a fresh memfd); the id must not be registered.
    int add_output(std::uint64_t task, const std::string& name, std::shared_ptr<Entry>& out);
    int started(std::uint64_t task, pid_t pid);
    /// Lets `task`'s programs create temporary files under /db.
    void allow_temporaries(std::uint64_t task);

    /// The task allowed temporaries whose process tree holds `pid`, or 0
    /// (waits up to started_wait while such a task has no pid yet).
    std::uint64_t temporaries_task_of(pid_t pid);
    /// `task`'s temporary file `name`, or nullptr.
    std::shared_ptr<Entry> find_temporary(std::uint64_t task, const std::string& name);
    /// A new empty temporary file of `task`. EEXIST: the name is taken (by a
    /// registered file or one of the task's temporaries); EACCES: digits only
    /// (reserved for data block ids) or not a file name; else memfd_create's errno.
    int create_temporary(std::uint64_t task, const std::string& name, std::shared_ptr<Entry>& out);
    /// Removes `task`'s temporary `name`: 0, ENOENT, or EACCES for a registered file.
    int remove_temporary(std::uint64_t task, const std::string& name);
    /// rename(2) of `task`'s temporary `from` to `to`: another temporary name,
    /// or one of the task's registered outputs, which the temporary replaces
    /// (its bytes become the output's). `no_replace`: RENAME_NOREPLACE.
    /// 0, ENOENT (no such temporary), EEXIST, or EACCES (a registered file
    /// as the source, an input or another task's file as the target, a
    /// reserved name).
    int rename_temporary(std::uint64_t task, const std::string& from, const std::string& to, bool no_replace);

    /// The entry for `name` whose task the caller may use, or nullptr.
    std::shared_ptr<Entry> find(const std::string& name);
    std::shared_ptr<Entry> find(std::uint64_t ino);
    std::shared_ptr<Entry> find_for_task(std::uint64_t task, const std::string& name);
    /// Drops the task; returns the entries no task uses any more (the caller invalidates them).
    std::vector<std::shared_ptr<Entry>> end(std::uint64_t task);
    /// Every entry (for shutdown).
    std::vector<std::shared_ptr<Entry>> all();
    /// Names of the entries `pid` may open (readdir of /db).
    std::vector<std::pair<std::string, std::uint64_t>> visible_to(pid_t pid);

    /// The runtime that registers the files; it may open them too (to send a
    /// program's stdout into an output, say), but its other children may not.
    /// Call before the FUSE loop starts.
    void set_owner(pid_t owner) { owner_ = owner; }

    /// Whether the process (or thread) `pid` may open `entry`: the daemon itself,
    /// the owner's own threads, or a process in the tree of one of the entry's tasks. Waits up to
    /// started_wait for a task whose pid is not known yet.
    bool may_access(const Entry& entry, pid_t pid);

private:
    /// A new entry for `name` owned by `task`; the caller holds mutex_.
    std::shared_ptr<Entry> insert_locked(std::uint64_t task, const std::string& name);

    std::chrono::milliseconds started_wait_;
    pid_t owner_ = 0;
    std::mutex mutex_;
    std::condition_variable started_cv_;
    std::uint64_t next_ino_ = 3;
    std::map<std::string, std::shared_ptr<Entry>> by_name_;
    std::map<std::uint64_t, std::shared_ptr<Entry>> by_ino_;
    std::map<std::uint64_t, pid_t> task_pid_;  ///< 0 until started
    std::set<std::uint64_t> temporaries_allowed_;
    std::map<std::pair<std::uint64_t, std::string>, std::shared_ptr<Entry>> temporaries_;  ///< by (task, name)
    std::uint64_t started_count_ = 0;  ///< calls of started(), for waiters
};

/// Whether `pid` (a thread or process id) is `root` or one of its descendants,
/// following Tgid and PPid in /proc/<pid>/status.
bool in_process_tree(pid_t pid, pid_t root);
/// The thread group (process) of thread `pid`, or 0 when it is gone.
pid_t thread_group_of(pid_t pid);

}  // namespace strata::external::fsd
