// SPDX-License-Identifier: MIT
// Reading the configuration file of external tasks (config.hpp).
#include "config.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/toml.hpp"
#include "core/toml_text.hpp"

namespace strata::external {

namespace {

constexpr std::string_view known_keys[] = {"command",
                                           "env",
                                           "cwd",
                                           "timeout",
                                           "stdout",
                                           "stderr",
                                           "exposure",
                                           "success_exit_codes",
                                           "allow_empty_outputs",
                                           "unregistered",
                                           "container"};

std::string describe(const toml::node& node) {
    std::ostringstream out;
    node.visit([&](const auto& v) { out << v; });
    return out.str();
}

std::string quote_value(std::string_view text) {
    return fmt::format("\"{}\"", text);
}

int line_of(const toml::node& node) {
    return static_cast<int>(node.source().begin.line);
}

class EntryReader {
public:
    EntryReader(Entry& entry, const toml::table& table) : entry_(entry), table_(table) {}

    Result<void> read() {
        for (const auto& [key, value] : table_) {
            entry_.key_lines.emplace(std::string(key.str()), line_of(value));
        }
        for (const auto& [key, value] : table_) {
            bool known = false;
            for (auto k : known_keys) {
                known = known || k == key.str();
            }
            if (!known) {
                return fail(key.str(), describe(value),
                            "unknown key (known: command, env, cwd, timeout, stdout, stderr, exposure, "
                            "success_exit_codes, allow_empty_outputs, unregistered, container)");
            }
        }
        if (auto r = read_command(); !r) {
            return r;
        }
        if (auto r = read_env(); !r) {
            return r;
        }
        if (auto r = read_scalars(); !r) {
            return r;
        }
        if (auto r = read_stream("stdout", entry_.stdout_spec, false); !r) {
            return r;
        }
        if (auto r = read_stream("stderr", entry_.stderr_spec, true); !r) {
            return r;
        }
        return read_exit_codes();
    }

private:
    std::unexpected<Error> fail(std::string_view key, std::string_view value, std::string_view cause) const {
        return make_error(Errc::invalid_argument, "{}{}", entry_.where(key, value), cause);
    }

    Result<std::string> string_key(std::string_view key) const {
        const toml::node* node = table_.get(key);
        if (node == nullptr) {
            return std::string();
        }
        if (const auto* s = node->as_string()) {
            return s->get();
        }
        return fail(key, describe(*node), "not a string");
    }

    Result<void> read_command() {
        const toml::node* node = table_.get("command");
        if (node == nullptr) {
            return make_error(Errc::invalid_argument,
                              "{}:{}: entry [{}]: key command: missing: every entry names its "
                              "program in command",
                              entry_.file, entry_.line, entry_.name);
        }
        auto text = string_key("command");
        if (!text) {
            return std::unexpected(text.error());
        }
        auto words = split_command(*text);
        if (!words) {
            return fail("command", quote_value(*text), words.error().message);
        }
        entry_.command_text = *text;
        entry_.command = std::move(*words);
        return {};
    }

    Result<void> read_env() {
        const toml::node* node = table_.get("env");
        if (node == nullptr) {
            return {};
        }
        const auto* env = node->as_table();
        if (env == nullptr) {
            return fail("env", describe(*node), "not a table (write env = { NAME = \"value\" })");
        }
        for (const auto& [name, value] : *env) {
            const auto* s = value.as_string();
            if (s == nullptr) {
                return fail(fmt::format("env.{}", name.str()), describe(value), "not a string");
            }
            if (name.str().empty() || name.str().find('=') != std::string_view::npos) {
                return fail(fmt::format("env.{}", name.str()), quote_value(s->get()),
                            "an environment variable's name must be non-empty and hold no '='");
            }
            entry_.env.emplace_back(std::string(name.str()), s->get());
        }
        return {};
    }

