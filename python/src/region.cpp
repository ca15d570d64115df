// SPDX-License-Identifier: MIT
// strata._Region: tiered memory regions (include/strata/region.hpp) seen from
// Python as zero-copy numpy byte arrays. Every array keeps the region object
// alive, and close() refuses while arrays still view the mapping, so Python
// never touches unmapped memory.
#include <memory>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "strata/region.hpp"

namespace strata::python {

namespace {

struct PyRegion {
    std::optional<Region> region;
    /// One copy per numpy array alive: close() refuses while arrays view the mapping.
    std::shared_ptr<int> views = std::make_shared<int>(0);

    Region& get() {
        if (!region || !region->is_open()) {
            throw PyError("invalid_argument", "region: closed");
        }
        return *region;
    }
};

StorageOptions storage_options(const std::string& path, std::uint64_t offset, const std::string& writeback,
                               bool read_only, bool create_only, bool allow_other_owner) {
    return StorageOptions{.path = path,
                          .offset = offset,
                          .writeback = unwrap(parse_writeback(writeback)),
                          .read_only = read_only,
                          .create_only = create_only,
                          .allow_other_owner = allow_other_owner};
}

Factor factor_of(const nb::handle& factor) {
    if (nb::isinstance<nb::str>(factor)) {
        return unwrap(Factor::parse(nb::cast<std::string>(factor)));
    }
    if (nb::isinstance<nb::float_>(factor) || nb::isinstance<nb::int_>(factor)) {
        return Factor::fixed(nb::cast<double>(factor));
    }
    throw nb::value_error(
        fmt::format("factor={}: expected a number in [0, 1] or \"auto\"", nb::cast<std::string>(nb::repr(factor)))
            .c_str());
}

std::string tier_name(Tier t) {
    return std::string(to_string(t));
}

}  // namespace

void bind_region(nb::module_& m) {
    nb::class_<PyRegion>(m, "_Region")
        .def_static(
            "memory", [](std::size_t size) { return PyRegion{unwrap(Region::memory(size))}; }, nb::arg("size"))
        .def_static(
            "storage",
            [](std::size_t size, const std::string& path, std::uint64_t offset, const std::string& writeback,
               bool read_only, bool create_only, bool allow_other_owner) {
                return PyRegion{unwrap(Region::storage(
                    size, storage_options(path, offset, writeback, read_only, create_only, allow_other_owner)))};
            },
            nb::arg("size"), nb::arg("path"), nb::arg("offset"), nb::arg("writeback"), nb::arg("read_only"),
            nb::arg("create_only"), nb::arg("allow_other_owner"))
        .def_static(
            "combined",
            [](std::size_t size, const std::string& path, nb::handle factor, const std::string& order,
               std::uint64_t offset, const std::string& writeback, bool create_only, bool allow_other_owner) {
                CombinedOptions options{
                    .storage = storage_options(path, offset, writeback, false, create_only, allow_other_owner),
                    .factor = factor_of(factor),
                    .order = unwrap(parse_order(order))};
                return PyRegion{unwrap(Region::combined(size, options))};
            },
            nb::arg("size"), nb::arg("path"), nb::arg("factor"), nb::arg("order"), nb::arg("offset"),
            nb::arg("writeback"), nb::arg("create_only"), nb::arg("allow_other_owner"))
        .def_prop_ro("size", [](PyRegion& r) { return r.get().size(); })
        .def_prop_ro("kind", [](PyRegion& r) { return std::string(to_string(r.get().kind())); })
        .def_prop_ro("path", [](PyRegion& r) { return r.get().path().string(); })
        .def_prop_ro("memory_bytes", [](PyRegion& r) { return r.get().memory_bytes(); })
        .def_prop_ro("storage_bytes", [](PyRegion& r) { return r.get().storage_bytes(); })
        .def_prop_ro("is_open", [](PyRegion& r) { return r.region && r.region->is_open(); })
        .def_prop_ro("views", [](PyRegion& r) { return r.views.use_count() - 1; })
        .def("tier",
             [](PyRegion& r, std::size_t offset) {
                 auto& region = r.get();
                 if (offset >= region.size()) {
                     throw PyError("invalid_argument",
                                   fmt::format("offset={}: outside the region of {} bytes", offset, region.size()));
                 }
                 return tier_name(unwrap(region.placement(region.data() + offset)));
             })
        .def(
            "sync",
            [](PyRegion& r, std::size_t offset, std::optional<std::size_t> length) {
                auto& region = r.get();
                nb::gil_scoped_release unlocked;
                unwrap(region.sync(offset, length.value_or(offset <= region.size() ? region.size() - offset : 0)));
            },
            nb::arg("offset") = 0, nb::arg("length") = nb::none())
        .def(
            "sync_async",
            [](PyRegion& r, std::size_t offset, std::optional<std::size_t> length) {
                auto& region = r.get();
                unwrap(
                    region.sync_async(offset, length.value_or(offset <= region.size() ? region.size() - offset : 0)));
            },
            nb::arg("offset") = 0, nb::arg("length") = nb::none())
        .def(
            "advise",
            [](PyRegion& r, const std::string& advice) {
                auto& region = r.get();
                unwrap(region.advise(unwrap(parse_advice(advice))));
            },
            nb::arg("advice"))
        .def("stats",
             [](PyRegion& r) {
                 const auto s = unwrap(r.get().stats());
                 nb::dict d;
                 d["size"] = s.size;
                 d["memory_bytes"] = s.memory_bytes;
                 d["storage_bytes"] = s.storage_bytes;
                 d["resident_bytes"] = s.resident_bytes;
                 d["dirty_bytes"] = s.dirty_bytes;
                 return d;
             })
        .def("array",
             [](nb::handle self) {
                 auto& r = nb::cast<PyRegion&>(self);
                 auto& region = r.get();
                 // The capsule holds the region object and one count of `views`.
                 using Hold = std::pair<nb::object, std::shared_ptr<int>>;
                 auto* hold = new Hold(nb::borrow(self), r.views);
                 nb::capsule owner(hold, [](void* p) noexcept { delete static_cast<Hold*>(p); });
                 auto* data = reinterpret_cast<std::uint8_t*>(region.data());
                 return nb::cast(nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>(data, {region.size()}, owner));
             })
        .def(
            "close",
            [](PyRegion& r, bool discard, bool unlink, bool roll_back) {
                auto& region = r.get();
                if (const auto users = r.views.use_count() - 1; users > 0) {
                    throw PyError("busy", fmt::format("region: {} numpy array(s) still view it; drop them before "
                                                      "close() (or let the region be collected)",
                                                      users));
                }
                unwrap(region.close({.unlink = unlink, .discard = discard, .roll_back = roll_back}));
            },
            nb::arg("discard") = false, nb::arg("unlink") = false, nb::arg("roll_back") = false);
}

}  // namespace strata::python
