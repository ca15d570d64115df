// SPDX-License-Identifier: MIT
// The memfd exposure (memfd_exposure.hpp).
#include "memfd_exposure.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010  // Linux 5.1; older libc headers lack it
#endif

namespace strata::external {

namespace {

constexpr int input_seals = F_SEAL_FUTURE_WRITE | F_SEAL_GROW | F_SEAL_SHRINK;

std::string fd_path(int fd) {
    return fmt::format("/proc/self/fd/{}", fd);
}

// A memfd of exactly `size` bytes that accepts seals: the block's own file.
bool is_whole_memfd(int fd, std::size_t size) {
    struct stat st {};
    return ::fcntl(fd, F_GET_SEALS) >= 0 && ::fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) == size;
}

Result<int> sealed_copy(const BlockView& block) {
    const int fd = ::memfd_create(fmt::format("strata-in-{}", block.id).c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        return make_sys_error(errno, "memfd exposure: input block {}: memfd_create", block.id);
    }
    const auto* bytes = static_cast<const char*>(block.data);
    std::size_t done = 0;
    while (done < block.size) {
        const ssize_t n = ::pwrite(fd, bytes + done, block.size - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            const int err = n < 0 ? errno : EIO;
            ::close(fd);
            return make_sys_error(err, "memfd exposure: input block {} of {} bytes: copy into a memfd", block.id,
                                  block.size);
        }
        done += static_cast<std::size_t>(n);
    }
    if (::fcntl(fd, F_ADD_SEALS, input_seals | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
        const int err = errno;
        ::close(fd);
        return make_sys_error(err, "memfd exposure: input block {}: sealing its copy", block.id);
    }
    return fd;
}

class MemfdTaskFiles final : public TaskFiles {
public:
    ~MemfdTaskFiles() override { release(); }

    Result<std::string> add_input(const BlockView& block) override {
        int fd = -1;
        if (block.fd >= 0 && block.fd_offset == 0 && is_whole_memfd(block.fd, block.size)) {
            // The block's own file: seal it (the runtime's mapping keeps writing) and share it.
            if (::fcntl(block.fd, F_ADD_SEALS, input_seals) != 0) {
                return make_sys_error(errno, "memfd exposure: input block {}: F_SEAL_FUTURE_WRITE", block.id);
            }
            fd = ::fcntl(block.fd, F_DUPFD_CLOEXEC, 3);
            if (fd < 0) {
                return make_sys_error(errno, "memfd exposure: input block {}: dup", block.id);
            }
        } else {
            auto copy = sealed_copy(block);
            if (!copy) {
                return std::unexpected(copy.error());
            }
            fd = *copy;
        }
        inputs_.push_back(fd);
        return fd_path(fd);
    }

    Result<std::string> add_output(std::uint64_t id) override {
        const int fd = ::memfd_create(fmt::format("strata-out-{}", id).c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0) {
            return make_sys_error(errno, "memfd exposure: output {}: memfd_create", id);
        }
        outputs_.push_back(fd);
        return fd_path(fd);
    }

    [[nodiscard]] std::vector<int> inherited_fds() const override {
        std::vector<int> fds = inputs_;
        for (int fd : outputs_) {
            if (fd >= 0) {
                fds.push_back(fd);
            }
        }
        return fds;
    }

    Result<void> started(pid_t /*pid*/) override { return {}; }

    Result<OutputBytes> take_output(std::size_t k) override {
        if (k >= outputs_.size() || outputs_[k] < 0) {
            return make_error(Errc::invalid_argument, "memfd exposure: output {}: none such, or already taken", k);
        }
        struct stat st {};
        if (::fstat(outputs_[k], &st) != 0) {
            return make_sys_error(errno, "memfd exposure: output {}: fstat", k);
        }
        OutputBytes out{outputs_[k], static_cast<std::size_t>(st.st_size)};
        outputs_[k] = -1;
        return out;
    }

    void release() noexcept override {
        for (int fd : inputs_) {
            ::close(fd);
        }
        for (int fd : outputs_) {
            if (fd >= 0) {
                ::close(fd);
            }
        }
        inputs_.clear();
        outputs_.clear();
    }

private:
    std::vector<int> inputs_;
    std::vector<int> outputs_;  // -1 once taken
};

}  // namespace

Result<std::unique_ptr<TaskFiles>> MemfdExposure::new_task() {
    return std::make_unique<MemfdTaskFiles>();
}

Result<void> MemfdExposure::probe() {
    const int fd = ::memfd_create("strata-probe", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        return make_sys_error(errno, "memfd_create");
    }
    auto done = [fd](Result<void> r) {
        ::close(fd);
        return r;
    };
    if (::ftruncate(fd, 4096) != 0) {
        return done(make_sys_error(errno, "ftruncate of a memfd"));
    }
    void* map = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        return done(make_sys_error(errno, "mmap of a memfd"));
    }
    const bool sealed = ::fcntl(fd, F_ADD_SEALS, input_seals) == 0;
    const int seal_errno = errno;
    // The runtime's mapping must still write; a write through the file must not.
    static_cast<char*>(map)[0] = 'x';
    ::munmap(map, 4096);
    if (!sealed) {
        return done(
            make_sys_error(seal_errno, "F_SEAL_FUTURE_WRITE on a memfd with a writable mapping (Linux >= 5.1)"));
    }
    const char byte = 'y';
    if (::pwrite(fd, &byte, 1, 0) != -1 || errno != EPERM) {
        return done(
            make_error(Errc::unsupported, "a write to a memfd sealed with F_SEAL_FUTURE_WRITE was not refused"));
    }
    return done({});
}

}  // namespace strata::external
