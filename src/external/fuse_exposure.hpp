// SPDX-License-Identifier: MIT
// FuseExposure: data blocks as files under a private strata-fsd mount (paper 000 §4–6).
//
// The daemon strata-fsd (src/external/fsd/, docs/external-fs.md) is started on
// demand by the first new_task() (or mount_point()), serves <mount>/db/<id>
// to the process tree of the task each file is registered for, and stops
// (unmounting lazily) when the FuseExposure is destroyed or this process
// dies. If the daemon dies, running tasks' calls fail with Errc::peer_dead,
// the mount is removed at once, and the next new_task() starts a new daemon.
//
// Data channels (FuseOptions::channel): a block with a descriptor (memfd,
// shared region) is mapped by the daemon from /proc/<us>/fd/<n> ("shared");
// a block in private memory is copied with process_vm_readv ("vm"). With
// page_cache (the fast path) the bytes are pushed into the kernel's page
// cache at registration, so the program's reads never reach the daemon.
//
// Example:
//   strata::external::FuseExposure fuse;
//   auto files = fuse.new_task();                      // starts strata-fsd
//   auto in = (*files)->add_input({.id = 7, .data = p, .size = n});
//   auto out = (*files)->add_output(8);
//   ... spawn the program with *in and *out; (*files)->started(pid); wait ...
//   auto bytes = (*files)->take_output(0);             // an owned memfd
//
// Thread safety: FuseExposure may be used from several threads (new_task is
// serialised); each TaskFiles belongs to one thread at a time. Move-only.
// Errors: strata::Result; a failed call registers nothing.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "external/exposure.hpp"

namespace strata::external {

struct FuseOptions {
    enum class Channel {
        automatic,  ///< shared for blocks with a descriptor, vm for the others
        shared,     ///< only blocks with a descriptor (others fail with invalid_argument)
        vm,         ///< process_vm_readv for every block, even those with a descriptor
    };
    Channel channel = Channel::automatic;
    bool page_cache = true;  ///< the fast path: fill the page cache at registration
    std::string daemon;      ///< strata-fsd to run; empty: $STRATA_FSD, beside the executable, PATH
};

class FuseExposure final : public Exposure {
public:
    explicit FuseExposure(FuseOptions options = {});
    ~FuseExposure() override;
    FuseExposure(FuseExposure&&) noexcept;
    FuseExposure& operator=(FuseExposure&&) noexcept;
    FuseExposure(const FuseExposure&) = delete;
    FuseExposure& operator=(const FuseExposure&) = delete;

    [[nodiscard]] ExposureKind kind() const override { return ExposureKind::fuse; }
    Result<std::unique_ptr<TaskFiles>> new_task() override;

    /// The mount point (<private dir>/mnt), starting the daemon if needed.
    Result<std::string> mount_point();
    /// The running daemon's pid, or 0.
    [[nodiscard]] pid_t daemon_pid() const;

    /// Stops the daemon now and unmounts, even while TaskFiles of it still
    /// exist (their calls then fail with Errc::peer_dead); later new_task()
    /// and mount_point() fail with Errc::busy. Idempotent. The runtime calls
    /// it when an OCR run ends, also after SIGINT/SIGTERM.
    void stop() noexcept;

    struct State;

private:
    std::shared_ptr<State> state_;
};

}  // namespace strata::external
