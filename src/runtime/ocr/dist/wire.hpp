// SPDX-License-Identifier: MIT
// The boundary between libstrata-ocr and libstrata-ocr-dist.so, the plugin
// that alone links MPI (docs/runtime.md, "Distributed OCR"). libstrata-ocr
// dlopens the plugin only when Hydra launched more than one rank, so a
// one-rank run never loads libmpi.
//
// The plugin implements Wire over the MPI channel of src/net on a
// communicator duplicated from MPI_COMM_WORLD (the application's tags and
// communicators never see the runtime's messages). Nothing here blocks:
// poll() returns what arrived; byte ranges complete in a later poll().
//
// Thread safety: every call may run from any thread (MPI_THREAD_MULTIPLE).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "net/bytes.hpp"
#include "strata/error.hpp"

namespace strata::ocr::dist {

class Wire {
public:
    virtual ~Wire() = default;
    [[nodiscard]] virtual int rank() const = 0;
    [[nodiscard]] virtual int size() const = 0;
    /// Sends a message (its first byte is its kind) without copying it.
    virtual Result<void> post(int dest, std::shared_ptr<net::Bytes> message) = 0;
    /// A message that arrived, if any (false: none); also completes byte ranges.
    virtual Result<bool> poll(int& source, std::shared_ptr<net::Bytes>& message) = 0;
    /// Byte ranges of data blocks, moved from and into the blocks' own memory:
    /// `transfer` pairs a send with its receive (see net::MpiChannel).
    virtual Result<void> send_bytes(int dest, std::uint64_t transfer, std::span<const std::byte> bytes,
                                    std::function<void(bool)> done) = 0;
    virtual Result<void> receive_bytes(int source, std::uint64_t transfer, std::span<std::byte> bytes,
                                       std::shared_ptr<void> keep, std::function<void(bool)> done) = 0;
    /// Liveness (net::MpiChannel::check_alive): pings with `ping` when silent for `heartbeat`.
    virtual bool check_alive(int rank, std::chrono::milliseconds heartbeat, std::chrono::milliseconds timeout) = 0;
    virtual void heard(int rank) = 0;
    [[nodiscard]] virtual std::chrono::steady_clock::time_point last_heard(int rank) const = 0;
    virtual void mark_dead(int rank) = 0;
    [[nodiscard]] virtual bool is_dead(int rank) const = 0;
    /// Waits up to `limit` for the sends in flight to peers still alive.
    virtual void flush(std::chrono::milliseconds limit) = 0;
    /// Ends MPI. `finalize`: every peer said bye, call MPI_Finalize, bounded by
    /// `limit` (false when it did not return: the caller ends the process
    /// without returning). Else nothing: after a death MPI_Finalize would wait
    /// for the dead rank, and across hosts MPICH 4.0.2's ch4:ucx finalize can
    /// deadlock (each rank disconnects its endpoints, then waits in a PMI
    /// barrier; fixed upstream by MPICH PR #6596): when the runtime initialized
    /// MPI, it tells the launcher that the rank ends on purpose
    /// (strata/launcher.h), after which no MPI call may be made.
    virtual bool finish(bool finalize, std::chrono::milliseconds limit) = 0;
};

/// What the plugin's entry point gets.
struct WireOptions {
    std::vector<std::byte> ping;  ///< the message liveness pings send
    std::chrono::milliseconds receive_timeout{5000};
};

/// The plugin's entry point (extern "C", resolved with dlsym): initializes MPI
/// (MPI_THREAD_MULTIPLE, unless the program did) and opens the wire.
using OpenWire = Result<std::unique_ptr<Wire>> (*)(const WireOptions& options);
inline constexpr const char* open_wire_symbol = "strata_ocr_dist_open_wire";
inline constexpr const char* plugin_name = "libstrata-ocr-dist.so";

}  // namespace strata::ocr::dist
