// SPDX-License-Identifier: MIT
// Handles as one word of text (named_handle.hpp).
#include "strata/shm/named_handle.hpp"

#include <array>
#include <charconv>
#include <cstdint>

namespace strata {

namespace {

constexpr std::string_view kPrefix = "shm:";
constexpr std::size_t kFields = 7;  // "shm", segment, 4 numbers, access

Result<std::uint64_t> parse_hex(std::string_view field, std::string_view what, std::string_view text,
                                std::string_view param) {
    std::uint64_t value = 0;
    const char* end = field.data() + field.size();
    auto [ptr, ec] = std::from_chars(field.data(), end, value, 16);
    if (field.empty() || ec != std::errc{} || ptr != end) {
        return make_error(Errc::invalid_argument, "{}={}: the {} '{}' is not a hexadecimal number below 2^64", param,
                          text, what, field);
    }
    return value;
}

}  // namespace

std::string to_string(const NamedHandle& named) {
    const Handle& h = named.handle;
    return fmt::format("{}{}:{:x}:{:x}:{:x}:{:x}:{}", kPrefix, named.segment, h.segment, h.generation, h.offset, h.type,
                       named.writable ? "rw" : "ro");
}

Result<NamedHandle> parse_named_handle(std::string_view text, std::string_view param) {
    constexpr std::string_view form = "shm:<segment>:<id>:<generation>:<offset>:<type>:<ro|rw>";
    std::array<std::string_view, kFields> fields;
    std::size_t count = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= text.size(); ++i) {
        if (i == text.size() || text[i] == ':') {
            if (count < kFields) {
                fields[count] = text.substr(start, i - start);
            }
            ++count;
            start = i + 1;
        }
    }
    if (!text.starts_with(kPrefix) || count != kFields) {
        return make_error(Errc::invalid_argument, "{}={}: not a handle of the form {}", param, text, form);
    }
    NamedHandle named;
    named.segment = std::string(fields[1]);
    if (named.segment.empty()) {
        return make_error(Errc::invalid_argument, "{}={}: the segment name is empty", param, text);
    }
    constexpr std::array<std::string_view, 4> what{"segment id", "generation", "offset", "type"};
    std::array<std::uint64_t, 4> numbers{};
    for (std::size_t i = 0; i < numbers.size(); ++i) {
        auto value = parse_hex(fields[2 + i], what[i], text, param);
        if (!value) {
            return std::unexpected(value.error());
        }
        numbers[i] = *value;
    }
    named.handle = Handle{numbers[0], numbers[1], numbers[2], numbers[3]};
    if (fields[6] != "ro" && fields[6] != "rw") {
        return make_error(Errc::invalid_argument, "{}={}: the access '{}' is neither ro nor rw", param, text,
                          fields[6]);
    }
    named.writable = fields[6] == "rw";
    return named;
}

Result<Segment> open_segment(const NamedHandle& named, const SegmentOptions& options) {
    return Segment::open(named.segment, named.writable ? SegmentMode::open_only : SegmentMode::read_only, 0, options);
}

}  // namespace strata
