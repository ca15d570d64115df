// SPDX-License-Identifier: MIT
// MPI_Win_allocate_shared on storage: one file for the ranks of a node.
//
// Rank 0 creates the file and reserves the whole range, then every other rank
// maps the same range (so no rank can ever shrink a file a peer mapped).
// Every rank maps the whole file, so a rank's loads and stores reach its
// peers' segments through the shared page cache. Segments follow each other
// byte for byte (the MPI default) or start on page boundaries with
// alloc_shared_noncontig=true. The file-level hints (filename, offset,
// file_perm, unlink, noncontig) are rank 0's.
//
// storage_alloc_discard: a private mapping would hide each rank's stores
// from its peers, so the ranks share a working copy beside the file instead
// (made by rank 0, its name removed once every rank mapped it), and a rank's
// MPI_Win_sync copies its segment into the file (StoragePart). Not over a
// block device (no directory beside it for the copy).
//
// storage_alloc_factor below 1 in the MPI_Info (rank 0's, with its
// storage_alloc_order, for the whole window): the memory part is a tmpfs file
// in the user's private segment directory, made by rank 0 and mapped shared
// by every rank (its name removed once all mapped), so the ranks see each
// other's stores there too; the file holds the storage part only.
//
// Not supported, as MPI_ERR_INFO_VALUE: storage_alloc_factor=auto (each
// process decides it from its own memory budget, but the ranks need one
// layout) and a factor below 1 with discard. A combined default from
// STRATA_MPI_WINDOW_HINTS puts the whole window on storage instead and says so
// once (whole_on_storage): an unmodified program's shared window stays one file.
#include <array>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <expected>
#include <filesystem>
#include <limits>
#include <vector>

#include <fcntl.h>
#include <linux/limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpi/hint_source.hpp"
#include "mpi/registry.hpp"
#include "mpi/setup.hpp"
#include "strata/shm/segment.hpp"

