// SPDX-License-Identifier: MIT
// A scope guard: runs an undo step when the scope ends, unless dismissed.
//
// Undo paths read as one line next to the step they undo:
//
//   const int fd = ::open(...);
//   strata::ScopeGuard close_fd([&] { ::close(fd); });
//   ...                       // every early return closes fd
//   close_fd.dismiss();       // success: keep it
#pragma once

#include <utility>

namespace strata {

template <class F>
class [[nodiscard]] ScopeGuard {
public:
    explicit ScopeGuard(F undo) : undo_(std::move(undo)) {}
    ScopeGuard(const ScopeGuard&) = delete;
    ScopeGuard& operator=(const ScopeGuard&) = delete;
    ~ScopeGuard() {
        if (armed_) {
            undo_();
        }
    }
    /// The step succeeded for good: do not undo it.
    void dismiss() noexcept { armed_ = false; }

private:
    F undo_;
    bool armed_ = true;
};

}  // namespace strata
