// SPDX-License-Identifier: MIT
// Segment: opening, named and unnamed objects, handles.
#include "strata/shm/segment.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

#include <boost/interprocess/exceptions.hpp>

#include "core/log.hpp"
#include "shm/files.hpp"
#include "shm/layout.hpp"
#include "shm/objects.hpp"

namespace strata {

using shm_detail::Attachment;
using shm_detail::ObjectHeader;
using shm_detail::ObjectSpec;

namespace {

Result<void> check_segment_name(std::string_view name) {
    if (name.empty() || name.size() > 200) {
        return make_error(Errc::invalid_argument, "Segment::open: name='{}': must have 1..200 characters (has {})",
                          name, name.size());
    }
    for (const char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                        c == '_' || c == '-';
        if (!ok) {
            return make_error(Errc::invalid_argument,
                              "Segment::open: name='{}': character '{}' is not allowed (use A-Z a-z 0-9 . _ -)", name,
                              c);
        }
    }
    if (name == "." || name == "..") {
        return make_error(Errc::invalid_argument, "Segment::open: name='{}': not a usable name", name);
    }
    return {};
}

}  // namespace

std::filesystem::path default_segment_dir() {
    if (const char* env = std::getenv("STRATA_SHM_DIR"); env != nullptr && *env != '\0') {
        return env;
    }
    return std::filesystem::path(shm_detail::kPrivateDirBase) / fmt::format("strata-{}", ::geteuid());
}

Result<std::filesystem::path> private_segment_dir(const std::filesystem::path& base, bool create) {
    return shm_detail::private_dir(base, create, "private_segment_dir");
}

Result<Segment> Segment::open(std::string_view name, SegmentMode mode, std::size_t size,
                              const SegmentOptions& options) {
    if (auto ok = check_segment_name(name); !ok) {
        return std::unexpected(ok.error());
    }
    if (static_cast<int>(mode) < 0 || static_cast<int>(mode) > static_cast<int>(SegmentMode::read_only)) {
        return make_error(Errc::invalid_argument, "Segment::open: mode={}: not a SegmentMode", static_cast<int>(mode));
    }
    const bool creates =
        mode == SegmentMode::create_only || mode == SegmentMode::open_or_create || mode == SegmentMode::recreate;
    if (creates && size < shm_detail::kMinSegmentBytes) {
        return make_error(Errc::invalid_argument,
                          "Segment::open: size={}: mode={} may create segment '{}', which needs a size of at least "
                          "{} bytes (1 MiB)",
                          size, to_string(mode), name, shm_detail::kMinSegmentBytes);
    }
    std::filesystem::path dir = options.dir.empty() ? default_segment_dir() : options.dir;
    if (dir == std::filesystem::path(shm_detail::kPrivateDirBase) / fmt::format("strata-{}", ::geteuid())) {
        // The default: a directory only this user can write, checked on every open.
        auto made = shm_detail::private_dir(shm_detail::kPrivateDirBase, true, "Segment::open");
        if (!made) {
            return std::unexpected(made.error());
        }
        dir = *made;
    }
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        return make_error(Errc::not_found, "Segment::open: dir={}: not an existing directory", dir.string());
    }
    auto attached = shm_detail::attach(name, static_cast<int>(mode), size, dir, options.group_access);
    if (!attached) {
        return std::unexpected(attached.error());
    }
    return Segment(std::move(*attached));
}

Segment::Segment(std::unique_ptr<Attachment> attachment) : attachment_(std::move(attachment)) {}
Segment::Segment(Segment&& other) noexcept = default;
Segment& Segment::operator=(Segment&& other) noexcept {
    if (this != &other) {
        (void)close();
        attachment_ = std::move(other.attachment_);
    }
    return *this;
}
Segment::~Segment() {
    if (auto closed = close(); !closed) {
        detail::log().warn("{}", closed.error().what());
    }
}