namespace strata::mpi {

namespace {

/// The ranks of a shared window map the same file pages and see each other's
/// stores at once, so a shared window never uses direct write-back (private
/// memory): write_once keeps the shared mapping, populated for writing.
PartSpec shared_spec(const WindowHints& hints, const std::string& path) {
    PartSpec spec = part_spec(hints, path, Factor::fixed(0.0));
    spec.direct = false;
    spec.fill = false;
    return spec;
}

std::optional<Failure> check_shared(const char* routine, int rank, const WindowHints& hints) {
    if (hints.factor_given && hints.factor_auto) {
        return make_failure(MPI_ERR_INFO_VALUE, routine, rank, "storage_alloc_factor", "auto",
                            "not for shared windows: each process would size the memory part from its own memory "
                            "budget, but the ranks share one layout; give a fixed factor");
    }
    if (hints.factor_given && hints.storage_fraction < 1.0 && hints.discard) {
        return make_failure(MPI_ERR_INFO_VALUE, routine, rank, "storage_alloc_factor",
                            hints.given.at("storage_alloc_factor"),
                            "a shared window with storage_alloc_discard=true must be entirely on storage (factor 1): "
                            "its working copy and a memory part together are not supported");
    }
    return std::nullopt;
}

std::optional<Failure> check_node(const char* routine, MPI_Comm comm, int rank) {
    MPI_Comm node = MPI_COMM_NULL;
    int node_size = 0;
    int size = 0;
    PMPI_Comm_size(comm, &size);
    if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        PMPI_Comm_size(node, &node_size);
        PMPI_Comm_free(&node);
    }
    if (node_size == size) {
        return std::nullopt;
    }
    return make_failure(MPI_ERR_RMA_SHARED, routine, rank, "comm", std::to_string(size) + " ranks",
                        "the ranks of a shared window must share memory (one node)");
}

/// What rank 0 tells the others once its file exists.
struct FileParameters {
    std::uint64_t offset = 0;
    int noncontig = 0;
    std::array<char, PATH_MAX> path{};
    std::array<char, PATH_MAX> working_copy{};  ///< empty unless storage_alloc_discard
    std::array<char, PATH_MAX> memory_file{};   ///< the shared memory part's tmpfs file; empty: none
    double storage_fraction = 1.0;              ///< rank 0's storage_alloc_factor
    int order = 0;                              ///< rank 0's storage_alloc_order (Order)
};

/// Removes a file's name when the scope ends, unless it is empty: the shared
/// memory part's and the working copy's names live only until every rank has
/// opened them, or until the window fails.
struct NameRemover {
    std::string path;
    NameRemover() = default;
    NameRemover(const NameRemover&) = delete;
    NameRemover& operator=(const NameRemover&) = delete;
    ~NameRemover() {
        if (!path.empty()) {
            (void)::unlink(path.c_str());
        }
    }
};

/// The names rank 0 made for the others to open (set only once made, so that
/// a planted file that refused the window is never removed).
struct RankZeroNames {
    NameRemover memory;        ///< the shared memory part's tmpfs file
    NameRemover working_copy;  ///< the working copy of a discard window
};

/// Rank 0's tmpfs file for the memory part of a combined shared window, in the
/// user's private segment directory ($STRATA_SHM_DIR, else /dev/shm/strata-<euid>,
/// checked), created O_EXCL | O_NOFOLLOW, mode 0600. Its descriptor, or the failure.
std::expected<int, Failure> create_memory_file(const char* routine, int rank, unsigned index, std::string& path) {
    std::filesystem::path dir;
    if (std::getenv("STRATA_SHM_DIR") != nullptr) {
        dir = default_segment_dir();
    } else {
        auto made = private_segment_dir();
        if (!made) {
            return std::unexpected(
                make_failure(MPI_ERR_FILE, routine, rank, "storage_alloc_factor", "<1", made.error().what()));
        }
        dir = *made;
    }
    path = (dir / fmt::format("mpi-shared-{}-{}.mem", ::getpid(), index)).string();
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        const int err = errno;
        const std::string where = path;
        path.clear();  // not ours to remove
        return std::unexpected(
            make_failure(MPI_ERR_FILE, routine, rank, "storage_alloc_factor", "<1",
                         fmt::format("cannot create the shared memory part {}: {}", where, describe_errno(err))));
    }
    return fd;
}

/// Another rank's view of rank 0's memory file: opened O_NOFOLLOW and checked to be
/// a regular file of this user, so nothing another user planted is mapped.
std::expected<int, Failure> open_memory_file(const char* routine, int rank, const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
        const int err = errno;
        if (fd >= 0) {
            ::close(fd);
        }
        return std::unexpected(make_failure(MPI_ERR_FILE, routine, rank, "storage_alloc_factor", "<1",
                                            fmt::format("cannot open rank 0's shared memory part {}: {}", path,
                                                        fd < 0 ? describe_errno(err) : "not a file of this user")));
    }
    return fd;
}

/// With discard, rank 0's working copy beside the file: "<file>.strata-discard-<pid>-<index>".
std::expected<std::string, Failure> working_copy_name(const char* routine, int rank, const std::string& file,
                                                      unsigned index) {
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) {
        return std::unexpected(make_failure(MPI_ERR_INFO_VALUE, routine, rank, "storage_alloc_discard", "true",
                                            fmt::format("not supported on a shared window over a block device ({}): "
                                                        "its ranks share a working copy made beside the file",
                                                        file)));
    }
    std::string name = fmt::format("{}.strata-discard-{}-{}", file, ::getpid(), index);
    if (name.size() >= PATH_MAX) {
        return std::unexpected(make_failure(MPI_ERR_BAD_FILE, routine, rank, "storage_alloc_filename", file,
                                            "path too long for the working copy of storage_alloc_discard"));
    }
    return name;
}

