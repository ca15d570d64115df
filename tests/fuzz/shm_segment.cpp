// SPDX-License-Identifier: MIT
// Fuzz target: what strata reads from a segment file when it opens one
// (src/shm/attachment.cpp, layout.hpp) and from a port's header in it when
// it joins the port (port.cpp, port_layout.hpp). LLVMFuzzerInitialize makes
// one real segment holding a port and keeps its file's bytes; each input
// patches those bytes (in the segment header, or in the port's object header
// and shared state) or cuts the file short, the result is written as the
// segment's file, and it is opened and the port joined, loaned from and
// received from, as a process that finds the file does.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "input.hpp"
#include "shm/layout.hpp"
#include "shm/port_layout.hpp"
#include "strata/shm.hpp"

namespace {

namespace fs = std::filesystem;
using strata::shm_detail::ObjectHeader;

constexpr std::string_view kName = "fuzz";
constexpr std::string_view kPort = "port";

struct Template {
    fs::path dir;
    std::vector<char> segment;
    std::size_t port_object = 0;  ///< offset of the port's ObjectHeader
    std::size_t port_bytes = 0;   ///< the header, PortShared, the slots and their payload
};
Template* g_template = nullptr;

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "fuzz_shm_segment: %s\n", what.c_str());
    std::abort();
}

std::vector<char> read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& path, const char* data, std::size_t size) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || ::write(fd, data, size) != static_cast<ssize_t>(size) || ::close(fd) != 0) {
        die("cannot write " + path.string());
    }
}

void remove_dir() {
    if (g_template != nullptr) {
        std::error_code ec;
        fs::remove_all(g_template->dir, ec);
    }
}

Template make_template() {
    Template t;
    char dir[] = "/dev/shm/strata-fuzz-XXXXXX";
    if (::mkdtemp(dir) == nullptr) {
        die("mkdtemp");
    }
    t.dir = dir;
    const strata::SegmentOptions options{.dir = t.dir};
    auto segment = strata::Segment::open(kName, strata::SegmentMode::create_only, 1 << 20, options);
    if (!segment) {
        die(segment.error().message);
    }
    {
        auto port = segment->port(kPort, strata::PortRole::producer,
                                  {.slots = 4, .slot_bytes = 64, .consumers = 2, .sync = strata::PortSync::busy_poll});
        if (!port) {
            die(port.error().message);
        }
        auto loan = port->loan(strata::Port::Timeout{0});
        if (!loan || !port->commit(std::move(*loan), 8)) {
            die("the template port takes no message");
        }
    }
    t.segment = read_file(t.dir / fmt::format("strata.{}.seg", kName));
    // The port's object header: the one whose magic holds its own offset and that names the port type.
    for (std::size_t at = strata::shm_detail::kHeaderBytes; at + sizeof(ObjectHeader) <= t.segment.size(); at += 8) {
        ObjectHeader h;
        std::memcpy(&h, t.segment.data() + at, sizeof h);
        if (h.magic == (strata::shm_detail::kObjectMagic ^ at) && std::strstr(h.type_name, "Port") != nullptr) {
            t.port_object = at;
            t.port_bytes = sizeof(ObjectHeader) + h.size;
            break;
        }
    }
    if (t.port_object == 0) {
        die("no port object found in the template segment");
    }
    return t;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
    g_template = new Template(make_template());
    std::atexit(remove_dir);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    strata::fuzz::Input in(data, size);
    std::vector<char> bytes = g_template->segment;
    std::size_t file_size = bytes.size();
    while (in.remaining() > 4) {
        const std::uint8_t where = in.byte();
        const auto offset = in.take<std::uint32_t>();
        const std::size_t length = in.byte() % 16 + 1;
        std::size_t base = 0;
        std::size_t span = sizeof(strata::shm_detail::SegmentHeader);
        if (where % 4 == 3) {
            file_size = bytes.size() - offset % bytes.size();  // cut short
            continue;
        }
        if (where % 4 != 0) {
            base = g_template->port_object;
            span = g_template->port_bytes;
        }
        for (std::size_t i = 0; i < length && !in.empty(); ++i) {
            bytes[base + (offset + i) % span] = static_cast<char>(in.byte());
        }
    }
    const fs::path seg = g_template->dir / fmt::format("strata.{}.seg", kName);
    const fs::path lock = g_template->dir / fmt::format("strata.{}.lock", kName);
    write_file(seg, bytes.data(), file_size);
    write_file(lock, "", 0);
    {
        auto segment = strata::Segment::open(kName, strata::SegmentMode::open_only, 0, {.dir = g_template->dir});
        if (segment) {
            if (auto consumer = segment->port(kPort, strata::PortRole::consumer)) {
                (void)consumer->shape();
                if (auto sample = consumer->recv(strata::Port::Timeout{0})) {
                    (void)sample->bytes();
                    (void)consumer->release(std::move(*sample));
                }
            }
            if (auto producer = segment->port(kPort, strata::PortRole::producer)) {
                if (auto loan = producer->loan(strata::Port::Timeout{0})) {
                    std::memset(loan->bytes().data(), 0x5a, loan->bytes().size());
                    (void)producer->commit(std::move(*loan));
                }
            }
        }
    }
    std::error_code ec;
    fs::remove(seg, ec);
    fs::remove(lock, ec);
    return 0;
}
