// SPDX-License-Identifier: MIT
// Calls between ranks (a request and its reply): EDT templates and GUID maps
// fetched from their owner once, objects created at labeled GUIDs of another
// rank (the creator needs the result code), and queries of remote objects.
#include "api.hpp"
#include "cluster.hpp"
#include "core/log.hpp"
#include "functions.hpp"
#include "ocr/extensions/ocr-labeling.h"
#include "ocr/ocr.h"
#include "site.hpp"

namespace strata::ocr::dist {

namespace {

Writer reply_to(std::uint64_t token, u32 code) {
    Writer reply(Msg::reply);
    reply.u64(token).u32(code);
    return reply;
}

void write_function(Writer& w, const void* function) {
    auto ref = function != nullptr ? encode_function(function) : Result<FunctionRef>(FunctionRef{});
    w.u8(function != nullptr && ref ? 1 : 0).str(ref ? ref->module : "").u64(ref ? ref->offset : 0);
}

void* read_function(Reader& in) {
    const bool present = in.u8() != 0;
    FunctionRef ref;
    ref.module = in.str();
    ref.offset = in.u64();
    if (!present) {
        return nullptr;
    }
    auto function = decode_function(ref);
    if (!function) {
        strata::detail::log().warn("strata-ocr: {}", function.error().message);
        return nullptr;
    }
    return *function;
}

// Sends a call about `guid` to its owner; the reply's reader stands after the code.
struct Answer {
    std::shared_ptr<net::Bytes> bytes;
    u32 code = OCR_EINVAL;
};
Answer ask(Cluster& c, Call what, ocrGuid_t guid, const std::function<void(Writer&)>& more = {}) {
    Writer message(Msg::call);
    const std::uint64_t token = c.new_token();
    message.u64(token).u8(static_cast<std::uint8_t>(what)).u64(id_of(guid));
    if (more) {
        more(message);
    }
    auto reply = c.call(owner_of(guid), message, token);
    if (!reply) {
        strata::detail::log().warn("strata-ocr: rank {}: asking rank {} about {}: {}", c.rank(), owner_of(guid),
                                   show(guid), reply.error().what());
        return {};
    }
    Reader in(**reply);
    in.skip_kind();
    (void)in.u64();
    Answer answer{*reply, in.u32()};
    return answer;
}

Reader after_code(const Answer& answer) {
    Reader in(*answer.bytes);
    in.skip_kind();
    (void)in.u64();
    (void)in.u32();
    return in;
}

}  // namespace

std::shared_ptr<EdtTemplate> find_template(ocrGuid_t guid) {
    Cluster* c = cluster();
    if (c == nullptr || !c->remote(guid) || kind_of(guid) != Kind::edt_template) {
        return nullptr;
    }
    {
        std::lock_guard lock(c->meta_mutex);
        if (auto it = c->templates.find(id_of(guid)); it != c->templates.end()) {
            return it->second;
        }
    }
    const Answer answer = ask(*c, Call::fetch_template, guid);
    if (answer.code != 0) {
        return nullptr;
    }
    Reader in = after_code(answer);
    auto tpl = std::make_shared<EdtTemplate>();
    tpl->guid = guid;
    tpl->function = reinterpret_cast<ocrEdt_t>(read_function(in));
    tpl->paramc = in.u32();
    tpl->depc = in.u32();
    tpl->name = in.str();
    const bool prioritized = in.u8() != 0;
    const u64 priority = in.u64();
    if (prioritized) {
        tpl->priority.assign(priority);
    }
    if (tpl->function == nullptr || !in.ok()) {
        return nullptr;
    }
    std::lock_guard lock(c->meta_mutex);
    return c->templates.try_emplace(id_of(guid), tpl).first->second;
}

std::shared_ptr<GuidMap> find_map(ocrGuid_t guid) {
    Cluster* c = cluster();
    if (c == nullptr || !c->remote(guid) || kind_of(guid) != Kind::guid_map) {
        return nullptr;
    }
    {
        std::lock_guard lock(c->meta_mutex);
        if (auto it = c->maps.find(id_of(guid)); it != c->maps.end()) {
            return it->second;
        }
    }
    const Answer answer = ask(*c, Call::fetch_map, guid);
    if (answer.code != 0) {
        return nullptr;
    }
    Reader in = after_code(answer);
    auto map = std::make_shared<GuidMap>();
    map->guid = guid;
    map->base = in.u64();
    map->first = in.u64();
    map->count = in.u64();
    map->object_kind = static_cast<Kind>(in.u8());
    map->function = reinterpret_cast<ocrGuid_t (*)(ocrGuid_t, u64, s64*, s64*)>(read_function(in));
    map->params.resize(in.u32());
    for (s64& p : map->params) {
        p = in.i64();
    }
    if (!in.ok()) {
        return nullptr;
    }
    std::lock_guard lock(c->meta_mutex);
    return c->maps.try_emplace(id_of(guid), map).first->second;
}

u8 remote_guid_kind(ocrGuid_t guid, int* kind) {
    Cluster* c = cluster();
    const Answer answer = ask(*c, Call::guid_kind, guid);
    if (answer.code == 0) {
        *kind = static_cast<int>(after_code(answer).u32());
    }
    return static_cast<u8>(answer.code);
}

u8 remote_db_size(ocrGuid_t guid, u64* size) {
    Cluster* c = cluster();
    const Answer answer = ask(*c, Call::db_size, guid);
    if (answer.code == 0) {
        *size = after_code(answer).u64();
    }
    return static_cast<u8>(answer.code);
}

u64 collective_bytes(Cluster& c, ocrGuid_t event) {
    {
        std::lock_guard lock(c.meta_mutex);
        if (auto it = c.collectives.find(id_of(event)); it != c.collectives.end()) {
            return it->second;
        }
    }
    const Answer answer = ask(c, Call::collective_bytes, event);
    if (answer.code != 0) {
        return 0;
    }
    const u64 bytes = after_code(answer).u64();
    std::lock_guard lock(c.meta_mutex);
    c.collectives[id_of(event)] = bytes;
    return bytes;
}

u8 create_labeled_event(ocrGuid_t guid, ocrEventTypes_t type, u16 properties, const ocrEventParams_t* params,
                        const CallSite& site) {
    Cluster* c = cluster();
    const Answer answer = ask(*c, Call::create_labeled, guid, [&](Writer& w) {
        w.u32(properties).u32(static_cast<u32>(type)).u8(params != nullptr ? 1 : 0);
        ocrEventParams_t copy{};
        if (params != nullptr) {
            copy = *params;
        }
        w.bytes(std::as_bytes(std::span(&copy, 1)));
        write_site(w, site);
    });
    return static_cast<u8>(answer.code);
}

u8 create_labeled_db(ocrGuid_t guid, u64 len, u16 flags, DbPlacement placement, bool acquire, const CallSite& site) {
    Cluster* c = cluster();
    const Answer answer = ask(*c, Call::create_labeled, guid, [&](Writer& w) {
        w.u32(flags).u64(len).u8(static_cast<std::uint8_t>(placement)).u8(acquire ? 1 : 0);
        write_site(w, site);
    });
    return static_cast<u8>(answer.code);
}

namespace {

struct Made {
    u8 code = OCR_EINVAL;
    ocrGuid_t out{0};  // a labeled EDT's output event
};

Made make_labeled(Cluster& c, int source, ocrGuid_t guid, u16 properties, Reader& in) {
    switch (kind_of(guid)) {
        case Kind::edt: {
            Made made;
            made.code = make_labeled_edt(c, source, guid, properties, in, &made.out);
            return made;
        }
        case Kind::event: {
            const auto type = static_cast<ocrEventTypes_t>(in.u32());
            const bool has_params = in.u8() != 0;
            auto raw = in.bytes();
            ocrEventParams_t params{};
            std::memcpy(&params, raw.data(), std::min(raw.size(), sizeof params));
            const CallSite site = read_site(c, in);
            ocrGuid_t out = guid;
            strataOcrCallSite(site.file, site.line);
            return {(ocrEventCreateParams)(&out, type, properties, has_params ? &params : nullptr)};
        }
        case Kind::db: {
            const u64 len = in.u64();
            const auto placement = static_cast<DbPlacement>(in.u8());
            const bool held = in.u8() != 0;
            const CallSite site = read_site(c, in);
            auto db = make_db(len, placement);
            if (!db) {
                return {OCR_ENOMEM};
            }
            if (u8 rc = insert_labeled(guid, properties, *db); rc != 0) {
                return {rc};
            }
            if (held) {
                std::lock_guard lock((*db)->mutex);
                (*db)->remote_writer = true;
                std::lock_guard blocks(c.blocks_mutex());
                c.written[id_of(guid)] = *db;
            }
            (void)site;
            return {0};
        }
        default: return {};
    }
}

void answer_call(Cluster& c, int source, std::uint64_t token, Call what, ocrGuid_t guid, u16 properties, Reader& in) {
    OcrState& s = c.state();
    switch (what) {
        case Call::fetch_template: {
            auto tpl = s.table.find_as<EdtTemplate>(guid, Kind::edt_template);
            Writer reply = reply_to(token, tpl ? 0 : OCR_EINVAL);
            if (tpl) {
                write_function(reply, reinterpret_cast<const void*>(tpl->function));
                const auto priority = tpl->priority.get();
                reply.u32(tpl->paramc).u32(tpl->depc).str(tpl->name).u8(priority ? 1 : 0).u64(priority.value_or(0));
            }
            c.send(source, reply);
            return;
        }
        case Call::fetch_map: {
            auto map = s.table.find_as<GuidMap>(guid, Kind::guid_map);
            Writer reply = reply_to(token, map ? 0 : OCR_EINVAL);
            if (map) {
                reply.u64(map->base).u64(map->first).u64(map->count).u8(static_cast<std::uint8_t>(map->object_kind));
                write_function(reply, reinterpret_cast<const void*>(map->function));
                reply.u32(static_cast<u32>(map->params.size()));
                for (s64 p : map->params) {
                    reply.i64(p);
                }
            }
            c.send(source, reply);
            return;
        }
        case Call::guid_kind: {
            ocrGuidUserKind kind = GUID_USER_NONE;
            (void)ocrGetGuidKind(&kind, guid);
            Writer reply = reply_to(token, 0);
            reply.u32(static_cast<u32>(kind));
            c.send(source, reply);
            return;
        }
        case Call::db_size: {
            auto db = s.table.find_as<Db>(guid, Kind::db);
            Writer reply = reply_to(token, db ? 0 : OCR_EINVAL);
            reply.u64(db ? db->size : 0);
            c.send(source, reply);
            return;
        }
        case Call::collective_bytes: {
            auto event = s.table.find_as<Event>(guid, Kind::event);
            const u64 bytes = event && event->collective ? collective_contribution_bytes(*event) : 0;
            Writer reply = reply_to(token, bytes != 0 ? 0 : OCR_EINVAL);
            reply.u64(bytes);
            c.send(source, reply);
            return;
        }
        case Call::create_labeled: {
            const Made made = make_labeled(c, source, guid, properties, in);
            Writer reply = reply_to(token, made.code);
            reply.u64(id_of(made.out));
            c.send(source, reply);
            return;
        }
    }
}

}  // namespace

void on_call(Cluster& c, int source, Reader& in) {
    const std::uint64_t token = in.u64();
    const auto what = static_cast<Call>(in.u8());
    const ocrGuid_t guid = guid_of(in.u64());
    const u16 properties = what == Call::create_labeled ? static_cast<u16>(in.u32()) : 0;
    if (what == Call::create_labeled && (properties & (GUID_PROP_BLOCK & ~GUID_PROP_IS_LABELED)) != 0) {
        // GUID_PROP_BLOCK waits until the GUID is free: on a worker (the blocking
        // monitor covers its core), never on the communication thread.
        const auto rest = in.rest();
        auto message = std::make_shared<net::Bytes>(rest.begin(), rest.end());
        c.state().runtime->spawn([&c, source, token, guid, properties, message] {
            Reader body(*message);
            const Made made = make_labeled(c, source, guid, properties, body);
            Writer reply = reply_to(token, made.code);
            reply.u64(id_of(made.out));
            c.send(source, reply);
        });
        return;
    }
    answer_call(c, source, token, what, guid, properties, in);
}

}  // namespace strata::ocr::dist