/// The segments side by side (page-aligned with noncontig). Every rank
/// computes the same layout from the same sizes, so every rank finds an
/// overflow alike: the sum (and each aligned offset) must fit an MPI_Aint,
/// the type MPI gives the window's size in.
std::expected<std::vector<SharedPeer>, Failure> layout(const char* routine, int rank,
                                                       const std::vector<MPI_Aint>& sizes_and_units, bool noncontig,
                                                       std::size_t& total) {
    constexpr auto max_total = static_cast<std::size_t>(std::numeric_limits<MPI_Aint>::max());
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<SharedPeer> peers(sizes_and_units.size() / 2);
    total = 0;
    for (std::size_t i = 0; i < peers.size(); ++i) {
        const MPI_Aint size = sizes_and_units[2 * i];
        if (noncontig && total % page != 0) {
            total = total > max_total - page ? max_total + 1 : (total + page - 1) / page * page;
        }
        if (size < 0 || total > max_total || static_cast<std::size_t>(size) > max_total - total) {
            total = 0;
            return std::unexpected(make_failure(
                MPI_ERR_SIZE, routine, rank, "size",
                std::to_string(sizes_and_units[2 * static_cast<std::size_t>(rank)]),
                fmt::format("the segments of the {} ranks add up to more than {} bytes, the most an MPI_Aint "
                            "holds (the sum overflows at rank {}, which asks for {} bytes{})",
                            peers.size(), max_total, i, size, noncontig ? ", each segment page-aligned" : "")));
        }
        peers[i] = {.size = size, .disp_unit = sizes_and_units[2 * i + 1], .offset = total};
        total += static_cast<std::size_t>(size);
    }
    return peers;
}

int fail(MPI_Comm comm, MPI_Win* win, const std::shared_ptr<StoragePart>& part, const Failure& failure) {
    if (part) {
        part->abandon();
    }
    *win = MPI_WIN_NULL;
    return raise_on_comm(comm, failure);
}

/// The window MPI itself allocates; STRATA_LOG=info says so.
int in_memory(const WindowRequest& r, std::string_view why) {
    const int rc =
        r.large ? PMPI_Win_allocate_shared_c(r.size, r.disp_unit, r.info, r.comm, r.baseptr, r.win)
                : PMPI_Win_allocate_shared(r.size, static_cast<int>(r.disp_unit), r.info, r.comm, r.baseptr, r.win);
    if (rc == MPI_SUCCESS && r.size > 0) {
        report_placement(r.routine, comm_rank(r.comm), "shared window", static_cast<std::size_t>(r.size), nullptr, why);
    }
    return rc;
}

/// A combined default (storage_alloc_factor < 1 or auto in
/// STRATA_MPI_WINDOW_HINTS) does not apply to shared windows: `auto` cannot
/// (each process sizes it from its own budget), and an unmodified program's
/// shared window stays one file that every rank maps, its pages in the shared
/// page cache while memory lasts and written back by the kernel when it is
/// short. A program asks for a combined shared window in its MPI_Info. Said
/// once per process, by rank 0 of the window's communicator.
void whole_on_storage(const char* routine, int rank, WindowHints& hints) {
    if (!hints.factor_given || (!hints.factor_auto && hints.storage_fraction == 1.0)) {
        return;
    }
    static std::atomic<bool> said{false};
    if (rank == 0 && !said.exchange(true)) {
        detail::log().warn(
            "{}: STRATA_MPI_WINDOW_HINTS storage_alloc_factor={} does not apply to shared windows (a program asks "
            "for a combined shared window in its MPI_Info): the whole window is on storage, in the shared page "
            "cache while memory lasts; set STRATA_MPI_WINDOW_HINTS_SCOPE to leave shared windows in memory. "
            "Said once.",
            routine, hints.given.at("storage_alloc_factor"));
    }
    hints.factor_given = false;
    hints.factor_auto = false;
    hints.storage_fraction = 1.0;
}

/// The ranks' agreement on where the window goes: `memory` when every rank
/// asked for memory; otherwise `storage`, or the error every rank returns.
struct Placement {
    enum { memory, storage, failed } outcome = failed;
    int rc = MPI_SUCCESS;   ///< with `failed`
    int job_pid = INT_MAX;  ///< rank 0's process id, for the file name
};

