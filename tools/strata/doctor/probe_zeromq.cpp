// SPDX-License-Identifier: MIT
// zeromq: the library version and a PAIR round trip over inproc (within the
// context) and over ipc in the abstract socket namespace (through the I/O
// thread and the kernel, and with no socket file to clean up).
#include <unistd.h>

#include <string>

#include <fmt/format.h>
#include <zmq.hpp>

#include "probe.hpp"
#include "system.hpp"

namespace strata::doctor {

namespace {

constexpr int kReceiveTimeoutMs = 2000;

// ping from one end, pong back from the other. Empty on success, else why.
std::string round_trip(zmq::context_t& context, const std::string& endpoint) {
    zmq::socket_t server(context, zmq::socket_type::pair);
    zmq::socket_t client(context, zmq::socket_type::pair);
    for (auto* socket : {&server, &client}) {
        // linger 0: a failed probe must not block the context's shutdown.
        socket->set(zmq::sockopt::linger, 0);
        socket->set(zmq::sockopt::rcvtimeo, kReceiveTimeoutMs);
    }
    server.bind(endpoint);
    client.connect(endpoint);
    client.send(zmq::str_buffer("ping"), zmq::send_flags::none);
    zmq::message_t request;
    if (!server.recv(request, zmq::recv_flags::none) || request.to_string() != "ping")
        return endpoint + ": no ping within 2 s";
    server.send(zmq::str_buffer("pong"), zmq::send_flags::none);
    zmq::message_t reply;
    if (!client.recv(reply, zmq::recv_flags::none) || reply.to_string() != "pong")
        return endpoint + ": no pong within 2 s";
    return {};
}

}  // namespace

Capability probe_zeromq() {
    Capability cap("zeromq", true);
    int major = 0;
    int minor = 0;
    int patch = 0;
    zmq_version(&major, &minor, &patch);
    const auto version = fmt::format("libzmq {}.{}.{}", major, minor, patch);
    try {
        zmq::context_t context;
        const auto inproc = "inproc://" + unique_name("zmq");
        const auto ipc = "ipc://@" + unique_name("zmq");
        for (const auto& endpoint : {inproc, ipc}) {
            if (const auto failure = round_trip(context, endpoint); !failure.empty()) {
                cap.detail = version + ", " + failure;
                cap.fix = "apt-get install libzmq5 (4.3 or newer)";
                return cap;
            }
        }
    } catch (const zmq::error_t& error) {
        cap.detail = fmt::format("{}, {} ({})", version, error.what(), error.num());
        cap.fix = "apt-get install libzmq5 (4.3 or newer)";
        return cap;
    }
    cap.status = Status::ok;
    cap.detail = version + ", PAIR round trip over inproc and ipc";
    return cap;
}

}  // namespace strata::doctor
