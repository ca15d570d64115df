// SPDX-License-Identifier: MIT
// strata.Segment and its vectors as zero-copy numpy arrays.
#include <cstring>

#include <fmt/format.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include "bindings.hpp"

namespace strata::python {

namespace {

template <class T>
struct Tag {
    using type = T;
};

template <class F>
decltype(auto) with_type(Dtype d, F&& f) {
    switch (d) {
        case Dtype::float64: return f(Tag<double>{});
        case Dtype::float32: return f(Tag<float>{});
        case Dtype::int64: return f(Tag<std::int64_t>{});
        case Dtype::int32: return f(Tag<std::int32_t>{});
        case Dtype::uint8: break;
    }
    return f(Tag<std::uint8_t>{});
}

PySegment& seg_of(const nb::object& o) {
    return nb::cast<PySegment&>(o);
}

PySegment& open_segment(PySegment& self) {
    if (!self.segment.is_open()) {
        throw PyError("invalid_argument", "segment: closed");
    }
    return self;
}

VectorRef remember(const nb::object& seg, void* vector, Dtype dtype) {
    with_type(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto* v = static_cast<strata::vector<T>*>(vector);
        seg_of(seg).arrays[v->data()] = {vector, dtype};
    });
    return VectorRef{seg, vector, dtype, seg_of(seg).views, seg_of(seg).segment.is_read_only()};
}

nb::object array_of(nb::handle owner, const VectorRef& ref) {
    return with_type(ref.dtype, [&](auto tag) -> nb::object {
        using T = typename decltype(tag)::type;
        auto* v = static_cast<strata::vector<T>*>(ref.vector);
        if (ref.read_only) {
            // The mapping is PROT_READ: numpy refuses writes (ValueError) instead of the process faulting.
            return nb::cast(nb::ndarray<nb::numpy, const T, nb::ndim<1>>(v->data(), {v->size()}, owner));
        }
        return nb::cast(nb::ndarray<nb::numpy, T, nb::ndim<1>>(v->data(), {v->size()}, owner));
    });
}

}  // namespace

LoadedVector load_vector(PySegment& self, const Handle& h) {
    auto& s = open_segment(self);
    for (auto d : {Dtype::float64, Dtype::float32, Dtype::int64, Dtype::int32, Dtype::uint8}) {
        const bool match =
            with_type(d, [&](auto tag) { return h.type == type_id<strata::vector<typename decltype(tag)::type>>(); });
        if (match) {
            return with_type(d, [&](auto tag) {
                auto* v = unwrap(s.segment.load<strata::vector<typename decltype(tag)::type>>(h));
                return LoadedVector{v, d, v->data(), v->size()};
            });
        }
    }
    throw nb::value_error(fmt::format("handle type={:#x}: not a vector of float64, float32, int64, "
                                      "int32 or uint8 (the bindings load only those)",
                                      h.type)
                              .c_str());
}

nb::object array_for(const nb::object& segment, const LoadedVector& v) {
    nb::object ref = nb::cast(remember(segment, v.vector, v.dtype));
    return array_of(ref, nb::cast<const VectorRef&>(ref));
}

