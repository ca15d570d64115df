// SPDX-License-Identifier: MIT
// Function pointers across ranks. Every rank runs the same program with the
// same libraries (as with the reference runtime's x86-mpi platform), but
// address-space randomization loads them at different addresses in each
// process: an EDT function or a GUID map function travels as the object that
// holds it (its path as the dynamic loader names it; "" for the program)
// and its offset from that object's load address.
#pragma once

#include <cstdint>
#include <string>

#include "strata/error.hpp"

namespace strata::ocr::dist {

struct FunctionRef {
    std::string module;
    std::uintptr_t offset = 0;
};

/// Errors: invalid_argument when no loaded object holds the address.
Result<FunctionRef> encode_function(const void* function);
/// Errors: not_found when this process did not load the object.
Result<void*> decode_function(const FunctionRef& ref);

}  // namespace strata::ocr::dist
