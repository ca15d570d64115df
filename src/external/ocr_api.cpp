// SPDX-License-Identifier: MIT
// The OCR extension calls of include/ocr/extensions/ocr-external.h and the
// run's external state (ocr_external.hpp).
#include <csignal>
#include <cstdlib>

#include <fmt/format.h>

#include "core/log.hpp"
#include "ocr/ocr.h"
#include "ocr_external.hpp"

namespace strata::external {

using namespace strata::ocr;

Result<std::shared_ptr<ExternalRun>> ExternalRun::of(OcrState& s) {
    std::lock_guard lock(s.extension_mutex);
    if (s.extension) {
        return std::static_pointer_cast<ExternalRun>(s.extension);
    }
    auto run = std::make_shared<ExternalRun>();
    if (const char* env = std::getenv("STRATA_EXTERNAL_EXPOSURE"); env != nullptr && *env != '\0') {
        const auto choice = exposure_choice_of(env);
        if (!choice) {
            return make_error(Errc::invalid_argument,
                              "STRATA_EXTERNAL_EXPOSURE={}: not an exposure (expected auto, memfd or fuse)", env);
        }
        run->default_choice_ = *choice;
    }
    OcrState* state_at_start = &s;
    auto reactor = Reactor::start([state_at_start](int sig) {
        {
            std::lock_guard print(state_at_start->print_mutex);
            std::fflush(stdout);
            fmt::print(stderr, "strata-external: {}: killed every running external program; the program ends\n",
                       sig == SIGINT ? "SIGINT" : "SIGTERM");
        }
        state_at_start->finish(128 + sig);
    });
    if (!reactor) {
        return std::unexpected(reactor.error());
    }
    run->reactor_ = std::move(*reactor);
    s.extension = run;
    return run;
}

void ExternalRun::stop() noexcept {
    if (reactor_) {
        reactor_->stop();
    }
    std::unique_ptr<FuseExposure> fuse;
    {
        std::lock_guard lock(exposure_mutex_);
        stopped_ = true;
        fuse = std::move(fuse_);
    }
    if (fuse) {
        fuse->stop();
    }
}

Result<std::shared_ptr<const Config>> ExternalRun::config() {
    std::lock_guard lock(mutex_);
    if (config_) {
        return config_;
    }
    const char* path = std::getenv("STRATA_EXTERNAL_CONFIG");
    if (path == nullptr || *path == '\0') {
        return make_error(Errc::not_found,
                          "no configuration of external programs: set STRATA_EXTERNAL_CONFIG, run with `strata ocr "
                          "--external-config FILE` or call ocrExternalConfigLoad(path)");
    }
    auto loaded = Config::load(path);
    if (!loaded) {
        return std::unexpected(loaded.error());
    }
    config_ = std::make_shared<const Config>(std::move(*loaded));
    return config_;
}

Result<void> ExternalRun::load_config(const std::string& path) {
    auto loaded = Config::load(path);
    if (!loaded) {
        return std::unexpected(loaded.error());
    }
    std::lock_guard lock(mutex_);
    config_ = std::make_shared<const Config>(std::move(*loaded));
    return {};
}

Result<Exposure*> ExternalRun::exposure(const Entry& entry) {
    const bool named = entry.key_lines.contains("exposure");
    const ExposureChoice choice = named ? entry.exposure : default_choice_;
    const std::string chosen_by =
        named ? entry.where("exposure", fmt::format("\"{}\"", to_string(choice)))
              : fmt::format("entry [{}]: exposure {} (from {}): ", entry.name, to_string(choice),
                            default_choice_ == ExposureChoice::automatic ? "the default" : "STRATA_EXTERNAL_EXPOSURE");
    std::lock_guard lock(exposure_mutex_);
    if (stopped_) {
        return make_error(Errc::busy, "{}the run is ending", chosen_by);
    }
    auto fuse = [&]() -> Result<Exposure*> {
        if (!fuse_) {
            fuse_ = std::make_unique<FuseExposure>();
        }
        // Start strata-fsd now, so a failure names the exposure, not a task's file.
        if (auto mounted = fuse_->mount_point(); !mounted) {
            return make_error(mounted.error().code, "{}{}", chosen_by, mounted.error().message);
        }
        return fuse_.get();
    };
    if (entry.temporary_files && choice != ExposureChoice::memfd) {
        return fuse();  // auto: only the FUSE directory can hold a program's own files
    }
    switch (choice) {
        case ExposureChoice::memfd: return &memfd_;
        case ExposureChoice::fuse: return fuse();
        case ExposureChoice::automatic: break;
    }
    if (!auto_pick_) {
        auto_pick_ = pick_automatic(MemfdExposure::probe(), [&]() -> Result<void> {
            auto started = fuse();
            if (!started) {
                return std::unexpected(started.error());
            }
            return {};
        });
    }
    if (!auto_pick_->kind) {
        return make_error(Errc::unsupported, "{}auto picks {}", chosen_by, auto_pick_->reason);
    }
    if (*auto_pick_->kind == ExposureKind::memfd) {
        return &memfd_;
    }
    return fuse();
}

std::shared_ptr<TaskRecord> ExternalRun::add_record(std::uint64_t task) {
    auto record = std::make_shared<TaskRecord>();
    std::lock_guard lock(mutex_);
    records_[task] = record;
    return record;
}

std::shared_ptr<TaskRecord> ExternalRun::find_record(std::uint64_t task) {
    std::lock_guard lock(mutex_);
    auto it = records_.find(task);
    return it == records_.end() ? nullptr : it->second;
}

void ExternalRun::erase_record(std::uint64_t task) {
    std::lock_guard lock(mutex_);
    records_.erase(task);
}

}  // namespace strata::external

