// SPDX-License-Identifier: MIT
// Hint parsing. Every value is checked before anything is created, and a
// value that cannot be honoured is an error: the prototype's silent fallbacks
// (memory without a filename, decimal file_perm, factor > 1) are what this
// file exists to prevent.
#include "mpi/hints.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include <unistd.h>

namespace strata::mpi {

namespace {

constexpr std::string_view storage_prefix = "storage_alloc_";

constexpr std::array known_keys = {
    std::string_view{"alloc_type"},
    std::string_view{"storage_alloc_filename"},
    std::string_view{"storage_alloc_offset"},
    std::string_view{"storage_alloc_factor"},
    std::string_view{"storage_alloc_order"},
    std::string_view{"storage_alloc_unlink"},
    std::string_view{"storage_alloc_discard"},
    std::string_view{"storage_alloc_sync"},
    std::string_view{"storage_alloc_allow_other_owner"},
    std::string_view{"storage_alloc_remote_sync"},
    std::string_view{"access_style"},
    std::string_view{"file_perm"},
    std::string_view{"striping_factor"},
    std::string_view{"striping_unit"},
    std::string_view{"alloc_shared_noncontig"},
};

std::string lower(std::string_view text) {
    std::string out(text);
    std::ranges::transform(out, out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) {
        text.remove_prefix(1);
    }
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) {
        text.remove_suffix(1);
    }
    return text;
}

std::unexpected<HintError> reject(std::string_view key, std::string_view value, std::string cause) {
    return std::unexpected(HintError{std::string(key), std::string(value), std::move(cause)});
}

/// The region layer's parse messages start with "key=value: "; keep only the cause.
std::string cause_of(const Error& error, std::string_view key, std::string_view value) {
    const std::string prefix = std::string(key) + "=" + std::string(value) + ": ";
    std::string_view message = error.message;
    if (message.starts_with(prefix)) {
        message.remove_prefix(prefix.size());
    }
    return std::string(message);
}

std::expected<bool, HintError> parse_bool(std::string_view key, std::string_view value) {
    const std::string v = lower(trim(value));
    if (v == "true") {
        return true;
    }
    if (v == "false") {
        return false;
    }
    return reject(key, value, "expected true or false");
}

std::expected<std::uint64_t, HintError> parse_unsigned(std::string_view key, std::string_view value, int base) {
    const std::string_view v = trim(value);
    std::uint64_t out = 0;
    const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out, base);
    if (v.empty() || ec != std::errc{} || ptr != v.data() + v.size()) {
        return reject(key, value, base == 8 ? "not an octal number" : "not a non-negative integer");
    }
    return out;
}

/// MPI-IO access_style is a comma-separated list; madvise takes one advice,
/// so the first entry gives the kernel advice, and every entry is recorded in
/// `styles` for access_plan().
std::expected<Advice, HintError> parse_access_style(std::string_view value, unsigned& styles) {
    std::optional<Advice> first;
    std::string_view rest = value;
    styles = 0;
    while (true) {
        const auto comma = rest.find(',');
        const std::string_view item = trim(rest.substr(0, comma));
        std::optional<Advice> advice;
        if (item == "read_once") {
            advice = Advice::sequential;  // read once in order: large-folio read-ahead
            styles |= access::read_once;
        } else if (item == "write_once") {
            // Written once, in full: large folios make write faults cheap, and
            // folio-granular dirty tracking writes nothing the program did not.
            advice = Advice::sequential;
            styles |= access::write_once;
        } else if (item == "reverse_sequential") {
            advice = Advice::random;  // forward read-ahead would fetch the wrong pages
            styles |= access::reverse_sequential;
        } else if (auto region_name = parse_advice(item); region_name) {
            advice = *region_name;
            styles |= *region_name == Advice::sequential     ? access::sequential
                      : *region_name == Advice::random       ? access::random
                      : *region_name == Advice::read_mostly  ? access::read_mostly
                      : *region_name == Advice::write_mostly ? access::write_mostly
                                                             : access::normal;
        } else {
            return reject("access_style", value,
                          "unknown access style '" + std::string(item) +
                              "' (expected read_once, write_once, read_mostly, write_mostly, sequential, "
                              "reverse_sequential, random or normal)");
        }
        if (!first) {
            first = advice;
        }
        if (comma == std::string_view::npos) {
            return *first;
        }
        rest.remove_prefix(comma + 1);
    }
}

