// SPDX-License-Identifier: MIT
// Method dsm, across nodes (`strata run --across dsm`, docs/workflow.md,
// "Placement"): a producer's consumers on other nodes read its data through
// the strata DSM (include/strata/dsm.hpp) instead of MPI messages.
//
// Per producer one data chunk (the data words, then the stamp), homed on the
// DSM server of its first remote consumer's node; the producer writes it once
// per iteration (acquire_write, copy, release) and each remote consumer,
// subscribed with update_on_write, is notified with that version's bytes:
// iteration i is version i + 1, so a lost or repeated release is an error,
// never a silent result. Per remote consumer one acknowledgement chunk, homed
// on the producer's node: the consumer releases a write of it after reading
// iteration i (version i + 1), and the producer writes iteration i only once
// every consumer acknowledged i - slots (the same backpressure as a port of
// `slots` slots).
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ports.hpp"
#include "strata/dsm.hpp"

namespace strata::workflow::detail {

/// One task's notifications, sorted by chunk: the DSM gives those of every
/// subscribed chunk in one queue, and a task may consume several edges and
/// wait for acknowledgements of its own output.
class DsmMailbox {
public:
    /// `timeout`: the longest wait for one notification (the handoff timeout).
    DsmMailbox(dsm::Node& node, std::chrono::milliseconds timeout);
    [[nodiscard]] dsm::Node& node() noexcept { return node_; }
    /// Keeps every notification of `chunk` (with its bytes) for next(); of other chunks only the version counts.
    void keep(dsm::ChunkId chunk);
    /// The next notification of a kept chunk; `what` names the wait in a timeout's error.
    Result<dsm::Notification> next(dsm::ChunkId chunk, const std::string& what);
    /// Returns once a release of `chunk` reached `version` (at once if one did).
    Result<void> wait_version(dsm::ChunkId chunk, std::uint64_t version, const std::string& what);

private:
    Result<void> take_one(std::chrono::steady_clock::time_point deadline, const std::string& what);

    dsm::Node& node_;
    std::chrono::milliseconds timeout_;
    std::map<dsm::ChunkId, std::deque<dsm::Notification>> kept_;
    std::map<dsm::ChunkId, std::uint64_t> versions_;
};

/// The producer's side: writes the data chunk once every remote consumer acknowledged iteration it - window.
class DsmSender final : public Sender {
public:
    DsmSender(std::shared_ptr<DsmMailbox> mailbox, dsm::ChunkId data, std::vector<dsm::ChunkId> acks,
              std::vector<std::string> consumers, std::uint32_t window);
    Result<void> send(std::span<const std::uint64_t> message) override;

private:
    std::shared_ptr<DsmMailbox> mailbox_;
    dsm::ChunkId data_;
    std::vector<dsm::ChunkId> acks_;
    std::vector<std::string> consumers_;  // task names, for errors
    std::uint32_t window_;
    std::uint64_t sent_ = 0;
};

/// The consumer's side: the notified bytes of iteration it, read in place (copied only when misaligned),
/// then acknowledged by release().
class DsmInput final : public InputPort {
public:
    DsmInput(std::shared_ptr<DsmMailbox> mailbox, dsm::ChunkId data, dsm::ChunkId ack, std::size_t words,
             std::string producer);
    Result<std::span<const std::uint64_t>> receive(std::uint64_t it, std::int64_t& stamp_ns) override;
    Result<void> release(std::uint64_t it) override;

private:
    std::shared_ptr<DsmMailbox> mailbox_;
    dsm::ChunkId data_;
    dsm::ChunkId ack_;
    std::size_t words_;
    std::string producer_;
    dsm::Notification held_;              // the notification whose bytes receive() returned
    std::vector<std::uint64_t> aligned_;  // their copy when they are not 8-byte aligned
};

}  // namespace strata::workflow::detail
