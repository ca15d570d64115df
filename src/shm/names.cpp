// SPDX-License-Identifier: MIT
// Names of the shm enums, and their parsers.
#include <array>
#include <utility>

#include "strata/shm/port.hpp"
#include "strata/shm/segment.hpp"

namespace strata {
namespace {

template <class E, std::size_t N>
Result<E> parse_enum(const std::array<std::pair<std::string_view, E>, N>& table, std::string_view text,
                     std::string_view param) {
    std::string choices;
    for (const auto& [name, value] : table) {
        if (name == text) {
            return value;
        }
        choices += choices.empty() ? std::string(name) : ", " + std::string(name);
    }
    return make_error(Errc::invalid_argument, "{}={}: not one of {}", param, text, choices);
}

constexpr std::array<std::pair<std::string_view, SegmentMode>, 5> kModes{{
    {"create_only", SegmentMode::create_only},
    {"open_only", SegmentMode::open_only},
    {"open_or_create", SegmentMode::open_or_create},
    {"recreate", SegmentMode::recreate},
    {"read_only", SegmentMode::read_only},
}};
constexpr std::array<std::pair<std::string_view, PortRole>, 2> kRoles{{
    {"producer", PortRole::producer},
    {"consumer", PortRole::consumer},
}};
constexpr std::array<std::pair<std::string_view, PortSync>, 3> kSyncs{{
    {"blocking", PortSync::blocking},
    {"busy_poll", PortSync::busy_poll},
    {"mpi", PortSync::mpi},
}};

template <class E, std::size_t N>
std::string_view name_of(const std::array<std::pair<std::string_view, E>, N>& table, E value) noexcept {
    for (const auto& [name, v] : table) {
        if (v == value) {
            return name;
        }
    }
    return "unknown";
}

}  // namespace

std::string_view to_string(SegmentMode mode) noexcept {
    return name_of(kModes, mode);
}
std::string_view to_string(PortRole role) noexcept {
    return name_of(kRoles, role);
}
std::string_view to_string(PortSync sync) noexcept {
    return name_of(kSyncs, sync);
}
Result<SegmentMode> parse_segment_mode(std::string_view text, std::string_view param) {
    return parse_enum(kModes, text, param);
}
Result<PortRole> parse_port_role(std::string_view text, std::string_view param) {
    return parse_enum(kRoles, text, param);
}
Result<PortSync> parse_port_sync(std::string_view text, std::string_view param) {
    return parse_enum(kSyncs, text, param);
}

}  // namespace strata
