// SPDX-License-Identifier: MIT
// Opening a port: Segment::port checks the request, places the port's shared
// part in the segment (the first user constructs it) and claims a producer or
// consumer index under the port's lock; Segment::remove_port.
#include <cstring>
#include <new>

#include "shm/mpi_waiter.hpp"
#include "shm/objects.hpp"
#include "shm/port_layout.hpp"
#include "strata/shm/port.hpp"
#include "strata/shm/testing.hpp"

namespace strata {

using shm_detail::PortPeer;
using shm_detail::PortShared;
using shm_detail::PortSlot;
using shm_detail::text_of;

namespace {

Result<void> check_shape(std::string_view name, const PortShared& p, const PortOptions& o) {
    if (o.slots && *o.slots != p.slots) {
        return make_error(Errc::invalid_argument, "Segment::port: slots={}: port '{}' exists with {} slots", *o.slots,
                          name, p.slots);
    }
    if (o.slot_bytes && *o.slot_bytes != p.slot_bytes) {
        return make_error(Errc::invalid_argument,
                          "Segment::port: slot_bytes={}: port '{}' exists with {} bytes per slot", *o.slot_bytes, name,
                          p.slot_bytes);
    }
    if (o.consumers && *o.consumers != p.consumers) {
        return make_error(Errc::invalid_argument, "Segment::port: consumers={}: port '{}' exists with {} consumers",
                          *o.consumers, name, p.consumers);
    }
    return {};
}

std::string_view family_name(std::uint32_t family) {
    return family == shm_detail::sync_mpi ? "mpi" : "blocking|busy_poll (through the segment)";
}

Result<void> check_sync(std::string_view name, const PortShared& p, PortSync sync) {
    const std::uint32_t want = sync == PortSync::mpi ? shm_detail::sync_mpi : shm_detail::sync_segment;
    if (p.sync_family != want) {
        return make_error(Errc::invalid_argument,
                          "Segment::port: sync={}: port '{}' exists with sync={}; every user of a port must wait "
                          "the same way (all through MPI or all through the segment)",
                          to_string(sync), name, family_name(p.sync_family));
    }
    return {};
}

// Wake-ups of different ports share one communicator: each port gets its own
// pair of tags (a collision would only cost a spurious wake-up or one tick).
int mpi_tag_of(std::uint64_t segment_id, std::uint64_t offset, int tag_ub) {
    const std::uint64_t pairs = static_cast<std::uint64_t>(std::max(tag_ub, 3) - 1) / 2;
    const std::uint64_t h = (segment_id * 0x9E3779B97F4A7C15ULL) ^ (offset * 0xC2B2AE3D27D4EB4FULL);
    return static_cast<int>(((h >> 17U) % pairs) * 2);
}

shm_detail::ObjectSpec port_spec(std::size_t bytes) {
    return {bytes, 64, type_id<PortShared>(), type_name<PortShared>()};
}

/// Checks a request for a port; returns the caller's MPI rank with sync=mpi, else -1.
Result<int> check_port_request(std::string_view op, std::string_view name, PortRole role, const PortOptions& options) {
    if (name.empty() || name.size() > 200 || name.find('\0') != std::string_view::npos) {
        return make_error(Errc::invalid_argument, "{}: name='{}': a port name has 1..200 characters, no NUL", op, name);
    }
    if (role != PortRole::producer && role != PortRole::consumer) {
        return make_error(Errc::invalid_argument, "{}: role={}: not a PortRole", op, static_cast<int>(role));
    }
    if (options.sync != PortSync::blocking && options.sync != PortSync::busy_poll && options.sync != PortSync::mpi) {
        return make_error(Errc::invalid_argument, "{}: sync={}: not a PortSync", op, static_cast<int>(options.sync));
    }
    int mpi_rank = -1;
    if (options.sync == PortSync::mpi) {
        const shm_detail::MpiWaiterOps* mpi = shm_detail::mpi_waiter();
        if (mpi == nullptr) {
            return make_error(Errc::unsupported,
                              "{}: sync=mpi: no MPI waiter is registered: link the program with libstrata-mpi "
                              "(CMake target strata::mpi) or use sync=blocking|busy_poll",
                              op);
        }
        char why[256] = {};
        mpi_rank = mpi->rank(why, sizeof why);
        if (mpi_rank < 0) {
            return make_error(Errc::invalid_argument, "{}: sync=mpi: {}", op, text_of(why, sizeof why));
        }
    }
    const unsigned slots = options.slots.value_or(4);
    const std::size_t slot_bytes = options.slot_bytes.value_or(0);
    const unsigned consumers = options.consumers.value_or(1);
    if (slots < 1 || slots > shm_detail::kMaxPortSlots) {
        return make_error(Errc::invalid_argument, "{}: slots={}: must be in 1..{}", op, slots,
                          shm_detail::kMaxPortSlots);
    }
    if (slot_bytes > shm_detail::kMaxSlotBytes) {
        return make_error(Errc::invalid_argument, "{}: slot_bytes={}: must be at most {} (1 GiB)", op, slot_bytes,
                          shm_detail::kMaxSlotBytes);
    }
    if (consumers < 1 || consumers > shm_detail::kMaxPortPeers) {
        return make_error(Errc::invalid_argument, "{}: consumers={}: must be in 1..{}", op, consumers,
                          shm_detail::kMaxPortPeers);
    }
    return mpi_rank;
}

/// What the first user of a port constructs it with.
struct NewPort {
    unsigned slots = 0;
    std::size_t slot_bytes = 0;
    unsigned consumers = 0;
    std::uint32_t sync_family = 0;
    std::byte* segment_base = nullptr;
};

/// Constructs a PortShared of the shape `context` points to at `place`.
void construct_port(void* place, void* context) {
    const auto& shape = *static_cast<const NewPort*>(context);
    auto* p = ::new (place) PortShared();
    p->slots = shape.slots;
    p->consumers = shape.consumers;
    p->slot_bytes = shape.slot_bytes;
    p->sync_family = shape.sync_family;
    auto* payload = reinterpret_cast<std::byte*>(p->slot_array() + shape.slots);
    payload += (64 - reinterpret_cast<std::uintptr_t>(payload) % 64) % 64;
    const std::size_t stride = (shape.slot_bytes + 63) / 64 * 64;
    for (unsigned i = 0; i < shape.slots; ++i) {
        auto* s = ::new (p->slot_array() + i) PortSlot();
        s->payload_offset = static_cast<std::uint64_t>(payload + i * stride - shape.segment_base);
    }
}

/// The port's shared part: found in the segment, or constructed there with
/// the options' shape by the first user; an existing one must match it.
Result<PortShared*> place_port(shm_detail::Attachment& a, std::string_view op, std::string_view name,
                               const PortOptions& options) {
    NewPort shape{.slots = options.slots.value_or(4),
                  .slot_bytes = options.slot_bytes.value_or(0),
                  .consumers = options.consumers.value_or(1),
                  .sync_family = options.sync == PortSync::mpi ? shm_detail::sync_mpi : shm_detail::sync_segment,
                  .segment_base = a.base};
    const std::string object_name = fmt::format("strata.port.{}", name);
    const std::size_t bytes = shm_detail::port_bytes(shape.slots, shape.slot_bytes);
    auto placed = shm_detail::place_object(a, op, object_name, port_spec(bytes), &construct_port, &shape);
    if (!placed) {
        return std::unexpected(placed.error());
    }
    auto* shared = static_cast<PortShared*>(*placed);
    if (auto ok = check_shape(name, *shared, options); !ok) {
        return std::unexpected(ok.error());
    }
    if (auto ok = check_sync(name, *shared, options.sync); !ok) {
        return std::unexpected(ok.error());
    }
    return shared;
}

/// Takes a producer or consumer index of the port for the user `token`;
/// the caller holds the port's lock. Returns the index.
Result<unsigned> claim_peer(PortShared& shared, std::string_view op, std::string_view name, PortRole role,
                            std::uint64_t token, int mpi_rank) {
    PortPeer* table = role == PortRole::producer ? shared.producers : shared.consumer_peers;
    const unsigned limit = role == PortRole::producer ? shm_detail::kMaxPortPeers : shared.consumers;
    PortPeer* chosen = nullptr;
    unsigned index = 0;
    // Consumers take an index never used first: messages already sent wait for it.
    for (unsigned pass = 0; pass < 2 && chosen == nullptr; ++pass) {
        for (unsigned i = 0; i < limit; ++i) {
            PortPeer& peer = table[i];
            const bool fits = pass == 0 ? peer.state == shm_detail::peer_never : peer.state != shm_detail::peer_active;
            if (fits) {
                chosen = &peer;
                index = i;
                break;
            }
        }
    }
    if (chosen == nullptr) {
        return make_error(Errc::busy, "{}: role={}: port '{}' already has {} {}s attached", op, to_string(role), name,
                          limit, to_string(role));
    }
    if (role == PortRole::consumer && chosen->state != shm_detail::peer_never) {
        chosen->join_seq = shared.write_seq;  // a replacement consumer starts with the next message
        shared.cursors[index].next_seq = shared.write_seq;
    }
    chosen->token = token;
    chosen->mpi_rank = mpi_rank >= 0 ? static_cast<std::uint32_t>(mpi_rank) + 1 : 0;
    shm_detail::kill_step();  // the join's steps (port_layout.hpp): fields | state | counts
    chosen->state = shm_detail::peer_active;
    shm_detail::kill_step();
    shm_detail::crash_point(static_cast<int>(shm_testing::CrashPoint::port_peer_joining));
    if (role == PortRole::producer) {
        ++shared.producers_active;
        ++shared.producers_joined;
    }
    return index;
}

}  // namespace

Result<Port> Segment::port(std::string_view name, PortRole role) {
    return port(name, role, PortOptions{});
}

Result<Port> Segment::port(std::string_view name, PortRole role, const PortOptions& options) {
    constexpr std::string_view op = "Segment::port";
    if (auto ok = shm_detail::usable(attachment_.get(), op, true); !ok) {
        return std::unexpected(ok.error());
    }
    auto mpi_rank = check_port_request(op, name, role, options);
    if (!mpi_rank) {
        return std::unexpected(mpi_rank.error());
    }
    shm_detail::Attachment& a = *attachment_;
    auto shared = place_port(a, op, name, options);
    if (!shared) {
        return std::unexpected(shared.error());
    }

    Port port;
    port.attachment_ = &a;
    port.shared_ = *shared;
    port.name_ = std::string(name);
    port.role_ = role;
    port.sync_ = options.sync;
    port.token_ = a.token;
    if (options.sync == PortSync::mpi) {
        port.mpi_tag_ =
            mpi_tag_of(a.header->segment_id, static_cast<std::uint64_t>(reinterpret_cast<std::byte*>(*shared) - a.base),
                       shm_detail::mpi_waiter()->tag_ub());
    }
    // A consumer index a dead consumer still holds is freed first, so its
    // replacement is not refused as busy.
    port.recover_dead_peers();
    if (auto locked = port.lock(op); !locked) {
        return std::unexpected(locked.error());
    }
    auto index = claim_peer(**shared, op, name, role, a.token, *mpi_rank);
    if (!index) {
        port.unlock();
        port.shared_ = nullptr;
        return std::unexpected(index.error());
    }
    port.index_ = *index;
    port.seen_deaths_ = (*shared)->deaths.load();
    port.unlock();
    return port;
}

Result<void> Segment::remove_port(std::string_view name) {
    constexpr std::string_view op = "Segment::remove_port";
    if (auto ok = shm_detail::usable(attachment_.get(), op, true); !ok) {
        return std::unexpected(ok.error());
    }
    const std::string object_name = fmt::format("strata.port.{}", name);
    auto found = shm_detail::find_object(*attachment_, op, object_name, port_spec(0));
    if (!found) {
        return std::unexpected(found.error());
    }
    const auto* p = static_cast<const PortShared*>(*found);
    for (const auto* table : {p->producers, p->consumer_peers}) {
        for (unsigned i = 0; i < shm_detail::kMaxPortPeers; ++i) {
            const PortPeer& peer = table[i];
            if (peer.state == shm_detail::peer_active && attachment_->alive(peer.token)) {
                return make_error(Errc::busy, "{}: port '{}' is still used by {}", op, name,
                                  attachment_->describe(peer.token));
            }
        }
    }
    return shm_detail::erase_object(*attachment_, op, object_name, nullptr, port_spec(0), [](void*) {});
}

}  // namespace strata
