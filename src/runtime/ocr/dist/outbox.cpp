// SPDX-License-Identifier: MIT
// Sending: the outbox in which an EDT's messages to one rank wait to leave
// together (cluster.hpp, "the outbox"), and the bundles they leave in.
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
    const Msg kind = Reader(message).kind();
    return batch_depth > 0 && message.size() <= Cluster::kBundledMax && kind >= Msg::create_edt && kind < Msg::bundle;
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
    Failed failed;
    {
        std::lock_guard lock(send_mutex_);
        const bool joins = !outbox_.queued.empty() && outbox_.dest == dest && buffer->size() <= kBundledMax &&
                           outbox_.bytes + buffer->size() <= kOutboxMax;
        if (!joins) {
            post_queued_locked(failed);  // what waited leaves first: posts keep the order of sends
        }
        const bool waits = may_wait(*buffer);
        if (!waits && !joins) {
            post_locked(dest, std::move(buffer), failed);
        } else {
            if (outbox_.queued.empty()) {
                outbox_.dest = dest;
                outbox_.since = std::chrono::steady_clock::now();
                queued_.store(true, std::memory_order_relaxed);
            }
            outbox_.bytes += buffer->size();
            outbox_.queued.push_back(std::move(buffer));
            if (!waits) {
                post_queued_locked(failed);  // it cannot wait: it leaves with what did, in one message
            }
        }
    }
    if (failed.dest >= 0) {
        peer_died(failed.dest, failed.why);
    }
}

void Cluster::post_queued_locked(Failed& failed) {
    if (outbox_.queued.empty()) {
        return;
    }
    std::shared_ptr<net::Bytes> message;
    if (outbox_.queued.size() == 1) {
        message = std::move(outbox_.queued.front());
    } else {
        Writer bundle(Msg::bundle, 1 + outbox_.bytes + outbox_.queued.size() * sizeof(std::uint64_t));
        for (const auto& queued : outbox_.queued) {
            bundle.bytes(*queued);
        }
        message = bundle.take();
    }
    outbox_.queued.clear();
    outbox_.bytes = 0;
    queued_.store(false, std::memory_order_relaxed);
    post_locked(outbox_.dest, std::move(message), failed);
}

void Cluster::post_locked(int dest, std::shared_ptr<net::Bytes> message, Failed& failed) {
    if (wire_->is_dead(dest)) {
        return;
    }
    last_sent_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    posts_.fetch_add(1, std::memory_order_relaxed);
    if (auto posted = wire_->post(dest, std::move(message)); !posted && failed.dest < 0) {
        failed = Failed{dest, posted.error().message};
    }
}

void Cluster::flush_sends() {
    flush_older_than(std::chrono::microseconds(-1));
}

void Cluster::flush_older_than(std::chrono::microseconds hold) {
    if (!queued_.load(std::memory_order_relaxed)) {
        return;
    }
    Failed failed;
    {
        std::lock_guard lock(send_mutex_);
        if (outbox_.queued.empty() || std::chrono::steady_clock::now() - outbox_.since <= hold) {
            return;
        }
        post_queued_locked(failed);
    }
    if (failed.dest >= 0) {
        peer_died(failed.dest, failed.why);
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