/// Parses and checks the hints on every rank, then agrees: all memory, all
/// storage, or a failure named by the lowest rank that has one.
Placement agree_on_placement(const WindowRequest& r, const HintRequest& request, int rank, WindowHints& hints) {
    std::optional<Failure> failure = parse_request(r.routine, rank, request.hints, request.error, hints);
    if (!failure && hints.storage && request.from_environment) {
        whole_on_storage(r.routine, rank, hints);
    }
    if (!failure) {
        failure = check_arguments(r.routine, rank, r.size, r.disp_unit);
    }
    if (!failure && hints.storage) {
        failure = check_shared(r.routine, rank, hints);
    }
    if (auto node = check_node(r.routine, r.comm, rank); node && !failure) {
        failure = node;
    }
    std::array<int, 3> agreed{hints.storage ? 0 : 1, hints.storage ? 1 : 0,
                              rank == 0 ? static_cast<int>(::getpid()) : INT_MAX};
    if (auto failed = agree(r.comm, failure, agreed)) {
        return {.rc = fail(r.comm, r.win, nullptr, *failed)};
    }
    if (agreed[0] == 1) {  // every rank asked for memory
        return {.outcome = Placement::memory};
    }
    if (agreed[1] == 0) {  // mixed: the lowest memory rank names itself in the error
        std::optional<Failure> mixed;
        if (!hints.storage) {
            mixed = make_failure(MPI_ERR_INFO_VALUE, r.routine, rank, "alloc_type", "memory",
                                 "other ranks asked for storage; a shared window lives in one file or in "
                                 "memory for all of its ranks");
        }
        return {.rc = fail(r.comm, r.win, nullptr, *agree(r.comm, mixed))};
    }
    return {.outcome = Placement::storage, .job_pid = agreed[2]};
}

/// The window's file, mapped by every rank, and where each rank's segment lies in it.
struct SharedFile {
    std::shared_ptr<StoragePart> part;  ///< null when the window has no bytes
    std::vector<SharedPeer> peers;
    std::string path;
    std::size_t total = 0;
    Order order = Order::memory_first;  ///< rank 0's: where the memory part lies
};

/// Rank 0's part of open_shared_file(): the layout, the file, and with a memory
/// factor or discard the shared memory part's file or the working copy, whose
/// names it fills into `parameters` for the others.
std::optional<Failure> create_on_rank_zero(const WindowRequest& r, const WindowHints& hints, unsigned index,
                                           int job_pid, const std::vector<MPI_Aint>& sizes_and_units,
                                           FileParameters& parameters, RankZeroNames& names, SharedFile& file) {
    constexpr int rank = 0;
    auto name = file_name(r.routine, rank, hints, comm_rank(MPI_COMM_WORLD), index, job_id(job_pid),
                          kind_name(Routine::win_allocate_shared));
    auto planned = layout(r.routine, rank, sizes_and_units, hints.shared_noncontig, file.total);
    if (!planned) {
        return planned.error();
    }
    if (!name) {
        return name.error();
    }
    if (name->size() >= parameters.path.size()) {
        return make_failure(MPI_ERR_BAD_FILE, r.routine, rank, "storage_alloc_filename", *name, "path too long");
    }
    std::strncpy(parameters.path.data(), name->c_str(), parameters.path.size() - 1);
    parameters.offset = hints.offset;
    parameters.noncontig = hints.shared_noncontig ? 1 : 0;
    parameters.storage_fraction = hints.factor_given ? hints.storage_fraction : 1.0;
    parameters.order = static_cast<int>(hints.order);
    if (file.total == 0) {
        return std::nullopt;
    }
    PartSpec spec = shared_spec(hints, *name);
    if (hints.discard) {
        auto working = working_copy_name(r.routine, rank, *name, index);
        if (!working) {
            return working.error();
        }
        std::strncpy(parameters.working_copy.data(), working->c_str(), parameters.working_copy.size() - 1);
        spec.working_copy = *working;
        spec.create_working_copy = true;
    }
    int memory_fd = -1;
    if (parameters.storage_fraction < 1.0) {
        auto made = create_memory_file(r.routine, rank, index, names.memory.path);
        if (!made) {
            return made.error();
        }
        memory_fd = *made;
        std::strncpy(parameters.memory_file.data(), names.memory.path.c_str(), parameters.memory_file.size() - 1);
        spec.shared_memory_fd = memory_fd;
        spec.memory_share = Factor::fixed(1.0 - parameters.storage_fraction);
    }
    auto made = StoragePart::create(file.total, spec, release_policy(hints));
    if (memory_fd >= 0) {
        ::close(memory_fd);  // the mapping keeps the memory part
    }
    if (!made) {
        return region_failure(r.routine, rank, made.error());
    }
    file.part = std::move(*made);
    if (hints.discard) {
        names.working_copy.path = spec.working_copy;  // created here (O_EXCL)
    }
    return std::nullopt;
}

