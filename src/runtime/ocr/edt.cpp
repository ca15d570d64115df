// SPDX-License-Identifier: MIT
// EDT templates, EDTs: creation, satisfaction, data block acquisition, execution.
#include <algorithm>

#include "core/log.hpp"
#include "dist/api.hpp"
#include "ocr/ocr.h"
#include "state.hpp"

namespace strata::ocr {

namespace {

void run_edt(const std::shared_ptr<Edt>& edt);

void schedule(const std::shared_ptr<Edt>& edt) {
    OcrState* s = state();
    if (const auto priority = edt->priority.get()) {
        s->runtime->spawn_prioritized([edt] { run_edt(edt); }, *priority);
    } else {
        s->runtime->spawn([edt] { run_edt(edt); });
    }
}

// The scope a new EDT joins: the creator's own scope if it is a finish EDT,
// else the creator's scope.
std::shared_ptr<FinishScope> enclosing_scope() {
    Edt* parent = current_edt();
    if (parent == nullptr) {
        return nullptr;
    }
    return parent->own_scope ? parent->own_scope : parent->scope;
}

// Satisfies an EDT's output event with what the EDT returned: a data block or
// NULL_GUID directly; an event is chained, so the output event fires when the
// returned event does, with its data block.
void complete_output(ocrGuid_t output_event, ocrGuid_t result, const CallSite& site, const std::string& edt) {
    OcrState* s = state();
    if (kind_of(result) == Kind::event) {
        // The output event fires with the returned event (where either lives).
        if (dist::route_add_dependence(result, 0, output_event, 0, DB_DEFAULT_MODE, site)) {
            return;
        }
        if (auto returned = s->table.find_as<Event>(result, Kind::event)) {
            add_event_dependence(returned, Event::Waiter{output_event, 0, DB_DEFAULT_MODE, site});
        } else {
            s->deferred_error(site, "EDT output event", OCR_EINVAL,
                              fmt::format("EDT {} returned event {}, which no longer exists, for its output event {}",
                                          edt, show(result), show(output_event)));
        }
        return;
    }
    if (dist::route_satisfy(output_event, 0, result, DB_DEFAULT_MODE, site, false)) {
        return;
    }
    auto event = s->table.find_as<Event>(output_event, Kind::event);
    if (!event) {
        s->deferred_error(
            site, "EDT output event", OCR_EINVAL,
            fmt::format("EDT {} returned, but its output event {} no longer exists", edt, show(output_event)));
        return;
    }
    satisfy_event(event, result, 0, site);
}

void run_edt(const std::shared_ptr<Edt>& edt) {
    OcrState* s = state();
    if (s->finished()) {
        s->edt_finished();
        return;
    }
    if (edt->body) {
        edt->body->start(edt);  // it calls complete_edt() when the work ends
        return;
    }
    const dist::SendBatch batch;  // what the EDT and its completion send to other ranks leaves together
    std::vector<ocrEdtDep_t> depv(edt->slots.size());
    for (std::size_t i = 0; i < edt->slots.size(); ++i) {
        const Slot& slot = edt->slots[i];
        // DB_MODE_NULL makes the slot a pure control dependence: no block, no pointer.
        depv[i].guid = slot.mode == DB_MODE_NULL ? NULL_GUID : slot.db;
        depv[i].mode = slot.mode;
        depv[i].ptr = nullptr;
        if (!is_null(slot.db) && slot.mode != DB_MODE_NULL) {
            auto hold = std::find_if(edt->holds.begin(), edt->holds.end(),
                                     [&](const Hold& h) { return h.guid.guid == slot.db.guid; });
            depv[i].ptr = hold != edt->holds.end() ? hold->pointer() : slot.block ? slot.block->data : nullptr;
        }
    }
    Edt* previous = current_edt();
    current_edt() = edt.get();
    enter_edt();
    const ocrGuid_t result = edt->function(static_cast<u32>(edt->params.size()), edt->params.data(),
                                           static_cast<u32>(depv.size()), depv.data());
    leave_edt();
    current_edt() = previous;
    complete_edt(edt, result);
}

}  // namespace

void scope_done(std::shared_ptr<FinishScope> scope) {
    while (scope && scope->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        if (!is_null(scope->output_event)) {
            complete_output(scope->output_event, scope->result, {}, "(finish EDT)");
        }
        if (scope->remote_rank >= 0) {
            dist::proxy_scope_done(*scope);  // a proxy: the creator's rank counts it done
            return;
        }
        scope = scope->parent;  // the finish EDT itself now counts as done in its parent's scope
    }
}

void complete_edt(const std::shared_ptr<Edt>& edt, ocrGuid_t result) {
    OcrState* s = state();
    release_all(*edt);
    if (edt->own_scope) {
        edt->own_scope->result = result;
        scope_done(edt->own_scope);  // its own part of the scope it opened
    } else {
        if (!is_null(edt->output_event)) {
            complete_output(edt->output_event, result, edt->created_at,
                            fmt::format("{} ({})", show(edt->guid), edt->name));
        }
        scope_done(edt->scope);
    }
    s->edt_finished();
}

// Acquires the remaining holds in order; a hold that must wait queues the EDT
// on that data block, whose release() calls back here.
void continue_acquire(const std::shared_ptr<Edt>& edt) {
    while (edt->next_hold < edt->holds.size()) {
        Hold& hold = edt->holds[edt->next_hold];
        ++edt->next_hold;
        if (!hold.db) {
            if (!dist::acquire_remote(edt, edt->next_hold - 1)) {
                return;  // another rank's block
            }
            continue;
        }
        if (!hold.db->acquire_or_wait(edt, hold.mode, &hold.copy)) {
            return;
        }
    }
    schedule(edt);
}

namespace {

void start_acquire(const std::shared_ptr<Edt>& edt) {
    OcrState* s = state();
    s->waiting_edts.fetch_sub(1, std::memory_order_acq_rel);
    s->edt_became_runnable();
    // One hold per data block, in the strongest mode any slot asks for.
    auto strength = [](ocrDbAccessMode_t m) {
        if (m == db_mode_external_read) {
            return 3;
        }
        switch (m) {
            case DB_MODE_EW: return 4;
            case DB_MODE_RW: return 3;
            case DB_MODE_CONST: return 2;
            case DB_MODE_RO: return 1;
            default: return 0;
        }
    };
    for (const Slot& slot : edt->slots) {
        // A block of another rank has no object here: its hold asks the owner.
        if ((!slot.block && !dist::is_remote(slot.db)) || is_null(slot.db) || slot.mode == DB_MODE_NULL) {
            continue;
        }
        const ocrDbAccessMode_t mode = edt->body ? edt->body->hold_mode(slot.mode) : slot.mode;
        auto it = std::find_if(edt->holds.begin(), edt->holds.end(),
                               [&](const Hold& h) { return h.guid.guid == slot.db.guid; });
        if (it == edt->holds.end()) {
            Hold hold;
            hold.db = slot.block;
            hold.mode = mode;
            hold.guid = slot.db;
            edt->holds.push_back(std::move(hold));
        } else if (strength(mode) > strength(it->mode)) {
            it->mode = mode;
        }
    }
    std::sort(edt->holds.begin(), edt->holds.end(),
              [](const Hold& a, const Hold& b) { return id_of(a.guid) < id_of(b.guid); });
    continue_acquire(edt);
}

}  // namespace

void start_edt(const std::shared_ptr<Edt>& edt) {
    state()->table.erase(edt->guid);
    start_acquire(edt);
}

void satisfy_edt(const std::shared_ptr<Edt>& edt, u32 slot, ocrGuid_t db, ocrDbAccessMode_t mode,
                 const CallSite& site) {
    OcrState* s = state();
    std::shared_ptr<Db> block;
    if (!is_null(db) && !dist::is_remote(db)) {
        block = s->table.find_as<Db>(db, Kind::db);
        if (!block) {
            s->deferred_error(site, "ocrAddDependence/ocrEventSatisfy", OCR_EINVAL,
                              fmt::format("slot {} of EDT {} ({}) was satisfied with {}, which is not a live data "
                                          "block",
                                          slot, show(edt->guid), edt->name, show(db)));
            return;
        }
    }
    bool runnable = false;
    {
        std::lock_guard lock(edt->mutex);
        if (edt->destroyed) {
            return;
        }
        if (slot >= edt->slots.size()) {
            s->deferred_error(site, "ocrAddDependence", OCR_EINVAL,
                              fmt::format("slot {} of EDT {} ({}): it has {} slots", slot, show(edt->guid), edt->name,
                                          edt->slots.size()));
            return;
        }
        Slot& target = edt->slots[slot];
        if (target.satisfied) {
            s->deferred_error(site, "ocrAddDependence/ocrEventSatisfy", OCR_EPERM,
                              fmt::format("slot {} of EDT {} ({}) satisfied twice (first from {}), data block {}", slot,
                                          show(edt->guid), edt->name, target.site.str(), show(db)));
            return;
        }
        target.satisfied = true;
        target.db = db;
        target.block = std::move(block);
        target.mode = mode;
        target.site = site;
        runnable = --edt->unsatisfied == 0;
    }
    if (runnable) {
        s->table.erase(edt->guid);  // the GUID of a runnable EDT is stale
        start_acquire(edt);
    }
}

namespace {

// Why ocrAddDependence would refuse `source` as a dependence, or an empty
// string: checked for every slot before ocrEdtCreate registers anything.
std::string refused_source(OcrState* s, ocrGuid_t source) {
    if (is_null(source) || ocrGuidIsUninitialized(source) || dist::is_remote(source)) {
        return {};  // another rank's object is checked where it lives
    }
    if (kind_of(source) == Kind::db && s->table.find(source)) {
        return {};
    }
    if (auto event = kind_of(source) == Kind::event ? s->table.find_as<Event>(source, Kind::event) : nullptr) {
        std::lock_guard lock(event->mutex);
        const bool full = event->type == OCR_EVENT_CHANNEL_T && event->channel_values.empty() &&
                          event->channel_max != EVENT_CHANNEL_UNBOUNDED &&
                          event->channel_waiters.size() >= event->channel_max;
        return full ? fmt::format("the CHANNEL event {} already holds maxGen={} dependences", show(source),
                                  event->channel_max)
                    : std::string();
    }
    return fmt::format("{} is not NULL_GUID, a live event or a live data block", show(source));
}

// Undoes ocrEdtCreate's registration of `edt`, as ocrEdtDestroy would.
void abandon_created_edt(const std::shared_ptr<Edt>& edt) {
    OcrState* s = state();
    {
        std::lock_guard lock(edt->mutex);
        edt->destroyed = true;
    }
    s->table.erase(edt->guid);
    s->waiting_edts.fetch_sub(1, std::memory_order_acq_rel);
    if (!is_null(edt->output_event) && (edt->properties & EDT_PROP_OEVT_VALID) == 0) {
        s->table.erase(edt->output_event);
    }
    // The creator is still running in the scope, so the count cannot reach zero here.
    if (edt->scope) {
        edt->scope->pending.fetch_sub(1, std::memory_order_acq_rel);
    }
}

/// The arguments of one ocrEdtCreate call; paramc and depc resolved from the
/// template where the call says EDT_PARAM_DEF.
struct EdtCreateCall {
    ocrGuid_t* guid = nullptr;
    ocrGuid_t template_guid = NULL_GUID;
    u32 paramc = 0;
    u64* paramv = nullptr;
    u32 depc = 0;
    ocrGuid_t* depv = nullptr;
    u16 properties = 0;
    ocrHint_t* hint = nullptr;
    ocrGuid_t* output_event = nullptr;
    CallSite site;
    int rank = -1;  // where the EDT lives (its affinity hint's or its labeled GUID's rank); -1: here