std::expected<void, HintError> parse_storage_keys(const HintMap& hints, WindowHints& out) {
    auto value_of = [&](std::string_view key) -> const std::string* {
        const auto it = hints.find(key);
        return it == hints.end() ? nullptr : &it->second;
    };
    const std::string* filename = value_of("storage_alloc_filename");
    if (filename == nullptr || trim(*filename).empty()) {
        return reject("storage_alloc_filename", filename == nullptr ? "" : *filename,
                      "alloc_type=storage needs a file or block device path");
    }
    out.filename_template = std::string(trim(*filename));
    if (auto check = expand_filename(out.filename_template, 0, 0, "0"); !check) {
        return std::unexpected(check.error());
    }
    if (const auto* v = value_of("storage_alloc_offset")) {
        auto offset = parse_unsigned("storage_alloc_offset", *v, 10);
        if (!offset) {
            return std::unexpected(offset.error());
        }
        const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
        if (*offset % page != 0) {
            return reject("storage_alloc_offset", *v,
                          "not a multiple of the page size " + std::to_string(page) + " (mmap maps whole pages)");
        }
        out.offset = *offset;
    }
    if (const auto* v = value_of("storage_alloc_factor")) {
        auto factor = Factor::parse(trim(*v), "storage_alloc_factor");
        if (!factor) {
            return reject("storage_alloc_factor", *v, cause_of(factor.error(), "storage_alloc_factor", trim(*v)));
        }
        out.factor_given = true;
        out.factor_auto = factor->is_auto();
        out.storage_fraction = factor->is_auto() ? 1.0 : factor->fraction();
    }
    if (const auto* v = value_of("storage_alloc_order")) {
        auto order = parse_order(trim(*v), "storage_alloc_order");
        if (!order) {
            return reject("storage_alloc_order", *v, cause_of(order.error(), "storage_alloc_order", trim(*v)));
        }
        out.order = *order;
    }
    for (auto [key, flag] :
         {std::pair{"storage_alloc_unlink", &out.unlink}, std::pair{"storage_alloc_discard", &out.discard},
          std::pair{"storage_alloc_allow_other_owner", &out.allow_other_owner},
          std::pair{"storage_alloc_remote_sync", &out.remote_sync}}) {
        if (const auto* v = value_of(key)) {
            auto parsed = parse_bool(key, *v);
            if (!parsed) {
                return std::unexpected(parsed.error());
            }
            *flag = *parsed;
        }
    }
    if (const auto* v = value_of("storage_alloc_sync")) {
        const std::string mode = lower(trim(*v));
        if (mode == "on_sync") {
            out.sync = SyncMode::on_sync;
        } else if (mode == "async") {
            out.sync = SyncMode::async;
        } else if (mode == "on_free") {
            out.sync = SyncMode::on_free;
        } else {
            return reject("storage_alloc_sync", *v, "unknown sync mode (expected on_sync, async or on_free)");
        }
    }
    if (out.sync == SyncMode::async) {
        if (auto period = flush_interval_from_env(); !period) {
            return std::unexpected(period.error());  // checked when it matters, not at every window
        }
    }
    if (out.discard && out.sync == SyncMode::async) {
        return reject("storage_alloc_sync", "async",
                      "cannot be combined with storage_alloc_discard=true: a background flush would write "
                      "the changes that discard must drop");
    }
    return {};
}

}  // namespace

std::expected<std::chrono::milliseconds, HintError> flush_interval_from_env() {
    const char* text = std::getenv("STRATA_MPI_FLUSH_INTERVAL_MS");
    if (text == nullptr) {
        return std::chrono::milliseconds(1000);
    }
    const std::string_view value = trim(text);
    std::uint64_t ms = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (ec != std::errc{} || end != value.data() + value.size() || ms < 1 || ms > 86'400'000) {
        return reject("STRATA_MPI_FLUSH_INTERVAL_MS", text,
                      "not a whole number of milliseconds from 1 to 86400000 (the period of "
                      "storage_alloc_sync=async's background write-back)");
    }
    return std::chrono::milliseconds(ms);
}

std::string_view to_string(SyncMode mode) noexcept {
    switch (mode) {
        case SyncMode::on_sync: return "on_sync";
        case SyncMode::async: return "async";
        case SyncMode::on_free: return "on_free";
    }
    return "unknown";
}

AccessPlan access_plan(unsigned styles, std::optional<Advice> first) noexcept {
    AccessPlan plan;
    // read_mostly: the region's MADV_WILLNEED reads only one read-ahead
    // window; prefetch reads all of it and keeps page-granular faults.
    plan.advice = first == Advice::read_mostly ? std::nullopt : first;
    const unsigned writes = access::write_once | access::write_mostly | access::random | access::reverse_sequential;
    // No hint: a window over data already in the file is most likely a
    // restart, and page-at-a-time faults read it at a few MB/s; fetching it
    // first costs one pass of read-ahead. Sequential and read_once windows
    // have large-folio read-ahead on their faults, which is faster still.
    plan.prefetch = (styles == 0 || (styles & access::read_mostly) != 0) && (styles & writes) == 0;
    plan.populate = (styles & access::write_once) != 0;
    // write_mostly: rewritten between syncs; direct write-back keeps the
    // stores at anonymous-memory speed and syncs with O_DIRECT, but no
    // write-behind (pages written behind would be stored to again, each
    // store after a pass costing a write-protect fault).
    plan.direct = (styles & (access::write_once | access::write_mostly)) != 0;
    plan.write_behind = (styles & access::write_once) != 0;
    // read_once: a restart reads the whole window once; parallel O_DIRECT
    // reads outrun one stream of read-ahead and leave no faults to take.
    plan.fill = (styles & access::read_once) != 0;
    plan.direct = plan.direct || plan.fill;
    return plan;
}

