// SPDX-License-Identifier: MIT
// The GUID table and the program-wide state of an OCR run.
#include "state.hpp"

#include "dist/cluster.hpp"

#include <algorithm>
#include <cstdio>

namespace strata::ocr {

namespace {
std::atomic<OcrState*> g_state{nullptr};
thread_local CallSite tls_site;
thread_local Edt* tls_edt = nullptr;
}  // namespace

OcrState* state() noexcept {
    return g_state.load(std::memory_order_acquire);
}
void set_state(OcrState* s) noexcept {
    g_state.store(s, std::memory_order_release);
}
Edt*& current_edt() noexcept {
    return tls_edt;
}

CallSite take_call_site() noexcept {
    CallSite site = tls_site;
    tls_site = {};
    return site;
}

std::string_view to_string(Kind kind) noexcept {
    switch (kind) {
        case Kind::edt_template: return "EDT template";
        case Kind::edt: return "EDT";
        case Kind::event: return "event";
        case Kind::db: return "data block";
        case Kind::guid_map: return "GUID range or map";
        case Kind::external_template: return "external template";
        case Kind::none: break;
    }
    return "no object";
}

std::string_view error_name(int code) noexcept {
    switch (code) {
        case 0: return "OK";
        case OCR_EPERM: return "OCR_EPERM";
        case OCR_ENOENT: return "OCR_ENOENT";
        case OCR_ENOMEM: return "OCR_ENOMEM";
        case OCR_EACCES: return "OCR_EACCES";
        case OCR_EBUSY: return "OCR_EBUSY";
        case OCR_EINVAL: return "OCR_EINVAL";
        case OCR_ENOSPC: return "OCR_ENOSPC";
        case OCR_ENOSYS: return "OCR_ENOSYS";
        case OCR_EACQ: return "OCR_EACQ";
        case OCR_EIO: return "OCR_EIO";
        case OCR_EGUIDEXISTS: return "OCR_EGUIDEXISTS";
        case OCR_ECANCELED: return "OCR_ECANCELED";
        default: return "OCR error";
    }
}

void GuidTable::set_rank(int rank, int size) {
    rank_ = rank;
    minted_ = std::make_unique<std::atomic<std::uint64_t>[]>(static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r) {
        minted_[static_cast<std::size_t>(r)] = 0;
    }
}

ocrGuid_t GuidTable::mint(int owner, Kind kind) {
    const std::uint64_t counter = minted_[static_cast<std::size_t>(owner)].fetch_add(1, std::memory_order_relaxed) + 1;
    return guid_of(guid_base(owner, rank_) | (counter << 3) | static_cast<std::uint64_t>(kind));
}

ocrGuid_t GuidTable::insert(std::shared_ptr<Object> object) {
    const std::uint64_t id =
        base() | (next_.fetch_add(1, std::memory_order_relaxed) << 3) | static_cast<std::uint64_t>(object->kind);
    object->guid = guid_of(id);
    Shard& shard = shards_[(id >> 3) % shard_count];
    std::lock_guard lock(shard.mutex);
    shard.objects.emplace(id, std::move(object));
    return guid_of(id);
}

bool GuidTable::insert_at(ocrGuid_t guid, std::shared_ptr<Object> object) {
    const std::uint64_t id = id_of(guid);
    object->guid = guid;
    Shard& shard = shards_[(id >> 3) % shard_count];
    std::lock_guard lock(shard.mutex);
    return shard.objects.emplace(id, std::move(object)).second;
}

std::uint64_t GuidTable::reserve(std::uint64_t count) {
    return next_.fetch_add(count, std::memory_order_relaxed);
}

std::shared_ptr<Object> GuidTable::find(ocrGuid_t guid) const {
    if (guid.guid <= 0) {
        return nullptr;
    }
    const std::uint64_t id = id_of(guid);
    const Shard& shard = shards_[(id >> 3) % shard_count];
    std::lock_guard lock(shard.mutex);
    auto it = shard.objects.find(id);
    return it == shard.objects.end() ? nullptr : it->second;
}

std::shared_ptr<Object> GuidTable::erase(ocrGuid_t guid) {
    if (guid.guid <= 0) {
        return nullptr;
    }
    const std::uint64_t id = id_of(guid);
    Shard& shard = shards_[(id >> 3) % shard_count];
    std::lock_guard lock(shard.mutex);
    auto it = shard.objects.find(id);
    if (it == shard.objects.end()) {
        return nullptr;
    }
    auto object = std::move(it->second);
    shard.objects.erase(it);
    return object;
}

std::vector<std::shared_ptr<Object>> GuidTable::drain() {
    std::vector<std::shared_ptr<Object>> out;
    for (Shard& shard : shards_) {
        std::lock_guard lock(shard.mutex);
        for (auto& [id, object] : shard.objects) {
            out.push_back(std::move(object));
        }
        shard.objects.clear();
    }
    return out;
}

std::vector<std::shared_ptr<Object>> GuidTable::sample(Kind kind, std::size_t limit) const {
    std::vector<std::shared_ptr<Object>> out;
    for (const Shard& shard : shards_) {
        std::lock_guard lock(shard.mutex);
        for (const auto& [id, object] : shard.objects) {
            if (object->kind == kind) {
                out.push_back(object);
            }
        }
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return id_of(a->guid) < id_of(b->guid); });
    if (out.size() > limit) {
        out.resize(limit);
    }
    return out;
}