    Result<void> read_scalars() {
        auto cwd = string_key("cwd");
        if (!cwd) {
            return std::unexpected(cwd.error());
        }
        entry_.cwd = *cwd;
        if (const toml::node* node = table_.get("timeout")) {
            std::optional<double> seconds;
            if (const auto* i = node->as_integer()) {
                seconds = static_cast<double>(i->get());
            }
            if (const auto* f = node->as_floating_point()) {
                seconds = f->get();
            }
            if (!seconds || !(*seconds > 0) || *seconds > 1e7) {
                return fail("timeout", describe(*node), "not a number of seconds above 0");
            }
            entry_.timeout = std::chrono::milliseconds(std::llround(*seconds * 1000.0));
        }
        auto exposure = string_key("exposure");
        if (!exposure) {
            return std::unexpected(exposure.error());
        }
        if (table_.get("exposure") != nullptr) {
            const auto choice = exposure_choice_of(*exposure);
            if (!choice) {
                return fail("exposure", quote_value(*exposure), "expected auto, memfd or fuse");
            }
            entry_.exposure = *choice;
        }
        auto unregistered = string_key("unregistered");
        if (!unregistered) {
            return std::unexpected(unregistered.error());
        }
        if (table_.get("unregistered") != nullptr) {
            if (*unregistered != "error" && *unregistered != "temporary") {
                return fail("unregistered", quote_value(*unregistered), "expected error or temporary");
            }
            entry_.temporary_files = *unregistered == "temporary";
            if (entry_.temporary_files && table_.get("exposure") != nullptr &&
                entry_.exposure == ExposureChoice::memfd) {
                return fail("unregistered", quote_value(*unregistered),
                            "temporary files need exposure fuse or auto: memfd paths (/proc/self/fd/N) have no "
                            "directory to create files in");
            }
        }
        auto container = string_key("container");
        if (!container) {
            return std::unexpected(container.error());
        }
        if (table_.get("container") != nullptr) {
            if (*container != "strata" && !std::filesystem::path(*container).is_absolute()) {
                return fail("container", quote_value(*container),
                            "expected \"strata\" (the image of scripts/container-image) or the absolute path of a "
                            "root file system");
            }
            entry_.container = *container;
        }
        if (const toml::node* node = table_.get("allow_empty_outputs")) {
            const auto* b = node->as_boolean();
            if (b == nullptr) {
                return fail("allow_empty_outputs", describe(*node), "not true or false");
            }
            entry_.allow_empty_outputs = b->get();
        }
        return {};
    }

    Result<void> read_stream(std::string_view key, StreamSpec& spec, bool is_stderr) {
        auto text = string_key(key);
        if (!text) {
            return std::unexpected(text.error());
        }
        if (table_.get(key) == nullptr) {
            return {};
        }
        using T = StreamSpec::Target;
        if (*text == "inherit") {
            spec.target = T::inherit;
        } else if (*text == "null") {
            spec.target = T::null;
        } else if (*text == "tail" && is_stderr) {
            spec.target = T::tail;
        } else if (*text == "tail") {
            return fail(key, quote_value(*text),
                        "tail is for stderr only; expected inherit, null, [out:K] or a file path");
        } else if (text->starts_with("[")) {
            std::size_t k = 0;
            const std::string_view digits = std::string_view(*text).substr(std::min<std::size_t>(5, text->size()));
            auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
            if (!text->starts_with("[out:") || ec != std::errc{} || ptr == digits.data() ||
                std::string_view(ptr, static_cast<std::size_t>(digits.data() + digits.size() - ptr)) != "]") {
                return fail(key, quote_value(*text), "expected inherit, null, tail (stderr), [out:K] or a file path");
            }
            spec.target = T::output;
            spec.output = k;
        } else if (!text->empty()) {
            spec.target = T::file;
            spec.path = *text;
        } else {
            return fail(key, quote_value(*text), "expected inherit, null, tail (stderr), [out:K] or a file path");
        }
        return {};
    }

    Result<void> read_exit_codes() {
        const toml::node* node = table_.get("success_exit_codes");
        if (node == nullptr) {
            return {};
        }
        const auto* array = node->as_array();
        if (array == nullptr || array->empty()) {
            return fail("success_exit_codes", describe(*node), "not a non-empty array of exit codes (0..255)");
        }
        entry_.success_exit_codes.clear();
        for (const auto& item : *array) {
            const auto* i = item.as_integer();
            if (i == nullptr || i->get() < 0 || i->get() > 255) {
                return fail("success_exit_codes", describe(*node),
                            fmt::format("{} is not an exit code (0..255)", describe(item)));
            }
            entry_.success_exit_codes.push_back(static_cast<int>(i->get()));
        }
        return {};
    }

