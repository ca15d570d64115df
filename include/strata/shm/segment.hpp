// SPDX-License-Identifier: MIT
// Segment: a named shared segment that the tasks of a workflow map by name
// and fill with named objects, containers and ports (docs/shm.md).
//
// A segment is a file `strata.<name>.seg` in the segment directory
// (SegmentOptions::dir, else $STRATA_SHM_DIR, else /dev/shm) mapped shared by
// every user, plus `strata.<name>.lock`, whose byte i is held with an OFD lock
// by user i for as long as it is attached. Liveness of any user is one
// F_OFD_GETLK away, works across pid namespaces and ends when the process
// dies, however it dies. The last user to detach removes both files; `strata
// shm gc` removes the segments whose users all died.
//
// Size: fixed at creation; the file's pages are reserved (fallocate), so a
// full /dev/shm is an error at creation and never a SIGBUS later. Running out
// of space inside the segment is an error naming the segment, its size, what
// is free and the request (Result from the Segment API, strata::out_of_space
// from container growth) - segments do not grow, so handles and pointers stay
// valid for the segment's life.
//
// Example:
//
//   auto seg = strata::Segment::open("run42", strata::SegmentMode::open_or_create, 64 << 20);
//   if (!seg) { fmt::print(stderr, "{}\n", seg.error().what()); return 1; }
//   auto v = seg->container<strata::vector<double>>("field", 1000);   // find or create
//   (*v)->at(3) = 1.5;
//   strata::Handle h = *seg->save(**v);
//
// Errors: every call returns Result; bad names, sizes and modes are
// invalid_argument naming the parameter and the value; a user that died
// holding a segment lock gives peer_dead naming it, and the segment is then
// marked broken (every later call fails the same way; recreate it).
//
// Thread safety: a Segment may be used from several threads at once, except
// close() and destruction. Objects are shared memory: synchronise access to
// them yourself or hand them over through a Port.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <sys/types.h>

#include "strata/error.hpp"
#include "strata/shm/allocator.hpp"
#include "strata/shm/handle.hpp"

namespace strata {

/// How Segment::open treats an existing or missing segment.
enum class SegmentMode {
    create_only,     ///< already_exists if the segment exists
    open_only,       ///< not_found if it does not
    open_or_create,  ///< opens an existing segment or creates one of `size` bytes
    recreate,        ///< removes an existing segment (its users keep their old mapping), then creates
    read_only,       ///< open_only, objects mapped PROT_READ; creates and erases nothing
};

std::string_view to_string(SegmentMode mode) noexcept;
/// Parses "create_only", "open_only", "open_or_create", "recreate", "read_only".
Result<SegmentMode> parse_segment_mode(std::string_view text, std::string_view param = "mode");

/// Options of Segment::open.
struct SegmentOptions {
    std::filesystem::path dir;  ///< segment directory; empty: $STRATA_SHM_DIR or /dev/shm
    bool group_access = false;  ///< create 0660 instead of 0600
};

/// The directory Segment::open uses when SegmentOptions::dir is empty:
/// $STRATA_SHM_DIR, else private_segment_dir()'s path (/dev/shm/strata-<euid>).
std::filesystem::path default_segment_dir();

/// The caller's private segment directory `base`/strata-<euid>: created 0700
/// if missing (`create`), then opened O_NOFOLLOW and checked to be a
/// directory owned by the caller with mode 0700. permission_denied, naming the
/// directory, its owner and mode, when it is not (another user may have made
/// it to plant segments), the way XDG_RUNTIME_DIR is checked.
Result<std::filesystem::path> private_segment_dir(const std::filesystem::path& base = "/dev/shm", bool create = true);

class Port;
struct PortOptions;
enum class PortRole;

namespace shm_detail {
struct Attachment;
struct ObjectSpec {
    std::size_t size = 0;
    std::size_t align = 1;
    std::uint64_t type = 0;
    std::string_view type_name;
};
using ConstructFn = void (*)(void* place, void* context);
using DestroyFn = void (*)(void* object);

template <class T>
constexpr ObjectSpec spec_of() {
    return {sizeof(T), alignof(T), type_id<T>(), type_name<T>()};
}
template <class T>
void destroy_as(void* object) {
    static_cast<T*>(object)->~T();
}
}  // namespace shm_detail

class Segment {
public:
    /// Opens or creates segment `name` (1..200 characters of [A-Za-z0-9._-])
    /// per `mode`. `size` (bytes, at least 1 MiB) is needed to create and
    /// ignored when opening.
    static Result<Segment> open(std::string_view name, SegmentMode mode, std::size_t size = 0,
                                const SegmentOptions& options = {});

    Segment(Segment&& other) noexcept;
    Segment& operator=(Segment&& other) noexcept;
    Segment(const Segment&) = delete;
    Segment& operator=(const Segment&) = delete;
    /// Detaches (see close()); an error is logged, never thrown.
    ~Segment();

    /// Detaches: unmaps, releases this user's slot and, if no other user is
    /// attached, removes the segment. Pointers into the segment become invalid.
    Result<void> close();

    [[nodiscard]] bool is_open() const noexcept { return attachment_ != nullptr; }
    [[nodiscard]] const std::string& name() const noexcept;
    [[nodiscard]] std::size_t size() const noexcept;
    [[nodiscard]] std::uint64_t id() const noexcept;                   ///< new for every creation of the name
    [[nodiscard]] const std::filesystem::path& path() const noexcept;  ///< the .seg file
    [[nodiscard]] bool is_read_only() const noexcept;
    [[nodiscard]] std::byte* base() const noexcept;  ///< where this process maps the segment
    /// This user's slot number (1..1024) in the segment's user table.
    [[nodiscard]] unsigned user_slot() const noexcept;
    /// Free bytes in the segment's allocator.
    [[nodiscard]] std::size_t free_bytes() const;
    /// Empty when usable, else why the segment is broken (a user died holding its lock).
    [[nodiscard]] std::string broken_reason() const;
    /// The allocator for containers in this segment.
    [[nodiscard]] allocator<void> get_allocator() const;

