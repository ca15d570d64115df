// SPDX-License-Identifier: MIT
// ZeroMQ for the pipeline: sockets set up the same way everywhere (bounded
// linger, ZMTP heartbeats, high-water marks, timeouts), multipart messages
// of a Header and optional frame bytes sent without a copy, and counters.
//
// A message is one ZeroMQ message of 1–3 parts: [routing id] [empty, to REQ]
// Header [frame]; it counts as one message in the stats, its parts' bytes add up.
//
// Thread safety: one thread per rank; the buffer pool is safe from ZeroMQ's I/O threads.
#pragma once

#include <zmq.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common.hpp"

namespace strata::video {

/// Frame buffers ZeroMQ sends from without a copy; ZeroMQ gives them back when sent
/// (possibly after the socket closed: a message in flight keeps its pool alive).
class BufferPool : public std::enable_shared_from_this<BufferPool> {
public:
    explicit BufferPool(std::size_t bytes) : bytes_(bytes) {}
    std::vector<std::uint8_t>* take();
    void give(std::vector<std::uint8_t>* buffer);
    [[nodiscard]] std::size_t bytes() const { return bytes_; }

private:
    std::size_t bytes_;
    std::mutex mu_;
    std::vector<std::unique_ptr<std::vector<std::uint8_t>>> all_;
    std::vector<std::vector<std::uint8_t>*> free_;
};

/// A received message: its parts, kept as ZeroMQ messages (no copy).
struct ZmqMessage {
    std::string routing_id;  ///< ROUTER only
    Header header;
    zmq_msg_t frame{};
    bool has_frame = false;
    ZmqMessage() { zmq_msg_init(&frame); }
    ~ZmqMessage() { zmq_msg_close(&frame); }
    ZmqMessage(const ZmqMessage&) = delete;
    ZmqMessage& operator=(const ZmqMessage&) = delete;
    [[nodiscard]] std::span<const std::uint8_t> bytes() {
        return {static_cast<const std::uint8_t*>(zmq_msg_data(&frame)), zmq_msg_size(&frame)};
    }
};

class ZmqSocket {
public:
    ZmqSocket(Context& ctx, void* zmq_context, int type, const std::string& name);
    ~ZmqSocket();
    ZmqSocket(const ZmqSocket&) = delete;
    ZmqSocket& operator=(const ZmqSocket&) = delete;

    Result<void> bind(const std::string& endpoint);
    Result<void> connect(const std::string& endpoint);
    void set(int option, int value);
    void set(int option, const std::string& value);
    [[nodiscard]] void* raw() const { return socket_; }
    [[nodiscard]] const std::string& name() const { return name_; }

    /// Sends [routing id] [empty] header [frame]; a frame from the pool is given back once sent.
    /// Waits at most --timeout-ms for room (high-water mark) unless `dont_wait`.
    Result<void> send(const Header& h, const std::string& routing_id = {}, bool empty_delimiter = false,
                      std::vector<std::uint8_t>* pooled = nullptr, const std::shared_ptr<BufferPool>& pool = {},
                      bool dont_wait = false);
    /// Receives one message (the caller polled); `routed` for ROUTER sockets, `delimited` when the peer is REQ.
    Result<void> receive(ZmqMessage& m, bool routed, bool delimited);
    /// Waits up to `timeout_ms` for a message; false on timeout.
    Result<bool> wait_readable(int timeout_ms);

private:
    Context& ctx_;
    void* socket_ = nullptr;
    std::string name_;
    std::string endpoint_;
};

/// "what" of a ZeroMQ error: zmq_strerror(errno).
std::string zmq_error_text();

}  // namespace strata::video