Result<void> Segment::close() {
    if (!attachment_) {
        return {};
    }
    auto result = shm_detail::detach(*attachment_);
    attachment_.reset();
    return result;
}

const std::string& Segment::name() const noexcept {
    static const std::string none;
    return attachment_ ? attachment_->name : none;
}
std::size_t Segment::size() const noexcept {
    return attachment_ ? attachment_->size : 0;
}
std::uint64_t Segment::id() const noexcept {
    return attachment_ ? attachment_->header->segment_id : 0;
}
const std::filesystem::path& Segment::path() const noexcept {
    static const std::filesystem::path none;
    return attachment_ ? attachment_->seg_path : none;
}
bool Segment::is_read_only() const noexcept {
    return attachment_ && attachment_->read_only;
}
std::byte* Segment::base() const noexcept {
    return attachment_ ? attachment_->base : nullptr;
}
unsigned Segment::user_slot() const noexcept {
    return attachment_ ? attachment_->slot : 0;
}
std::size_t Segment::free_bytes() const {
    return attachment_ ? attachment_->manager->get_free_memory() : 0;
}
std::string Segment::broken_reason() const {
    return attachment_ ? attachment_->broken_reason() : std::string("the segment is closed");
}
allocator<void> Segment::get_allocator() const {
    return allocator<void>(attachment_ ? attachment_->manager : nullptr);
}

Result<void*> Segment::place(std::string_view name, bool named, const ObjectSpec& spec,
                             shm_detail::ConstructFn construct, void* context) {
    const std::string_view op = named ? "Segment::simple/container" : "Segment::make";
    if (auto ok = shm_detail::usable(attachment_.get(), op, true); !ok) {
        return std::unexpected(ok.error());
    }
    if (named) {
        if (auto ok = shm_detail::check_object_name(op, name); !ok) {
            return std::unexpected(ok.error());
        }
    }
    return shm_detail::place_object(*attachment_, op, name, spec, construct, context);
}

Result<void*> Segment::find_raw(std::string_view name, const ObjectSpec& spec) const {
    if (auto ok = shm_detail::usable(attachment_.get(), "Segment::find", false); !ok) {
        return std::unexpected(ok.error());
    }
    if (auto ok = shm_detail::check_object_name("Segment::find", name); !ok) {
        return std::unexpected(ok.error());
    }
    return shm_detail::find_object(*attachment_, "Segment::find", name, spec);
}

Result<void> Segment::erase_raw(std::string_view name, const void* object, const ObjectSpec& spec,
                                shm_detail::DestroyFn destroy_fn) {
    const std::string_view op = object == nullptr ? "Segment::erase" : "Segment::destroy";
    if (auto ok = shm_detail::usable(attachment_.get(), op, true); !ok) {
        return std::unexpected(ok.error());
    }
    if (object == nullptr) {
        if (auto ok = shm_detail::check_object_name(op, name); !ok) {
            return std::unexpected(ok.error());
        }
    }
    return shm_detail::erase_object(*attachment_, op, name, object, spec, destroy_fn);
}

Result<Handle> Segment::save_raw(const void* object, const ObjectSpec& spec) const {
    if (auto ok = shm_detail::usable(attachment_.get(), "Segment::save", false); !ok) {
        return std::unexpected(ok.error());
    }
    auto header = shm_detail::header_of(*attachment_, "Segment::save", object, spec);
    if (!header) {
        return std::unexpected(header.error());
    }
    const auto offset = static_cast<std::uint64_t>(static_cast<const std::byte*>(object) - attachment_->base);
    return Handle{attachment_->header->segment_id, (*header)->generation, offset, spec.type};
}

Result<void*> Segment::load_raw(const Handle& handle, const ObjectSpec& spec) const {
    if (auto ok = shm_detail::usable(attachment_.get(), "Segment::load", false); !ok) {
        return std::unexpected(ok.error());
    }
    return shm_detail::load_object(*attachment_, handle, spec);
}

}  // namespace strata
