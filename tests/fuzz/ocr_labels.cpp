// SPDX-License-Identifier: MIT
// Fuzz target: the OCR API's labeled GUIDs and hints (src/runtime/ocr/labels.cpp,
// program.cpp): the values a program passes. Each input is one OCR run whose
// mainEdt makes the calls the input spells: GUID ranges and maps of any
// count and kind, GUIDs from indices and labels (the map function returns
// what the input says), objects created at those GUIDs and destroyed, hint
// values of any property set on them. A GUID argument is one made before or
// any 64-bit value. GUID_PROP_BLOCK is left out: creating at a live GUID
// with it waits for that object's destruction, forever in a one-EDT program,
// as in the reference.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "input.hpp"
#include "ocr/extensions/ocr-labeling.h"
#include "ocr/ocr.h"
#include "strata/runtime/ocr.hpp"

namespace {

strata::fuzz::Input* g_input = nullptr;

ocrGuid_t label_map(ocrGuid_t start, u64 /*skip*/, s64* params, s64* tuple) {
    // The label's guid: start + tuple[0] * params[0] (params may be empty: then tuple[0]),
    // modulo 2^64: both are the input's, and a signed product may overflow.
    const s64 step = params != nullptr ? params[0] : 1;
    return addValueToGuid(start, static_cast<u64>(tuple[0]) * static_cast<u64>(step));
}

ocrGuid_t noop_edt(u32 /*paramc*/, u64* /*paramv*/, u32 /*depc*/, ocrEdtDep_t* /*depv*/) {
    return NULL_GUID;
}

ocrGuid_t pick(strata::fuzz::Input& in, const std::vector<ocrGuid_t>& made) {
    const std::uint8_t how = in.byte();
    if (!made.empty() && how < 200) {
        return made[how % made.size()];
    }
    ocrGuid_t any;
    any.guid = static_cast<intptr_t>(in.take<std::uint64_t>());
    return any;
}

void call_one(strata::fuzz::Input& in, std::vector<ocrGuid_t>& made) {
    ocrGuid_t out = NULL_GUID;
    const auto kind = static_cast<ocrGuidUserKind>(in.byte() % 12);
    switch (in.byte() % 10) {
        case 0:
            if (ocrGuidRangeCreate(&out, in.take<std::uint64_t>() % 1'000'000 + in.byte() / 255, kind) == 0) {
                made.push_back(out);
            }
            break;
        case 1: {
            s64 params[2] = {in.take<std::int64_t>(), in.take<std::int64_t>()};
            const u32 nparams = in.byte() % 3;
            if (ocrGuidMapCreate(&out, nparams, label_map, nparams > 0 ? params : nullptr,
                                 in.take<std::uint64_t>() % 1'000'000, kind) == 0) {
                made.push_back(out);
            }
            break;
        }
        case 2:
            if (ocrGuidFromIndex(&out, pick(in, made), in.take<std::uint64_t>()) == 0) {
                made.push_back(out);
            }
            break;
        case 3: {
            s64 tuple[1] = {in.take<std::int64_t>()};
            if (ocrGuidFromLabel(&out, pick(in, made), tuple) == 0) {
                made.push_back(out);
            }
            break;
        }
        case 4: {
            out = pick(in, made);
            const auto type = static_cast<ocrEventTypes_t>(in.byte() % (OCR_EVENT_T_MAX + 1));
            const u16 props = (in.byte() & 1U) != 0 ? GUID_PROP_IS_LABELED : GUID_PROP_CHECK;
            if (ocrEventCreate(&out, type, props) == 0) {
                made.push_back(out);
            }
            break;
        }
        case 5: (void)ocrEventDestroy(pick(in, made)); break;
        case 6: (void)ocrGuidMapDestroy(pick(in, made)); break;
        case 7: {
            ocrHint_t hint;
            (void)ocrHintInit(&hint, static_cast<ocrHintType_t>(in.byte() % 6));
            for (int i = in.byte() % 4; i >= 0; --i) {
                const auto prop = static_cast<ocrHintProp_t>(in.byte() % (OCR_HINT_GROUP_PROP_END + 2));
                ocrHintVal_t value = in.take<std::uint64_t>();
                (void)ocrSetHintValue(&hint, prop, value);
                (void)ocrGetHintValue(&hint, prop, &value);
                if ((in.byte() & 1U) != 0) {
                    (void)ocrUnsetHintValue(&hint, prop);
                }
            }
            const ocrGuid_t target = pick(in, made);
            (void)ocrSetHint(target, &hint);
            (void)ocrGetHint(target, &hint);
            break;
        }
        case 8: {
            ocrGuidUserKind got = GUID_USER_NONE;
            (void)ocrGetGuidKind(&got, addValueToGuid(pick(in, made), in.byte()));
            break;
        }
        default: {
            ocrGuid_t tpl;
            if (ocrEdtTemplateCreate(&tpl, noop_edt, 0, 0) == 0) {
                made.push_back(tpl);
            }
            break;
        }
    }
}

ocrGuid_t main_edt(u32 /*paramc*/, u64* /*paramv*/, u32 /*depc*/, ocrEdtDep_t* /*depv*/) {
    std::vector<ocrGuid_t> made;
    for (int calls = 0; !g_input->empty() && calls < 64; ++calls) {
        call_one(*g_input, made);
    }
    ocrShutdown();
    return NULL_GUID;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
    ::setenv("STRATA_MONITOR", "off", 1);
    ::setenv("STRATA_WORKERS", "1", 1);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    strata::fuzz::Input in(data, size);
    g_input = &in;
    auto options = strata::ocr::OcrOptions::from_env();
    if (!options) {
        std::fprintf(stderr, "fuzz_ocr_labels: %s\n", options.error().message.c_str());
        std::abort();
    }
    char name[] = "fuzz";
    char* argv[] = {name, nullptr};
    auto code = strata::ocr::run_ocr(main_edt, 1, argv, *options);
    if (!code) {
        std::fprintf(stderr, "fuzz_ocr_labels: run_ocr: %s\n", code.error().message.c_str());
        std::abort();
    }
    g_input = nullptr;
    return 0;
}
