// SPDX-License-Identifier: MIT
// ZeroMQ helpers (zmq_link.hpp).
#include "zmq_link.hpp"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace strata::video {

std::string zmq_error_text() {
    return fmt::format("{} (errno {})", zmq_strerror(errno), errno);
}

std::vector<std::uint8_t>* BufferPool::take() {
    std::lock_guard lock(mu_);
    if (free_.empty()) {
        all_.push_back(std::make_unique<std::vector<std::uint8_t>>(bytes_));
        return all_.back().get();
    }
    auto* b = free_.back();
    free_.pop_back();
    return b;
}

void BufferPool::give(std::vector<std::uint8_t>* buffer) {
    std::lock_guard lock(mu_);
    free_.push_back(buffer);
}

namespace {

struct Release {
    std::shared_ptr<BufferPool> pool;
    std::vector<std::uint8_t>* buffer;
};

void release_buffer(void*, void* hint) {
    auto* r = static_cast<Release*>(hint);
    if (r->pool != nullptr) r->pool->give(r->buffer);
    delete r;
}

}  // namespace

ZmqSocket::ZmqSocket(Context& ctx, void* zmq_context, int type, const std::string& name)
    : ctx_(ctx), socket_(zmq_socket(zmq_context, type)), name_(name) {
    const int timeout = ctx.options.timeout_ms;
    // Closing never waits longer than the timeout for unsent messages.
    set(ZMQ_LINGER, timeout);
    // ZMTP heartbeats: a peer that stops answering (not only one whose
    // connection closed) has its connection dropped.
    set(ZMQ_HEARTBEAT_IVL, ctx.options.heartbeat_ms);
    set(ZMQ_HEARTBEAT_TIMEOUT, timeout);
    set(ZMQ_HEARTBEAT_TTL, timeout);
    set(ZMQ_SNDTIMEO, timeout);
    set(ZMQ_RECONNECT_IVL, 50);
}

ZmqSocket::~ZmqSocket() {
    if (socket_ != nullptr) zmq_close(socket_);
}

void ZmqSocket::set(int option, int value) {
    zmq_setsockopt(socket_, option, &value, sizeof value);
}
void ZmqSocket::set(int option, const std::string& value) {
    zmq_setsockopt(socket_, option, value.data(), value.size());
}

Result<void> ZmqSocket::bind(const std::string& endpoint) {
    endpoint_ = endpoint;
    if (zmq_bind(socket_, endpoint.c_str()) != 0) {
        const int err = errno;
        return make_error(err == EADDRINUSE ? Errc::busy : Errc::io_error, "{}: cannot bind {}: {}", name_, endpoint,
                          zmq_strerror(err));
    }
    return {};
}

Result<void> ZmqSocket::connect(const std::string& endpoint) {
    endpoint_ = endpoint;
    if (zmq_connect(socket_, endpoint.c_str()) != 0) {
        return make_error(Errc::io_error, "{}: cannot connect to {}: {}", name_, endpoint, zmq_error_text());
    }
    return {};
}

