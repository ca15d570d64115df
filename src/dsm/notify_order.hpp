// SPDX-License-Identifier: MIT
// The order in which a subscriber hands a chunk's notifications on (docs/dsm.md,
// "Direct data path"): each released version once, in version order, starting
// after the version its subscription began with.
//
// With the direct data path, a release's payload comes from its writer, and
// consecutive releases by different writers travel on different (sender,
// receiver) pairs, which MPI does not order against each other. Every release
// after a subscription increments the chunk's version by one and is notified to
// every subscriber but its writer, so the versions a subscriber must hand on are
// contiguous: a notification ahead of a missing one waits for it, and the
// subscriber's own releases fill their place without being handed on.
//
// Pure logic, driven by the client's progress thread and by the protocol
// explorer (tests/unit/dsm_explorer_test.cpp). Thread safety: none.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace strata::dsm {

template <class Note>
class NotifyOrder {
public:
    /// The subscribe request is on its way: notifications are kept until its answer.
    /// `known`: the version of this client's copy of the chunk, if it has one (0: none).
    void subscribing(std::uint64_t known) {
        if (state_ == State::none) {
            state_ = State::subscribing;
        }
        own_latest_ = std::max(own_latest_, known);
    }
    /// The subscription is in force after version `from` (the home's answer): everything up to
    /// it is dropped. A copy of this client's newer than that is its own releases the home had
    /// not heard of yet (this client owned the chunk from `from` on): those are skipped too. A
    /// subscription already in force (subscribed again, e.g. to change update-on-write) goes on
    /// where it was.
    std::vector<Note> subscribed(std::uint64_t from) {
        if (state_ != State::subscribed) {
            state_ = State::subscribed;
            next_ = std::max(from, own_latest_) + 1;
            pending_.erase(pending_.begin(), pending_.lower_bound(next_));
        }
        return ready();
    }
    /// Unsubscribed or freed: nothing more is handed on until the next subscribe.
    void unsubscribed() {
        state_ = State::none;
        pending_.clear();
    }
    /// This client released `version` itself: no one notifies it of that one.
    std::vector<Note> own_release(std::uint64_t version) {
        own_latest_ = std::max(own_latest_, version);
        if (state_ != State::subscribed || version < next_) {
            return {};  // before the subscription is in force: `subscribed` skips it
        }
        pending_.emplace(version, std::nullopt);
        return ready();
    }
    /// A notification of `version`: the notifications now in order (maybe none).
    std::vector<Note> offer(std::uint64_t version, Note note) {
        if (state_ == State::none || (state_ == State::subscribed && version < next_)) {
            return {};  // not subscribed, or older than the subscription or already handed on
        }
        pending_.emplace(version, std::move(note));
        return ready();
    }
    /// Notifications waiting for an earlier version.
    [[nodiscard]] std::size_t waiting() const noexcept { return pending_.size(); }
    /// The next version to hand on (subscribed only).
    [[nodiscard]] std::uint64_t next() const noexcept { return next_; }

private:
    enum class State : std::uint8_t { none, subscribing, subscribed };

    std::vector<Note> ready() {
        std::vector<Note> out;
        if (state_ != State::subscribed) {
            return out;
        }
        for (auto it = pending_.begin(); it != pending_.end() && it->first == next_; it = pending_.erase(it)) {
            if (it->second) {
                out.push_back(std::move(*it->second));
            }
            ++next_;
        }
        return out;
    }

    State state_ = State::none;
    std::uint64_t next_ = 0;
    std::uint64_t own_latest_ = 0;
    std::map<std::uint64_t, std::optional<Note>> pending_;
};

}  // namespace strata::dsm
