// SPDX-License-Identifier: MIT
#include "limits.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

namespace strata::bench {
namespace {

constexpr std::size_t chunk = std::size_t{8} << 20;  // one O_DIRECT request
constexpr std::size_t direct_alignment = 4096;

struct FreeDeleter {
    void operator()(std::byte* p) const noexcept { std::free(p); }
};
using Buffer = std::unique_ptr<std::byte, FreeDeleter>;

Buffer aligned_buffer(std::size_t alignment, std::size_t size) {
    return Buffer(static_cast<std::byte*>(std::aligned_alloc(alignment, size)));
}

class Fd {
public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    [[nodiscard]] int get() const { return fd_; }

private:
    int fd_;
};

Result<Summary> measure_memcpy(std::size_t size, int repeats) {
    const auto src = aligned_buffer(direct_alignment, size);
    const auto dst = aligned_buffer(direct_alignment, size);
    if (!src || !dst) {
        return make_error(Errc::out_of_memory, "memcpy: cannot allocate 2 x {}", format_size(size));
    }
    std::memset(src.get(), 1, size);
    std::memset(dst.get(), 2, size);
    std::memcpy(dst.get(), src.get(), size);  // warm-up
    std::vector<double> gbps;
    for (int r = 0; r < repeats; ++r) {
        const double seconds = time_seconds([&] { std::memcpy(dst.get(), src.get(), size); });
        consume(static_cast<std::uint64_t>(dst.get()[size / 2]));
        gbps.push_back(static_cast<double>(size) / 1e9 / seconds);
    }
    return summarize(std::move(gbps));
}

// Writes the whole file with O_DIRECT then waits for the device (fdatasync).
Result<double> direct_write(int fd, const std::byte* buffer, std::size_t size) {
    Result<double> outcome;
    const double seconds = time_seconds([&] {
        for (std::size_t done = 0; done < size; done += chunk) {
            const ssize_t n = ::pwrite(fd, buffer, chunk, static_cast<off_t>(done));
            if (n != static_cast<ssize_t>(chunk)) {
                outcome = make_sys_error(n < 0 ? errno : EIO, "disk: O_DIRECT pwrite at {}", done);
                return;
            }
        }
        if (::fdatasync(fd) != 0) {
            outcome = make_sys_error(errno, "disk: fdatasync");
        }
    });
    if (!outcome) {
        return outcome;
    }
    return seconds;
}

Result<double> direct_read(int fd, std::byte* buffer, std::size_t size) {
    Result<double> outcome;
    const double seconds = time_seconds([&] {
        for (std::size_t done = 0; done < size; done += chunk) {
            const ssize_t n = ::pread(fd, buffer, chunk, static_cast<off_t>(done));
            if (n != static_cast<ssize_t>(chunk)) {
                outcome = make_sys_error(n < 0 ? errno : EIO, "disk: O_DIRECT pread at {}", done);
                return;
            }
        }
    });
    if (!outcome) {
        return outcome;
    }
    return seconds;
}

Result<void> measure_disk(Limits& limits, const std::filesystem::path& path, std::size_t size, int repeats) {
    const Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600));
    if (fd.get() < 0) {
        if (errno == EINVAL) {
            limits.disk_note = fmt::format("O_DIRECT is not supported on {}", path.parent_path().string());
            return {};
        }
        return make_sys_error(errno, "disk: cannot create {}", path.string());
    }
    const auto buffer = aligned_buffer(direct_alignment, chunk);
    if (!buffer) {
        return make_error(Errc::out_of_memory, "disk: cannot allocate {}", format_size(chunk));
    }
    // Random bytes: a virtual disk that compresses or skips zeros would flatter itself.
    std::mt19937_64 rng(42);
    auto* words = reinterpret_cast<std::uint64_t*>(buffer.get());
    for (std::size_t i = 0; i < chunk / sizeof(std::uint64_t); ++i) {
        words[i] = rng();
    }

    // The first pass allocates the blocks; timed passes overwrite them, so the
    // numbers are the device's, not the allocator's.
    if (auto first = direct_write(fd.get(), buffer.get(), size); !first) {
        return std::unexpected(first.error());
    }
    const double gb = static_cast<double>(size) / 1e9;
    std::vector<double> write_gbps;
    std::vector<double> read_gbps;
    for (int r = 0; r < repeats; ++r) {
        auto w = direct_write(fd.get(), buffer.get(), size);
        if (!w) {
            return std::unexpected(w.error());
        }
        write_gbps.push_back(gb / *w);
        auto rd = direct_read(fd.get(), buffer.get(), size);
        if (!rd) {
            return std::unexpected(rd.error());
        }
        read_gbps.push_back(gb / *rd);
    }
    limits.disk_write_gbps = summarize(std::move(write_gbps));
    limits.disk_read_gbps = summarize(std::move(read_gbps));
    return {};
}

}  // namespace

Result<Limits> run_limits(const Options& options, const std::filesystem::path& work_dir, Cleanup& cleanup) {
    Limits limits;
    limits.memcpy_bytes = options.size;
    auto copy = measure_memcpy(options.size, options.repeats);
    if (!copy) {
        return std::unexpected(copy.error());
    }
    limits.memcpy_gbps = std::move(*copy);
    fmt::print("  memcpy            {:6.2f} GB/s (median)\n", limits.memcpy_gbps.median);

    limits.disk_bytes = options.disk_size;
    const auto path = cleanup.file(work_dir / "disk-direct.bin");
    auto disk = measure_disk(limits, path, options.disk_size, options.repeats);
    std::filesystem::remove(path);
    if (!disk) {
        return std::unexpected(disk.error());
    }
    if (limits.disk_write_gbps) {
        fmt::print("  disk O_DIRECT     write {:6.2f} GB/s, read {:6.2f} GB/s (median)\n",
                   limits.disk_write_gbps->median, limits.disk_read_gbps->median);
    } else {
        fmt::print("  disk              {}\n", limits.disk_note);
    }
    return limits;
}

void to_json(nlohmann::json& j, const Limits& limits) {
    j = {{"memcpy_bytes", limits.memcpy_bytes},
         {"memcpy_gbps", limits.memcpy_gbps},
         {"disk_bytes", limits.disk_bytes},
         {"disk_note", limits.disk_note}};
    j["disk_write_gbps"] = limits.disk_write_gbps ? nlohmann::json(*limits.disk_write_gbps) : nlohmann::json();
    j["disk_read_gbps"] = limits.disk_read_gbps ? nlohmann::json(*limits.disk_read_gbps) : nlohmann::json();
}

}  // namespace strata::bench