bool OcrState::finish_once(int exit_code) {
    {
        std::lock_guard lock(mutex_);
        if (finished_.load(std::memory_order_relaxed)) {
            return false;
        }
        exit_code_ = exit_code;
        finished_.store(true, std::memory_order_release);
    }
    cv_.notify_all();
    { std::lock_guard pause_lock(pause_mutex); }  // an EDT held by ocrPause sees finished() after this
    pause_cv.notify_all();
    return true;
}

void OcrState::finish(int exit_code) {
    if (finish_once(exit_code) && cluster != nullptr) {
        dist::tell_finish(*cluster, exit_code);
    }
}

void OcrState::finish_from_peer(int exit_code) {
    (void)finish_once(exit_code);
}

int OcrState::wait_finished() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return finished_.load(std::memory_order_relaxed); });
    return exit_code_;
}

Result<std::filesystem::path> OcrState::db_dir() {
    std::lock_guard lock(db_dir_mutex_);
    if (!db_dir_) {
        auto made = RunDbDir::make(options_.db_dir);
        if (!made) {
            return std::unexpected(made.error());
        }
        db_dir_.emplace(std::move(*made));
    }
    return db_dir_->path();
}

void OcrState::close_db_dir() {
    std::lock_guard lock(db_dir_mutex_);
    db_dir_.reset();
}

void OcrState::deferred_error(const CallSite& site, std::string_view call, int code, const std::string& details) {
    {
        std::lock_guard lock(print_mutex);
        std::fflush(stdout);
        fmt::print(stderr, "strata-ocr: {}: {}: {}: {}\n", site.str(), call, error_name(code), details);
    }
    finish(1);
}

void OcrState::edt_finished() {
    if (live_.fetch_sub(1, std::memory_order_acq_rel) == 1 && !finished() &&
        detect_stuck.load(std::memory_order_acquire)) {
        // Only EDTs call the API, so with none runnable nothing can change.
        const auto waiting = waiting_edts.load(std::memory_order_acquire);
        std::string details = fmt::format(
            "no EDT can run and ocrShutdown() was not called ({} {} for dependences that nothing will satisfy)",
            waiting, waiting == 1 ? "EDT waits" : "EDTs wait");
        CallSite first;
        for (const auto& object : table.sample(Kind::edt, 5)) {
            auto& edt = static_cast<Edt&>(*object);
            std::lock_guard lock(edt.mutex);
            std::string open_slots;
            for (std::size_t i = 0; i < edt.slots.size(); ++i) {
                if (!edt.slots[i].satisfied) {
                    open_slots += fmt::format("{}{}", open_slots.empty() ? "" : ",", i);
                }
            }
            details +=
                fmt::format("\n  EDT {} ({}) created at {} waits on slot{} {}", show(edt.guid), edt.name,
                            edt.created_at.str(), open_slots.find(',') == std::string::npos ? "" : "s", open_slots);
            if (first.file == nullptr) {
                first = edt.created_at;
            }
        }
        deferred_error(first, "the program", OCR_EPERM, details);
    }
}

}  // namespace strata::ocr

extern "C" void strataOcrCallSite(const char* file, int line) {
    strata::ocr::tls_site = {file, line};
}