Factor WindowHints::memory_factor() const {
    return factor_auto ? Factor::automatic() : Factor::fixed(1.0 - storage_fraction);
}

bool is_storage_key(std::string_view key) noexcept {
    return key == "alloc_type" || key.starts_with(storage_prefix);
}

bool is_known_key(std::string_view key) noexcept {
    return std::ranges::find(known_keys, key) != known_keys.end();
}

std::expected<WindowHints, HintError> parse_hints(const HintMap& hints) {
    WindowHints out;
    for (const auto& [key, value] : hints) {
        if (is_known_key(key)) {
            out.given.emplace(key, value);
        }
    }
    if (const auto it = hints.find("alloc_type"); it != hints.end()) {
        const std::string type = lower(trim(it->second));
        if (type == "storage") {
            out.storage = true;
        } else if (type != "memory") {
            return reject("alloc_type", it->second, "unknown allocation type (expected memory or storage)");
        }
    }
    if (const auto it = hints.find("alloc_shared_noncontig"); it != hints.end()) {
        auto parsed = parse_bool(it->first, it->second);
        if (!parsed) {
            return std::unexpected(parsed.error());
        }
        out.shared_noncontig = *parsed;
    }
    if (!out.storage) {
        return out;
    }
    if (auto ok = parse_storage_keys(hints, out); !ok) {
        return std::unexpected(ok.error());
    }
    if (const auto it = hints.find("access_style"); it != hints.end()) {
        auto advice = parse_access_style(it->second, out.access_styles);
        if (!advice) {
            return std::unexpected(advice.error());
        }
        out.advice = *advice;
    }
    if (const auto it = hints.find("file_perm"); it != hints.end()) {
        auto perm = parse_unsigned(it->first, it->second, 8);
        if (!perm) {
            return std::unexpected(perm.error());
        }
        if (*perm > 07777) {
            return reject(it->first, it->second, "not a file mode (at most 07777)");
        }
        out.file_perm = static_cast<mode_t>(*perm);
    }
    for (auto [key, slot] :
         {std::pair{"striping_factor", &out.striping_factor}, std::pair{"striping_unit", &out.striping_unit}}) {
        if (const auto it = hints.find(key); it != hints.end()) {
            auto n = parse_unsigned(key, it->second, 10);
            if (!n || *n == 0) {
                return reject(key, it->second, "expected a positive integer");
            }
            *slot = *n;
        }
    }
    return out;
}

std::string known_keys_list() {
    std::string out;
    for (const auto key : known_keys) {
        out += out.empty() ? "" : ", ";
        out += key;
    }
    return out;
}

std::expected<HintMap, HintError> parse_hint_list(std::string_view text, std::string_view source, bool known_only) {
    HintMap out;
    while (!text.empty()) {
        const auto comma = text.find(',');
        const std::string_view item = trim(text.substr(0, comma));
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
        if (item.empty()) {
            continue;
        }
        const auto equals = item.find('=');
        if (equals == std::string_view::npos || trim(item.substr(0, equals)).empty()) {
            return reject(source, item, "expected key=value entries separated by commas");
        }
        const std::string key(trim(item.substr(0, equals)));
        if (known_only && !is_known_key(key)) {
            return reject(source, item, "unknown key '" + key + "' (known keys: " + known_keys_list() + ")");
        }
        out.insert_or_assign(key, std::string(trim(item.substr(equals + 1))));
    }
    return out;
}

std::expected<std::string, HintError> expand_filename(std::string_view tmpl, int rank, unsigned index,
                                                      std::string_view job, std::string_view kind) {
    std::string out;
    for (std::size_t i = 0; i < tmpl.size(); ++i) {
        if (tmpl[i] != '%') {
            out += tmpl[i];
            continue;
        }
        const char what = i + 1 < tmpl.size() ? tmpl[i + 1] : '\0';
        ++i;
        switch (what) {
            case 'r': out += std::to_string(rank); break;
            case 'w': out += std::to_string(index); break;
            case 'j': out += job; break;
            case 'k': out += kind; break;
            case '%': out += '%'; break;
            default:
                return reject("storage_alloc_filename", tmpl,
                              "unknown placeholder '%" + std::string(what == '\0' ? "" : std::string(1, what)) +
                                  "' (expected %r, %w, %k, %j or %%)");
        }
    }
    return out;
}

}  // namespace strata::mpi
