// SPDX-License-Identifier: MIT
// Shared pieces of the Python extension `strata._strata` (docs/python.md).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include <nanobind/nanobind.h>

#include "strata/shm.hpp"

namespace strata::python {

namespace nb = nanobind;

/// A strata::Error as a Python exception: strata.Error (a RuntimeError with
/// `.code`), or ValueError for invalid_argument. The message is kept whole -
/// NUL characters included - and decoded as UTF-8 with backslash escapes for
/// bytes that are not (std::runtime_error::what() would stop at a NUL).
struct PyError : std::runtime_error {
    PyError(std::string code_name, std::string text, bool as_value_error = false)
        : std::runtime_error(code_name),
          code(std::move(code_name)),
          message(std::move(text)),
          value_error(as_value_error) {}
    std::string code;
    std::string message;
    bool value_error;
};

/// The value of `r`, or raises strata.Error (ValueError for invalid_argument).
template <class T>
T unwrap(Result<T>&& r) {
    if (!r) {
        throw PyError(std::string(to_string(r.error().code)), r.error().what(),
                      r.error().code == Errc::invalid_argument);
    }
    if constexpr (!std::is_void_v<T>) {
        return std::move(*r);
    }
}

/// The element types a Python vector may have, as numpy names them.
enum class Dtype : std::uint8_t { float64, float32, int64, int32, uint8 };
Dtype parse_dtype(const std::string& name);
const char* to_string(Dtype dtype) noexcept;

/// A Segment as Python holds it. Vectors handed to Python are remembered by
/// their data address, so save(array) finds the vector behind an array.
struct PySegment {
    Segment segment;
    struct Known {
        void* vector;
        Dtype dtype;
    };
    std::map<const void*, Known> arrays;
    /// One copy per VectorRef alive: close() refuses while arrays still view the mapping.
    std::shared_ptr<int> views = std::make_shared<int>(0);
    /// Vectors erased through this object so far: ports forget the handles they
    /// remembered for arrays when it moves on.
    std::uint64_t erased = 0;
};

/// One vector of the segment seen from Python; it keeps its segment alive
/// (and so the mapping under every numpy array made from it).
struct VectorRef {
    nb::object segment;  // PySegment
    void* vector = nullptr;
    Dtype dtype = Dtype::float64;
    std::shared_ptr<int> view;  // PySegment::views
    bool read_only = false;     // the segment was opened read_only: the array is not writeable
};

/// A vector of the segment found through a handle (checked like Segment.load).
struct LoadedVector {
    void* vector = nullptr;
    Dtype dtype = Dtype::float64;
    const void* data = nullptr;
    std::size_t size = 0;
};
/// The vector behind `h`; raises strata.Error / ValueError like Segment.load.
LoadedVector load_vector(PySegment& segment, const Handle& h);
/// A new numpy view of `v` that keeps `segment` (a PySegment) mapped.
nb::object array_for(const nb::object& segment, const LoadedVector& v);

void bind_segment(nb::module_& m);
void bind_port(nb::module_& m);
void bind_region(nb::module_& m);

}  // namespace strata::python
