// SPDX-License-Identifier: MIT
#include "mpi/setup.hpp"

#include "mpi/hint_source.hpp"

namespace strata::mpi {

std::optional<Failure> parse_request(const char* routine, int rank, const HintMap& hints,
                                     const std::optional<HintError>& source_error, WindowHints& out) {
    if (source_error) {
        return hint_failure(routine, rank, *source_error);
    }
    auto parsed = parse_hints(hints);
    if (!parsed) {
        return hint_failure(routine, rank, parsed.error());
    }
    out = std::move(*parsed);
    const std::string_view name = routine;
    if (out.remote_sync && (!name.starts_with("MPI_Win_allocate") || name.starts_with("MPI_Win_allocate_shared"))) {
        return make_failure(MPI_ERR_INFO_VALUE, routine, rank, "storage_alloc_remote_sync", "true",
                            "only windows of MPI_Win_allocate have remote sync (not shared windows, nor "
                            "MPI_Alloc_mem allocations)");
    }
    if (out.striping_factor || out.striping_unit) {
        detail::log().debug(
            "{}: striping_factor/striping_unit accepted but not applicable: strata maps files "
            "of local file systems, which have no striping",
            routine);
    }
    return std::nullopt;
}

std::optional<Failure> check_arguments(const char* routine, int rank, MPI_Aint size, MPI_Aint disp_unit) {
    if (size < 0) {
        return make_failure(MPI_ERR_SIZE, routine, rank, "size", std::to_string(size), "negative window size");
    }
    if (disp_unit <= 0) {
        return make_failure(MPI_ERR_DISP, routine, rank, "disp_unit", std::to_string(disp_unit),
                            "the displacement unit must be positive");
    }
    return std::nullopt;
}

std::string job_id(int fallback) {
    const std::string& id = job_id_from_environment();
    return id.empty() ? std::to_string(fallback) : id;
}

std::expected<std::string, Failure> file_name(const char* routine, int rank, const WindowHints& hints, int world_rank,
                                              unsigned index, const std::string& job, std::string_view kind) {
    auto expanded = expand_filename(hints.filename_template, world_rank, index, job, kind);
    if (!expanded) {
        return std::unexpected(hint_failure(routine, rank, expanded.error()));
    }
    return *expanded;
}

void report_placement(const char* routine, int rank, std::string_view what, std::size_t size, const StoragePart* part,
                      std::string_view source) {
    auto& log = detail::log();
    if (!log.should_log(spdlog::level::info)) {
        return;
    }
    if (part == nullptr || part->storage_bytes() == 0) {
        log.info("{}: rank {}: {}: {} bytes in memory ({})", routine, rank, what, size, source);
        return;
    }
    log.info("{}: rank {}: {}: {} bytes: {} in memory, {} on storage in {} ({})", routine, rank, what, size,
             part->memory_bytes(), part->storage_bytes(), part->path().string(), source);
}

std::string_view hints_source(bool from_environment) noexcept {
    return from_environment ? "hints from STRATA_MPI_WINDOW_HINTS" : "hints from the MPI_Info";
}

PartSpec part_spec(const WindowHints& hints, const std::string& path, Factor memory_share) {
    PartSpec spec;
    spec.storage = hints.storage;
    spec.file.path = path;
    spec.file.offset = hints.offset;
    spec.file.permissions = hints.file_perm;
    spec.file.allow_other_owner = hints.allow_other_owner;
    // MAP_PRIVATE write-back is what makes discard real; it costs a pagemap
    // scan per sync, so only discard windows pay it.
    spec.file.writeback = hints.discard ? Writeback::explicit_sync : Writeback::kernel;
    spec.memory_share = memory_share;
    spec.order = hints.order;
    const AccessPlan plan = access_plan(hints.access_styles, hints.advice);
    spec.advice = plan.advice;
    spec.prefetch = plan.prefetch;
    spec.populate = plan.populate && !hints.discard;  // a private mapping would copy every page
    spec.direct = plan.direct;
    spec.write_behind = plan.write_behind;
    spec.fill = plan.fill;
    return spec;
}

ReleasePolicy release_policy(const WindowHints& hints) {
    return {.discard = hints.discard, .unlink = hints.unlink, .sync = hints.sync};
}

HintMap report(const WindowHints& hints, const std::string& path, const StoragePart* part) {
    HintMap out = hints.given;
    if (!hints.storage) {
        return out;
    }
    out.insert_or_assign("storage_alloc_filename", path);
    out.insert_or_assign("storage_alloc_sync", std::string(to_string(hints.sync)));
    out.insert_or_assign("strata_memory_bytes", std::to_string(part != nullptr ? part->memory_bytes() : 0));
    out.insert_or_assign("strata_storage_bytes", std::to_string(part != nullptr ? part->storage_bytes() : 0));
    if (part != nullptr && part->storage_bytes() > 0) {
        out.insert_or_assign("strata_writeback", std::string(to_string(part->writeback())));
        out.insert_or_assign("strata_write_behind", part->writes_behind() ? "true" : "false");
        out.insert_or_assign("strata_read_direct", part->filled() ? "true" : "false");
        out.insert_or_assign("strata_read_behind", part->fills_behind() ? "true" : "false");
        out.insert_or_assign("strata_read_complete", part->fill_complete() ? "true" : "false");
    }
    if (hints.striping_factor || hints.striping_unit) {
        out.insert_or_assign("strata_not_applied",
                             "striping_factor,striping_unit: the file system has no striping strata can set");
    }
    return out;
}

}  // namespace strata::mpi