/// Another rank's part of open_shared_file(): maps what rank 0 made, as `parameters` name it.
std::optional<Failure> map_on_other_rank(const WindowRequest& r, int rank, const WindowHints& hints,
                                         const FileParameters& parameters, SharedFile& file) {
    WindowHints file_hints = hints;
    file_hints.offset = parameters.offset;
    file_hints.order = static_cast<Order>(parameters.order);
    PartSpec spec = shared_spec(file_hints, file.path);
    spec.working_copy = std::string(parameters.working_copy.data());
    int memory_fd = -1;
    if (parameters.memory_file[0] != '\0') {
        auto opened = open_memory_file(r.routine, rank, std::string(parameters.memory_file.data()));
        if (!opened) {
            return opened.error();
        }
        memory_fd = *opened;
        spec.shared_memory_fd = memory_fd;
        spec.memory_share = Factor::fixed(1.0 - parameters.storage_fraction);
    }
    auto made = StoragePart::create(file.total, spec, release_policy(file_hints));
    if (memory_fd >= 0) {
        ::close(memory_fd);
    }
    if (!made) {
        return region_failure(r.routine, rank, made.error());
    }
    file.part = std::move(*made);
    return std::nullopt;
}

/// Rank 0 plans the layout and creates the file; the others learn its name
/// and map it once rank 0 has succeeded. MPI_SUCCESS, or the error every
/// rank returns (the window then is MPI_WIN_NULL and nothing is left).
int open_shared_file(const WindowRequest& r, int rank, const WindowHints& hints, unsigned index, int job_pid,
                     SharedFile& file) {
    int nranks = 0;
    PMPI_Comm_size(r.comm, &nranks);
    std::vector<MPI_Aint> sizes_and_units(2 * static_cast<std::size_t>(nranks));
    const std::array<MPI_Aint, 2> mine{r.size, r.disp_unit};
    PMPI_Allgather(mine.data(), 2, MPI_AINT, sizes_and_units.data(), 2, MPI_AINT, r.comm);

    // Rank 0 creates the file; the others wait for its outcome before mapping.
    FileParameters parameters;
    std::optional<Failure> failure;
    // Rank 0: the names the others open, gone when this returns: once every rank mapped
    // them, or the window failed; so nothing is left if the job dies later.
    RankZeroNames names;
    if (rank == 0) {
        failure = create_on_rank_zero(r, hints, index, job_pid, sizes_and_units, parameters, names, file);
    }
    if (auto failed = agree(r.comm, failure)) {
        return fail(r.comm, r.win, file.part, *failed);
    }
    PMPI_Bcast(&parameters, sizeof parameters, MPI_BYTE, 0, r.comm);
    // Rank 0 checked this very layout (same sizes, its noncontig) before the
    // agreement above, so it cannot fail here on any rank.
    auto planned = layout(r.routine, rank, sizes_and_units, parameters.noncontig != 0, file.total);
    if (!planned) {
        return fail(r.comm, r.win, file.part, planned.error());
    }
    file.peers = std::move(*planned);
    file.path = std::string(parameters.path.data());
    file.order = static_cast<Order>(parameters.order);
    if (rank != 0 && file.total > 0) {
        failure = map_on_other_rank(r, rank, hints, parameters, file);
    }
    if (auto failed = agree(r.comm, failure)) {
        return fail(r.comm, r.win, file.part, *failed);
    }
    return MPI_SUCCESS;
}

