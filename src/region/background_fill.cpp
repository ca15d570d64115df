// SPDX-License-Identifier: MIT
#include "region/background_fill.hpp"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include "core/log.hpp"
#include "region/parallel_read.hpp"

namespace strata::background_fill {

namespace {

// fork() waits for every running fill (see the header): the registry of
// fills, held locked from the prepare handler to the parent's and child's.
pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
std::vector<Fill*>& registry() {
    static auto* fills = new std::vector<Fill*>;  // never destroyed: used by atfork handlers until exit
    return *fills;
}

// After the wait, each fill's mutex is taken too (the usual atfork pattern):
// another thread of the parent could hold it at the moment of the fork (in
// status(), from a sync), and the child would then inherit it locked forever.
void before_fork() {
    pthread_mutex_lock(&registry_lock);
    for (Fill* fill : registry()) {
        (void)fill->wait();
        fill->lock_for_fork();
    }
}

void after_fork() {
    for (Fill* fill : registry()) {
        fill->unlock_after_fork();
    }
    pthread_mutex_unlock(&registry_lock);
}

void enrol(Fill* fill) {
    static const int installed = pthread_atfork(before_fork, after_fork, after_fork);
    (void)installed;
    pthread_mutex_lock(&registry_lock);
    registry().push_back(fill);
    pthread_mutex_unlock(&registry_lock);
}

void leave(Fill* fill) {
    pthread_mutex_lock(&registry_lock);
    std::erase(registry(), fill);
    pthread_mutex_unlock(&registry_lock);
}

/// Page-aligned memory for one reader's O_DIRECT reads; empty if none.
posix::UniqueMapping reader_buffer(std::size_t bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        return {};
    }
    (void)::madvise(p, bytes, MADV_HUGEPAGE);  // best effort
    return {p, bytes};
}

std::uint64_t file_size(int fd) {
    const off_t end = ::lseek(fd, 0, SEEK_END);  // a block device's size too
    return end < 0 ? 0 : static_cast<std::uint64_t>(end);
}

}  // namespace

Fill::Fill(const char* op, int uffd, int fd, std::byte* data, std::size_t length, std::uint64_t offset,
           const std::filesystem::path& path, std::size_t chunk)
    : op_(op),
      uffd_(uffd),
      fd_(fd),
      direct_(posix::reopen_direct(fd, O_RDONLY)),
      wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      data_(data),
      length_(length),
      span_(posix::round_up_to_page(length)),
      chunk_(std::max(posix::round_up_to_page(chunk), posix::page_size())),
      pieces_((span_ + chunk_ - 1) / chunk_),
      offset_(offset),
      file_end_(file_size(fd)),
      path_(path),
      owner_(::getpid()),
      state_(std::make_unique<std::atomic<std::uint8_t>[]>(pieces_)) {}

Result<std::unique_ptr<Fill>> Fill::start(const char* op, int uffd, int fd, std::byte* data, std::size_t length,
                                          std::uint64_t offset, const std::filesystem::path& path, unsigned streams,
                                          std::size_t chunk) {
    std::unique_ptr<Fill> fill(new Fill(op, uffd, fd, data, length, offset, path, chunk));
    if (fill->wake_.get() < 0) {
        return make_sys_error(errno, "{}: cannot create an eventfd for the fill of {}", op, path.string());
    }
    const auto count = static_cast<unsigned>(std::min<std::size_t>(std::max(streams, 1U), fill->pieces_));
    try {
        fill->handler_ = std::thread([raw = fill.get()] { raw->serve(); });
        fill->running_ = count;
        for (unsigned t = 0; t < count; ++t) {
            fill->readers_.emplace_back([raw = fill.get()] { raw->read_chunks(); });
        }
    } catch (const std::system_error& e) {
        // Readers not started will never finish: count them out.
        const auto started = static_cast<unsigned>(fill->readers_.size());
        if (started == 0) {
            fill->running_ = 0;
            fill->stop();
            return make_error(Errc::resource_exhausted, "{}: cannot start a thread to read {}: {}", op, path.string(),
                              e.what());
        }
        if (fill->running_.fetch_sub(count - started) == count - started) {
            fill->finish();
        }
    }
    enrol(fill.get());
    return fill;
}

