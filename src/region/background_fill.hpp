// SPDX-License-Identifier: MIT
// Reading a range of a file into anonymous memory behind the program, so that
// it can use the first bytes while the last are still on their way. The range
// is registered with a userfaultfd for missing pages (and for asynchronous
// write-protection, written_pages.hpp, on the same descriptor: a mapping has
// one). Reader threads read 2 MiB chunks with O_DIRECT into buffers of their
// own — never into the range itself, where the kernel's own access would wait
// for the missing pages — and place each chunk with UFFDIO_COPY, which maps its
// pages write-protected (only the program's later stores count as written) and
// wakes every thread waiting on them. A thread touching a page not yet read
// waits in the kernel for that chunk only; a handler thread moves the chunk to
// the front of the queue. Private to libstrata.
//
// Errors: a failed read (or a file that became shorter than it was when the
// fill started) stops the fill; the chunks not in place are mapped so that an
// access raises SIGBUS (as a file mapping whose read fails does), and status()
// returns the error, which Region's sync, write_changed and close return in
// turn, writing nothing back. fork() waits for running fills to end (an
// atfork handler), so a child gets a copy of every byte; the child's copy is
// not registered with the userfaultfd, so it never waits on it.
#pragma once

#include <sys/types.h>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "region/posix.hpp"
#include "strata/error.hpp"

namespace strata::background_fill {

/// One running (or finished) fill. Thread-safe.
class Fill {
public:
    /// Starts reading [offset, offset+length) of the file open as `fd` into
    /// `data` (registered on `uffd` by written_pages::track(..., missing=true),
    /// length rounded up to pages). Bytes past the end of the file read zero. `op` and `path` name
    /// errors; an error here (no thread could be started) leaves nothing
    /// running.
    static Result<std::unique_ptr<Fill>> start(const char* op, int uffd, int fd, std::byte* data, std::size_t length,
                                               std::uint64_t offset, const std::filesystem::path& path,
                                               unsigned streams = 8, std::size_t chunk = std::size_t{2} << 20);

    Fill(const Fill&) = delete;
    Fill& operator=(const Fill&) = delete;
    /// Stops: chunks being read are finished, no new one is started, and the
    /// handler thread ends. The caller closes the userfaultfd afterwards,
    /// which releases any thread still waiting (its page reads zero).
    ~Fill();

    /// Blocks until every chunk is in place or the fill failed; the error if
    /// it failed, named after `op` (the caller's operation) when given, else
    /// after the operation that created the region.
    Result<void> wait(const char* op = nullptr);
    /// True once the fill ended (every chunk in place, or failed); does not block.
    [[nodiscard]] bool complete() const noexcept { return finished_flag_.load(std::memory_order_acquire); }
    /// The error of a failed fill, its message starting with `op`; success
    /// while it runs or after it succeeded.
    [[nodiscard]] Result<void> status(const char* op) const;

    /// fork(): held from the prepare handler (after wait()) to the parent's and
    /// the child's handlers, so a child never inherits this fill's mutex
    /// locked by a thread that does not exist in it.
    void lock_for_fork() const { mutex_.lock(); }
    void unlock_after_fork() const { mutex_.unlock(); }

private:
    enum : std::uint8_t { free_chunk, claimed, placed, failed };

    Fill(const char* op, int uffd, int fd, std::byte* data, std::size_t length, std::uint64_t offset,
         const std::filesystem::path& path, std::size_t chunk);
    void read_chunks();
    bool claim(std::size_t& index);
    int read_chunk(std::size_t index, std::byte* buffer);
    int place(std::size_t at, std::byte* buffer, std::size_t length);
    void fail(int err, std::uint64_t file_offset, bool shrank);
    void finish();
    void serve();
    void resolve(std::uintptr_t address);
    void stop() noexcept;

    const char* op_;
    int uffd_;
    int fd_;
    posix::UniqueFd direct_;
    posix::UniqueFd wake_;  // eventfd: ends the handler thread
    std::byte* data_;
    std::size_t length_;
    std::size_t span_;
    std::size_t chunk_;
    std::size_t pieces_;
    std::uint64_t offset_;
    std::uint64_t file_end_;  // the file's size when the fill started
    std::filesystem::path path_;
    pid_t owner_;

    std::unique_ptr<std::atomic<std::uint8_t>[]> state_;
    std::atomic<std::size_t> cursor_{0};
    std::atomic<bool> urgent_waiting_{false};
    std::atomic<bool> stopping_{false};
    std::atomic<unsigned> running_{0};
    std::atomic<bool> finished_flag_{false};

    mutable std::mutex mutex_;
    std::condition_variable finished_;
    std::deque<std::size_t> urgent_;
    bool finished_state_ = false;
    int error_ = 0;
    bool shrank_ = false;
    std::uint64_t failed_at_ = 0;

    std::vector<std::thread> readers_;
    std::thread handler_;
};

}  // namespace strata::background_fill