    /// Finds the object `name` or, if absent, constructs a T from `args`.
    /// For fixed-size objects (scalars, structs, arrays). An existing object of
    /// another type is invalid_argument naming both types.
    template <class T, class... Args>
    Result<T*> simple(std::string_view name, Args&&... args) {
        auto construct = [&](void* place) { ::new (place) T(std::forward<Args>(args)...); };
        return typed<T>(place(name, true, shm_detail::spec_of<T>(), &invoke<decltype(construct)>, &construct));
    }

    /// As simple(), for a container or a struct of containers: C's constructor
    /// receives `args` then the segment's allocator (or std::allocator_arg,
    /// the allocator, then `args`).
    template <class C, class... Args>
    Result<C*> container(std::string_view name, Args&&... args) {
        auto construct = [&](void* place) { construct_with_allocator<C>(place, std::forward<Args>(args)...); };
        return typed<C>(place(name, true, shm_detail::spec_of<C>(), &invoke<decltype(construct)>, &construct));
    }

    /// Constructs an unnamed T (allocator forwarded as in container() when C
    /// takes one); reachable through save()/load() or a Port; destroy() frees it.
    template <class T, class... Args>
    Result<T*> make(Args&&... args) {
        auto construct = [&](void* place) {
            if constexpr (takes_allocator<T, Args...>()) {
                construct_with_allocator<T>(place, std::forward<Args>(args)...);
            } else {
                ::new (place) T(std::forward<Args>(args)...);
            }
        };
        return typed<T>(place({}, false, shm_detail::spec_of<T>(), &invoke<decltype(construct)>, &construct));
    }

    /// The object `name`: not_found if absent, invalid_argument if of another type.
    template <class T>
    Result<T*> find(std::string_view name) const {
        return typed<T>(find_raw(name, shm_detail::spec_of<T>()));
    }

    /// Destroys and frees the object `name` (checked to be a T).
    template <class T>
    Result<void> erase(std::string_view name) {
        return erase_raw(name, nullptr, shm_detail::spec_of<T>(), &shm_detail::destroy_as<T>);
    }

    /// Destroys and frees `object`, named or not, made by this segment.
    template <class T>
    Result<void> destroy(T* object) {
        return erase_raw({}, object, shm_detail::spec_of<T>(), &shm_detail::destroy_as<T>);
    }

    /// A handle to `object`, which must be an object this segment made
    /// (simple, container, make) - not a member or element of one.
    template <class T>
    Result<Handle> save(const T& object) const {
        return save_raw(&object, shm_detail::spec_of<T>());
    }

    /// The object behind `handle`, after checking segment, offset, generation and type.
    template <class T>
    Result<T*> load(const Handle& handle) const {
        return typed<T>(load_raw(handle, shm_detail::spec_of<T>()));
    }

    /// Type-erased forms for bindings (Python): `spec` names the type expected.
    Result<Handle> save_raw(const void* object, const shm_detail::ObjectSpec& spec) const;
    Result<void*> load_raw(const Handle& handle, const shm_detail::ObjectSpec& spec) const;
    Result<void*> find_raw(std::string_view name, const shm_detail::ObjectSpec& spec) const;

    /// Opens (creating on first use) the port `name` as producer or consumer;
    /// see port.hpp. The port's shape comes from the first user's options.
    Result<Port> port(std::string_view name, PortRole role, const PortOptions& options);
    Result<Port> port(std::string_view name, PortRole role);
    /// Removes port `name`, also a broken one; its users' later calls fail.
    Result<void> remove_port(std::string_view name);

    /// For ports and tests: the attachment behind this segment.
    [[nodiscard]] shm_detail::Attachment* attachment() const noexcept { return attachment_.get(); }

private:
    explicit Segment(std::unique_ptr<shm_detail::Attachment> attachment);

    template <class F>
    static void invoke(void* place, void* context) {
        (*static_cast<F*>(context))(place);
    }
    template <class C, class... Args>
    static constexpr bool takes_allocator() {
        return std::is_constructible_v<C, Args..., const allocator<void>&> ||
               std::is_constructible_v<C, std::allocator_arg_t, const allocator<void>&, Args...>;
    }
    template <class C, class... Args>
    void construct_with_allocator(void* place, Args&&... args) const {
        const allocator<void> alloc = get_allocator();
        if constexpr (std::is_constructible_v<C, Args..., const allocator<void>&>) {
            ::new (place) C(std::forward<Args>(args)..., alloc);
        } else {
            static_assert(std::is_constructible_v<C, std::allocator_arg_t, const allocator<void>&, Args...>,
                          "container<C>: C must take the segment's allocator as its last constructor "
                          "argument or after std::allocator_arg");
            ::new (place) C(std::allocator_arg, alloc, std::forward<Args>(args)...);
        }
    }
    template <class T>
    static Result<T*> typed(Result<void*> raw) {
        if (!raw) {
            return std::unexpected(std::move(raw.error()));
        }
        return static_cast<T*>(*raw);
    }

    Result<void*> place(std::string_view name, bool named, const shm_detail::ObjectSpec& spec,
                        shm_detail::ConstructFn construct, void* context);
    Result<void> erase_raw(std::string_view name, const void* object, const shm_detail::ObjectSpec& spec,
                           shm_detail::DestroyFn destroy_fn);

    std::unique_ptr<shm_detail::Attachment> attachment_;
};

}  // namespace strata
