// SPDX-License-Identifier: MIT
// External tasks inside an OCR run: the run's external state (configuration,
// exposures, reactor, task statuses) and the body of an external task.
//
// An external task is an EDT whose body (EdtBody) spawns the program instead
// of calling a function: it counts as a live task of the run from the moment
// its inputs are acquired until complete() satisfied its output events, so
// finish scopes and "nothing can run" detection see it like any EDT, while no
// worker waits for it (the reactor does).
//
// Thread safety: ExternalRun is shared by every worker and the reactor; its
// members lock what they touch.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "auto_exposure.hpp"
#include "config.hpp"
#include "exposure.hpp"
#include "fuse_exposure.hpp"
#include "memfd_exposure.hpp"
#include "ocr/extensions/ocr-external.h"
#include "reactor.hpp"
#include "runtime/ocr/state.hpp"

namespace strata::external {

/// How one external task ended, for ocrExternalTaskStatus().
struct TaskRecord {
    std::mutex mutex;
    ocrExternalStatus_t status{OCR_EXTERNAL_PENDING, -1, 0, 0};  // guarded by mutex
};

struct ExternalTemplate : ocr::Object {
    ExternalTemplate() : ocr::Object(ocr::Kind::external_template) {}
    std::shared_ptr<const Config> config;  // keeps entry alive
    const Entry* entry = nullptr;
    u32 inputs = 0;
    u32 outputs = 0;
};

class ExternalRun final : public ocr::RunExtension {
public:
    /// The run's external state, made (reactor started) on first use.
    /// invalid_argument when $STRATA_EXTERNAL_EXPOSURE is set to something
    /// other than auto, memfd or fuse.
    static Result<std::shared_ptr<ExternalRun>> of(ocr::OcrState& s);

    /// Kills and reaps every running program, then stops strata-fsd (if one
    /// was started) and unmounts: nothing of the run's externals is left.
    void stop() noexcept override;

    /// The configuration: the one loaded by load_config(), else $STRATA_EXTERNAL_CONFIG.
    Result<std::shared_ptr<const Config>> config();
    Result<void> load_config(const std::string& path);

    /// The exposure for an entry: its `exposure` key, else
    /// $STRATA_EXTERNAL_EXPOSURE, else auto (auto_exposure.hpp: memfd where
    /// it serves, else fuse). The first use of fuse starts strata-fsd (one
    /// per run, stopped by stop()). Errors name the entry's choice and why
    /// it cannot serve.
    Result<Exposure*> exposure(const Entry& entry);

    Reactor& reactor() { return *reactor_; }

    std::shared_ptr<TaskRecord> add_record(std::uint64_t task);
    std::shared_ptr<TaskRecord> find_record(std::uint64_t task);
    void erase_record(std::uint64_t task);

private:
    std::mutex mutex_;
    std::shared_ptr<const Config> config_;                          // guarded by mutex_
    std::map<std::uint64_t, std::shared_ptr<TaskRecord>> records_;  // guarded by mutex_
    ExposureChoice default_choice_ = ExposureChoice::automatic;     // $STRATA_EXTERNAL_EXPOSURE
    // Separate from mutex_: starting strata-fsd takes tens of ms under it.
    std::mutex exposure_mutex_;
    bool stopped_ = false;                // guarded by exposure_mutex_
    std::optional<AutoPick> auto_pick_;   // guarded by exposure_mutex_; decided once per run
    std::unique_ptr<FuseExposure> fuse_;  // guarded by exposure_mutex_; made on first use
    MemfdExposure memfd_;
    std::unique_ptr<Reactor> reactor_;
};

/// The body of one external task.
class ExternalBody final : public ocr::EdtBody {
public:
    ExternalBody(std::shared_ptr<ExternalRun> run, std::shared_ptr<ExternalTemplate> tpl,
                 std::vector<ocrGuid_t> output_events, std::shared_ptr<TaskRecord> record)
        : run_(std::move(run)), tpl_(std::move(tpl)), outputs_(std::move(output_events)), record_(std::move(record)) {}

    void start(const std::shared_ptr<ocr::Edt>& edt) override;
    [[nodiscard]] ocrDbAccessMode_t hold_mode(ocrDbAccessMode_t /*asked*/) const override {
        return ocr::db_mode_external_read;
    }

    struct Launch;  // one started program (ocr_task.cpp)

private:
    void fail_to_start(const std::shared_ptr<ocr::Edt>& edt, const std::string& why);
    void finish(Launch& launch, const ExitInfo& exit);

    std::shared_ptr<ExternalRun> run_;
    std::shared_ptr<ExternalTemplate> tpl_;
    std::vector<ocrGuid_t> outputs_;
    std::shared_ptr<TaskRecord> record_;
};

}  // namespace strata::external
