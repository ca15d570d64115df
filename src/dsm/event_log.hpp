// SPDX-License-Identifier: MIT
// The DSM's event log (paper 003 measured one, about 240,000 events in a
// run): every message a rank's transport sends or receives, recorded in
// memory and written as text when the node ends.
//
// Recording is one atomic increment and one store into a slot allocated up
// front, so it costs the same from the progress thread and the user's; events
// past the capacity are counted as dropped, never allocated. The file is
// created O_EXCL | O_NOFOLLOW (an existing file or link is an error naming
// it), mode 0600.
//
// Thread safety: record() from any thread at once; write() once, after the
// recording threads stopped (the node's end).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "dsm/wire.hpp"
#include "strata/error.hpp"

namespace strata::dsm {

class EventLog {
public:
    /// Slots for `capacity` events (allocated now), times from now on.
    explicit EventLog(std::size_t capacity);

    /// One message of `peer` (rank), sent (`sent`) or received, with its header.
    void record(bool sent, int peer, const wire::Header& header) noexcept { record(sent, peer, header, now()); }
    /// The same, at `at` (a now() taken earlier): a send is recorded once its post succeeded,
    /// at the time the post began, so that no receipt on the same clock precedes it.
    void record(bool sent, int peer, const wire::Header& header, std::int64_t at) noexcept;
    /// Nanoseconds since the log started.
    [[nodiscard]] std::int64_t now() const noexcept;

    [[nodiscard]] std::uint64_t recorded() const noexcept;  ///< events kept
    [[nodiscard]] std::uint64_t dropped() const noexcept;   ///< events past the capacity

    /// Writes the events to `path`: a "#" line naming `who`, the counts and the
    /// log's start (steady_clock ns, CLOCK_MONOTONIC), a "#" line naming the
    /// columns, then one line per event in the order they were recorded.
    Result<void> write(const std::string& path, const std::string& who) const;

private:
    struct Event {
        std::int64_t ns = 0;  ///< since the log started
        wire::Header header;
        std::int32_t peer = -1;
        bool sent = false;
    };
    std::chrono::steady_clock::time_point start_;
    std::size_t capacity_;
    std::unique_ptr<Event[]> events_;
    std::atomic<std::uint64_t> next_{0};
};

/// The log's path for `rank`: every "%r" of `pattern` replaced by the rank.
std::string event_log_path(const std::string& pattern, int rank);

}  // namespace strata::dsm
