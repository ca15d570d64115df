// SPDX-License-Identifier: MIT
// Named and unnamed objects, handles, and the allocator entry points.
#include "shm/objects.hpp"

#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include <boost/interprocess/exceptions.hpp>

namespace strata::shm_detail {
namespace bip = boost::interprocess;

namespace {

constexpr std::size_t kPrefix = 16;

/// One byte of an object's array that Boost's construct leaves as it finds it
/// (a user-provided constructor that does nothing): the array of a 1 GB port
/// is not written, so the name index is held for the allocation alone, never
/// for a pass over the object's bytes (the constructor runs after it).
struct RawByte {
    unsigned char value;
    RawByte() noexcept {}  // NOLINT(cppcoreguidelines-pro-type-member-init,modernize-use-equals-default)
};
static_assert(sizeof(RawByte) == 1 && alignof(RawByte) == 1);

std::uint64_t live_magic(const Attachment& a, const ObjectHeader* h) {
    return kObjectMagic ^ static_cast<std::uint64_t>(reinterpret_cast<const std::byte*>(h) - a.base);
}

std::size_t alignment_of(const ObjectSpec& spec) {
    return std::max<std::size_t>(spec.align, 16);
}

std::size_t array_bytes(const ObjectSpec& spec) {
    return kPrefix + sizeof(ObjectHeader) + spec.size + alignment_of(spec);
}

void* object_of(ObjectHeader* h) {
    return reinterpret_cast<std::byte*>(h) + sizeof(ObjectHeader);
}

std::string_view stored_type(const ObjectHeader* h) {
    return {h->type_name, ::strnlen(h->type_name, sizeof h->type_name)};
}

// Where the header of the object in `array` lies, as its creator published it
// (release) once the array was allocated: 0 until then. A user that finds the
// name before that moment must wait for it, not read a zero and a wrong header.
std::uint64_t published_offset(void* array) {
    return std::atomic_ref(*static_cast<std::uint64_t*>(array)).load(std::memory_order_acquire);
}

/// The attachment that made `array` (its token, stored beside the offset
/// while the name index was held); 0 if unknown.
std::uint64_t creator_of(void* array) {
    return std::atomic_ref(static_cast<std::uint64_t*>(array)[1]).load(std::memory_order_acquire);
}

/// Waits for the object another user is still placing and constructing in
/// `array` (a vector of a GB takes seconds to construct): while its creator
/// is attached, up to 60 s; 1 s once the creator is gone or unknown. Its
/// header, or null when it never became live.
ObjectHeader* wait_until_live(const Attachment& a, void* array) {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
        if (const std::uint64_t offset = published_offset(array); offset != 0) {
            auto* h = reinterpret_cast<ObjectHeader*>(static_cast<std::byte*>(array) + offset);
            if (std::atomic_ref(h->magic).load(std::memory_order_acquire) == live_magic(a, h)) {
                return h;
            }
        }
        const auto waited = std::chrono::steady_clock::now() - start;
        const std::uint64_t creator = creator_of(array);
        if (waited > std::chrono::seconds(60) ||
            (waited > std::chrono::seconds(1) && (creator == 0 || !a.alive(creator)))) {
            return nullptr;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

/// Checks the object's type; `what` (a callable giving its description) is
/// only called on a mismatch, so the handoff path formats nothing.
template <class What>
Result<void> check_type(std::string_view op, const What& what, const ObjectHeader* h, const ObjectSpec& spec) {
    if (h->type != spec.type) {
        return make_error(Errc::invalid_argument, "{}: {} is a '{}', not a '{}'", op, what(), stored_type(h),
                          spec.type_name);
    }
    return {};
}

Result<void*> existing(const Attachment& a, std::string_view op, std::string_view name, void* array,
                       const ObjectSpec& spec) {
    ObjectHeader* h = wait_until_live(a, array);
    if (h == nullptr) {
        return make_error(Errc::busy,
                          "{}: name='{}': the object is still being constructed by another user of segment '{}' "
                          "(or its constructor died)",
                          op, name, a.name);
    }
    if (auto ok = check_type(
            op, [&] { return fmt::format("object '{}' of segment '{}'", name, a.name); }, h, spec);
        !ok) {
        return std::unexpected(ok.error());
    }
    return object_of(h);
}

Error broken_error(const Attachment& a, std::string_view op) {
    return Error{Errc::broken, fmt::format("{}: {}", op, a.broken_reason()), 0};
}

/// Looks `name` up in the name index while holding kIndexByte shared, which
/// every writer holds exclusively while it changes the index: a named array
/// is then found only after its creator cleared its offset word (Boost's
/// construct leaves the bytes as they were). Writers look up through
/// Boost's locked find; a read_only user (which cannot take a lock in its
/// read-only mapping) without Boost's lock.
Result<void*> find_array(Attachment& a, const std::string& name_z) {
    const IndexLock index(a, false);
    if (auto ok = index.status(); !ok) {
        return std::unexpected(ok.error());
    }
    if (!a.read_only) {
        return static_cast<void*>(a.manager->find<RawByte>(name_z.c_str()).first);
    }
    return static_cast<void*>(a.manager->find_no_lock<RawByte>(name_z.c_str()).first);
}

/// Boost's construct of the array for an object; null when out of space. A
/// name another user made meanwhile (already_exists) is retried by the caller.
/// The offset word is cleared and the creator's token set before the name
/// index is let go: the array may hold an earlier object's bytes, and a
/// finder waits while the offset reads 0 and the creator lives.
void* construct_array(Attachment& a, std::string_view name, const std::string& name_z, std::size_t bytes, int attempt) {
    try {
        RawByte* array = name.empty() ? a.manager->construct<RawByte>(bip::anonymous_instance, std::nothrow)[bytes]()
                                      : a.manager->construct<RawByte>(name_z.c_str(), std::nothrow)[bytes]();
        if (array != nullptr) {
            auto* words = reinterpret_cast<std::uint64_t*>(array);
            std::atomic_ref(words[1]).store(a.token, std::memory_order_relaxed);
            std::atomic_ref(words[0]).store(0, std::memory_order_release);
        }
        return array;
    } catch (const bip::interprocess_exception& e) {
        if (e.get_error_code() != bip::already_exists_error || attempt > 100) {
            throw;
        }
    }
    return nullptr;
}

}  // namespace

std::string space_description(const Attachment& a) {
    return fmt::format("segment '{}' (size {} bytes, {} free)", a.name, a.size, a.manager->get_free_memory());
}

void* allocate_bytes(SegmentManager* manager, std::size_t bytes, std::size_t alignment) {
    void* p = alignment <= 16 ? manager->allocate(bytes, std::nothrow)
                              : manager->allocate_aligned(bytes, alignment, std::nothrow);
    if (p == nullptr) {
        const Attachment* a = attachment_at(manager);
        throw out_of_space(fmt::format("{}: cannot allocate {} bytes",
                                       a != nullptr ? space_description(*a) : std::string("a strata segment"), bytes));
    }
    return p;
}

void deallocate_bytes(SegmentManager* manager, void* pointer) noexcept {
    try {
        manager->deallocate(pointer);
    } catch (...) {  // NOLINT(bugprone-empty-catch)
        // A broken segment: the memory stays allocated; the next allocation reports why.
    }
}

Result<void> usable(const Attachment* a, std::string_view op, bool writes) {
    if (a == nullptr) {
        return make_error(Errc::invalid_argument, "{}: the segment is closed", op);
    }
    if (a->forked()) {
        return std::unexpected(forked_error(*a, op));
    }
    if (const std::uint32_t state = a->header->broken.load(std::memory_order_acquire); state > 2) {
        return make_error(Errc::corrupted,
                          "{}: segment '{}': its broken flag holds {} (strata writes only 0, 1 or 2): the segment's "
                          "header was overwritten; recreate it",
                          op, a->name, state);
    } else if (state != 0) {
        return std::unexpected(broken_error(*a, op));
    }
    if (writes && a->read_only) {
        return make_error(Errc::permission_denied, "{}: segment '{}' was opened read_only", op, a->name);
    }
    return {};
}

Result<void> check_object_name(std::string_view op, std::string_view name) {
    if (name.empty() || name.size() > 255 || name.find('\0') != std::string_view::npos) {
        return make_error(Errc::invalid_argument, "{}: name='{}': an object name has 1..255 characters, no NUL", op,
                          name);
    }
    return {};
}

Result<void*> place_object(Attachment& a, std::string_view op, std::string_view name, const ObjectSpec& spec,
                           ConstructFn construct, void* context) {
    const std::string name_z(name);
    const std::size_t bytes = array_bytes(spec);
    void* array = nullptr;
    try {
        for (int attempt = 0; array == nullptr; ++attempt) {
            void* found = nullptr;
            {
                std::optional<IndexLock> index;
                if (!name.empty()) {
                    index.emplace(a, true);
                    if (auto ok = index->status(); !ok) {
                        return std::unexpected(ok.error());
                    }
                    found = a.manager->find<RawByte>(name_z.c_str()).first;
                }
                if (found == nullptr) {
                    array = construct_array(a, name, name_z, bytes, attempt);
                }
            }
            if (found != nullptr) {
                return existing(a, op, name, found, spec);
            }
            if (array == nullptr && (name.empty() || a.manager->find<RawByte>(name_z.c_str()).first == nullptr)) {
                return make_error(
                    Errc::no_space, "{}: {}: cannot allocate {} bytes for {} ('{}')", op, space_description(a), bytes,
                    name.empty() ? std::string("an unnamed object") : fmt::format("object '{}'", name), spec.type_name);
            }
        }
    } catch (const segment_broken&) {
        return std::unexpected(broken_error(a, op));
    } catch (const std::exception& e) {
        return make_error(Errc::internal, "{}: name='{}': {}", op, name, e.what());
    }

    // Lay out the object inside the array and fill its header.
    auto* begin = static_cast<std::byte*>(array);
    const auto object_address =
        (reinterpret_cast<std::uintptr_t>(begin) + kPrefix + sizeof(ObjectHeader) + alignment_of(spec) - 1) /
        alignment_of(spec) * alignment_of(spec);
    auto* object = reinterpret_cast<std::byte*>(object_address);
    auto* h = ::new (object - sizeof(ObjectHeader)) ObjectHeader();  // magic 0: not live until constructed
    const std::uint64_t prefix = static_cast<std::uint64_t>(reinterpret_cast<std::byte*>(h) - begin);
    h->generation = a.header->next_generation.fetch_add(1);
    h->type = spec.type;
    h->size = spec.size;
    h->start_offset = prefix;
    const std::size_t n = std::min(sizeof h->type_name - 1, spec.type_name.size());
    std::memcpy(h->type_name, spec.type_name.data(), n);
    h->type_name[n] = '\0';
    std::atomic_ref(*reinterpret_cast<std::uint64_t*>(begin)).store(prefix, std::memory_order_release);

    auto free_array = [&] {
        try {
            a.manager->destroy_ptr(static_cast<RawByte*>(array));
        } catch (...) {  // NOLINT(bugprone-empty-catch)
            // A broken segment: the array stays allocated; the caller reports the first failure.
        }
    };
    try {
        construct(object, context);
    } catch (const out_of_space& e) {
        free_array();
        return make_error(Errc::no_space, "{}: constructing {} ('{}'): {}", op,
                          name.empty() ? std::string("an unnamed object") : fmt::format("object '{}'", name),
                          spec.type_name, e.what());
    } catch (const segment_broken&) {
        return std::unexpected(broken_error(a, op));
    } catch (const std::exception& e) {
        free_array();
        return make_error(Errc::internal, "{}: the constructor of '{}' threw: {}", op, spec.type_name, e.what());
    }
    std::atomic_ref(h->magic).store(live_magic(a, h), std::memory_order_release);
    return static_cast<void*>(object);
}

Result<void*> find_object(Attachment& a, std::string_view op, std::string_view name, const ObjectSpec& spec) {
    const std::string name_z(name);
    try {
        auto found = find_array(a, name_z);
        if (!found) {
            return std::unexpected(found.error());
        }
        if (*found == nullptr) {
            return make_error(Errc::not_found, "{}: name='{}': no object of that name in segment '{}'", op, name,
                              a.name);
        }
        return existing(a, op, name, *found, spec);
    } catch (const segment_broken&) {
        return std::unexpected(broken_error(a, op));
    }
}

Result<ObjectHeader*> header_of(const Attachment& a, std::string_view op, const void* object, const ObjectSpec& spec) {
    const auto* p = static_cast<const std::byte*>(object);
    if (p < a.base + kHeaderBytes + sizeof(ObjectHeader) || p >= a.base + a.size) {
        return make_error(Errc::invalid_argument, "{}: object at {}: not inside segment '{}' ({} bytes at {})", op,
                          object, a.name, a.size, static_cast<const void*>(a.base));
    }
    auto* h = reinterpret_cast<ObjectHeader*>(const_cast<std::byte*>(p) - sizeof(ObjectHeader));
    if ((reinterpret_cast<std::uintptr_t>(h) % alignof(ObjectHeader)) != 0 ||
        std::atomic_ref(h->magic).load(std::memory_order_acquire) != live_magic(a, h)) {
        return make_error(Errc::invalid_argument,
                          "{}: object at {}: not an object made by segment '{}' (a member or element of one, or "
                          "freed)",
                          op, object, a.name);
    }
    if (auto ok = check_type(
            op, [&] { return fmt::format("the object at {}", object); }, h, spec);
        !ok) {
        return std::unexpected(ok.error());
    }
    return h;
}

Result<void> erase_object(Attachment& a, std::string_view op, std::string_view name, const void* object,
                          const ObjectSpec& spec, DestroyFn destroy) {
    try {
        void* array = nullptr;
        ObjectHeader* h = nullptr;
        // Held for unnamed objects too: destroy() may be given a named one.
        const IndexLock index(a, true);
        if (auto ok = index.status(); !ok) {
            return std::unexpected(ok.error());
        }
        if (object == nullptr) {
            const std::string name_z(name);
            array = a.manager->find<RawByte>(name_z.c_str()).first;
            if (array == nullptr) {
                return make_error(Errc::not_found, "{}: name='{}': no object of that name in segment '{}'", op, name,
                                  a.name);
            }
            h = wait_until_live(a, array);
            if (h == nullptr) {
                return make_error(Errc::busy, "{}: name='{}': the object is still being constructed", op, name);
            }
            if (auto ok = check_type(
                    op, [&] { return fmt::format("object '{}' of segment '{}'", name, a.name); }, h, spec);
                !ok) {
                return std::unexpected(ok.error());
            }
            object = object_of(h);
        } else {
            auto found = header_of(a, op, object, spec);
            if (!found) {
                return std::unexpected(found.error());
            }
            h = *found;
            array = reinterpret_cast<std::byte*>(h) - h->start_offset;
        }
        destroy(const_cast<void*>(object));
        std::atomic_ref(h->magic).store(0, std::memory_order_release);
        h->generation = 0;
        a.manager->destroy_ptr(static_cast<RawByte*>(array));
        return {};
    } catch (const segment_broken&) {
        return std::unexpected(broken_error(a, op));
    }
}

Result<void*> load_object(const Attachment& a, const Handle& handle, const ObjectSpec& spec) {
    constexpr std::string_view op = "Segment::load";
    if (handle.is_null()) {
        return make_error(Errc::invalid_argument, "{}: handle is null", op);
    }
    if (handle.segment != a.header->segment_id) {
        return make_error(Errc::invalid_argument,
                          "{}: handle segment={:#x}: the handle belongs to another segment, not '{}' (id {:#x})", op,
                          handle.segment, a.name, a.header->segment_id);
    }
    if (handle.offset < kHeaderBytes + sizeof(ObjectHeader) || handle.offset >= a.size ||
        spec.size > a.size - handle.offset || handle.offset % 16 != 0) {
        return make_error(Errc::invalid_argument,
                          "{}: handle offset={}: out of range for '{}' (objects lie in [{}, {}) at 16-byte steps)", op,
                          handle.offset, a.name, kHeaderBytes + sizeof(ObjectHeader), a.size);
    }
    auto* h = reinterpret_cast<ObjectHeader*>(a.base + handle.offset - sizeof(ObjectHeader));
    if (std::atomic_ref(h->magic).load(std::memory_order_acquire) != live_magic(a, h)) {
        return make_error(Errc::not_found,
                          "{}: handle offset={} generation={}: no live object there in segment '{}' (freed)", op,
                          handle.offset, handle.generation, a.name);
    }
    if (h->generation != handle.generation) {
        return make_error(Errc::not_found,
                          "{}: handle generation={}: stale - that object was freed; offset {} of segment '{}' now "
                          "holds generation {}",
                          op, handle.generation, handle.offset, a.name, h->generation);
    }
    if (handle.type != h->type) {
        return make_error(Errc::invalid_argument, "{}: handle type={:#x} does not match the object's '{}'", op,
                          handle.type, stored_type(h));
    }
    if (auto ok = check_type(
            op, [&] { return fmt::format("the object of the handle (offset {})", handle.offset); }, h, spec);
        !ok) {
        return std::unexpected(ok.error());
    }
    return static_cast<void*>(a.base + handle.offset);
}

}  // namespace strata::shm_detail
