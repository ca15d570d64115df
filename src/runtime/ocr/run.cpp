// SPDX-License-Identifier: MIT
// run_ocr(): one OCR program from mainEdt to shutdown.
#include <cstdlib>
#include <cstring>

#include "ocr/ocr.h"
#include "state.hpp"

namespace strata::ocr {

Result<OcrOptions> OcrOptions::from_env() {
    OcrOptions options;
    auto runtime = runtime::Options::from_env();
    if (!runtime) {
        return std::unexpected(runtime.error());
    }
    options.runtime = std::move(*runtime);
    if (const char* placement = std::getenv("STRATA_OCR_DB_PLACEMENT"); placement != nullptr && *placement != '\0') {
        auto parsed = parse_db_placement(placement, "STRATA_OCR_DB_PLACEMENT");
        if (!parsed) {
            return std::unexpected(parsed.error());
        }
        options.db_placement = *parsed;
    }
    options.db_dir = default_db_dir();
    return options;
}

namespace {

// OCR's argument block: u64 argc, u64 offsets[argc], then the strings.
Result<ocrGuid_t> pack_arguments(int argc, char** argv) {
    const auto count = static_cast<std::size_t>(argc);
    std::size_t length = sizeof(u64) * (1 + count);
    for (std::size_t i = 0; i < count; ++i) {
        length += std::strlen(argv[i]) + 1;
    }
    ocrGuid_t guid;
    void* data = nullptr;
    if (u8 rc = (ocrDbCreate)(&guid, &data, length, DB_PROP_NONE, NULL_HINT, NO_ALLOC); rc != 0) {
        return make_error(Errc::out_of_memory, "run_ocr: the argument block of {} bytes: {}", length, error_name(rc));
    }
    auto* header = static_cast<u64*>(data);
    header[0] = count;
    std::size_t offset = sizeof(u64) * (1 + count);
    for (std::size_t i = 0; i < count; ++i) {
        header[1 + i] = offset;
        const std::size_t n = std::strlen(argv[i]) + 1;
        std::memcpy(static_cast<char*>(data) + offset, argv[i], n);
        offset += n;
    }
    return guid;
}

}  // namespace

// Breaks the references between objects left at the end of a run (EDTs
// waiting on data blocks and events), so everything is freed.
void clear_objects(std::vector<std::shared_ptr<Object>>& objects) {
    for (auto& object : objects) {
        if (object->kind == Kind::db) {
            auto& db = static_cast<Db&>(*object);
            std::lock_guard lock(db.mutex);
            db.waiters.clear();
        } else if (object->kind == Kind::edt) {
            auto& edt = static_cast<Edt&>(*object);
            std::lock_guard lock(edt.mutex);
            edt.slots.clear();
            edt.holds.clear();
        }
    }
    objects.clear();
}

Result<int> run_ocr(ocrEdt_t main_edt, int argc, char** argv, const OcrOptions& options) {
    if (state() != nullptr) {
        return make_error(Errc::busy, "run_ocr: an OCR program is already running in this process");
    }
    auto s = std::make_unique<OcrState>(options);
    auto runtime = runtime::Runtime::start(options.runtime);
    if (!runtime) {
        return std::unexpected(runtime.error());
    }
    s->runtime = std::move(*runtime);
    set_state(s.get());

    int code = 1;
    auto arguments = pack_arguments(argc, argv);
    ocrGuid_t tpl;
    ocrGuid_t edt;
    if (!arguments) {
        set_state(nullptr);
        return std::unexpected(arguments.error());
    }
    (ocrEdtTemplateCreate_internal)(&tpl, main_edt, 0, 1, "mainEdt");
    ocrGuid_t depv[1] = {*arguments};
    if (u8 rc = (ocrEdtCreate)(&edt, tpl, 0, nullptr, 1, depv, EDT_PROP_NONE, NULL_HINT, nullptr); rc != 0) {
        s->finish(1);
    }
    (ocrEdtTemplateDestroy)(tpl);
    code = s->wait_finished();
    // External programs still running are killed and reaped before the
    // workers stop, so no process or file of the run outlives it.
    std::shared_ptr<RunExtension> extension;
    {
        std::lock_guard lock(s->extension_mutex);
        extension = s->extension;
    }
    if (extension) {
        extension->stop();
    }
    s->runtime->stop();
    auto objects = s->table.drain();
    clear_objects(objects);
    s->close_db_dir();  // after the blocks: their files are gone, then the directory
    set_state(nullptr);
    return code;
}

}  // namespace strata::ocr