Fill::~Fill() {
    if (::getpid() != owner_) {
        // A forked child's copy: its threads exist only in the parent. Forget
        // them without joining (std::thread would terminate the child).
        for (auto& reader : readers_) {
            std::construct_at(&reader);
        }
        std::construct_at(&handler_);
        return;
    }
    leave(this);
    stop();
}

void Fill::stop() noexcept {
    stopping_ = true;
    for (auto& reader : readers_) {
        if (reader.joinable()) {
            reader.join();
        }
    }
    if (handler_.joinable()) {
        const std::uint64_t one = 1;
        (void)!::write(wake_.get(), &one, sizeof one);
        handler_.join();
    }
}

Result<void> Fill::wait(const char* op) {
    std::unique_lock lock(mutex_);
    finished_.wait(lock, [this] { return finished_state_; });
    lock.unlock();
    return status(op != nullptr ? op : op_);
}

Result<void> Fill::status(const char* op) const {
    const std::lock_guard lock(mutex_);
    if (error_ == 0) {
        return {};
    }
    if (shrank_) {
        return make_error(Errc::io_error,
                          "{}: reading {} behind the program failed at offset {}: the file ends there now but held {} "
                          "bytes when the region was created; the pages not read raise SIGBUS and nothing is written "
                          "back",
                          op, path_.string(), failed_at_, file_end_);
    }
    return make_sys_error(error_,
                          "{}: reading {} behind the program failed at offset {}; the pages not read raise SIGBUS and "
                          "nothing is written back",
                          op, path_.string(), failed_at_);
}

bool Fill::claim(std::size_t& index) {
    if (stopping_.load(std::memory_order_relaxed)) {
        return false;
    }
    if (urgent_waiting_.load(std::memory_order_acquire)) {
        const std::lock_guard lock(mutex_);
        while (!urgent_.empty()) {
            const std::size_t i = urgent_.front();
            urgent_.pop_front();
            std::uint8_t expected = free_chunk;
            if (state_[i].compare_exchange_strong(expected, claimed)) {
                urgent_waiting_ = !urgent_.empty();
                index = i;
                return true;
            }
        }
        urgent_waiting_ = false;
    }
    for (std::size_t i = cursor_++; i < pieces_; i = cursor_++) {
        std::uint8_t expected = free_chunk;
        if (state_[i].compare_exchange_strong(expected, claimed)) {
            index = i;
            return true;
        }
    }
    return false;
}

void Fill::read_chunks() {
    const posix::UniqueMapping buffer = reader_buffer(chunk_);
    if (buffer.get() == nullptr) {
        fail(ENOMEM, offset_, false);
    }
    std::size_t index = 0;
    while (buffer.get() != nullptr && claim(index)) {
        if (read_chunk(index, buffer.get()) != 0) {
            state_[index] = failed;
            break;
        }
        state_[index].store(placed, std::memory_order_release);
    }
    if (running_.fetch_sub(1) == 1) {
        finish();
    }
}

int Fill::read_chunk(std::size_t index, std::byte* buffer) {
    const std::size_t at = index * chunk_;
    const std::size_t length = std::min(chunk_, span_ - at);
    const std::uint64_t from = offset_ + at;
    // What the file held here when the fill started: reading less is an error.
    const std::size_t owed =
        file_end_ > from ? static_cast<std::size_t>(std::min<std::uint64_t>(length, file_end_ - from)) : 0;
    std::size_t done = 0;
    if (const int err = parallel_read::read_piece(fd_, direct_.get(), buffer, length, from, done); err != 0) {
        fail(err, from + done, false);
        return err;
    }
    if (done < owed) {
        fail(EIO, from + done, true);
        return EIO;
    }
    std::memset(buffer + done, 0, length - done);
    return place(at, buffer, length);
}

int Fill::place(std::size_t at, std::byte* buffer, std::size_t length) {
    const std::size_t page = posix::page_size();
    std::size_t done = 0;
    while (done < length) {
        uffdio_copy copy{};
        copy.dst = reinterpret_cast<std::uintptr_t>(data_ + at + done);
        copy.src = reinterpret_cast<std::uintptr_t>(buffer + done);
        copy.len = length - done;
        copy.mode = UFFDIO_COPY_MODE_WP;  // present but not yet written by the program
        if (::ioctl(uffd_, UFFDIO_COPY, &copy) == 0) {
            return 0;
        }
        const int err = errno;
        const std::size_t copied = copy.copy > 0 ? static_cast<std::size_t>(copy.copy) : 0;
        done += copied;
        if (err == EAGAIN) {
            continue;  // the mapping changed under the copy: go on from where it stopped
        }
        if (err == EEXIST && copied == 0) {
            done += page;  // the handler served this page (after MADV_DONTNEED): keep it
            continue;
        }
        fail(err, offset_ + at + done, false);
        return err;
    }
    return 0;
}

