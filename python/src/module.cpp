// SPDX-License-Identifier: MIT
// strata._strata: segments, zero-copy numpy vectors, picklable handles, ports.
#include <fmt/format.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include "bindings.hpp"

namespace strata::python {

Dtype parse_dtype(const std::string& name) {
    for (auto d : {Dtype::float64, Dtype::float32, Dtype::int64, Dtype::int32, Dtype::uint8}) {
        if (name == to_string(d)) {
            return d;
        }
    }
    throw nb::value_error(
        fmt::format("dtype={}: not supported (expected float64, float32, int64, int32 or uint8)", name).c_str());
}

const char* to_string(Dtype dtype) noexcept {
    switch (dtype) {
        case Dtype::float64: return "float64";
        case Dtype::float32: return "float32";
        case Dtype::int64: return "int64";
        case Dtype::int32: return "int32";
        case Dtype::uint8: return "uint8";
    }
    return "?";
}

}  // namespace strata::python

NB_MODULE(_strata, m) {
    namespace nb = nanobind;
    using strata::Handle;
    using strata::python::PyError;
    m.doc() = "strata shared objects: segments, zero-copy numpy vectors, handles and ports";

    static nb::object error_type = nb::steal(PyErr_NewExceptionWithDoc(
        "strata.Error", "A strata operation failed; .code names the error (peer_dead, not_found, ...).",
        PyExc_RuntimeError, nullptr));
    m.attr("Error") = error_type;
    nb::register_exception_translator(
        [](const std::exception_ptr& p, void*) {
            try {
                std::rethrow_exception(p);
            } catch (const PyError& e) {
                nb::object text = nb::steal(PyUnicode_DecodeUTF8(
                    e.message.data(), static_cast<Py_ssize_t>(e.message.size()), "backslashreplace"));
                if (e.value_error) {
                    PyErr_SetObject(PyExc_ValueError, text.ptr());
                    return;
                }
                nb::object exc = error_type(text);
                nb::setattr(exc, "code", nb::str(e.code.c_str()));
                PyErr_SetObject(error_type.ptr(), exc.ptr());
            } catch (const strata::out_of_space& e) {
                nb::object exc = error_type(nb::str(e.what()));
                nb::setattr(exc, "code", nb::str("no_space"));
                PyErr_SetObject(error_type.ptr(), exc.ptr());
            }
        },
        nullptr);

    nb::class_<Handle>(m, "Handle",
                       "A reference to an object of a segment: 32 bytes, picklable, valid in every process "
                       "attached to the segment (Segment.load).")
        .def(nb::init<>())
        .def_rw("segment", &Handle::segment)
        .def_rw("generation", &Handle::generation)
        .def_rw("offset", &Handle::offset)
        .def_rw("type", &Handle::type)
        .def("is_null", &Handle::is_null)
        .def("__eq__", [](const Handle& a, const Handle& b) { return a == b; })
        .def("__hash__",
             [](const Handle& h) { return std::hash<std::uint64_t>{}(h.segment ^ (h.offset * 31) ^ h.generation); })
        .def("__repr__",
             [](const Handle& h) {
                 return fmt::format("strata.Handle(segment={:#x}, generation={}, offset={}, type={:#x})", h.segment,
                                    h.generation, h.offset, h.type);
             })
        .def("__getstate__", [](const Handle& h) { return std::make_tuple(h.segment, h.generation, h.offset, h.type); })
        .def("__setstate__",
             [](Handle& h, const std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>& s) {
                 new (&h) Handle{std::get<0>(s), std::get<1>(s), std::get<2>(s), std::get<3>(s)};
             });

    strata::python::bind_segment(m);
    strata::python::bind_port(m);
    strata::python::bind_region(m);
}
