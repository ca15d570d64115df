// SPDX-License-Identifier: MIT
// Splitting and expanding command templates (command.hpp).
#include "command.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

namespace strata::external {

namespace {

bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// A placeholder begins where '[' is followed by lowercase letters and ':'.
bool starts_placeholder(std::string_view text, std::size_t at) {
    std::size_t i = at + 1;
    while (i < text.size() && std::islower(static_cast<unsigned char>(text[i])) != 0) {
        ++i;
    }
    return i > at + 1 && i < text.size() && text[i] == ':';
}

Result<std::size_t> parse_index(std::string_view digits, std::string_view whole) {
    std::size_t value = 0;
    const auto* end = digits.data() + digits.size();
    auto [ptr, ec] = std::from_chars(digits.data(), end, value);
    if (digits.empty() || ec != std::errc{} || ptr != end) {
        return make_error(Errc::invalid_argument, "placeholder {}: the index '{}' is not a number", whole, digits);
    }
    return value;
}

Result<Placeholder> parse_placeholder(std::string_view whole) {
    // whole is "[...]"
    const std::string_view inner = whole.substr(1, whole.size() - 2);
    std::vector<std::string_view> fields;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= inner.size(); ++i) {
        if (i == inner.size() || inner[i] == ':') {
            fields.push_back(inner.substr(start, i - start));
            start = i + 1;
        }
    }
    Placeholder p;
    p.text = std::string(whole);
    std::string_view index;
    if (fields.size() == 2 && (fields[0] == "in" || fields[0] == "out" || fields[0] == "handle")) {
        p.kind = fields[0] == "in"    ? PlaceholderKind::in
                 : fields[0] == "out" ? PlaceholderKind::out
                                      : PlaceholderKind::handle;
        index = fields[1];
    } else if (fields.size() == 3 && fields[0] == "arg" &&
               (fields[1] == "int" || fields[1] == "str" || fields[1] == "float")) {
        p.kind = fields[1] == "int"   ? PlaceholderKind::arg_int
                 : fields[1] == "str" ? PlaceholderKind::arg_str
                                      : PlaceholderKind::arg_float;
        index = fields[2];
    } else {
        return make_error(
            Errc::invalid_argument,
            "unknown placeholder {} (known: [in:K], [out:K], [handle:K], [arg:int:K], [arg:str:K], [arg:float:K])",
            whole);
    }
    auto k = parse_index(index, whole);
    if (!k) {
        return std::unexpected(k.error());
    }
    p.index = *k;
    return p;
}

class Splitter {
public:
    explicit Splitter(std::string_view text) : text_(text) {}

    Result<std::vector<Word>> run() {
        enum class Mode { plain, single, dbl } mode = Mode::plain;
        std::size_t quote_start = 0;
        for (std::size_t i = 0; i < text_.size(); ++i) {
            const char c = text_[i];
            if (mode == Mode::single) {
                if (c == '\'') {
                    mode = Mode::plain;
                } else {
                    literal(c);
                }
                continue;
            }
            if (mode == Mode::dbl) {
                if (c == '"') {
                    mode = Mode::plain;
                } else if (c == '\\' && i + 1 < text_.size() && (text_[i + 1] == '"' || text_[i + 1] == '\\')) {
                    literal(text_[++i]);
                } else if (c == '[' && starts_placeholder(text_, i)) {
                    auto end = placeholder(i);
                    if (!end) {
                        return std::unexpected(end.error());
                    }
                    i = *end;
                } else {
                    literal(c);
                }
                continue;
            }
            if (is_blank(c)) {
                end_word();
            } else if (c == '\'' || c == '"') {
                mode = c == '\'' ? Mode::single : Mode::dbl;
                quote_start = i;
                in_word_ = true;  // "" is an empty word
            } else if (c == '\\') {
                if (i + 1 == text_.size()) {
                    return make_error(Errc::invalid_argument, "a backslash ends the command: nothing to escape");
                }
                literal(text_[++i]);
            } else if (c == '[' && starts_placeholder(text_, i)) {
                auto end = placeholder(i);
                if (!end) {
                    return std::unexpected(end.error());
                }
                i = *end;
            } else {
                literal(c);
            }
        }
        if (mode != Mode::plain) {
            return make_error(Errc::invalid_argument, "the {} quote at offset {} is never closed: {}",
                              mode == Mode::single ? "single" : "double", quote_start, text_.substr(quote_start, 40));
        }
        end_word();
        if (words_.empty()) {
            return make_error(Errc::invalid_argument, "the command is empty");
        }
        if (!words_.front().empty() && words_.front().front().is_placeholder) {
            // The program itself must be named, not computed from a data block.
            return make_error(Errc::invalid_argument, "the program name is a placeholder ({}): name the program",
                              words_.front().front().placeholder.text);
        }
        return std::move(words_);
    }

private:
    void literal(char c) {
        in_word_ = true;
        if (word_.empty() || word_.back().is_placeholder) {
            word_.push_back(WordPart{});
        }
        word_.back().literal.push_back(c);
    }

