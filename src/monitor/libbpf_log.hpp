// SPDX-License-Identifier: MIT
// libbpf says why a load failed (verifier log, missing BTF, EPERM) only
// through its print callback. CaptureLibbpfWarnings keeps the first warning
// for the error message instead of letting libbpf write it to stderr.
// Internal (the monitor's eBPF backend and the doctor's bpf probe); libbpf's
// print hook is process-wide, so loads should not overlap.
#pragma once

#include <string>

namespace strata::monitor::detail {

class CaptureLibbpfWarnings {
public:
    CaptureLibbpfWarnings();
    ~CaptureLibbpfWarnings();
    CaptureLibbpfWarnings(const CaptureLibbpfWarnings&) = delete;
    CaptureLibbpfWarnings& operator=(const CaptureLibbpfWarnings&) = delete;

    /// libbpf's first warning since construction, without its "libbpf: "
    /// prefix and trailing newline, or empty when libbpf warned of nothing.
    [[nodiscard]] std::string first_warning() const;
    /// " (libbpf: <first warning>)", or empty when libbpf warned of nothing.
    [[nodiscard]] std::string suffix() const;

private:
    void* previous_;
};

}  // namespace strata::monitor::detail
