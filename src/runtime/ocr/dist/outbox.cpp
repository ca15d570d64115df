// SPDX-License-Identifier: MIT
// Sending: the outboxes in which an EDT's messages wait to leave together
// (cluster.hpp, "outboxes"), and the bundles they leave in.
#include <cstring>
#include "api.hpp"
#include "cluster.hpp"

#include "core/log.hpp"

namespace strata::ocr::dist {

namespace {

// The SendBatch depth of this thread: its messages wait while it is above 0.
thread_local int batch_depth = 0;

// Control messages (ping, hello, shutdown, bye, dead, cleaned) never wait: the
// runs' ends and the liveness checks depend on them.
bool may_wait(const net::Bytes& message) {
    return batch_depth > 0 && message.size() <= Cluster::kBundledMax && Reader(message).kind() >= Msg::create_edt &&
           Reader(message).kind() < Msg::bundle;
}

}  // namespace

SendBatch::SendBatch() noexcept : cluster_(cluster()) {
    if (cluster_ != nullptr) {
        ++batch_depth;
    }
}

SendBatch::~SendBatch() {
    if (cluster_ != nullptr && --batch_depth == 0) {
        cluster_->flush_sends();
    }
}

void flush_sends() {
    if (Cluster* c = cluster()) {
        c->flush_sends();
    }
}

void Cluster::send(int dest, Writer& message) {
    auto buffer = message.take();
    if (dest == rank_) {
        // Its object was not created yet: it waits; if it was meanwhile, handle it now.
        if (!handle(rank_, buffer) && !defer(target_of(*buffer), rank_, buffer)) {
            (void)handle(rank_, buffer);
        }
        return;
    }
    if (wire_->is_dead(dest)) {
        return;  // the run ends: the dead peer was reported
    }
    messages_.fetch_add(1, std::memory_order_relaxed);
    Outbox& box = outboxes_[static_cast<std::size_t>(dest)];
    Result<void> posted;
    {
        std::lock_guard lock(box.mutex);
        if (may_wait(*buffer) && box.bytes + buffer->size() <= kOutboxMax) {
            if (box.queued.empty()) {
                box.since = std::chrono::steady_clock::now();
                queued_.fetch_add(1, std::memory_order_relaxed);
            }
            box.bytes += buffer->size();
            box.queued.push_back(std::move(buffer));
            return;
        }
        posted = post_locked(dest, box, std::move(buffer));
    }
    if (!posted) {
        peer_died(dest, posted.error().message);
    }
}

Result<void> Cluster::post_locked(int dest, Outbox& box, std::shared_ptr<net::Bytes> last) {
    if (last && last->size() <= kBundledMax && !box.queued.empty()) {
        box.bytes += last->size();
        box.queued.push_back(std::move(last));
    }
    Result<void> posted;
    if (box.queued.size() == 1) {
        posted = post(dest, std::move(box.queued.front()));
    } else if (box.queued.size() > 1) {
        Writer bundle(Msg::bundle, 1 + box.bytes + box.queued.size() * sizeof(std::uint64_t));
        for (const auto& message : box.queued) {
            bundle.bytes(*message);
        }
        posted = post(dest, bundle.take());
    }
    if (!box.queued.empty()) {
        box.queued.clear();
        box.bytes = 0;
        queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (posted && last) {
        posted = post(dest, std::move(last));
    }
    return posted;
}

Result<void> Cluster::post(int dest, std::shared_ptr<net::Bytes> message) {
    last_sent_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    posts_.fetch_add(1, std::memory_order_relaxed);
    return wire_->post(dest, std::move(message));
}

void Cluster::flush_sends() {
    flush_older_than(std::chrono::microseconds(-1));
}

void Cluster::flush_older_than(std::chrono::microseconds hold) {
    if (queued_.load(std::memory_order_relaxed) == 0) {
        return;
    }
    const auto now = std::chrono::steady_clock::now();
    for (int dest = 0; dest < size_; ++dest) {
        Outbox& box = outboxes_[static_cast<std::size_t>(dest)];
        Result<void> posted;
        {
            std::lock_guard lock(box.mutex);
            if (box.queued.empty() || now - box.since <= hold) {
                continue;
            }
            if (wire_->is_dead(dest)) {
                box.queued.clear();
                box.bytes = 0;
                queued_.fetch_sub(1, std::memory_order_relaxed);
                continue;
            }
            posted = post_locked(dest, box, nullptr);
        }
        if (!posted) {
            peer_died(dest, posted.error().message);
        }
    }
}

void Cluster::unbundle(int source, const net::Bytes& bundle) {
    Reader in(bundle);
    in.skip_kind();
    while (!in.rest().empty()) {
        const auto bytes = in.bytes();
        if (!in.ok() || bytes.empty() || Reader(bytes).kind() >= Msg::bundle) {
            strata::detail::log().warn("strata-ocr: rank {}: a malformed bundle from rank {}", rank_, source);
            return;
        }
        auto message = std::make_shared<net::Bytes>(bytes.size());
        std::memcpy(message->data(), bytes.data(), bytes.size());
        dispatch(source, message);
    }
}

}  // namespace strata::ocr::dist
