// SPDX-License-Identifier: MIT
// Legacy interoperation (extensions/ocr-legacy.h): a program with its own
// main() starts the runtime, spawns finish EDTs and waits for their results
// from its own thread.
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "dist/api.hpp"
#include "ocr/extensions/ocr-db-info.h"
#include "ocr/extensions/ocr-legacy.h"
#include "ocr/ocr.h"
#include "state.hpp"

namespace strata::ocr {

namespace {

std::unique_ptr<OcrState> g_legacy;                                         // the legacy context's run
constexpr ocrGuid_t legacy_context{static_cast<intptr_t>((1U << 3) | 7U)};  // kind bits 7: no table object

// What the notifying EDT hands to the thread in ocrLegacyBlockProgress.
struct Wake {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    ocrGuid_t guid{0};
    void* ptr = nullptr;
    u64 size = 0;
};

ocrGuid_t notify_legacy(u32 /*paramc*/, u64* paramv, u32 /*depc*/, ocrEdtDep_t depv[]) {
    auto* wake = reinterpret_cast<Wake*>(static_cast<std::uintptr_t>(paramv[0]));
    u64 size = 0;
    if (!ocrGuidIsNull(depv[0].guid)) {
        (void)ocrDbGetSize(depv[0].guid, &size);
    }
    {
        std::lock_guard lock(wake->mutex);
        wake->guid = depv[0].guid;
        wake->ptr = depv[0].ptr;
        wake->size = size;
        wake->done = true;
    }
    wake->cv.notify_all();
    return NULL_GUID;
}

bool is_context(ocrGuid_t guid) {
    return guid.guid == legacy_context.guid && g_legacy != nullptr;
}

}  // namespace

}  // namespace strata::ocr

using namespace strata::ocr;

