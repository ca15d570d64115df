// SPDX-License-Identifier: MIT
// EDTs, events and finish scopes across ranks: creation on another rank,
// satisfaction, dependences and destruction routed to the owner.
#include <algorithm>

#include "api.hpp"
#include "cluster.hpp"
#include "core/log.hpp"
#include "functions.hpp"
#include "ocr/extensions/ocr-labeling.h"
#include "ocr/extensions/ocr-reduction-event.h"
#include "ocr/ocr.h"
#include "site.hpp"

namespace strata::ocr::dist {

int rank() noexcept {
    Cluster* c = cluster();
    return c != nullptr ? c->rank() : 0;
}

int ranks() noexcept {
    Cluster* c = cluster();
    return c != nullptr ? c->size() : 1;
}

bool is_remote(ocrGuid_t guid) noexcept {
    Cluster* c = cluster();
    return c != nullptr && c->remote(guid);
}

bool awaited(ocrGuid_t guid) {
    Cluster* c = cluster();
    return c != nullptr && c->not_created_yet(guid);
}

int hinted_rank(const ocrHint_t* hint, bool edt, std::string* why) {
    const ocrHintType_t type = edt ? OCR_HINT_EDT_T : OCR_HINT_DB_T;
    const ocrHintProp_t prop = edt ? OCR_HINT_EDT_AFFINITY : OCR_HINT_DB_AFFINITY;
    if (hint == nullptr || hint->type != type || (hint->propMask & (u64{1} << static_cast<unsigned>(prop))) == 0) {
        return -1;
    }
    const u64 value = hint->values[prop];
    const ocrGuid_t guid = guid_of(value);
    const int owner = owner_of(guid);
    if ((value & 7U) != affinity_kind || guid.guid <= 0 || counter_of(guid) != 0 || owner != minter_of(guid) ||
        owner >= ranks()) {
        *why = fmt::format(
            "{}={:#x}: not an affinity of this job ({} rank{}: use ocrAffinityToHintValue of "
            "ocrAffinityGetAt(AFFINITY_PD, 0..{}))",
            edt ? "OCR_HINT_EDT_AFFINITY" : "OCR_HINT_DB_AFFINITY", value, ranks(), ranks() == 1 ? "" : "s",
            ranks() - 1);
        return -2;
    }
    return owner;
}

// ---- routing (the sending side) ----

bool route_satisfy(ocrGuid_t destination, u32 slot, ocrGuid_t db, ocrDbAccessMode_t mode, const CallSite& site,
                   bool api) {
    Cluster* c = cluster();
    if (c == nullptr) {
        return false;
    }
    const bool remote = c->remote(destination);
    if (!remote && (c->state().table.find(destination) || !c->not_created_yet(destination))) {
        return false;
    }
    Writer message(Msg::satisfy);
    message.u64(id_of(destination)).u32(slot).u64(id_of(db)).u32(static_cast<u32>(mode)).u8(api ? 1 : 0);
    write_site(message, site);
    c->send(owner_of(destination), message);
    return true;
}

bool route_add_dependence(ocrGuid_t event, u32 sslot, ocrGuid_t destination, u32 slot, ocrDbAccessMode_t mode,
                          const CallSite& site) {
    Cluster* c = cluster();
    if (c == nullptr) {
        return false;
    }
    if (!c->remote(event) && (c->state().table.find(event) || !c->not_created_yet(event))) {
        return false;
    }
    Writer message(Msg::add_dependence);
    message.u64(id_of(event)).u32(sslot).u64(id_of(destination)).u32(slot).u32(static_cast<u32>(mode));
    write_site(message, site);
    c->send(owner_of(event), message);
    return true;
}

bool route_destroy(ocrGuid_t guid, const CallSite& site) {
    Cluster* c = cluster();
    if (c == nullptr) {
        return false;
    }
    if (!c->remote(guid) && (c->state().table.find(guid) || !c->not_created_yet(guid))) {
        return false;
    }
    Writer message(Msg::destroy);
    message.u64(id_of(guid)).u8(0);
    write_site(message, site);
    c->send(owner_of(guid), message);
    return true;
}

bool route_collective(ocrGuid_t event, const void* data, u32 slot, const CallSite& site) {
    Cluster* c = cluster();
    if (c == nullptr || data == nullptr) {
        return false;
    }
    if (!c->remote(event) && (c->state().table.find(event) || !c->not_created_yet(event))) {
        return false;
    }
    // The caller's contribution is nbDatum values of the event's type: only the
    // owner knows their size, asked once per event.
    const u64 bytes = collective_bytes(*c, event);
    Writer message(Msg::collective);
    message.u64(id_of(event)).u32(slot).bytes({static_cast<const std::byte*>(data), static_cast<std::size_t>(bytes)});
    write_site(message, site);
    c->send(owner_of(event), message);
    return true;
}

// ---- EDTs created on another rank ----

namespace {

// What an EDT made on another rank needs, as the creator writes it.
struct EdtSpec {
    FunctionRef function;
    std::string name;
    std::vector<u64> params;
    u32 depc = 0;
    u16 properties = 0;
    std::uint64_t scope_id = 0;   // the creator's exported finish scope, or 0
    bool own_output = false;      // an output event is made with the EDT
    ocrGuid_t output{0};          // EDT_PROP_OEVT_VALID: the caller's event
    std::optional<u64> priority;  // OCR_HINT_EDT_PRIORITY (its hint's or its template's)
    CallSite site;
};

void write_edt_spec(Writer& w, const EdtSpec& spec) {
    w.str(spec.function.module).u64(spec.function.offset).str(spec.name);
    w.u32(static_cast<u32>(spec.params.size())).words(spec.params);
    w.u32(spec.depc).u32(spec.properties).u64(spec.scope_id).u8(spec.own_output ? 1 : 0).u64(id_of(spec.output));
    w.u8(spec.priority ? 1 : 0).u64(spec.priority.value_or(0));
    write_site(w, spec.site);
}

EdtSpec read_edt_spec(Cluster& c, Reader& in) {
    EdtSpec spec;
    spec.function.module = in.str();
    spec.function.offset = in.u64();
    spec.name = in.str();
    // No more words than the message holds: a count past its end leaves the reader not ok().
    const u32 count = in.u32();
    spec.params.resize(std::min<std::size_t>(count, in.rest().size() / sizeof(u64) + 1));
    in.words(spec.params);
    spec.depc = in.u32();
    spec.properties = static_cast<u16>(in.u32());
    spec.scope_id = in.u64();
    spec.own_output = in.u8() != 0;
    spec.output = guid_of(in.u64());
    const bool prioritized = in.u8() != 0;
    const u64 priority = in.u64();
    if (prioritized) {
        spec.priority = priority;
    }
    spec.site = read_site(c, in);
    return spec;
}

// Counts the new EDT in the creator's finish scope, and exports that scope.
std::uint64_t join_creator_scope(Cluster& c) {
    std::shared_ptr<FinishScope> scope;
    if (Edt* parent = current_edt()) {
        scope = parent->own_scope ? parent->own_scope : parent->scope;
    }
    if (!scope) {
        return 0;
    }
    scope->pending.fetch_add(1, std::memory_order_acq_rel);
    return c.export_scope(scope);
}

Result<EdtSpec> spec_of(Cluster& c, const EdtTemplate& tpl, u32 paramc, const u64* paramv, u32 depc, u16 properties,
                        std::optional<u64> priority, const ocrGuid_t* output_event, const CallSite& site) {
    auto function = encode_function(reinterpret_cast<const void*>(tpl.function));
    if (!function) {
        return std::unexpected(function.error());
    }
    EdtSpec spec;
    spec.function = std::move(*function);
    spec.name = tpl.name;
    spec.params.assign(paramv, paramv + paramc);
    spec.depc = depc;
    spec.properties = properties;
    spec.own_output = output_event != nullptr && (properties & EDT_PROP_OEVT_VALID) == 0;
    if (output_event != nullptr && !spec.own_output) {
        spec.output = *output_event;
    }
    spec.priority = priority;
    spec.site = site;
    spec.scope_id = join_creator_scope(c);
    return spec;
}

// The EDT of `spec`, in a proxy of the creator's scope; null (and the scope
// told) when its function is not in this process.
std::shared_ptr<Edt> build_edt(Cluster& c, int source, EdtSpec& spec, ocrGuid_t guid) {
    std::shared_ptr<FinishScope> proxy;
    if (spec.scope_id != 0) {
        proxy = std::make_shared<FinishScope>();
        proxy->pending = 0;  // new_edt counts the EDT in it
        proxy->remote_rank = source;
        proxy->remote_id = spec.scope_id;
    }
    auto function = decode_function(spec.function);
    if (!function) {
        c.state().deferred_error(spec.site, "ocrEdtCreate", OCR_EINVAL,
                                 fmt::format("EDT {} ({}) created by rank {} on rank {}: {}", show(guid), spec.name,
                                             source, c.rank(), function.error().message));
        if (proxy) {
            proxy_scope_done(*proxy);
        }
        return nullptr;
    }
    auto edt = new_edt(reinterpret_cast<ocrEdt_t>(*function), spec.name, spec.params, spec.depc, spec.properties,
                       spec.site, proxy);
    if (spec.priority) {
        edt->priority.assign(*spec.priority);
    }
    return edt;
}

std::shared_ptr<Event> new_output_event() {
    auto event = std::make_shared<Event>();
    event->type = OCR_EVENT_ONCE_T;
    event->takes_arg = true;
    return event;
}

void set_output(const std::shared_ptr<Edt>& edt, ocrGuid_t out) {
    edt->output_event = out;
    if (edt->own_scope) {
        edt->own_scope->output_event = out;
    }
}

}  // namespace

u8 create_edt_on(int rank, const EdtTemplate& tpl, u32 paramc, const u64* paramv, u32 depc, u16 properties,
                 std::optional<u64> priority, ocrGuid_t* guid, ocrGuid_t* output_event, const CallSite& site) {
    Cluster* c = cluster();
    auto spec = spec_of(*c, tpl, paramc, paramv, depc, properties, priority, output_event, site);
    if (!spec) {
        strata::detail::log().warn("strata-ocr: {}: ocrEdtCreate({}): {}", site.str(), tpl.name, spec.error().message);
        return OCR_EINVAL;
    }
    ocrGuid_t out = spec->output;
    const ocrGuid_t id = c->create_on(rank, Kind::edt, [&](ocrGuid_t minted) {
        if (spec->own_output) {
            out = c->mint_more(rank, Kind::event);
        }
        Writer message(Msg::create_edt,
                       160 + spec->function.module.size() + spec->name.size() + spec->params.size() * sizeof(u64));
        message.u64(id_of(minted)).u64(id_of(out));
        write_edt_spec(message, *spec);
        return message;
    });
    if (guid != nullptr) {
        *guid = id;
    }
    if (spec->own_output) {
        *output_event = out;
    }
    return 0;
}

void on_create_edt(Cluster& c, int source, Reader& in) {
    OcrState& s = c.state();
    const ocrGuid_t guid = guid_of(in.u64());
    const ocrGuid_t out = guid_of(in.u64());
    EdtSpec spec = read_edt_spec(c, in);
    auto edt = build_edt(c, source, spec, guid);
    if (spec.own_output) {
        s.table.insert_at(out, new_output_event());
    }
    if (edt) {
        set_output(edt, out);
        s.waiting_edts.fetch_add(1, std::memory_order_acq_rel);
        s.table.insert_at(guid, edt);
    }
    if (spec.own_output) {
        c.created(out);
    }
    c.created(guid);
    if (edt && spec.depc == 0) {
        start_edt(edt);
    }
}

u8 create_labeled_edt(const EdtTemplate& tpl, u32 paramc, const u64* paramv, u32 depc, u16 properties,
                      std::optional<u64> priority, ocrGuid_t guid, ocrGuid_t* output_event, const CallSite& site) {
    Cluster* c = cluster();
    auto spec = spec_of(*c, tpl, paramc, paramv, depc, properties, priority, output_event, site);
    if (!spec) {
        strata::detail::log().warn("strata-ocr: {}: ocrEdtCreate({}): {}", site.str(), tpl.name, spec.error().message);
        return OCR_EINVAL;
    }
    Writer message(Msg::call);
    const std::uint64_t token = c->new_token();
    message.u64(token).u8(static_cast<std::uint8_t>(Call::create_labeled)).u64(id_of(guid)).u32(properties);
    write_edt_spec(message, *spec);
    auto reply = c->call(owner_of(guid), message, token);
    if (!reply) {
        return OCR_EINVAL;  // the run ends: the cluster reported why
    }
    Reader answer(**reply);
    answer.skip_kind();
    (void)answer.u64();
    const auto code = static_cast<u8>(answer.u32());
    const ocrGuid_t out = guid_of(answer.u64());
    if (code == 0 && spec->own_output) {
        *output_event = out;
    }
    return code;
}

u8 make_labeled_edt(Cluster& c, int source, ocrGuid_t guid, u16 properties, Reader& in, ocrGuid_t* out) {
    OcrState& s = c.state();
    EdtSpec spec = read_edt_spec(c, in);
    auto edt = build_edt(c, source, spec, guid);
    if (!edt) {
        return OCR_EINVAL;
    }
    *out = spec.own_output ? s.table.insert(new_output_event()) : spec.output;
    set_output(edt, *out);
    if (u8 rc = insert_labeled(guid, properties, edt); rc != 0) {
        if (spec.own_output) {
            s.table.erase(*out);
        }
        // The creator's scope counted it: its proxy reports it done.
        if (edt->scope && edt->scope->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            proxy_scope_done(*edt->scope);
        }
        return rc;
    }
    s.waiting_edts.fetch_add(1, std::memory_order_acq_rel);
    if (spec.depc == 0) {
        start_edt(edt);
    }
    return 0;
}

// ---- what the owner does ----

bool on_satisfy(Cluster& c, int /*source*/, Reader& in) {
    OcrState& s = c.state();
    const ocrGuid_t destination = guid_of(in.u64());
    const u32 slot = in.u32();
    const ocrGuid_t db = guid_of(in.u64());
    const auto mode = static_cast<ocrDbAccessMode_t>(in.u32());
    const bool api = in.u8() != 0;
    const CallSite site = read_site(c, in);
    auto object = s.table.find(destination);
    if (!object && c.not_created_yet(destination)) {
        return false;
    }
    if (!api) {
        deliver(destination, slot, db, mode, site);
        return true;
    }
    auto event = object && object->kind == Kind::event ? std::static_pointer_cast<Event>(object) : nullptr;
    if (!event) {
        s.deferred_error(site, "ocrEventSatisfy", OCR_EINVAL,
                         fmt::format("event {} (of rank {}) is not a live event", show(destination), c.rank()));
        return true;
    }
    if (u8 rc = satisfy_event(event, db, slot, site); rc != 0) {
        strata::detail::log().warn("strata-ocr: {}: ocrEventSatisfy({}) on rank {}: {}", site.str(), show(destination),
                                   c.rank(), error_name(rc));
    }
    return true;
}

bool on_add_dependence(Cluster& c, int /*source*/, Reader& in) {
    OcrState& s = c.state();
    const ocrGuid_t source_event = guid_of(in.u64());
    const u32 sslot = in.u32();
    const ocrGuid_t destination = guid_of(in.u64());
    const u32 slot = in.u32();
    const auto mode = static_cast<ocrDbAccessMode_t>(in.u32());
    const CallSite site = read_site(c, in);
    auto event = s.table.find_as<Event>(source_event, Kind::event);
    if (!event && c.not_created_yet(source_event)) {
        return false;
    }
    if (!event) {
        s.deferred_error(site, "ocrAddDependence", OCR_EINVAL,
                         fmt::format("the source {} (of rank {}) is not a live event, for {} slot {}",
                                     show(source_event), c.rank(), show(destination), slot));
        return true;
    }
    const Event::Waiter waiter{destination, slot, mode, site};
    const u8 rc =
        event->collective ? add_collective_dependence(event, sslot, waiter) : add_event_dependence(event, waiter);
    if (rc != 0) {
        strata::detail::log().warn("strata-ocr: {}: ocrAddDependence({} -> {}, slot {}) on rank {}: {}", site.str(),
                                   show(source_event), show(destination), slot, c.rank(), error_name(rc));
    }
    return true;
}

bool on_destroy(Cluster& c, int /*source*/, Reader& in) {
    OcrState& s = c.state();
    const ocrGuid_t guid = guid_of(in.u64());
    const bool held = in.u8() != 0;
    const CallSite site = read_site(c, in);
    if (!s.table.find(guid) && c.not_created_yet(guid)) {
        return false;
    }
    if (held) {
        drop_remote_writer(c, guid);
    }
    strataOcrCallSite(site.file, site.line);
    u8 rc = OCR_EINVAL;
    switch (kind_of(guid)) {
        case Kind::edt: rc = (ocrEdtDestroy)(guid); break;
        case Kind::event: rc = (ocrEventDestroy)(guid); break;
        case Kind::db: rc = (ocrDbDestroy)(guid); break;
        case Kind::edt_template: rc = (ocrEdtTemplateDestroy)(guid); break;
        case Kind::guid_map: rc = ocrGuidMapDestroy(guid); break;
        default: break;
    }
    if (rc != 0) {
        s.deferred_error(site, "ocr*Destroy", rc,
                         fmt::format("{} {} (of rank {}) is not a live object of its kind", to_string(kind_of(guid)),
                                     show(guid), c.rank()));
    }
    return true;
}

bool on_collective(Cluster& c, int /*source*/, Reader& in) {
    OcrState& s = c.state();
    const ocrGuid_t event = guid_of(in.u64());
    const u32 slot = in.u32();
    auto data = in.bytes();
    const CallSite site = read_site(c, in);
    if (!s.table.find(event) && c.not_created_yet(event)) {
        return false;
    }
    std::vector<std::byte> copy(data.begin(), data.end());
    strataOcrCallSite(site.file, site.line);
    if (u8 rc = (ocrEventCollectiveSatisfySlot)(event, copy.data(), slot); rc != 0) {
        s.deferred_error(site, "ocrEventCollectiveSatisfySlot", rc,
                         fmt::format("COLLECTIVE event {} (of rank {}), slot {}", show(event), c.rank(), slot));
    }
    return true;
}

// ---- finish scopes ----

void proxy_scope_done(const FinishScope& proxy) {
    Cluster* c = cluster();
    if (c == nullptr) {
        return;
    }
    Writer message(Msg::scope_done);
    message.u64(proxy.remote_id);
    c->send(proxy.remote_rank, message);
}

void on_scope_done(Cluster& c, int source, Reader& in) {
    const std::uint64_t id = in.u64();
    auto scope = c.import_done(id);
    if (!scope) {
        strata::detail::log().warn("strata-ocr: rank {}: rank {} reported finish scope {}, which is not known here",
                                   c.rank(), source, id);
        return;
    }
    scope_done(std::move(scope));
}

}  // namespace strata::ocr::dist
