// SPDX-License-Identifier: MIT
// A producer's output when some of its consumers are on other nodes: what it
// writes goes to them through a Sender (MPI or the DSM), and to those on its
// own node through its port's slot (docs/workflow.md, "Placement").
#pragma once

#include <memory>

#include "ports.hpp"
#include "shm_ports.hpp"

namespace strata::workflow::detail {

/// Every consumer on another node: the task writes a private buffer, publish() stamps it and sends it.
class SenderOutput final : public OutputPort {
public:
    SenderOutput(std::size_t words, std::unique_ptr<Sender> sender);
    Result<std::span<std::uint64_t>> buffer(std::uint64_t it) override;
    Result<void> publish(std::uint64_t it) override;

private:
    std::vector<std::uint64_t> message_;  // data words + the stamp
    std::unique_ptr<Sender> sender_;
};

/// Consumers on this node read the port's slot in place; those on other nodes get the slot's words
/// (data + stamp) from the sender, after the commit, so that both proceed at once.
class PortAndSenderOutput final : public OutputPort {
public:
    PortAndSenderOutput(PortOutput local, std::unique_ptr<Sender> sender);
    Result<std::span<std::uint64_t>> buffer(std::uint64_t it) override;
    Result<void> publish(std::uint64_t it) override;

private:
    PortOutput local_;
    std::unique_ptr<Sender> sender_;
};

}  // namespace strata::workflow::detail
