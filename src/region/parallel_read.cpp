// SPDX-License-Identifier: MIT
#include "region/parallel_read.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "region/posix.hpp"

namespace strata::parallel_read {

int read_piece(int fd, int direct_fd, std::byte* data, std::size_t length, std::uint64_t offset, std::size_t& done) {
    done = 0;
    int from = direct_fd >= 0 ? direct_fd : fd;
    while (done < length) {
        const ssize_t n = ::pread(from, data + done, length - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && errno == EINVAL && from != fd) {
            from = fd;
            continue;
        }
        if (n < 0) {
            return errno;
        }
        if (n == 0) {
            return 0;  // end of file
        }
        done += static_cast<std::size_t>(n);
    }
    return 0;
}

Result<void> read(const char* op, int fd, std::byte* data, std::size_t length, std::uint64_t offset,
                  const std::filesystem::path& path, unsigned streams, std::size_t chunk) {
    const std::size_t span = posix::round_up_to_page(length);  // O_DIRECT reads whole pages
    chunk = std::max(posix::round_up_to_page(chunk), posix::page_size());
    const posix::UniqueFd direct = posix::reopen_direct(fd, O_RDONLY);
    const std::size_t pieces = (span + chunk - 1) / chunk;
    std::atomic<std::size_t> next{0};
    std::atomic<int> failure{0};
    std::atomic<std::size_t> failed_at{0};
    auto work = [&] {
        for (std::size_t i = next++; i < pieces && failure.load() == 0; i = next++) {
            const std::size_t at = i * chunk;
            std::size_t done = 0;  // short at the end of the file: the rest stays zero
            if (const int err = read_piece(fd, direct.get(), data + at, std::min(chunk, span - at), offset + at, done);
                err != 0) {
                int expected = 0;
                if (failure.compare_exchange_strong(expected, err)) {
                    failed_at = offset + at;
                }
            }
        }
    };
    std::vector<std::jthread> threads;
    const auto count = static_cast<unsigned>(std::min<std::size_t>(std::max(streams, 1U), pieces));
    try {
        for (unsigned t = 1; t < count; ++t) {
            threads.emplace_back(work);
        }
    } catch (const std::system_error&) {  // NOLINT(bugprone-empty-catch)
        // Fewer threads than asked: the ones running (and this one) read it all.
    }
    work();
    threads.clear();  // joins
    if (const int err = failure.load(); err != 0) {
        return make_sys_error(err, "{}: cannot read {} at offset {}", op, path.string(), failed_at.load());
    }
    return {};
}

}  // namespace strata::parallel_read
