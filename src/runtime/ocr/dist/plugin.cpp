// SPDX-License-Identifier: MIT
// libstrata-ocr-dist.so: the MPI side of the distributed OCR runtime (wire.hpp).
// The only part of the OCR runtime that links MPI.
#include <atomic>
#include <chrono>
#include <thread>

#include <mpi.h>

#include "codec.hpp"
#include "core/log.hpp"
#include "net/mpi_channel.hpp"
#include "strata/launcher.h"
#include "wire.hpp"

namespace strata::ocr::dist {
namespace {

// Byte ranges use every tag but the channel's (0): transfer n goes on 1 + n mod (limit - 1).
int transfer_tag(std::uint64_t transfer, int limit) {
    return 1 + static_cast<int>(transfer % static_cast<std::uint64_t>(limit - 1));
}

class MpiWire final : public Wire {
public:
    MpiWire(std::unique_ptr<net::MpiChannel> channel, bool initialized_here)
        : channel_(std::move(channel)), initialized_here_(initialized_here) {}

    [[nodiscard]] int rank() const override { return channel_->rank(); }
    [[nodiscard]] int size() const override { return channel_->size(); }
    Result<void> post(int dest, std::shared_ptr<net::Bytes> message) override {
        return channel_->post_buffer(dest, std::move(message));
    }
    Result<bool> poll(int& source, std::shared_ptr<net::Bytes>& message) override {
        net::Received in;
        auto got = channel_->poll(in);
        if (got && *got) {
            source = in.source;
            message = std::move(in.buffer);
        }
        return got;
    }
    Result<void> send_bytes(int dest, std::uint64_t transfer, std::span<const std::byte> bytes,
                            std::function<void(bool)> done) override {
        return channel_->send_bytes(dest, transfer_tag(transfer, channel_->tag_limit()), bytes, std::move(done));
    }
    Result<void> receive_bytes(int source, std::uint64_t transfer, std::span<std::byte> bytes,
                               std::shared_ptr<void> keep, std::function<void(bool)> done) override {
        return channel_->receive_bytes(source, transfer_tag(transfer, channel_->tag_limit()), bytes, std::move(keep),
                                       std::move(done));
    }
    bool check_alive(int rank, std::chrono::milliseconds heartbeat, std::chrono::milliseconds timeout) override {
        return channel_->check_alive(rank, heartbeat, timeout);
    }
    void heard(int rank) override { channel_->heard(rank); }
    [[nodiscard]] std::chrono::steady_clock::time_point last_heard(int rank) const override {
        return channel_->last_heard(rank);
    }
    void mark_dead(int rank) override { channel_->mark_dead(rank); }
    [[nodiscard]] bool is_dead(int rank) const override { return channel_->is_dead(rank); }
    void flush(std::chrono::milliseconds limit) override { channel_->flush(limit); }

    bool finish(bool finalize, std::chrono::milliseconds limit) override {
        if (!channel_) {
            return true;  // finished before
        }
        if (!finalize) {
            // The channel's requests stay with MPI, which the process exit releases.
            const int rank = channel_->rank();
            (void)channel_.release();
            if (initialized_here_) {
                // Else Hydra may take this rank's exit for a failure (strata/launcher.h).
                if (strata_launcher_finalize(2000) < 0) {
                    detail::log().warn(
                        "strata-ocr: rank {}: the launcher did not acknowledge this rank's end on PMI_FD; "
                        "mpiexec may report it as failed",
                        rank);
                }
            }
            return true;
        }
        channel_.reset();
        if (!initialized_here_) {
            return true;  // the program initialized MPI: it finalizes it
        }
        std::atomic<bool> done{false};
        // A finalize that does not return within the limit is left behind.
        std::thread finalizer([&] {
            MPI_Finalize();
            done = true;
        });
        const auto until = std::chrono::steady_clock::now() + limit;
        while (!done && std::chrono::steady_clock::now() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        if (!done) {
            finalizer.detach();
            return false;
        }
        finalizer.join();
        return true;
    }

private:
    std::unique_ptr<net::MpiChannel> channel_;
    bool initialized_here_;
};

}  // namespace
}  // namespace strata::ocr::dist

// Looked up by name with dlsym (wire.hpp) and called from C++ only: the C
// linkage is for an unmangled name, not for C callers.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wreturn-type-c-linkage"
#endif
extern "C" __attribute__((visibility("default"))) strata::Result<std::unique_ptr<strata::ocr::dist::Wire>>
strata_ocr_dist_open_wire(const strata::ocr::dist::WireOptions& options) {
    using namespace strata;
    int initialized = 0;
    MPI_Initialized(&initialized);
    bool here = false;
    if (initialized == 0) {
        // Hydra's SIGUSR1 says a rank of the job died; MPICH's own handler for
        // it would end this rank before it can clean up and name the dead one,
        // so the runtime's handler (installed after MPI_Init) replaces it.
        int provided = 0;
        if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided); rc != MPI_SUCCESS) {
            return make_error(Errc::io_error, "strata-ocr: MPI_Init_thread: {}", net::mpi_error_text(rc));
        }
        here = true;
    }
    int level = 0;
    MPI_Query_thread(&level);
    if (level != MPI_THREAD_MULTIPLE) {
        return make_error(Errc::unsupported,
                          "strata-ocr: MPI provides thread level {}; the distributed runtime needs "
                          "MPI_THREAD_MULTIPLE ({})",
                          level, static_cast<int>(MPI_THREAD_MULTIPLE));
    }
    auto channel = net::MpiChannel::create(
        MPI_COMM_WORLD, {.tag = 0, .kinds = ocr::dist::msg_kinds, .who = "strata-ocr", .ping = options.ping});
    if (!channel) {
        return std::unexpected(channel.error());
    }
    (*channel)->set_receive_timeout(options.receive_timeout);
    return std::unique_ptr<ocr::dist::Wire>(new ocr::dist::MpiWire(std::move(*channel), here));
}
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