/// (bytes in the memory part, bytes on storage) of the segment `me` of `size` bytes: the
/// window's storage part starts after its memory part (memory_first) or at 0.
std::pair<std::size_t, std::size_t> segment_split(const StoragePart* part, const SharedPeer& me, std::size_t size,
                                                  Order order) {
    if (part == nullptr || size == 0) {
        return {0, 0};
    }
    const std::size_t begin = order == Order::memory_first ? part->memory_bytes() : 0;
    const std::size_t end = begin + part->storage_bytes();
    const std::size_t from = std::max<std::size_t>(me.offset, begin);
    const std::size_t to = std::min<std::size_t>(me.offset + size, end);
    const std::size_t on_storage = to > from ? to - from : 0;
    return {size - on_storage, on_storage};
}

/// Creates the MPI window over the whole mapping and records how RMA reaches
/// each rank's segment in it.
int expose_shared(const WindowRequest& r, int rank, unsigned index, const WindowHints& hints, bool from_environment,
                  const SharedFile& file) {
    const auto& part = file.part;
    const SharedPeer& me = file.peers[static_cast<std::size_t>(rank)];
    std::byte* mapping = part ? part->data() : nullptr;
    // A rank without a segment has no address, as in MPICH (its tests check for NULL).
    void* base = mapping != nullptr && r.size > 0 ? static_cast<void*>(mapping + me.offset) : nullptr;
    // Every rank exposes the whole page-aligned mapping with disp_unit 1 and
    // RMA displacements are translated (rma.cpp) into the target's segment:
    // segments start at any byte, and MPICH 4.0.2 would expose a segment
    // that starts off a 16-byte boundary at the boundary below (exposure.hpp).
    std::vector<Target> shifts;
    if (const int rc =
            create_window(mapping, static_cast<MPI_Aint>(file.total), 1, r.info, r.comm, r.win, r.large, shifts);
        rc != MPI_SUCCESS) {
        if (part) {
            part->abandon();
        }
        return rc;
    }
    std::vector<Target> targets(file.peers.size());
    for (std::size_t i = 0; i < file.peers.size(); ++i) {
        const MPI_Aint shift = shifts.empty() ? 0 : shifts[i].offset;  // a page-aligned mapping: 0 unless MPI moved it
        targets[i] = {.offset = shift + static_cast<MPI_Aint>(file.peers[i].offset),
                      .disp_unit = file.peers[i].disp_unit};
    }
    auto record = make_record(MPI_WIN_FLAVOR_SHARED, rank);
    record->owned = part;
    record->unlink_at_free = rank == 0 && hints.unlink;
    record->mapping = mapping;
    record->peers = file.peers;
    record->translate(std::move(targets), base, r.size, r.disp_unit);
    record->reported = report(hints, file.path, part.get());
    // This rank's segment: how much of it lies in the memory part and on storage.
    const auto [in_memory, on_storage] = segment_split(part.get(), me, static_cast<std::size_t>(r.size), file.order);
    record->reported.insert_or_assign("strata_memory_bytes", std::to_string(in_memory));
    record->reported.insert_or_assign("strata_storage_bytes", std::to_string(on_storage));
    if (part && r.size > 0) {
        record->attach({.part = part, .offset = me.offset, .length = static_cast<std::size_t>(r.size), .base = base});
    }
    if (part && hints.sync == SyncMode::async) {
        flush_in_background(part);
    }
    if (detail::log().should_log(spdlog::level::info)) {
        detail::log().info(
            "{}: rank {}: shared window {}: {} bytes: 0 in memory, {} on storage at offset {} of {} ({})", r.routine,
            rank, index, r.size, r.size, me.offset, file.path, hints_source(from_environment));
    }
    Registry::instance().add_window(*r.win, std::move(record));
    *static_cast<void**>(r.baseptr) = base;
    return MPI_SUCCESS;
}