using namespace strata::ocr;
using strata::external::ExternalRun;
using strata::external::ExternalTemplate;

namespace {

u8 refuse(const CallSite& site, std::string_view call, const std::string& why, u8 code = OCR_EINVAL) {
    OcrState* s = state();
    if (s != nullptr) {
        std::lock_guard lock(s->print_mutex);
        std::fflush(stdout);
        fmt::print(stderr, "strata-ocr: {}: {}: {}: {}\n", site.str(), call, error_name(code), why);
    } else {
        fmt::print(stderr, "strata-ocr: {}: {}: {}: {}\n", site.str(), call, error_name(code), why);
    }
    return code;
}

}  // namespace

extern "C" {

u8(ocrExternalConfigLoad)(const char* path) {
    const CallSite site = take_call_site();
    OcrState* s = state();
    if (s == nullptr || path == nullptr) {
        return refuse(site, "ocrExternalConfigLoad", s == nullptr ? "no OCR program is running" : "path is NULL");
    }
    auto run = ExternalRun::of(*s);
    if (!run) {
        return refuse(site, "ocrExternalConfigLoad", run.error().message);
    }
    if (auto loaded = (*run)->load_config(path); !loaded) {
        return refuse(site, "ocrExternalConfigLoad", loaded.error().message);
    }
    return 0;
}

u8 ocrExternalTemplateCreate_internal(ocrGuid_t* guid, const char* name, u32 nInputs, u32 nOutputs) {
    const CallSite site = take_call_site();
    const std::string call =
        fmt::format("ocrExternalTemplateCreate(\"{}\", {}, {})", name != nullptr ? name : "(null)", nInputs, nOutputs);
    OcrState* s = state();
    if (s == nullptr || guid == nullptr || name == nullptr) {
        return refuse(site, call, s == nullptr ? "no OCR program is running" : "guid or name is NULL");
    }
    auto run = ExternalRun::of(*s);
    if (!run) {
        return refuse(site, call, run.error().message);
    }
    auto config = (*run)->config();
    if (!config) {
        return refuse(site, call, config.error().message);
    }
    auto entry = (*config)->find(name);
    if (!entry) {
        return refuse(site, call, entry.error().message);
    }
    if (auto checked = strata::external::Config::check(**entry, nInputs, nOutputs); !checked) {
        return refuse(site, call, checked.error().message);
    }
    auto tpl = std::make_shared<ExternalTemplate>();
    tpl->config = *config;
    tpl->entry = *entry;
    tpl->inputs = nInputs;
    tpl->outputs = nOutputs;
    *guid = s->table.insert(std::move(tpl));
    return 0;
}

u8(ocrExternalTemplateDestroy)(ocrGuid_t guid) {
    const CallSite site = take_call_site();
    OcrState* s = state();
    if (s == nullptr || kind_of(guid) != Kind::external_template || !s->table.erase(guid)) {
        return refuse(site, fmt::format("ocrExternalTemplateDestroy({})", show(guid)), "not a live external template");
    }
    return 0;
}

u8(ocrExternalTaskCreate)(ocrGuid_t* guid, ocrGuid_t templateGuid, u32 depc, ocrGuid_t* depv, u32 outc,
                          ocrGuid_t* outputEvents) {
    const CallSite site = take_call_site();
    const std::string call = fmt::format("ocrExternalTaskCreate(template {})", show(templateGuid));
    OcrState* s = state();
    if (s == nullptr || guid == nullptr) {
        return refuse(site, call, s == nullptr ? "no OCR program is running" : "guid is NULL");
    }
    auto tpl = s->table.find_as<ExternalTemplate>(templateGuid, Kind::external_template);
    if (!tpl) {
        return refuse(site, call, "not a live external template");
    }
    if (depc != tpl->inputs || outc != tpl->outputs) {
        return refuse(site, call,
                      fmt::format("depc={} outc={} but the template [{}] has {} inputs and {} outputs", depc, outc,
                                  tpl->entry->name, tpl->inputs, tpl->outputs));
    }
    if (outc > 0 && outputEvents == nullptr) {
        return refuse(site, call, fmt::format("outc={} with outputEvents=NULL", outc));
    }
    std::vector<ocrGuid_t> outs(outputEvents, outputEvents + outc);
    for (u32 k = 0; k < outc; ++k) {
        if (!s->table.find_as<Event>(outs[k], Kind::event)) {
            return refuse(site, call, fmt::format("outputEvents[{}]={} is not a live event", k, show(outs[k])));
        }
    }
    auto run = ExternalRun::of(*s);
    if (!run) {
        return refuse(site, call, run.error().message);
    }

    // The task is an EDT with a body instead of a function: ocrAddDependence,
    // acquisition, finish scopes and counting treat it as one.
    auto edt = std::make_shared<Edt>();
    edt->name = fmt::format("external [{}]", tpl->entry->name);
    edt->created_at = site;
    edt->slots.resize(depc);
    edt->unsatisfied = depc;
    Edt* parent = current_edt();
    edt->scope = parent == nullptr ? nullptr : (parent->own_scope ? parent->own_scope : parent->scope);
    if (edt->scope) {
        edt->scope->pending.fetch_add(1, std::memory_order_acq_rel);
    }
    s->waiting_edts.fetch_add(1, std::memory_order_acq_rel);
    const ocrGuid_t id = s->table.insert(edt);
    auto record = (*run)->add_record(id_of(id));
    edt->body = std::make_shared<strata::external::ExternalBody>(*run, tpl, std::move(outs), record);
    *guid = id;
    if (depc == 0) {
        start_edt(edt);  // no inputs: runnable at once
        return 0;
    }
    if (depv != nullptr) {
        for (u32 i = 0; i < depc; ++i) {
            if (!ocrGuidIsUninitialized(depv[i])) {
                strataOcrCallSite(site.file, site.line);
                if (u8 rc = (ocrAddDependence)(depv[i], id, i, DB_MODE_RO); rc != 0) {
                    return rc;
                }
            }
        }
    }
    return 0;
}

u8(ocrExternalTaskDestroy)(ocrGuid_t guid) {
    const CallSite site = take_call_site();
    const std::string call = fmt::format("ocrExternalTaskDestroy({})", show(guid));
    OcrState* s = state();
    if (s == nullptr) {
        return refuse(site, call, "no OCR program is running");
    }
    auto run = ExternalRun::of(*s);
    auto record = run ? (*run)->find_record(id_of(guid)) : nullptr;
    if (!record) {
        return refuse(site, call, "not an external task");
    }
    if (auto edt = s->table.find_as<Edt>(guid, Kind::edt)) {
        strataOcrCallSite(site.file, site.line);
        const u8 rc = (ocrEdtDestroy)(guid);
        if (rc == 0) {
            (*run)->erase_record(id_of(guid));
        }
        return rc;
    }
    std::lock_guard lock(record->mutex);
    if (record->status.state == OCR_EXTERNAL_PENDING) {
        return refuse(site, call, "its program is running", OCR_EPERM);
    }
    (*run)->erase_record(id_of(guid));
    return 0;
}

u8 ocrExternalTaskStatus(ocrGuid_t guid, ocrExternalStatus_t* status) {
    OcrState* s = state();
    if (s == nullptr || status == nullptr) {
        return OCR_EINVAL;
    }
    auto run = ExternalRun::of(*s);
    auto record = run ? (*run)->find_record(id_of(guid)) : nullptr;
    if (!record) {
        return OCR_EINVAL;
    }
    std::lock_guard lock(record->mutex);
    *status = record->status;
    return 0;
}

}  // extern "C"
