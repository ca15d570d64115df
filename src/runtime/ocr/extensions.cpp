// SPDX-License-Identifier: MIT
// Small OCR 1.2 extensions and helpers: ocrAssert, SNPRINTF, the runtime
// interface (EDT-local storage, worker GUIDs, legacy blocking), ocrDbGetSize,
// and pause / query / resume.
#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dist/api.hpp"
#include "dist/cluster.hpp"
#include "ocr/extensions/ocr-db-info.h"
#include "ocr/extensions/ocr-pause.h"
#include "ocr/extensions/ocr-runtime-itf.h"
#include "ocr/ocr.h"
#include "state.hpp"

namespace strata::ocr {

void enter_edt() {
    OcrState* s = state();
    s->running_edts.fetch_add(1);  // seq_cst: see OcrState::paused
    if (!s->paused.load()) {
        return;  // the common case: no lock
    }
    std::unique_lock lock(s->pause_mutex);
    s->running_edts.fetch_sub(1);
    s->pause_cv.notify_all();  // a blocking ocrPause may wait for this count
    s->pause_cv.wait(lock, [&] { return !s->paused.load() || s->finished(); });
    s->running_edts.fetch_add(1);
}

void leave_edt() {
    OcrState* s = state();
    s->running_edts.fetch_sub(1);
    if (s->paused.load()) {
        { std::lock_guard lock(s->pause_mutex); }  // a blocking ocrPause between its check and its wait sees this
        s->pause_cv.notify_all();
    }
}

}  // namespace strata::ocr

using namespace strata::ocr;

extern "C" {

void _ocrAssert(bool val, const char* str, const char* file, u32 line) {
    if (val) {
        return;
    }
    std::fflush(stdout);
    std::fprintf(stderr, "strata-ocr: %s:%u: ocrAssert(%s) failed\n", file, line, str);
    std::abort();
}

u32 SNPRINTF(char* buf, u32 size, const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    // The OCR API declares SNPRINTF without a format attribute (ocr-std.h): the caller's format.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wformat-nonliteral"
#endif
    const int n = std::vsnprintf(buf, size, fmt, args);
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
    va_end(args);
    return n < 0 ? 0 : static_cast<u32>(n);
}

ocrGuid_t ocrElsUserGet(u8 offset) {
    Edt* edt = current_edt();
    return edt != nullptr && offset < edt->els.size() ? edt->els[offset] : NULL_GUID;
}

void ocrElsUserSet(u8 offset, ocrGuid_t data) {
    if (Edt* edt = current_edt(); edt != nullptr && offset < edt->els.size()) {
        edt->els[offset] = data;
    }
}

void currentEdtUserGet(ocrGuid_t* guid) {
    if (guid != nullptr) {
        (void)ocrCurrentEdtGet(guid);
    }
}

// Worker GUIDs are not objects of the table: the thread id in the GUID's
// number, and kind bits 6, which no table object carries.
void ocrCurrentWorkerGuid(ocrGuid_t* guid) {
    if (guid == nullptr) {
        return;
    }
    if (strata::runtime::Runtime::current() == nullptr) {
        *guid = NULL_GUID;
        return;
    }
    const auto tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
    *guid = guid_of((tid << 3) | 6U);
}

u8 ocrInformLegacyCodeBlocking(void) {
    auto* runtime = strata::runtime::Runtime::current();
    const int cpu = strata::runtime::Runtime::current_cpu();
    if (current_edt() == nullptr || runtime == nullptr || cpu < 0) {
        return OCR_EINVAL;
    }
    // What the blocking monitor reports once the thread sleeps in the kernel,
    // said before it happens: the leader wakes (or creates) another worker for
    // this core if work is queued.
    runtime->core_without_ready_worker(cpu);
    return 0;
}

u8 ocrDbGetSize(ocrGuid_t db, u64* size) {
    OcrState* s = state();
    const bool remote = strata::ocr::dist::is_remote(db);
    auto block = s != nullptr && !remote ? s->table.find_as<Db>(db, Kind::db) : nullptr;
    if ((!block && !remote) || size == nullptr) {
        return OCR_EINVAL;
    }
    if (Edt* edt = current_edt()) {
        auto hold = std::find_if(edt->holds.begin(), edt->holds.end(),
                                 [&](const Hold& h) { return h.guid.guid == db.guid && !h.released; });
        const bool in_depv = std::any_of(edt->slots.begin(), edt->slots.end(),
                                         [&](const Slot& slot) { return slot.db.guid == db.guid; });
        if (hold == edt->holds.end() && !in_depv) {
            return OCR_EACCES;
        }
        if (hold != edt->holds.end() && hold->remote) {
            *size = hold->remote->size;
            return 0;
        }
    }
    if (remote) {
        return strata::ocr::dist::remote_db_size(db, size);  // a round trip to its owner
    }
    *size = block->size;
    return 0;
}

u32 ocrPause(bool isBlocking) {
    OcrState* s = state();
    if (s == nullptr) {
        return 0;
    }
    std::unique_lock lock(s->pause_mutex);
    if (s->paused.exchange(true)) {
        return 0;
    }
    if (isBlocking) {
        dist::flush_sends();  // the EDTs it waits for may need what this one sent
        const int self = current_edt() != nullptr ? 1 : 0;
        s->pause_cv.wait(lock, [&] { return s->running_edts.load() <= self || s->finished(); });
    }
    return 1;
}

void ocrResume(u32 /*flag*/) {
    OcrState* s = state();
    if (s == nullptr) {
        return;
    }
    {
        std::lock_guard lock(s->pause_mutex);
        s->paused.store(false);
    }
    s->pause_cv.notify_all();
}

ocrGuid_t ocrQuery(ocrQueryType_t query, ocrGuid_t /*guid*/, void** result, u32* size, u8 /*flags*/) {
    OcrState* s = state();
    if (s == nullptr || result == nullptr || size == nullptr) {
        return NULL_GUID;
    }
    if (!s->paused.load()) {
        return NULL_GUID;
    }
    std::vector<std::shared_ptr<Object>> objects;
    switch (query) {
        case OCR_QUERY_READY_EDTS:
        case OCR_QUERY_ALL_EDTS: objects = s->table.sample(Kind::edt, SIZE_MAX); break;
        case OCR_QUERY_EVENTS: objects = s->table.sample(Kind::event, SIZE_MAX); break;
        default: return NULL_GUID;
    }
    if (query == OCR_QUERY_READY_EDTS) {
        // Waiting EDTs have unsatisfied slots; a runnable one is out of the table already.
        objects.erase(std::remove_if(objects.begin(), objects.end(),
                                     [](const auto& o) {
                                         auto& edt = static_cast<Edt&>(*o);
                                         std::lock_guard lock(edt.mutex);
                                         return edt.unsatisfied != 0;
                                     }),
                      objects.end());
    }
    const auto bytes = static_cast<u32>(std::max<std::size_t>(objects.size(), 1) * sizeof(ocrGuid_t));
    ocrGuid_t db;
    void* data = nullptr;
    if ((ocrDbCreate)(&db, &data, bytes, DB_PROP_NONE, NULL_HINT, NO_ALLOC) != 0) {
        return NULL_GUID;
    }
    auto* out = static_cast<ocrGuid_t*>(data);
    for (std::size_t i = 0; i < objects.size(); ++i) {
        out[i] = objects[i]->guid;
    }
    *result = data;
    *size = static_cast<u32>(objects.size() * sizeof(ocrGuid_t));
    return db;
}

}  // extern "C"