    Entry& entry_;
    const toml::table& table_;
};

}  // namespace

std::string_view to_string(ExposureChoice choice) noexcept {
    switch (choice) {
        case ExposureChoice::automatic: return "auto";
        case ExposureChoice::memfd: return "memfd";
        case ExposureChoice::fuse: return "fuse";
    }
    return "?";
}

std::optional<ExposureChoice> exposure_choice_of(std::string_view text) noexcept {
    if (text == "auto") {
        return ExposureChoice::automatic;
    }
    if (text == "memfd") {
        return ExposureChoice::memfd;
    }
    if (text == "fuse") {
        return ExposureChoice::fuse;
    }
    return std::nullopt;
}

std::string Entry::where(std::string_view key, std::string_view value) const {
    auto it = key_lines.find(key.substr(0, key.find('.')));
    const int at = it != key_lines.end() ? it->second : line;
    return fmt::format("{}:{}: entry [{}]: key {}: value {}: ", file, at, name, key, value);
}

Result<Config> Config::load(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) {
        const int err = errno;
        return make_sys_error(err, "external config {}: cannot read it", path.string());
    }
    std::ostringstream text;
    text << in.rdbuf();
    return parse(text.str(), path.string());
}

Result<Config> Config::parse(std::string_view text, std::string_view source) {
    if (const std::string bad = detail::toml_control_character(text); !bad.empty()) {
        return make_error(Errc::invalid_argument, "{}: not valid TOML: {}", source, bad);
    }
    toml::table root;
    try {
        root = toml::parse(text, source);
    } catch (const toml::parse_error& e) {
        return make_error(Errc::invalid_argument, "{}:{}: not valid TOML: {}", source, e.source().begin.line,
                          e.description());
    }
    Config config;
    config.source_ = std::string(source);
    for (const auto& [name, node] : root) {
        const auto* table = node.as_table();
        if (table == nullptr) {
            return make_error(Errc::invalid_argument,
                              "{}:{}: key {}: value {}: not an entry (each program is a table: [{}] then command = "
                              "\"...\")",
                              source, line_of(node), name.str(), describe(node), name.str());
        }
        Entry entry;
        entry.name = std::string(name.str());
        entry.file = config.source_;
        entry.line = line_of(node);
        if (auto r = EntryReader(entry, *table).read(); !r) {
            return std::unexpected(r.error());
        }
        config.entries_.push_back(std::move(entry));
    }
    return config;
}

Result<const Entry*> Config::find(std::string_view name) const {
    for (const Entry& entry : entries_) {
        if (entry.name == name) {
            return &entry;
        }
    }
    std::string names;
    for (const Entry& entry : entries_) {
        names += (names.empty() ? "" : ", ") + entry.name;
    }
    return make_error(Errc::not_found, "{}: entry [{}]: unknown entry (the file has: {})", source_, name,
                      names.empty() ? "no entries" : names);
}

Result<void> Config::check(const Entry& entry, std::size_t n_inputs, std::size_t n_outputs) {
    for (const Placeholder& p : placeholders(entry.command)) {
        const bool is_out = p.kind == PlaceholderKind::out;
        const std::size_t limit = is_out ? n_outputs : n_inputs;
        if (p.index >= limit) {
            return make_error(Errc::invalid_argument, "{}{} is beyond the template's {} {} (indices 0..{})",
                              entry.where("command", quote_value(entry.command_text)), p.text, limit,
                              is_out ? (limit == 1 ? "output" : "outputs") : (limit == 1 ? "input" : "inputs"),
                              limit == 0 ? std::string("none") : std::to_string(limit - 1));
        }
    }
    for (auto [key, spec] : {std::pair{"stdout", &entry.stdout_spec}, std::pair{"stderr", &entry.stderr_spec}}) {
        if (spec->target == StreamSpec::Target::output && spec->output >= n_outputs) {
            return make_error(Errc::invalid_argument, "{}[out:{}] is beyond the template's {} outputs",
                              entry.where(key, quote_value(fmt::format("[out:{}]", spec->output))), spec->output,
                              n_outputs);
        }
    }
    return {};
}

}  // namespace strata::external
