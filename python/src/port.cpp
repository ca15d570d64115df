// strata.Port: send and receive segment vectors (their handles) between
// processes through the shm layer's ports; a received message holds its slot
// until released, so the producer never overwrites what Python still reads.
#include <optional>

#include <fmt/format.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.hpp"

namespace strata::python {

namespace {

struct PyPort {
    nb::object segment;  // PySegment: the port lives in its mapping
    std::optional<Port> port;
    /// A copy of PySegment::views while open: the segment refuses close()
    /// (busy) while a port lives in its mapping, instead of unmapping it.
    std::shared_ptr<int> view;

    Port& get() {
        if (!port) {
            throw PyError("invalid_argument", "port: closed");
        }
        return *port;
    }
};

struct PySample {
    nb::object port;  // PyPort
    std::optional<Sample> sample;

    Sample& get() {
        if (!sample) {
            throw PyError("invalid_argument", "message: already released");
        }
        return *sample;
    }
};

Port::Timeout timeout_of(std::optional<double> seconds) {
    if (!seconds) {
        return Port::forever;
    }
    if (*seconds < 0) {
        throw nb::value_error(fmt::format("timeout={}: cannot be negative", *seconds).c_str());
    }
    return std::chrono::duration_cast<Port::Timeout>(std::chrono::duration<double>(*seconds));
}

}  // namespace

void bind_port(nb::module_& m) {
    nb::class_<PySample>(m, "_Sample")
        .def_prop_ro("handle", [](PySample& s) { return s.get().handle(); })
        .def_prop_ro("sequence", [](PySample& s) { return s.get().sequence(); })
        .def("release", [](PySample& s) {
            if (!s.sample) {
                return;
            }
            auto& port = nb::cast<PyPort&>(s.port);
            Sample sample = std::move(*s.sample);
            s.sample.reset();
            unwrap(port.get().release(std::move(sample)));
        });

    nb::class_<PyPort>(m, "_Port")
        .def(
            "__init__",
            [](PyPort* self, nb::object segment, const std::string& name, const std::string& role,
               std::optional<unsigned> slots, std::optional<unsigned> consumers, const std::string& sync) {
                auto& seg = nb::cast<PySegment&>(segment);
                if (!seg.segment.is_open()) {
                    throw PyError("invalid_argument", "segment: closed");
                }
                const PortOptions options{.slots = slots,
                                          .slot_bytes = std::nullopt,
                                          .consumers = consumers,
                                          .sync = unwrap(parse_port_sync(sync))};
                auto port = unwrap(seg.segment.port(name, unwrap(parse_port_role(role)), options));
                new (self) PyPort{segment, std::move(port), seg.views};
            },
            nb::arg("segment"), nb::arg("name"), nb::arg("role"), nb::arg("slots") = nb::none(),
            nb::arg("consumers") = nb::none(), nb::arg("sync") = "blocking")
        .def_prop_ro("name", [](PyPort& p) { return p.get().name(); })
        .def_prop_ro("role", [](PyPort& p) { return std::string(to_string(p.get().role())); })
        .def_prop_ro("index", [](PyPort& p) { return p.get().index(); })
        .def_prop_ro("messages", [](PyPort& p) { return p.get().messages(); })
        .def(
            "send",
            [](PyPort& p, const Handle& h, std::optional<double> timeout) {
                Port& port = p.get();
                const auto t = timeout_of(timeout);
                Result<void> r;
                {
                    nb::gil_scoped_release unlocked;
                    r = port.send(h, t);
                }
                unwrap(std::move(r));
            },
            nb::arg("handle"), nb::arg("timeout") = nb::none())
        .def(
            "recv",
            [](nb::object self, std::optional<double> timeout) -> nb::object {
                Port& port = nb::cast<PyPort&>(self).get();
                const auto t = timeout_of(timeout);
                Result<Sample> r = make_error(Errc::internal, "recv did not run");
                {
                    nb::gil_scoped_release unlocked;
                    r = port.recv(t);
                }
                if (!r && r.error().code == Errc::not_found) {
                    return nb::none();  // end of stream: every producer closed
                }
                return nb::cast(PySample{self, unwrap(std::move(r))});
            },
            nb::arg("timeout") = nb::none())
        .def("close", [](PyPort& p) {
            if (p.port) {
                auto r = p.port->close();
                p.port.reset();
                p.view.reset();
                unwrap(std::move(r));
            }
        });
}

}  // namespace strata::python
