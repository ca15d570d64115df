// SPDX-License-Identifier: MIT
// Fuzz target: strata-fsd's control requests (src/external/fsd/control.cpp,
// protocol.hpp). The input is a session of requests, one per line, answered
// in order by one daemon's registry, as the control thread answers the frames
// that arrive on its socket. The daemon's owner is this process, so `in`
// requests map this process's descriptors (a memfd made here holds a block)
// and probe its memory; the daemon has no FUSE session, so nothing is pushed
// into a page cache (cache=1 inputs fail to open the file, as without a mount).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "external/fsd/daemon.hpp"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
    // A block the owner holds: fd 3 in a fresh process, whatever fd it gets otherwise.
    const int fd = ::memfd_create("fuzz-block", MFD_CLOEXEC);
    if (fd < 0 || ::ftruncate(fd, 3 * 4096) != 0) {
        std::perror("fuzz_fsd_control: memfd");
        std::abort();
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace strata::external::fsd;
    Daemon daemon;
    daemon.owner = ::getpid();
    daemon.dir = "/nonexistent/strata-fsd-fuzz";
    daemon.mount_point = daemon.dir + "/mnt";
    daemon.registry.set_owner(daemon.owner);
    std::string_view rest(reinterpret_cast<const char*>(data), size);
    while (!rest.empty()) {
        const auto newline = rest.find('\n');
        const std::string request(rest.substr(0, newline));
        rest = newline == std::string_view::npos ? std::string_view{} : rest.substr(newline + 1);
        bool quit = false;
        const std::string reply = handle_request(daemon, request, quit);
        if (!(reply == "ok" || reply.starts_with("ok ") || reply.starts_with("err "))) {
            std::fprintf(stderr, "fuzz_fsd_control: reply '%s' is neither ok nor err\n", reply.c_str());
            std::abort();
        }
        if (quit) {
            break;
        }
    }
    forget_entries(daemon, daemon.registry.all());
    return 0;
}
