// SPDX-License-Identifier: MIT
// CPU lists: the allowed set of this process and "0-3,6" strings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "strata/error.hpp"

namespace strata::runtime {

/// The CPUs of sched_getaffinity(), ascending.
Result<std::vector<int>> allowed_cpus();
/// `cpus` sorted and deduplicated; invalid_argument for a CPU outside the allowed set.
Result<std::vector<int>> validate_cpus(std::vector<int> cpus);
/// Parses "0-3,6" (as in taskset -c); errors name `param` and the value.
Result<std::vector<int>> parse_cpus(std::string_view text, std::string_view param);
/// "0-3,6".
std::string describe_cpus(const std::vector<int>& cpus);
/// Binds the calling thread to `cpus` (pthread_setaffinity_np); the error is errno's.
int bind_this_thread(const std::vector<int>& cpus) noexcept;

}  // namespace strata::runtime
