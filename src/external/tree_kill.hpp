// SPDX-License-Identifier: MIT
// Killing a program's whole process tree, also the members that left its
// process group.
//
// A program runs as the leader of its own process group, and killing the
// group ends the program and the children it keeps in it. A descendant that
// called setsid() or setpgid() (a daemon a script starts, a `setsid cmd &`)
// is no longer in the group, but while its parent lives it is still in the
// program's process tree: kill_trees() finds it there through /proc.
//
//   1. SIGSTOP every group, so no stopped member forks meanwhile;
//   2. scan /proc: a process whose group is one of `groups`, or whose parent
//      was found already, is a member: SIGSTOP it too; repeat until a scan
//      finds nothing new (a child can be listed before its parent);
//   3. SIGKILL every group and every member found, and wait (at most 2 s) until
//      each has ended (gone, or a zombie its parent has yet to reap).
// A process reparented to init before the scan (its parent had exited: a
// double fork) is out of the tree and is not found.
//
// Async-signal-safe: system calls only, no allocation, no locks; callable in
// a child forked from a threaded process (the keeper) and from threads.
// Thread safe: its scratch (40 KiB) is on the caller's stack.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace strata::external {

/// Kills the process groups `groups[0..n)` (ids > 0; others ignored) and every
/// descendant of their members, with SIGKILL. Returns how many processes
/// outside the groups were found and killed.
std::size_t kill_trees(const pid_t* groups, std::size_t n) noexcept;

/// The parent of `pid`, read from /proc/<pid>/stat; -1 once it is gone.
pid_t parent_of(pid_t pid) noexcept;

}  // namespace strata::external
