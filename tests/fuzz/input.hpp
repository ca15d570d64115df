// SPDX-License-Identifier: MIT
// Reads typed values off the front of a fuzz input, the way clang's
// FuzzedDataProvider does, in a header that GCC builds too (the corpus replay
// of the default build, docs/fuzzing.md). An exhausted input reads as zeros.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace strata::fuzz {

class Input {
public:
    Input(const std::uint8_t* data, std::size_t size) : rest_(data, size) {}

    [[nodiscard]] bool empty() const noexcept { return rest_.empty(); }
    [[nodiscard]] std::size_t remaining() const noexcept { return rest_.size(); }

    template <typename T>
    T take() {
        T value{};
        const std::size_t n = rest_.size() < sizeof(T) ? rest_.size() : sizeof(T);
        if (n > 0) {
            std::memcpy(&value, rest_.data(), n);
        }
        rest_ = rest_.subspan(n);
        return value;
    }

    /// A value in [0, bound) (0 when bound is 0).
    std::uint64_t below(std::uint64_t bound) { return bound == 0 ? 0 : take<std::uint64_t>() % bound; }
    std::uint8_t byte() { return take<std::uint8_t>(); }

    /// Up to `max` bytes, as text: its length is the next byte (so texts can be chained).
    std::string text(std::size_t max = 255) {
        std::size_t n = byte();
        n = n < max ? n : max;
        n = n < rest_.size() ? n : rest_.size();
        std::string out(reinterpret_cast<const char*>(rest_.data()), n);
        rest_ = rest_.subspan(n);
        return out;
    }

    /// Everything not read yet.
    std::string_view rest_text() {
        std::string_view out(reinterpret_cast<const char*>(rest_.data()), rest_.size());
        rest_ = {};
        return out;
    }
    std::span<const std::uint8_t> rest_bytes() {
        auto out = rest_;
        rest_ = {};
        return out;
    }

private:
    std::span<const std::uint8_t> rest_;
};

}  // namespace strata::fuzz
