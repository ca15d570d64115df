// SPDX-License-Identifier: MIT
// A spin-wait hint for busy loops (the shared-memory ports and locks, the
// runtime's standby worker, the workflow's busy-poll): lets the sibling
// hyperthread run and saves power while the loop waits for another core's store.
#pragma once

namespace strata::core {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

}  // namespace strata::core