    [[nodiscard]] bool output_event_given() const { return (properties & EDT_PROP_OEVT_VALID) != 0; }
};

/// The priority of a new EDT: its hint's, else its template's.
std::optional<u64> edt_priority(const ocrHint_t* hint, const EdtTemplate& tpl) {
    if (const auto priority = hint_priority(hint)) {
        return priority;
    }
    return tpl.priority.get();
}

/// Why the call's counts do not fit the template, or "" (EDT_PARAM_DEF resolved).
std::string refused_counts(const EdtTemplate& tpl, EdtCreateCall& call) {
    if (call.paramc == EDT_PARAM_DEF) {
        call.paramc = tpl.paramc;
    }
    if (call.depc == EDT_PARAM_DEF) {
        call.depc = tpl.depc;
    }
    if (call.paramc == EDT_PARAM_UNK || call.depc == EDT_PARAM_UNK) {
        return "paramc or depc is unknown in both the template and the call";
    }
    if (tpl.paramc != EDT_PARAM_UNK && call.paramc != tpl.paramc) {
        return fmt::format("paramc={} but the template ({}) says {}", call.paramc, tpl.name, tpl.paramc);
    }
    if (tpl.depc != EDT_PARAM_UNK && call.depc != tpl.depc) {
        return fmt::format("depc={} but the template ({}) says {}", call.depc, tpl.name, tpl.depc);
    }
    if (call.paramc > 0 && call.paramv == nullptr) {
        return fmt::format("paramc={} with paramv=NULL", call.paramc);
    }
    if (call.paramc == 0 && call.paramv != nullptr) {
        return "paramc=0 with a non-NULL paramv (the specification requires NULL)";
    }
    return {};
}

/// Checks the call against the template and the live objects, before
/// anything is registered, and sets call.rank; logs why and returns the
/// error code on a refusal.
u8 check_create(OcrState* s, const EdtTemplate& tpl, EdtCreateCall& call) {
    auto invalid = [&](const std::string& why) -> u8 {
        strata::detail::log().warn("strata-ocr: {}: ocrEdtCreate(template {}): {}", call.site.str(),
                                   show(call.template_guid), why);
        return OCR_EINVAL;
    };
    if (const std::string why = refused_counts(tpl, call); !why.empty()) {
        return invalid(why);
    }
    if (is_labeled(call.properties) && (call.guid == nullptr || kind_of(*call.guid) != Kind::edt)) {
        return invalid("GUID_PROP_IS_LABELED without a labeled EDT GUID in *guid");
    }
    if (call.output_event_given() &&
        (call.output_event == nullptr || kind_of(*call.output_event) != Kind::event ||
         (!dist::is_remote(*call.output_event) && !s->table.find_as<Event>(*call.output_event, Kind::event)))) {
        return invalid("EDT_PROP_OEVT_VALID without a live event in *outputEvent");
    }
    // An affinity hint places the EDT on its rank; a labeled GUID on its owner.
    std::string bad_hint;
    call.rank = is_labeled(call.properties) ? owner_of(*call.guid) : dist::hinted_rank(call.hint, true, &bad_hint);
    if (call.rank == -2) {
        return invalid(bad_hint);
    }
    // Every dependence is checked before anything is registered: a refused
    // one must leave no EDT counted in its finish scope or among the waiting.
    for (u32 i = 0; call.depv != nullptr && i < call.depc; ++i) {
        if (const std::string why = refused_source(s, call.depv[i]); !why.empty()) {
            strata::detail::log().warn("strata-ocr: {}: ocrEdtCreate(template {}): depv[{}]: {}", call.site.str(),
                                       show(call.template_guid), i, why);
            return why.starts_with("the CHANNEL") ? OCR_EBUSY : OCR_EINVAL;
        }
    }
    return 0;
}

/// The new EDT, counted in its creator's finish scope, with its output event
/// (given, or a new once event) and, for a finish EDT, its own scope.
std::shared_ptr<Edt> make_edt(OcrState* s, const EdtTemplate& tpl, const EdtCreateCall& call) {
    const std::vector<u64> params(call.paramv, call.paramv + call.paramc);
    auto edt = new_edt(tpl.function, tpl.name, params, call.depc, call.properties, call.site, enclosing_scope());
    if (const auto priority = edt_priority(call.hint, tpl)) {
        edt->priority.assign(*priority);
    }
    if (call.output_event != nullptr) {
        if (call.output_event_given()) {
            edt->output_event = *call.output_event;
        } else {
            auto event = std::make_shared<Event>();
            event->type = OCR_EVENT_ONCE_T;
            event->takes_arg = true;
            edt->output_event = s->table.insert(std::move(event));
            *call.output_event = edt->output_event;
        }
        if (edt->own_scope) {
            edt->own_scope->output_event = edt->output_event;
        }
    }
    return edt;
}

/// Adds the call's dependences to the registered EDT `id`; a source destroyed
/// or filled since check_create undoes the registration of a local `edt`
/// (null for an EDT of another rank).
u8 add_dependences(const std::shared_ptr<Edt>& edt, ocrGuid_t id, const EdtCreateCall& call) {
    for (u32 i = 0; call.depv != nullptr && i < call.depc; ++i) {
        if (ocrGuidIsUninitialized(call.depv[i])) {
            continue;
        }
        strataOcrCallSite(call.site.file, call.site.line);
        if (u8 rc = (ocrAddDependence)(call.depv[i], id, i, DB_DEFAULT_MODE); rc != 0) {
            if (!edt) {
                return rc;
            }
            abandon_created_edt(edt);
            if (call.guid != nullptr) {
                *call.guid = NULL_GUID;
            }
            if (call.output_event != nullptr && !call.output_event_given()) {
                *call.output_event = NULL_GUID;
            }
            return rc;
        }
    }
    return 0;
}

/// ocrEdtCreate of an EDT that lives on another rank (call.rank): created
/// there, then given its dependences from here.
u8 create_remote(const EdtTemplate& tpl, EdtCreateCall& call) {
    ocrGuid_t id = is_labeled(call.properties) ? *call.guid : NULL_GUID;
    const auto priority = edt_priority(call.hint, tpl);
    const u8 rc = is_labeled(call.properties)
                      ? dist::create_labeled_edt(tpl, call.paramc, call.paramv, call.depc, call.properties, priority,
                                                 id, call.output_event, call.site)
                      : dist::create_edt_on(call.rank, tpl, call.paramc, call.paramv, call.depc, call.properties,
                                            priority, &id, call.output_event, call.site);
    if (rc != 0) {
        return rc;
    }
    if (call.guid != nullptr) {
        *call.guid = id;
    }
    return add_dependences(nullptr, id, call);
}

}  // namespace

std::shared_ptr<Edt> new_edt(ocrEdt_t function, std::string name, const std::vector<u64>& params, u32 depc,
                             u16 properties, const CallSite& site, std::shared_ptr<FinishScope> scope) {
    auto edt = std::make_shared<Edt>();
    edt->function = function;
    edt->name = std::move(name);
    edt->params = params;
    edt->properties = properties;
    edt->created_at = site;
    edt->slots.resize(depc);
    edt->unsatisfied = depc;
    edt->scope = std::move(scope);
    if (edt->scope) {
        edt->scope->pending.fetch_add(1, std::memory_order_acq_rel);
    }
    if ((properties & EDT_PROP_FINISH) != 0) {
        edt->own_scope = std::make_shared<FinishScope>();
        edt->own_scope->parent = edt->scope;
    }
    return edt;
}

void deliver(ocrGuid_t destination, u32 slot, ocrGuid_t db, ocrDbAccessMode_t mode, const CallSite& site) {
    OcrState* s = state();
    if (dist::route_satisfy(destination, slot, db, mode, site, false)) {
        return;
    }
    switch (kind_of(destination)) {
        case Kind::edt:
            if (auto edt = s->table.find_as<Edt>(destination, Kind::edt)) {
                satisfy_edt(edt, slot, db, mode, site);
                return;
            }
            break;
        case Kind::event:
            if (auto event = s->table.find_as<Event>(destination, Kind::event)) {
                satisfy_event(event, db, slot, site);
                return;
            }
            break;
        default: break;
    }
    s->deferred_error(site, "ocrAddDependence", OCR_EINVAL,
                      fmt::format("the destination {} (slot {}) no longer exists when data block {} arrives",
                                  show(destination), slot, show(db)));
}

}  // namespace strata::ocr