int allocate_shared(const WindowRequest& r) {
    HintRequest request = request_hints(Routine::win_allocate_shared, r.info);
    if (!request.applies) {
        return in_memory(r, "no storage hints, or outside STRATA_MPI_WINDOW_HINTS_SCOPE");
    }
    const int rank = comm_rank(r.comm);
    const unsigned index = Registry::instance().next_index();
    WindowHints hints;
    const Placement placement = agree_on_placement(r, request, rank, hints);
    if (placement.outcome == Placement::failed) {
        return placement.rc;
    }
    if (placement.outcome == Placement::memory) {
        return in_memory(r, "alloc_type=memory");
    }
    SharedFile file;
    if (const int rc = open_shared_file(r, rank, hints, index, placement.job_pid, file); rc != MPI_SUCCESS) {
        return rc;
    }
    return expose_shared(r, rank, index, hints, request.from_environment, file);
}

/// MPI_Win_shared_query for windows made above; others go to PMPI.
template <class DispUnit>
int shared_query(const char* routine, MPI_Win win, int rank, MPI_Aint* size, DispUnit* disp_unit, void* baseptr,
                 int (*pmpi)(MPI_Win, int, MPI_Aint*, DispUnit*, void*)) {
    const auto record = Registry::instance().find_window(win);
    if (!record || record->flavor != MPI_WIN_FLAVOR_SHARED) {
        return pmpi(win, rank, size, disp_unit, baseptr);
    }
    const auto& peers = record->peers;
    std::size_t which = peers.size();
    if (rank == MPI_PROC_NULL) {  // the lowest rank with memory
        for (std::size_t i = 0; i < peers.size() && which == peers.size(); ++i) {
            which = peers[i].size > 0 ? i : which;
        }
        if (which == peers.size()) {
            *size = 0;
            *disp_unit = 1;
            *static_cast<void**>(baseptr) = nullptr;
            return MPI_SUCCESS;
        }
    } else if (rank >= 0 && static_cast<std::size_t>(rank) < peers.size()) {
        which = static_cast<std::size_t>(rank);
    } else {
        return raise_on_win(win, make_failure(MPI_ERR_RANK, routine, record->rank, "rank", std::to_string(rank),
                                              "not a rank of the window"));
    }
    const SharedPeer& peer = peers[which];
    *size = peer.size;
    *disp_unit = static_cast<DispUnit>(peer.disp_unit);
    // As MPI_Win_allocate_shared's base: no segment, no address.
    *static_cast<void**>(baseptr) =
        record->mapping != nullptr && peer.size > 0 ? record->mapping + peer.offset : nullptr;
    return MPI_SUCCESS;
}

}  // namespace

}  // namespace strata::mpi

using strata::mpi::guarded;

extern "C" int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                                       MPI_Win* win) {
    return guarded("MPI_Win_allocate_shared", [&] {
        return strata::mpi::allocate_shared(
            {"MPI_Win_allocate_shared", size, disp_unit, info, comm, baseptr, win, false});
    });
}

extern "C" int MPI_Win_allocate_shared_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                                         MPI_Win* win) {
    return guarded("MPI_Win_allocate_shared_c", [&] {
        return strata::mpi::allocate_shared(
            {"MPI_Win_allocate_shared_c", size, disp_unit, info, comm, baseptr, win, true});
    });
}

extern "C" int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint* size, int* disp_unit, void* baseptr) {
    return guarded("MPI_Win_shared_query", [&] {
        return strata::mpi::shared_query("MPI_Win_shared_query", win, rank, size, disp_unit, baseptr,
                                         &PMPI_Win_shared_query);
    });
}

extern "C" int MPI_Win_shared_query_c(MPI_Win win, int rank, MPI_Aint* size, MPI_Aint* disp_unit, void* baseptr) {
    return guarded("MPI_Win_shared_query_c", [&] {
        return strata::mpi::shared_query("MPI_Win_shared_query_c", win, rank, size, disp_unit, baseptr,
                                         &PMPI_Win_shared_query_c);
    });
}
