// SPDX-License-Identifier: MIT
// run_ocr(): one OCR program from mainEdt to shutdown.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "cpuset.hpp"
#include "dist/api.hpp"
#include "dist/cluster.hpp"
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
    if (const char* job = std::getenv("STRATA_OCR_JOB"); job != nullptr && *job != '\0') {
        if (auto checked = check_job_name(job, "STRATA_OCR_JOB"); !checked) {
            return std::unexpected(checked.error());
        }
        options.job = job;
    }
    return options;
}

Result<void> check_job_name(std::string_view job, std::string_view param) {
    // A letter first: the segments of a process outside a job start with its pid.
    const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    const bool valid =
        !job.empty() && job.size() <= 64 && letter(job.front()) &&
        std::all_of(job.begin(), job.end(), [&](char c) { return letter(c) || (c >= '0' && c <= '9') || c == '_'; });
    if (!valid) {
        return make_error(Errc::invalid_argument,
                          "{}={}: a job name has 1 to 64 characters of A-Z a-z 0-9 _, a letter first", param, job);
    }
    return {};
}

std::string job_segment_prefix(std::string_view job) {
    return fmt::format("strata-ocr-{}-", job);
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

namespace {

// Ends a run: external programs, the workers, the objects, then (distributed)
// the other ranks. Returns the exit code.
int end_run(OcrState& s, std::unique_ptr<dist::Cluster> cluster, int code) {
    // External programs still running are killed and reaped before the
    // workers stop, so no process or file of the run outlives it.
    std::shared_ptr<RunExtension> extension;
    {
        std::lock_guard lock(s.extension_mutex);
        extension = s.extension;
    }
    if (extension) {
        extension->stop();
    }
    if (cluster) {
        cluster->quiesce();  // no message is handled from here on
    }
    s.runtime->stop();
    auto objects = s.table.drain();
    clear_objects(objects);
    s.close_db_dir();  // after the blocks: their files are gone, then the directory
    if (cluster) {
        code = cluster->leave(code);  // bye to every rank, then MPI_Finalize
        s.cluster = nullptr;
    }
    set_state(nullptr);
    return code;
}

}  // namespace

Result<int> run_ocr(ocrEdt_t main_edt, int argc, char** argv, const OcrOptions& options) {
    if (state() != nullptr) {
        return make_error(Errc::busy, "run_ocr: an OCR program is already running in this process");
    }
    auto launch = dist::launch_from_env();
    if (!launch) {
        return std::unexpected(launch.error());
    }
    auto s = std::make_unique<OcrState>(options);
    // More than one rank under mpiexec: this rank is one policy domain of the
    // job, on its share of its host's CPUs unless STRATA_CPUS chose them.
    std::unique_ptr<dist::Cluster> cluster;
    runtime::Options runtime_options = options.runtime;
    if (*launch) {
        auto started = dist::Cluster::start(*s, **launch);
        if (!started) {
            return std::unexpected(started.error());
        }
        cluster = std::move(*started);
        auto allowed = runtime::allowed_cpus();
        if (!allowed) {
            return std::unexpected(allowed.error());
        }
        if (runtime_options.cpus.empty()) {
            runtime_options.cpus = dist::cpus_of_rank(*allowed, cluster->local_rank(), cluster->local_size());
        }
        cluster->set_spin_when_idle(static_cast<std::size_t>(cluster->cpu_sharers()) <= allowed->size());
    }
    auto runtime = runtime::Runtime::start(runtime_options);
    if (!runtime) {
        return std::unexpected(runtime.error());
    }
    s->runtime = std::move(*runtime);
    set_state(s.get());
    if (cluster) {
        cluster->run(runtime_options.cpus);
    }
    // mainEdt runs on rank 0; the other ranks serve until the job ends.
    if (dist::rank() == 0) {
        auto arguments = pack_arguments(argc, argv);
        if (!arguments) {
            s->finish(1);
            (void)end_run(*s, std::move(cluster), 1);
            return std::unexpected(arguments.error());
        }
        ocrGuid_t tpl;
        ocrGuid_t edt;
        (ocrEdtTemplateCreate_internal)(&tpl, main_edt, 0, 1, "mainEdt");
        ocrGuid_t depv[1] = {*arguments};
        if (u8 rc = (ocrEdtCreate)(&edt, tpl, 0, nullptr, 1, depv, EDT_PROP_NONE, NULL_HINT, nullptr); rc != 0) {
            s->finish(1);
        }
        (ocrEdtTemplateDestroy)(tpl);
    }
    const int code = s->wait_finished();
    return end_run(*s, std::move(cluster), code);
}

}  // namespace strata::ocr