void Fill::fail(int err, std::uint64_t file_offset, bool shrank) {
    const std::lock_guard lock(mutex_);
    if (error_ == 0) {
        error_ = err;
        failed_at_ = file_offset;
        shrank_ = shrank;
    }
    stopping_ = true;
}

void Fill::finish() {
    bool failed_fill = false;
    {
        const std::lock_guard lock(mutex_);
        failed_fill = error_ != 0;
    }
    if (failed_fill) {
        // Every chunk not in place becomes a mapping of an empty file: an
        // access raises SIGBUS, as a file mapping whose read failed does.
        const posix::UniqueFd empty(::memfd_create("strata-unread", MFD_CLOEXEC));
        for (std::size_t i = 0; i < pieces_; ++i) {
            if (state_[i].load() == placed) {
                continue;
            }
            state_[i] = failed;
            const std::size_t at = i * chunk_;
            const std::size_t length = std::min(chunk_, span_ - at);
            if (empty.get() < 0 || ::mmap(data_ + at, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                                          empty.get(), 0) == MAP_FAILED) {
                // Out of mappings: no access may read zeros silently, so none at all.
                (void)::mmap(data_ + at, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
            }
        }
    }
    if (failed_fill || stopping_) {
        uffdio_range all{.start = reinterpret_cast<std::uintptr_t>(data_), .len = span_};
        (void)::ioctl(uffd_, UFFDIO_WAKE, &all);  // waiters fault again, into what is there now
    }
    {
        const std::lock_guard lock(mutex_);
        finished_state_ = true;
        finished_flag_.store(true, std::memory_order_release);
    }
    finished_.notify_all();
}

void Fill::serve() {
    std::array<pollfd, 2> fds{
        {{.fd = uffd_, .events = POLLIN, .revents = 0}, {.fd = wake_.get(), .events = POLLIN, .revents = 0}}};
    std::array<uffd_msg, 16> messages{};
    for (;;) {
        if (::poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            detail::log().error("{}: fill of {}: poll: {}", op_, path_.string(), describe_errno(errno));
            return;
        }
        if (fds[1].revents != 0) {
            return;
        }
        const ssize_t n = ::read(uffd_, messages.data(), sizeof messages);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                continue;
            }
            detail::log().error("{}: fill of {}: reading the userfaultfd: {}", op_, path_.string(),
                                describe_errno(errno));
            return;
        }
        for (std::size_t i = 0; i < static_cast<std::size_t>(n) / sizeof(uffd_msg); ++i) {
            if (messages[i].event == UFFD_EVENT_PAGEFAULT) {
                resolve(static_cast<std::uintptr_t>(messages[i].arg.pagefault.address));
            }
        }
    }
}

void Fill::resolve(std::uintptr_t address) {
    const std::size_t page = posix::page_size();
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(data_);
    address &= ~(page - 1);
    const std::size_t index = (address - base) / chunk_;
    const std::uint8_t state =
        index < pieces_ ? state_[index].load(std::memory_order_acquire) : static_cast<std::uint8_t>(placed);
    if (state == claimed) {
        return;  // its UFFDIO_COPY wakes the thread
    }
    if (state == free_chunk && !complete()) {
        const std::lock_guard lock(mutex_);
        urgent_.push_back(index);
        urgent_waiting_ = true;
        return;
    }
    uffdio_range one{.start = address, .len = page};
    if (state == placed) {
        // In place, then dropped by the program (MADV_DONTNEED): anonymous
        // memory reads zero again.
        uffdio_zeropage zero{.range = one, .mode = 0, .zeropage = 0};
        if (::ioctl(uffd_, UFFDIO_ZEROPAGE, &zero) == 0) {
            return;
        }
    }
    (void)::ioctl(uffd_, UFFDIO_WAKE, &one);  // present already, or the fill ended: fault again
}

}  // namespace strata::background_fill