void bind_segment(nb::module_& m) {
    m.attr("_BLOB_TYPE") = type_id<strata::vector<char>>();
    nb::class_<VectorRef>(m, "_VectorRef")
        .def_prop_ro("dtype", [](const VectorRef& r) { return std::string(to_string(r.dtype)); })
        .def("array", [](nb::handle self) { return array_of(self, nb::cast<const VectorRef&>(self)); });

    nb::class_<PySegment>(m, "_Segment")
        .def(
            "__init__",
            [](PySegment* self, const std::string& name, const std::string& mode, std::size_t size,
               const std::string& dir, bool group_access) {
                auto parsed = unwrap(parse_segment_mode(mode));
                new (self) PySegment{
                    unwrap(Segment::open(name, parsed, size, {.dir = dir, .group_access = group_access})), {}};
            },
            nb::arg("name"), nb::arg("mode") = "open_or_create", nb::arg("size") = 0, nb::arg("dir") = "",
            nb::arg("group_access") = false)
        .def_prop_ro("name", [](PySegment& s) { return open_segment(s).segment.name(); })
        .def_prop_ro("size", [](PySegment& s) { return open_segment(s).segment.size(); })
        .def_prop_ro("id", [](PySegment& s) { return open_segment(s).segment.id(); })
        .def_prop_ro("path", [](PySegment& s) { return open_segment(s).segment.path().string(); })
        .def_prop_ro("free_bytes", [](PySegment& s) { return open_segment(s).segment.free_bytes(); })
        .def_prop_ro("is_open", [](PySegment& s) { return s.segment.is_open(); })
        .def("close",
             [](PySegment& s) {
                 if (const auto users = s.views.use_count() - 1; users > 0) {
                     throw PyError(
                         "busy",
                         fmt::format("segment {}: {} vector(s) or port(s) still open from Python; drop the "
                                     "arrays and close the ports before close() (or let the segment be collected)",
                                     s.segment.is_open() ? s.segment.name() : "?", users));
                 }
                 s.arrays.clear();
                 unwrap(s.segment.close());
             })
        .def(
            "_vector",
            [](nb::object self, const std::string& name, const std::string& dtype, std::size_t size, bool create) {
                auto& s = open_segment(seg_of(self));
                const Dtype d = parse_dtype(dtype);
                void* v = with_type(d, [&](auto tag) -> void* {
                    using V = strata::vector<typename decltype(tag)::type>;
                    return create ? unwrap(s.segment.container<V>(name, size)) : unwrap(s.segment.find<V>(name));
                });
                return remember(self, v, d);
            },
            nb::arg("name"), nb::arg("dtype"), nb::arg("size"), nb::arg("create"))
        .def(
            "_make",
            [](nb::object self, const std::string& dtype, std::size_t size) {
                auto& s = open_segment(seg_of(self));
                const Dtype d = parse_dtype(dtype);
                void* v = with_type(d, [&](auto tag) -> void* {
                    using V = strata::vector<typename decltype(tag)::type>;
                    return unwrap(s.segment.make<V>(size));
                });
                return remember(self, v, d);
            },
            nb::arg("dtype"), nb::arg("size"))
        .def(
            "_load",
            [](nb::object self, const Handle& h) {
                const LoadedVector v = load_vector(seg_of(self), h);
                return remember(self, v.vector, v.dtype);
            },
            nb::arg("handle"))
        .def(
            "_save",
            [](PySegment& s, std::uintptr_t address) {
                auto& seg = open_segment(s);
                const auto it = seg.arrays.find(reinterpret_cast<const void*>(address));
                if (it == seg.arrays.end()) {
                    throw nb::value_error(
                        "array: not a whole vector of this segment (save the array that vector(), find() or "
                        "load() returned, not a copy or a slice)");
                }
                return with_type(it->second.dtype, [&](auto tag) {
                    return unwrap(seg.segment.save(
                        *static_cast<strata::vector<typename decltype(tag)::type>*>(it->second.vector)));
                });
            },
            nb::arg("address"))
        .def("_addresses",
             [](PySegment& s) {
                 nb::list out;
                 for (const auto& [address, known] : s.arrays) {
                     out.append(reinterpret_cast<std::uintptr_t>(address));
                 }
                 return out;
             })
        .def(
            "_make_blob",
            [](PySegment& s, nb::bytes data) {
                // A pickled object: a vector<char>, a type of its own, so a
                // receiver tells it from a uint8 array by the handle's type.
                auto& seg = open_segment(s);
                auto* v = unwrap(seg.segment.make<strata::vector<char>>(data.size()));
                std::memcpy(v->data(), data.c_str(), data.size());
                return unwrap(seg.segment.save(*v));
            },
            nb::arg("data"))
        .def(
            "_load_blob",
            [](PySegment& s, const Handle& h) {
                auto& seg = open_segment(s);
                auto* v = unwrap(seg.segment.load<strata::vector<char>>(h));
                return nb::bytes(v->data(), v->size());
            },
            nb::arg("handle"))
        .def(
            "_free_blob",
            [](PySegment& s, const Handle& h) {
                auto& seg = open_segment(s);
                unwrap(seg.segment.destroy(unwrap(seg.segment.load<strata::vector<char>>(h))));
            },
            nb::arg("handle"))
        .def(
            "_erase",
            [](PySegment& s, const std::string& name, const std::string& dtype) {
                auto& seg = open_segment(s);
                with_type(parse_dtype(dtype), [&](auto tag) {
                    using V = strata::vector<typename decltype(tag)::type>;
                    if (auto found = seg.segment.find<V>(name)) {
                        seg.arrays.erase((*found)->data());
                    }
                    ++seg.erased;
                    unwrap(seg.segment.erase<V>(name));
                });
            },
            nb::arg("name"), nb::arg("dtype"));
}

}  // namespace strata::python
