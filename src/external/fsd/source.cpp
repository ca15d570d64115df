// SPDX-License-Identifier: MIT
// The two data channels of strata-fsd (see source.hpp).
#include "source.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace strata::external::fsd {

namespace {

class SharedSource final : public Source {
public:
    SharedSource(std::uint64_t size, void* base, std::size_t length, std::size_t skew)
        : Source(size), base_(base), length_(length), skew_(skew) {}
    ~SharedSource() override {
        if (base_ != nullptr) {
            ::munmap(base_, length_);
        }
    }
    SharedSource(const SharedSource&) = delete;
    SharedSource& operator=(const SharedSource&) = delete;

    int read(std::uint64_t offset, std::size_t /*length*/, const char*& out) override {
        out = static_cast<const char*>(base_) + skew_ + offset;
        return 0;
    }

private:
    void* base_;
    std::size_t length_;
    std::size_t skew_;  ///< the block's offset within the first mapped page
};

class VmSource final : public Source {
public:
    VmSource(pid_t owner, std::uint64_t address, std::uint64_t size) : Source(size), owner_(owner), address_(address) {}

    int read(std::uint64_t offset, std::size_t length, const char*& out) override {
        thread_local std::vector<char> buffer;
        if (buffer.size() < length) {
            buffer.resize(length);
        }
        std::size_t done = 0;
        while (done < length) {
            iovec local{buffer.data() + done, length - done};
            iovec remote{reinterpret_cast<void*>(address_ + offset + done), length - done};
            const ssize_t n = ::process_vm_readv(owner_, &local, 1, &remote, 1, 0);
            if (n <= 0) {
                return n == 0 ? EIO : errno;
            }
            done += static_cast<std::size_t>(n);
        }
        out = buffer.data();
        return 0;
    }

private:
    pid_t owner_;
    std::uint64_t address_;
};

}  // namespace

int make_shared_source(pid_t owner, int fd, std::uint64_t offset, std::uint64_t size, std::unique_ptr<Source>& out,
                       std::string& error) {
    const std::string path = fmt::format("/proc/{}/fd/{}", owner, fd);
    const int local = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (local < 0) {
        const int err = errno;
        error = fmt::format("fd={}: cannot open the owner's descriptor as {}: {}", fd, path, std::strerror(err));
        return err;
    }
    struct stat st {};
    if (::fstat(local, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < offset + size) {
        ::close(local);
        error =
            fmt::format("fd={} offset={} size={}: the descriptor holds only {} bytes", fd, offset, size, st.st_size);
        return EINVAL;
    }
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t start = offset / page * page;
    const std::size_t skew = offset - start;
    const std::size_t length = skew + size;
    void* base = nullptr;
    if (length > 0) {
        base = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, local, static_cast<off_t>(start));
        if (base == MAP_FAILED) {
            const int err = errno;
            ::close(local);
            error = fmt::format("fd={}: cannot map {} bytes of {}: {}", fd, length, path, std::strerror(err));
            return err;
        }
    }
    ::close(local);  // the mapping keeps the file
    out = std::make_unique<SharedSource>(size, base, length, skew);
    return 0;
}

int make_vm_source(pid_t owner, std::uint64_t address, std::uint64_t size, std::unique_ptr<Source>& out,
                   std::string& error) {
    // Probe the first and last byte so a bad address fails the registration, not the program's read.
    for (const std::uint64_t at : {address, address + (size == 0 ? 0 : size - 1)}) {
        if (size == 0) {
            break;
        }
        char byte = 0;
        iovec local{&byte, 1};
        iovec remote{reinterpret_cast<void*>(at), 1};
        if (::process_vm_readv(owner, &local, 1, &remote, 1, 0) != 1) {
            const int err = errno;
            error = fmt::format("address={:#x} size={}: process_vm_readv of pid {} failed: {}", address, size, owner,
                                std::strerror(err));
            return err;
        }
    }
    out = std::make_unique<VmSource>(owner, address, size);
    return 0;
}

}  // namespace strata::external::fsd
