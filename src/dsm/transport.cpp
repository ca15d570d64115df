// SPDX-License-Identifier: MIT
// MPI two-sided transport of the DSM (see transport.hpp).
#include "dsm/transport.hpp"

#include <cstring>

#include <fmt/format.h>

namespace strata::dsm {
namespace wire {

Header to_header(const proto::Message& m, std::uint64_t chunk, std::uint64_t size) {
    Header h;
    h.kind = static_cast<std::uint8_t>(m.kind);
    h.grant = static_cast<std::uint8_t>(m.grant);
    h.flags =
        static_cast<std::uint8_t>((m.has_data ? kHasData : 0) | (m.cached ? kCached : 0) | (m.publish ? kPublish : 0) |
                                  (m.update ? kUpdate : 0) | (m.kept_copy ? kKept : 0));
    h.client = m.client;
    h.targets = m.targets;
    h.chunk = chunk;
    h.version = m.version;
    h.size = size;
    return h;
}

proto::Message to_message(const Header& h) {
    return proto::Message{.kind = static_cast<proto::Msg>(h.kind),
                          .client = h.client,
                          .version = h.version,
                          .has_data = (h.flags & kHasData) != 0,
                          .cached = (h.flags & kCached) != 0,
                          .grant = static_cast<proto::CState>(h.grant),
                          .publish = (h.flags & kPublish) != 0,
                          .update = (h.flags & kUpdate) != 0,
                          .kept_copy = (h.flags & kKept) != 0,
                          .targets = h.targets};
}

std::expected<proto::Message, std::string> decode(const Header& h, int clients, int receiver) {
    const bool at_home = receiver == kAtHome;
    if (h.kind >= proto::kWireMsgCount || proto::to_home(static_cast<proto::Msg>(h.kind)) != at_home) {
        return std::unexpected(fmt::format("a {} message (kind {}) cannot reach a {}", kind_name(h.kind), h.kind,
                                           at_home ? "home" : "client"));
    }
    if (h.grant > static_cast<std::uint8_t>(proto::CState::M)) {
        return std::unexpected(
            fmt::format("a {} message grants state {}, not one of I, S, E, M", kind_name(h.kind), h.grant));
    }
    if (at_home && (h.client < 0 || h.client >= clients)) {
        return std::unexpected(fmt::format("a {} message names client {}, not one of the {} clients", kind_name(h.kind),
                                           h.client, clients));
    }
    // A client answers as the client the home names: only its own id (or a notify's -1) is taken.
    const bool any = h.kind == static_cast<std::uint8_t>(proto::Msg::notify) && h.client == -1;
    if (!at_home && h.client != receiver && !any) {
        return std::unexpected(
            fmt::format("a {} message for client {} reached client {}", kind_name(h.kind), h.client, receiver));
    }
    return to_message(h);
}

}  // namespace wire

Result<std::unique_ptr<Transport>> Transport::create(MPI_Comm comm) {
    wire::Header ping;
    ping.kind = static_cast<std::uint8_t>(wire::Kind::ping);
    const auto* bytes = reinterpret_cast<const std::byte*>(&ping);
    auto channel = net::MpiChannel::create(
        comm, {.tag = wire::kTag, .kinds = wire::kKinds, .who = "dsm", .ping = {bytes, bytes + sizeof ping}});
    if (!channel) {
        return std::unexpected(channel.error());
    }
    return std::unique_ptr<Transport>(new Transport(std::move(*channel)));
}

Result<void> Transport::post(int dest, const wire::Header& h, std::span<const std::byte> payload) {
    const std::int64_t at = log_ != nullptr ? log_->now() : 0;
    auto posted = channel_->post(dest, std::as_bytes(std::span(&h, 1)), payload);
    if (posted && log_ != nullptr) {
        log_->record(true, dest, h, at);
    }
    return posted;
}

Result<void> Transport::post_buffer(int dest, std::shared_ptr<net::Bytes> buffer) {
    wire::Header h;
    const bool has_header = buffer && buffer->size() >= sizeof h;
    if (has_header) {
        std::memcpy(&h, buffer->data(), sizeof h);
    }
    const std::int64_t at = log_ != nullptr ? log_->now() : 0;
    auto posted = channel_->post_buffer(dest, std::move(buffer));
    if (posted && has_header && log_ != nullptr) {
        log_->record(true, dest, h, at);
    }
    return posted;
}

Result<bool> Transport::poll(Incoming& in) {
    net::Received got;
    auto polled = channel_->poll(got);
    if (!polled || !*polled) {
        return polled;
    }
    if (got.buffer->size() < sizeof(wire::Header)) {
        return make_error(Errc::internal, "dsm: a message of {} bytes from rank {} is shorter than a header",
                          got.buffer->size(), got.source);
    }
    in.source = got.source;
    std::memcpy(&in.header, got.buffer->data(), sizeof(wire::Header));
    in.buffer = std::move(got.buffer);
    if (log_ != nullptr) {
        log_->record(false, in.source, in.header);
    }
    return true;
}

Traffic Transport::traffic() const {
    const auto sent = channel_->sent();
    const auto received = channel_->received();
    Traffic t;
    for (int k = 0; k < wire::kKinds; ++k) {
        const auto i = static_cast<std::size_t>(k);
        t.kinds.emplace_back(wire::kind_name(k));
        t.sent.push_back({sent[i].messages, sent[i].bytes});
        t.received.push_back({received[i].messages, received[i].bytes});
    }
    return t;
}

TrafficCount Traffic::total_sent() const {
    TrafficCount c;
    for (const auto& s : sent) {
        c.messages += s.messages;
        c.bytes += s.bytes;
    }
    return c;
}

}  // namespace strata::dsm