Result<void> ZmqSocket::send(const Header& h, const std::string& routing_id, bool empty_delimiter,
                             std::vector<std::uint8_t>* pooled, const std::shared_ptr<BufferPool>& pool,
                             bool dont_wait) {
    const int wait_flag = dont_wait ? ZMQ_DONTWAIT : 0;
    Header copy = h;
    copy.from = ctx_.rank;
    std::size_t bytes = sizeof copy;
    auto failed = [&](const char* part) {
        const int err = errno;
        if (err == EHOSTUNREACH) {
            return make_error(Errc::peer_dead, "{}: {} is gone (its connection closed) [{}]", name_,
                              routing_id.empty() ? endpoint_ : routing_id, part);
        }
        if (err == EAGAIN) {
            return make_error(Errc::timeout,
                              "{}: no room to send the {} message to {} for {} ms: the peer is dead or stopped "
                              "receiving",
                              name_, to_string(h.kind), routing_id.empty() ? endpoint_ : routing_id,
                              ctx_.options.timeout_ms);
        }
        return make_error(Errc::io_error, "{}: sending the {} message: {}", name_, to_string(h.kind),
                          zmq_strerror(err));
    };
    if (!routing_id.empty() && zmq_send(socket_, routing_id.data(), routing_id.size(), ZMQ_SNDMORE | wait_flag) < 0) {
        if (pool) pool->give(pooled);
        return failed("routing id");
    }
    if (empty_delimiter && zmq_send(socket_, "", 0, ZMQ_SNDMORE | wait_flag) < 0) {
        if (pool) pool->give(pooled);
        return failed("delimiter");
    }
    if (zmq_send(socket_, &copy, sizeof copy, (pooled != nullptr ? ZMQ_SNDMORE : 0) | wait_flag) < 0) {
        if (pool) pool->give(pooled);
        return failed("header");
    }
    if (pooled != nullptr) {
        zmq_msg_t msg;
        auto* release = new Release{pool, pooled};
        zmq_msg_init_data(&msg, pooled->data(), pooled->size(), release_buffer, release);
        bytes += pooled->size();
        if (zmq_msg_send(&msg, socket_, wait_flag) < 0) {
            zmq_msg_close(&msg);  // gives the buffer back
            return failed("frame");
        }
    }
    ++ctx_.stats.messages_sent;
    ctx_.stats.bytes_sent += bytes;
    return {};
}

Result<void> ZmqSocket::receive(ZmqMessage& m, bool routed, bool delimited) {
    auto part = [&](zmq_msg_t& msg) -> Result<bool> {
        if (zmq_msg_recv(&msg, socket_, 0) < 0) {
            return make_error(Errc::io_error, "{}: receiving: {}", name_, zmq_error_text());
        }
        return zmq_msg_more(&msg) != 0;
    };
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    std::size_t bytes = 0;
    auto more = Result<bool>(true);
    if (routed) {
        more = part(msg);
        if (!more) return std::unexpected(more.error());
        m.routing_id.assign(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    }
    if (delimited) {
        more = part(msg);
        if (!more) return std::unexpected(more.error());
    }
    more = part(msg);
    if (!more) {
        zmq_msg_close(&msg);
        return std::unexpected(more.error());
    }
    if (zmq_msg_size(&msg) != sizeof(Header)) {
        zmq_msg_close(&msg);
        return make_error(Errc::corrupted, "{}: a message of {} bytes where a header was expected", name_,
                          zmq_msg_size(&msg));
    }
    std::memcpy(&m.header, zmq_msg_data(&msg), sizeof(Header));
    bytes += sizeof(Header);
    zmq_msg_close(&msg);
    if (m.header.magic != Header::magic_value) {
        return make_error(Errc::corrupted, "{}: a message without the pipeline's magic number", name_);
    }
    if (*more) {
        auto last = part(m.frame);
        if (!last) return std::unexpected(last.error());
        m.has_frame = true;
        bytes += zmq_msg_size(&m.frame);
        if (*last) {  // extra parts: drained, and a protocol error
            while (last && *last) {
                zmq_msg_t extra;
                zmq_msg_init(&extra);
                last = part(extra);
                zmq_msg_close(&extra);
            }
            return make_error(Errc::corrupted, "{}: a message with more parts than header and frame", name_);
        }
    }
    ++ctx_.stats.messages_received;
    ctx_.stats.bytes_received += bytes;
    return {};
}

Result<bool> ZmqSocket::wait_readable(int timeout_ms) {
    zmq_pollitem_t item{socket_, 0, ZMQ_POLLIN, 0};
    const int n = zmq_poll(&item, 1, timeout_ms);
    if (n < 0) {
        if (errno == EINTR) return false;
        return make_error(Errc::io_error, "{}: zmq_poll: {}", name_, zmq_error_text());
    }
    return n > 0;
}

}  // namespace strata::video