using namespace strata::ocr;

extern "C" {

u8 ocrEdtTemplateCreate_internal(ocrGuid_t* guid, ocrEdt_t funcPtr, u32 paramc, u32 depc, const char* funcName) {
    const CallSite site = take_call_site();
    OcrState* s = state();
    if (s == nullptr || guid == nullptr || funcPtr == nullptr) {
        strata::detail::log().warn("strata-ocr: {}: ocrEdtTemplateCreate: {}", site.str(),
                                   s == nullptr ? "no OCR program is running" : "guid or function is NULL");
        return OCR_EINVAL;
    }
    auto tpl = std::make_shared<EdtTemplate>();
    tpl->function = funcPtr;
    tpl->paramc = paramc;
    tpl->depc = depc;
    tpl->name = funcName != nullptr ? funcName : "?";
    *guid = s->table.insert(std::move(tpl));
    return 0;
}

u8(ocrEdtTemplateDestroy)(ocrGuid_t guid) {
    const CallSite site = take_call_site();
    OcrState* s = state();
    if (kind_of(guid) == Kind::edt_template && dist::route_destroy(guid, site)) {
        return 0;
    }
    if (s == nullptr || kind_of(guid) != Kind::edt_template || !s->table.erase(guid)) {
        strata::detail::log().warn("strata-ocr: {}: ocrEdtTemplateDestroy({}): not a live EDT template", site.str(),
                                   show(guid));
        return OCR_EINVAL;
    }
    return 0;
}

u8(ocrEdtCreate)(ocrGuid_t* guid, ocrGuid_t templateGuid, u32 paramc, u64* paramv, u32 depc, ocrGuid_t* depv,
                 u16 properties, ocrHint_t* hint, ocrGuid_t* outputEvent) {
    EdtCreateCall call{.guid = guid,
                       .template_guid = templateGuid,
                       .paramc = paramc,
                       .paramv = paramv,
                       .depc = depc,
                       .depv = depv,
                       .properties = properties,
                       .hint = hint,
                       .output_event = outputEvent,
                       .site = take_call_site()};
    OcrState* s = state();
    std::shared_ptr<EdtTemplate> tpl;
    if (s != nullptr) {
        tpl = dist::is_remote(templateGuid) ? dist::find_template(templateGuid)
                                            : s->table.find_as<EdtTemplate>(templateGuid, Kind::edt_template);
    }
    if (!tpl) {
        strata::detail::log().warn("strata-ocr: {}: ocrEdtCreate(template {}): {}", call.site.str(), show(templateGuid),
                                   s == nullptr ? "no OCR program is running" : "not a live EDT template");
        return OCR_EINVAL;
    }
    if (u8 rc = check_create(s, *tpl, call); rc != 0) {
        return rc;
    }
    if (call.rank >= 0 && call.rank != dist::rank()) {
        return create_remote(*tpl, call);
    }
    auto edt = make_edt(s, *tpl, call);
    if (is_labeled(properties)) {
        // Created at the caller's labeled GUID; on failure undo what make_edt set up.
        if (u8 rc = insert_labeled(*guid, properties, edt); rc != 0) {
            if (!is_null(edt->output_event) && !call.output_event_given()) {
                s->table.erase(edt->output_event);
            }
            if (edt->scope) {
                edt->scope->pending.fetch_sub(1, std::memory_order_acq_rel);  // the creator still counts
            }
            strata::detail::log().warn("strata-ocr: {}: ocrEdtCreate(labeled {}): {}", call.site.str(), show(*guid),
                                       error_name(rc));
            return rc;
        }
    }
    s->waiting_edts.fetch_add(1, std::memory_order_acq_rel);
    const ocrGuid_t id = is_labeled(properties) ? *guid : s->table.insert(edt);
    if (guid != nullptr) {
        *guid = id;
    }
    if (call.depc == 0) {
        s->table.erase(id);
        start_acquire(edt);
        return 0;
    }
    return add_dependences(edt, id, call);
}

u8(ocrEdtDestroy)(ocrGuid_t guid) {
    const CallSite site = take_call_site();
    OcrState* s = state();
    if (kind_of(guid) == Kind::edt && dist::route_destroy(guid, site)) {
        return 0;  // checked where it lives
    }
    auto edt = s != nullptr ? s->table.find_as<Edt>(guid, Kind::edt) : nullptr;
    if (!edt) {
        strata::detail::log().warn("strata-ocr: {}: ocrEdtDestroy({}): not an EDT that waits for dependences",
                                   site.str(), show(guid));
        return OCR_EINVAL;
    }
    {
        std::lock_guard lock(edt->mutex);
        if (edt->unsatisfied == 0 || edt->destroyed) {
            return OCR_EPERM;
        }
        edt->destroyed = true;
    }
    s->table.erase(guid);
    s->waiting_edts.fetch_sub(1, std::memory_order_acq_rel);
    if (!is_null(edt->output_event) && (edt->properties & EDT_PROP_OEVT_VALID) == 0) {
        s->table.erase(edt->output_event);
    }
    auto scope = edt->scope;
    while (scope && scope->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        if (auto event = s->table.find_as<Event>(scope->output_event, Kind::event)) {
            satisfy_event(event, NULL_GUID, 0, site);
        }
        if (scope->remote_rank >= 0) {
            dist::proxy_scope_done(*scope);
            break;
        }
        scope = scope->parent;
    }
    return 0;
}

u8(ocrAddDependence)(ocrGuid_t source, ocrGuid_t destination, u32 slot, ocrDbAccessMode_t mode) {
    const CallSite site = take_call_site();
    OcrState* s = state();
    if (s == nullptr) {
        return OCR_EINVAL;
    }
    const Kind dst_kind = kind_of(destination);
    // Another rank's destination is checked where it lives, when the satisfaction arrives.
    if ((dst_kind != Kind::edt && dst_kind != Kind::event) ||
        (!dist::is_remote(destination) && !s->table.find(destination) && !dist::awaited(destination))) {
        strata::detail::log().warn(
            "strata-ocr: {}: ocrAddDependence({} -> {}, slot {}): the destination is not a "
            "live EDT or event",
            site.str(), show(source), show(destination), slot);
        return OCR_EINVAL;
    }
    switch (kind_of(source)) {
        case Kind::none:
            if (!is_null(source)) {
                break;
            }
            [[fallthrough]];
        case Kind::db:
            if (!is_null(source) && !s->table.find(source) && !dist::is_remote(source) && !dist::awaited(source)) {
                break;
            }
            deliver(destination, slot, source, mode, site);
            return 0;
        case Kind::event:
            if (dist::route_add_dependence(source, 0, destination, slot, mode, site)) {
                return 0;  // checked where the event lives
            }
            if (auto event = s->table.find_as<Event>(source, Kind::event)) {
                return add_event_dependence(event, Event::Waiter{destination, slot, mode, site});
            }
            break;
        default: break;
    }
    strata::detail::log().warn(
        "strata-ocr: {}: ocrAddDependence({} -> {}, slot {}): the source is not NULL_GUID, a "
        "live event or a live data block",
        site.str(), show(source), show(destination), slot);
    return OCR_EINVAL;
}

u8 ocrCurrentEdtGet(ocrGuid_t* edt) {
    if (edt == nullptr) {
        return OCR_EINVAL;
    }
    Edt* current = current_edt();
    *edt = current != nullptr ? current->guid : NULL_GUID;
    return 0;
}

}  // extern "C"
