// SPDX-License-Identifier: MIT
// Running an OCR program on strata's runtime from C++ (docs/runtime.md).
//
// libstrata-ocr's main() calls run_ocr(mainEdt, argc, argv, options from the
// environment); tests and tools call it with their own entry EDT. One OCR
// program runs at a time in a process (the OCR C API has no handle).
//
// Example:
//
//   ocrGuid_t entry(u32, u64*, u32, ocrEdtDep_t[]) { ...; ocrShutdown(); return NULL_GUID; }
//   auto code = strata::ocr::run_ocr(entry, argc, argv, {});
//
// Thread safety: run_ocr() must not be called again while a run is under way.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ocr/ocr-types.h"
#include "strata/error.hpp"
#include "strata/region.hpp"
#include "strata/runtime.hpp"

namespace strata::ocr {

/// Where data blocks live unless a hint says otherwise. shared: each block is
/// an object of a strata segment of its own, loaded by handle from other
/// processes (ocr-db-shm.h); combined: half of each block in memory, the
/// rest in a file of the run's directory (a combined Region); memfd: each
/// block is a memfd mapped shared, which external tasks read without a copy
/// (docs/external.md).
enum class DbPlacement { memory, shared, storage, memfd, combined };

std::string_view to_string(DbPlacement placement) noexcept;
/// Parses "memory", "shared", "storage", "memfd", "combined"; errors name `param` and the value.
Result<DbPlacement> parse_db_placement(std::string_view text, std::string_view param);

struct OcrOptions {
    runtime::Options runtime;
    /// Default placement of data blocks (hints OCR_HINT_DB_NEAR / _INTER / _FAR override it).
    DbPlacement db_placement = DbPlacement::memory;
    /// Where storage-placed data blocks go: each run makes its own private
    /// directory in it (strata-ocr-<pid>-XXXXXX, mkdtemp, 0700) and creates
    /// one file per block there with O_CREAT | O_EXCL | O_NOFOLLOW; the block's
    /// file goes with the block, the directory with the run.
    std::filesystem::path db_dir = "/var/tmp";
    /// The job this process is a rank of (1..64 of [A-Za-z0-9_], a letter first), or empty:
    /// the segments of its shared data blocks are named strata-ocr-<job>-...,
    /// so `strata ocr -n N`, which sets it, removes after the job what its
    /// ranks left, however they ended (docs/runtime.md, "Failures").
    std::string job;

    /// runtime::Options::from_env() plus STRATA_OCR_DB_PLACEMENT, STRATA_OCR_DB_DIR and STRATA_OCR_JOB.
    static Result<OcrOptions> from_env();
};

/// The reference runtime's configuration file (an INI file its config
/// generator writes). strata takes one thing from it: the worker count, the
/// sum of the id ranges of its [WorkerInst*] sections (`id = 0`, `id = 1-3`:
/// 4 workers); every other section and key is accepted and ignored. Errors
/// name `source` (e.g. "-ocr:cfg=FILE" or "OCR_CONFIG=FILE"), the line and
/// the value: invalid_argument for a malformed id or none at all, the I/O
/// error for a file that cannot be read.
Result<int> reference_config_workers(const std::filesystem::path& file, std::string_view source);

/// What the reference reads before mainEdt: removes `-ocr:cfg FILE` from
/// argv (argc shrinks; the program never sees it) and, unless STRATA_WORKERS
/// set options.runtime.workers, takes the worker count from that FILE, else
/// from $OCR_CONFIG when set. Errors as reference_config_workers, and
/// invalid_argument for `-ocr:cfg` without a file.
Result<void> apply_reference_config(int& argc, char** argv, OcrOptions& options);

/// Runs `main_edt` as OCR's mainEdt with argc/argv packed into its data block,
/// until ocrShutdown() (0), ocrAbort(code) (code) or a deferred error (1, after
/// printing file, line, error and GUIDs). Also a deferred error: every EDT
/// waits and none can run, while no one called ocrShutdown().
/// Errors: the runtime's, when it cannot start.
Result<int> run_ocr(ocrEdt_t main_edt, int argc, char** argv, const OcrOptions& options);

/// Checks a job name (OcrOptions::job): invalid_argument naming `param` and the value.
Result<void> check_job_name(std::string_view job, std::string_view param);

/// The name prefix of the segments of the shared data blocks of every rank of
/// job `job` (non-empty): strata-ocr-<job>-.
std::string job_segment_prefix(std::string_view job);

/// $STRATA_OCR_DB_DIR, else /var/tmp: the default OcrOptions::db_dir.
std::filesystem::path default_db_dir();

/// Removes, in `base`, the private data-block directories of runs that are
/// gone (killed, crashed): directories named strata-ocr-<pid>-XXXXXX owned by
/// the caller whose lock no process holds and whose pid is not alive; never
/// one of another user, never a link. Returns the directories removed. Each
/// run does this when it makes its own directory; `strata shm gc` too.
/// Errors: io errors naming the directory (a missing `base` is no error).
Result<std::vector<std::filesystem::path>> collect_db_dirs(const std::filesystem::path& base);

/// Where a data block lives, for tools (and, later, its file view).
struct DbInfo {
    std::uint64_t size = 0;
    RegionKind kind = RegionKind::memory;
    bool heap = false;           ///< a small memory block from the heap, not a mapping
    std::filesystem::path path;  ///< storage: its file; shared: its segment file (strata.<name>.seg)
};
/// Information on a live data block; not_found for an unknown GUID.
Result<DbInfo> db_info(ocrGuid_t db);

}  // namespace strata::ocr
