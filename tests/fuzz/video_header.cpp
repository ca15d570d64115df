// SPDX-License-Identifier: MIT
// Fuzz target: the video pipeline's control headers (apps/video/common.hpp,
// header.cpp). The input is a stream of messages as a peer sends them: a
// Header's bytes, then as many frame bytes as the header announces when the
// input has them. Each header is checked as the MPI and ZeroMQ links check
// it; a job's frame then goes through the worker's path, the edge filter
// into a buffer of the stream's frame size, the size of the first job (the
// ZeroMQ worker's buffer pool).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common.hpp"
#include "decoder.hpp"
#include "input.hpp"
#include "kernel.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace strata::video;
    strata::fuzz::Input in(data, size);
    std::vector<std::uint8_t> pool;  // sized by the first job, as BufferPool is
    while (in.remaining() >= sizeof(Header)) {
        Header h;
        const auto raw = in.take<Header>();
        std::memcpy(static_cast<void*>(&h), &raw, sizeof h);
        if (!check_header(h, "fuzz")) {
            continue;
        }
        (void)h.get_text();
        if (h.kind != Kind::job) {
            continue;
        }
        const StreamInfo info{h.width, h.height, 0, 0};
        const std::size_t frame = info.frame_bytes();
        if (frame > in.remaining() || frame > (std::size_t{1} << 20)) {
            break;
        }
        std::vector<std::uint8_t> bytes(frame);
        for (auto& b : bytes) {
            b = in.byte();
        }
        if (!check_job(h, bytes.size(), pool.size(), "fuzz")) {
            continue;
        }
        if (pool.empty()) {
            pool.resize(frame);
        }
        edge_filter(bytes, pool, info.width, info.height);
    }
    return 0;
}
