// SPDX-License-Identifier: MIT
// strata.Port and strata.Message: send and receive segment vectors (their
// handles) between processes through the shm layer's ports; a received message
// holds its slot until released, so the producer never overwrites what Python
// still reads.
//
// The handoff path does no per-message Python work it can avoid: an array sent
// before is recognised by identity (its handle remembered), a vector received
// before comes back as the same numpy view (checked against the segment each
// time), and send() keeps the GIL unless it has to wait for a slot.
#include <array>
#include <optional>

#include <fmt/format.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.hpp"

namespace strata::python {

namespace {

/// Arrays a port remembers (sent and received): a handful is what a ring of
/// buffers reuses; more would only keep arrays alive longer.
constexpr std::size_t kRemembered = 16;

struct SentArray {
    nb::object array;  // the numpy array sent (kept alive, so its identity stays unique)
    Handle handle;
    std::uint64_t erased = 0;  // PySegment::erased when remembered
};

struct ReceivedArray {
    Handle handle;
    const void* data = nullptr;
    std::size_t size = 0;
    nb::object array;
};

struct PyPort {
    nb::object segment;  // PySegment: the port lives in its mapping
    std::optional<Port> port;
    /// A copy of PySegment::views while open: the segment refuses close()
    /// (busy) while a port lives in its mapping, instead of unmapping it.
    std::shared_ptr<int> view;
    std::array<SentArray, kRemembered> sent;
    std::array<ReceivedArray, kRemembered> received;
    std::size_t next_sent = 0;
    std::size_t next_received = 0;

    Port& get() {
        if (!port) {
            throw PyError("invalid_argument", "port: closed");
        }
        return *port;
    }

    void forget() {
        sent = {};
        received = {};
    }

    /// The handle remembered for `array`, if it was sent before and its vector
    /// still lives at that handle.
    std::optional<Handle> sent_handle(nb::handle array) {
        auto& seg = nb::cast<PySegment&>(segment);
        for (auto& e : sent) {
            if (e.array.is(array)) {
                if (e.erased == seg.erased) {
                    return e.handle;
                }
                e = {};
            }
        }
        return std::nullopt;
    }

    void remember_sent(nb::object array, const Handle& h) {
        sent[next_sent] = {std::move(array), h, nb::cast<PySegment&>(segment).erased};
        next_sent = (next_sent + 1) % kRemembered;
    }

    /// A numpy view of the vector behind `h`: the one made for the same vector
    /// before if it still has the same data and size, else a new one.
    nb::object array_of(const Handle& h) {
        const LoadedVector v = load_vector(nb::cast<PySegment&>(segment), h);
        for (const auto& e : received) {
            if (e.handle == h && e.data == v.data && e.size == v.size && e.array.is_valid()) {
                return e.array;
            }
        }
        nb::object array = array_for(segment, v);
        received[next_received] = {h, v.data, v.size, array};
        next_received = (next_received + 1) % kRemembered;
        return array;
    }
};

/// A received message (strata.Message).
struct PyMessage {
    nb::object port;  // PyPort
    std::optional<Sample> sample;
    Handle handle;
    nb::object array;   // None for a pickled object
    nb::object object;  // the array, or the unpickled object