    // Returns the offset of the closing ']'.
    Result<std::size_t> placeholder(std::size_t at) {
        std::size_t end = at;
        while (end < text_.size() && text_[end] != ']' && !is_blank(text_[end])) {
            ++end;
        }
        if (end == text_.size() || text_[end] != ']') {
            return make_error(Errc::invalid_argument, "the placeholder '{}' has no closing ']'",
                              text_.substr(at, end - at));
        }
        auto p = parse_placeholder(text_.substr(at, end - at + 1));
        if (!p) {
            return std::unexpected(p.error());
        }
        in_word_ = true;
        word_.push_back(WordPart{true, {}, std::move(*p)});
        return end;
    }

    void end_word() {
        if (in_word_) {
            if (word_.empty()) {
                word_.push_back(WordPart{});
            }
            words_.push_back(std::move(word_));
            word_ = {};
        }
        in_word_ = false;
    }

    std::string_view text_;
    std::vector<Word> words_;
    Word word_;
    bool in_word_ = false;
};

std::string_view trim(const void* data, std::size_t size) {
    std::string_view text(static_cast<const char*>(data), size);
    while (!text.empty() && (is_blank(text.back()) || text.back() == '\0')) {
        text.remove_suffix(1);
    }
    while (!text.empty() && (is_blank(text.front()) || text.front() == '\0')) {
        text.remove_prefix(1);
    }
    return text;
}

}  // namespace

Result<std::vector<Word>> split_command(std::string_view text) {
    return Splitter(text).run();
}

std::vector<Placeholder> placeholders(const std::vector<Word>& words) {
    std::vector<Placeholder> out;
    for (const Word& word : words) {
        for (const WordPart& part : word) {
            if (part.is_placeholder) {
                out.push_back(part.placeholder);
            }
        }
    }
    return out;
}

Result<std::vector<std::string>> expand(const std::vector<Word>& words, const Resolver& resolve) {
    std::vector<std::string> argv;
    argv.reserve(words.size());
    for (const Word& word : words) {
        std::string text;
        for (const WordPart& part : word) {
            if (!part.is_placeholder) {
                text += part.literal;
                continue;
            }
            auto value = resolve(part.placeholder);
            if (!value) {
                return std::unexpected(value.error());
            }
            text += *value;
        }
        argv.push_back(std::move(text));
    }
    return argv;
}

Result<std::string> int_argument(const void* data, std::size_t size) {
    if (size == sizeof(std::int32_t)) {
        std::int32_t v = 0;
        std::memcpy(&v, data, sizeof v);
        return fmt::format("{}", v);
    }
    if (size == sizeof(std::int64_t)) {
        std::int64_t v = 0;
        std::memcpy(&v, data, sizeof v);
        return fmt::format("{}", v);
    }
    const std::string_view text = trim(data, size);
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size()) {
        return make_error(Errc::invalid_argument,
                          "the data block of {} bytes is not an integer (4 or 8 bytes, or decimal text; it starts "
                          "with '{}')",
                          size, std::string(text.substr(0, 16)));
    }
    return fmt::format("{}", v);
}

Result<std::string> float_argument(const void* data, std::size_t size) {
    double v = 0;
    if (size == sizeof(float)) {
        float f = 0;
        std::memcpy(&f, data, sizeof f);
        v = static_cast<double>(f);
    } else if (size == sizeof(double)) {
        std::memcpy(&v, data, sizeof v);
    } else {
        const std::string_view text = trim(data, size);
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size()) {
            return make_error(Errc::invalid_argument,
                              "the data block of {} bytes is not a number (4 or 8 bytes, or decimal text; it starts "
                              "with '{}')",
                              size, std::string(text.substr(0, 16)));
        }
    }
    if (!std::isfinite(v)) {
        return make_error(Errc::invalid_argument, "the data block of {} bytes holds {}, not a finite number", size, v);
    }
    return fmt::format("{}", v);
}

Result<std::string> str_argument(const void* data, std::size_t size) {
    const auto* bytes = static_cast<const char*>(data);
    const auto n = static_cast<std::size_t>(std::find(bytes, bytes + size, '\0') - bytes);
    return std::string(bytes, n);
}

std::string show_command(const std::vector<std::string>& argv) {
    std::string out;
    for (const std::string& arg : argv) {
        if (!out.empty()) {
            out += ' ';
        }
        const bool plain = !arg.empty() && arg.find_first_of(" \t\n'\"\\$`;&|<>()*?[]{}") == std::string::npos;
        if (plain) {
            out += arg;
            continue;
        }
        out += '\'';
        for (char c : arg) {
            if (c == '\'') {
                out += "'\\''";
            } else {
                out += c;
            }
        }
        out += '\'';
    }
    return out;
}

}  // namespace strata::external