extern "C" {

// As the reference's: the program's arguments without `-ocr:cfg FILE`, and
// the configuration file from there or $OCR_CONFIG (iniFile, NULL for none).
void ocrParseArgs(int argc, const char* argv[], ocrConfig_t* ocrConfig) {
    if (ocrConfig == nullptr) {
        return;
    }
    static std::vector<char*> user_args;  // the stripped argv lives as long as the program
    user_args.clear();
    for (int i = 0; i < argc; ++i) {
        user_args.push_back(const_cast<char*>(argv[i]));  // ocrConfig_t's type; never written through
    }
    user_args.push_back(nullptr);
    ocrConfig->iniFile = std::getenv("OCR_CONFIG");
    for (std::size_t i = 0; i + 1 < user_args.size(); ++i) {
        if (std::strcmp(user_args[i], "-ocr:cfg") == 0 && user_args[i + 1] != nullptr) {
            ocrConfig->iniFile = user_args[i + 1];
            user_args.erase(user_args.begin() + static_cast<std::ptrdiff_t>(i),
                            user_args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
            break;
        }
    }
    ocrConfig->userArgc = static_cast<int>(user_args.size()) - 1;
    ocrConfig->userArgv = user_args.data();
}

void ocrLegacyInit(ocrGuid_t* legacyContext, ocrConfig_t* ocrConfig) {
    if (state() != nullptr) {
        fmt::print(stderr, "strata-ocr: ocrLegacyInit: an OCR program is already running in this process\n");
        std::exit(2);
    }
    auto options = OcrOptions::from_env();
    if (!options) {
        fmt::print(stderr, "strata-ocr: ocrLegacyInit: {}\n", options.error().what());
        std::exit(2);
    }
    // The configuration's worker count, unless STRATA_WORKERS set one.
    if (ocrConfig != nullptr && ocrConfig->iniFile != nullptr && *ocrConfig->iniFile != '\0') {
        const std::string source = fmt::format("iniFile={}", ocrConfig->iniFile);
        auto workers = reference_config_workers(ocrConfig->iniFile, source);
        if (!workers) {
            fmt::print(stderr, "strata-ocr: ocrLegacyInit: {}\n", workers.error().what());
            std::exit(2);
        }
        if (options->runtime.workers == 0) {
            options->runtime.workers = *workers;
        }
    }
    auto s = std::make_unique<OcrState>(*options);
    auto runtime = strata::runtime::Runtime::start(options->runtime);
    if (!runtime) {
        fmt::print(stderr, "strata-ocr: ocrLegacyInit: {}\n", runtime.error().what());
        std::exit(2);
    }
    s->runtime = std::move(*runtime);
    s->detect_stuck.store(false, std::memory_order_release);
    g_legacy = std::move(s);
    set_state(g_legacy.get());
    if (legacyContext != nullptr) {
        *legacyContext = legacy_context;
    }
}

u8 ocrLegacySpawnOCR(ocrGuid_t* handle, ocrGuid_t finishEdtTemplate, u64 paramc, u64* paramv, u64 depc, ocrGuid_t* depv,
                     ocrGuid_t legacyContext) {
    (void)take_call_site();
    if (!is_context(legacyContext) || handle == nullptr || paramc > UINT32_MAX || depc > UINT32_MAX) {
        return OCR_EINVAL;
    }
    ocrGuid_t event;
    if (u8 rc = (ocrEventCreate)(&event, OCR_EVENT_STICKY_T, EVT_PROP_TAKES_ARG); rc != 0) {
        return rc;
    }
    ocrGuid_t edt;
    ocrGuid_t output = event;
    if (u8 rc = (ocrEdtCreate)(&edt, finishEdtTemplate, static_cast<u32>(paramc), paramc == 0 ? nullptr : paramv,
                               static_cast<u32>(depc), depv, EDT_PROP_FINISH | EDT_PROP_OEVT_VALID, NULL_HINT, &output);
        rc != 0) {
        (void)(ocrEventDestroy)(event);
        return rc;
    }
    *handle = event;
    return 0;
}

u8 ocrLegacyBlockProgress(ocrGuid_t handle, ocrGuid_t* guid, void** result, u64* size, u16 properties) {
    (void)take_call_site();
    OcrState* s = state();
    if (s == nullptr) {
        return OCR_EINVAL;
    }
    while (!s->table.find_as<Event>(handle, Kind::event)) {
        if ((properties & LEGACY_PROP_WAIT_FOR_CREATE) == 0) {
            return OCR_EINVAL;
        }
        if (s->finished()) {
            return OCR_ECANCELED;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    // An EDT that depends on the handle wakes this thread with what it carries.
    Wake wake;
    ocrGuid_t tpl;
    ocrGuid_t edt;
    (ocrEdtTemplateCreate_internal)(&tpl, notify_legacy, 1, 1, "ocrLegacyBlockProgress");
    u64 param = static_cast<u64>(reinterpret_cast<std::uintptr_t>(&wake));
    ocrGuid_t uninitialized = UNINITIALIZED_GUID;
    u8 rc = (ocrEdtCreate)(&edt, tpl, 1, &param, 1, &uninitialized, EDT_PROP_NONE, NULL_HINT, nullptr);
    (void)(ocrEdtTemplateDestroy)(tpl);
    if (rc == 0) {
        rc = (ocrAddDependence)(handle, edt, 0, DB_MODE_RO);
    }
    if (rc != 0) {
        return rc;
    }
    dist::flush_sends();  // called from an EDT, what it sent must not wait for its end
    std::unique_lock lock(wake.mutex);
    while (!wake.cv.wait_for(lock, std::chrono::milliseconds(10), [&] { return wake.done; })) {
        if (s->finished()) {
            // The EDT will never run now; it still points at `wake`, so it must not be left runnable.
            return OCR_ECANCELED;
        }
    }
    if (guid != nullptr) {
        *guid = wake.guid;
    }
    if (result != nullptr) {
        *result = wake.ptr;
    }
    if (size != nullptr) {
        *size = wake.size;
    }
    return 0;
}

ocrGuid_t ocrWait(ocrGuid_t outputEvent) {
    ocrGuid_t guid = NULL_GUID;
    if (ocrLegacyBlockProgress(outputEvent, &guid, nullptr, nullptr, LEGACY_PROP_NONE) != 0) {
        return ERROR_GUID;
    }
    return guid;
}

u8 ocrLegacyFinalize(ocrGuid_t legacyContext, bool runUntilShutdown) {
    if (!is_context(legacyContext)) {
        return OCR_EINVAL;
    }
    OcrState* s = g_legacy.get();
    if (!runUntilShutdown) {
        s->finish(0);  // no-op when ocrShutdown or ocrAbort came first
    }
    const int code = s->wait_finished();
    s->runtime->stop();
    auto objects = s->table.drain();
    clear_objects(objects);
    set_state(nullptr);
    g_legacy.reset();
    return static_cast<u8>(code);
}

}  // extern "C"