    void release() {
        array = nb::none();
        object = nb::none();
        if (!sample) {
            return;
        }
        Sample s = std::move(*sample);
        sample.reset();
        unwrap(nb::cast<PyPort&>(port).get().release(std::move(s)));
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

/// Sends `h`: first without giving up the GIL (a free slot needs no wait), then,
/// if every slot is in use, waiting with the GIL released.
void send_handle(Port& port, const Handle& h, Port::Timeout timeout) {
    Result<void> r = port.send(h, Port::Timeout::zero());
    if (!r && r.error().code == Errc::timeout && timeout != Port::Timeout::zero()) {
        nb::gil_scoped_release unlocked;
        r = port.send(h, timeout);
    }
    unwrap(std::move(r));
}

nb::object unpickle(PySegment& seg, const Handle& h) {
    // Never destroyed: a static nb::object would be released after the interpreter is gone.
    static const auto* loads = new nb::object(nb::module_::import_("pickle").attr("loads"));
    if (!seg.segment.is_open()) {
        throw PyError("invalid_argument", "segment: closed");
    }
    auto* v = unwrap(seg.segment.load<strata::vector<char>>(h));
    return (*loads)(nb::bytes(v->data(), v->size()));
}

}  // namespace

void bind_port(nb::module_& m) {
    nb::class_<PyMessage>(m, "Message",
                          "A received message. `object` is what was sent: a numpy array viewing the segment's "
                          "vector (no copy) for arrays, or the unpickled object for anything else; `array` is "
                          "the same array, or None for a pickled object. The message's slot stays held - the "
                          "producer cannot reuse it - until release() (or the end of a `with` block). Messages "
                          "of the same vector give the same array object.")
        .def_prop_ro("handle", [](const PyMessage& msg) { return msg.handle; })
        .def_prop_ro("array", [](const PyMessage& msg) { return msg.array; })
        .def_prop_ro("object", [](const PyMessage& msg) { return msg.object; })
        .def_prop_ro("sequence", [](const PyMessage& msg) { return msg.sample ? msg.sample->sequence() : 0; })
        .def("release", &PyMessage::release, "Lets the producers reuse the message's slot (idempotent).")
        .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
        .def("__exit__", [](PyMessage& msg, nb::args) { msg.release(); });

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
                new (self) PyPort{segment, std::move(port), seg.views, {}, {}, 0, 0};
            },
            nb::arg("segment"), nb::arg("name"), nb::arg("role"), nb::arg("slots") = nb::none(),
            nb::arg("consumers") = nb::none(), nb::arg("sync") = "blocking")
        .def_prop_ro("name", [](PyPort& p) { return p.get().name(); })
        .def_prop_ro("role", [](PyPort& p) { return std::string(to_string(p.get().role())); })
        .def_prop_ro("index", [](PyPort& p) { return p.get().index(); })
        .def_prop_ro("messages", [](PyPort& p) { return p.get().messages(); })
        .def(
            "send",
            [](PyPort& p, nb::handle obj, std::optional<double> timeout) {
                Port& port = p.get();
                std::optional<Handle> h;
                if (nb::isinstance<Handle>(obj)) {
                    h = nb::cast<Handle>(obj);
                } else {
                    h = p.sent_handle(obj);
                }
                if (!h) {
                    return false;  // not a handle, nor an array sent before: the caller finds its handle
                }
                send_handle(port, *h, timeout_of(timeout));
                return true;
            },
            nb::arg("obj"), nb::arg("timeout") = nb::none(),
            "Sends a Handle, or an array remembered by _remember; False (nothing sent) for anything else.")
        .def(
            "_remember", [](PyPort& p, nb::object array, const Handle& h) { p.remember_sent(std::move(array), h); },
            nb::arg("array"), nb::arg("handle"), "Sending `array` again sends `handle` without looking it up.")
        .def(
            "recv",
            [](nb::object self, std::optional<double> timeout) -> nb::object {
                PyPort& p = nb::cast<PyPort&>(self);
                Port& port = p.get();
                const auto t = timeout_of(timeout);
                Result<Sample> r = make_error(Errc::internal, "recv did not run");
                {
                    nb::gil_scoped_release unlocked;
                    r = port.recv(t);
                }
                if (!r && r.error().code == Errc::not_found) {
                    return nb::none();  // end of stream: every producer closed
                }
                PyMessage msg{self, unwrap(std::move(r)), {}, nb::none(), nb::none()};
                msg.handle = msg.sample->handle();
                if (msg.handle.type == type_id<strata::vector<char>>()) {
                    msg.object = unpickle(nb::cast<PySegment&>(p.segment), msg.handle);
                } else {
                    msg.array = p.array_of(msg.handle);
                    msg.object = msg.array;
                }
                return nb::cast(std::move(msg));
            },
            nb::arg("timeout") = nb::none())
        .def("close", [](PyPort& p) {
            p.forget();
            if (p.port) {
                auto r = p.port->close();
                p.port.reset();
                p.view.reset();
                unwrap(std::move(r));
            }
        });
}

}  // namespace strata::python
