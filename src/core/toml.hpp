// toml++ as strata includes it. toml++ 3.3.0 (Debian 12) states some of its
// parser's invariants with TOML_ASSERT_ASSUME: an assert() without NDEBUG,
// __builtin_assume() with it where the compiler has one (clang). Input can
// break one: a table header whose first character is not a key's, "[#" or
// "[=", which parse_key() then reports as a parse error on its next line;
// the assertion aborts a debug build first, and the assumption is undefined
// behaviour in a clang release build (found by tests/fuzz/external_config).
// So the invariants are left to the parser's own error paths here: neither
// asserted nor assumed.
#pragma once

#if __has_include(<toml++/impl/preprocessor.h>)
#include <toml++/impl/preprocessor.h>
#undef TOML_ASSERT_ASSUME
#define TOML_ASSERT_ASSUME(expr) static_assert(true)
#endif

#include <toml++/toml.h>
