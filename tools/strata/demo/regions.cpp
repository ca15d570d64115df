// SPDX-License-Identifier: MIT
// The regions section of `strata demo`: every region kind on 64 MiB.
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "sections.hpp"
#include "strata/region.hpp"

namespace strata::cli {

namespace {

constexpr std::size_t mib = std::size_t{1} << 20;

void fill(std::span<std::byte> bytes, unsigned seed) {
    for (std::size_t i = 0; i < bytes.size(); i += 4096) {
        bytes[i] = static_cast<std::byte>((i / 4096 + seed) & 0xff);
    }
}

bool check(std::span<const std::byte> bytes, unsigned seed) {
    for (std::size_t i = 0; i < bytes.size(); i += 4096) {
        if (bytes[i] != static_cast<std::byte>((i / 4096 + seed) & 0xff)) {
            return false;
        }
    }
    return true;
}

Result<std::string> verify_file(const std::filesystem::path& path, std::size_t size, unsigned seed) {
    std::vector<std::byte> buffer(size);
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char*>(buffer.data()), static_cast<std::streamsize>(size));
    if (!in || !check(buffer, seed)) {
        return make_error(Errc::io_error, "{}: contents differ from what was synced", path.string());
    }
    return fmt::format("{} MiB read back from {}", size / mib, path.filename().string());
}

std::string describe(const Region& r) {
    auto s = r.stats();
    return s ? fmt::format("{} MiB: {} MiB memory, {} MiB storage, {} MiB resident, {} MiB dirty", r.size() / mib,
                           s->memory_bytes / mib, s->storage_bytes / mib, s->resident_bytes / mib, s->dirty_bytes / mib)
             : s.error().what();
}

}  // namespace

void tour_regions(Tour& tour, const std::filesystem::path& dir) {
    const std::string section = "regions: memory, shared, storage and combined ranges (docs/regions.md)";
    const std::size_t size = 64 * mib;

    tour.run(section, "memory region, 64 MiB", [&]() -> Result<std::string> {
        auto r = Region::memory(size);
        if (!r) return std::unexpected(r.error());
        fill(r->bytes(), 1);
        if (!check(r->bytes(), 1)) return make_error(Errc::internal, "memory region lost data");
        return describe(*r);
    });

    tour.run(section, "shared segment seen by a second process", [&]() -> Result<std::string> {
        const std::string name = fmt::format("strata-demo-{}", ::getpid());
        auto r = Region::shared(size, {.name = name});
        if (!r) return std::unexpected(r.error());
        const pid_t child = ::fork();
        if (child == 0) {
            auto peer = Region::shared(0, {.name = name, .mode = OpenMode::open_only});
            if (peer) fill(peer->bytes(), 2);
            ::_exit(peer ? 0 : 1);
        }
        int status = 0;
        ::waitpid(child, &status, 0);
        const bool seen = WIFEXITED(status) && WEXITSTATUS(status) == 0 && check(r->bytes(), 2);
        if (auto closed = r->close({.unlink = true}); !closed) return std::unexpected(closed.error());
        if (!seen) return make_error(Errc::internal, "the parent did not see the child's stores");
        return fmt::format("/dev/shm/{}: child wrote 64 MiB, parent read it in place", name);
    });

    const auto storage_path = dir / "storage.bin";
    tour.run(section, "storage region survives SIGKILL after sync()", [&]() -> Result<std::string> {
        const pid_t child = ::fork();
        if (child == 0) {
            auto r = Region::storage(size, {.path = storage_path});
            if (!r) ::_exit(1);
            fill(r->bytes(), 3);
            if (!r->sync()) ::_exit(2);
            ::raise(SIGKILL);
        }
        int status = 0;
        ::waitpid(child, &status, 0);
        if (!WIFSIGNALED(status)) return make_error(Errc::internal, "the writer was not killed (status {})", status);
        return verify_file(storage_path, size, 3);
    });

    tour.run(section, "combined region, factor 0.5, memory first", [&]() -> Result<std::string> {
        auto r = Region::combined(size, {.storage = {.path = dir / "combined.bin"}, .factor = Factor::fixed(0.5)});
        if (!r) return std::unexpected(r.error());
        fill(r->bytes(), 4);
        auto first = r->placement(r->data());
        auto last = r->placement(r->data() + size - 1);
        if (!first || !last || *first != Tier::memory || *last != Tier::storage) {
            return make_error(Errc::internal, "placement of the two halves is wrong");
        }
        std::string before = describe(*r);
        if (auto s = r->sync(); !s) return std::unexpected(s.error());
        return fmt::format("{}; after sync: {} MiB dirty", before, r->stats() ? r->stats()->dirty_bytes / mib : 0);
    });

    tour.run(section, "combined region, factor auto", [&]() -> Result<std::string> {
        auto budget = current_memory_budget();
        if (!budget) return std::unexpected(budget.error());
        auto r = Region::combined(size, {.storage = {.path = dir / "auto.bin"}, .factor = Factor::automatic()});
        if (!r) return std::unexpected(r.error());
        return fmt::format("{} MiB usable{} -> {} MiB memory, {} MiB storage", budget->usable / mib,
                           budget->cgroup_limited ? " (cgroup)" : "", r->memory_bytes() / mib,
                           r->storage_bytes() / mib);
    });

    tour.run(section, "discard drops changes since the last sync", [&]() -> Result<std::string> {
        const auto path = dir / "discard.bin";
        auto r = Region::storage(size, {.path = path, .writeback = Writeback::explicit_sync});
        if (!r) return std::unexpected(r.error());
        fill(r->bytes(), 5);
        if (auto s = r->sync(); !s) return std::unexpected(s.error());
        fill(r->bytes(), 6);
        if (auto c = r->close({.discard = true}); !c) return std::unexpected(c.error());
        auto kept = verify_file(path, size, 5);
        if (!kept) return kept;
        return "file holds the synced data, not the discarded stores";
    });

    tour.run(section, "bad input is refused and leaves nothing", [&]() -> Result<std::string> {
        auto bad = Region::combined(size, {.storage = {.path = dir / "never.bin"}, .factor = Factor::fixed(1.5)});
        if (bad) return make_error(Errc::internal, "factor 1.5 was accepted");
        if (std::filesystem::exists(dir / "never.bin")) return make_error(Errc::internal, "a file was left behind");
        return bad.error().message;
    });
}

}  // namespace strata::cli
