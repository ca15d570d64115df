// SPDX-License-Identifier: MIT
// Storage window hints: what each key means is documented in
// include/strata/mpi.h and docs/mpi-storage-windows.md. This file only turns
// key/value text into a validated WindowHints; it knows nothing of MPI, so
// the same rules apply to MPI_Info objects and to STRATA_MPI_WINDOW_HINTS.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <sys/types.h>

#include "strata/region.hpp"

namespace strata::mpi {

/// Key -> value, as read from an MPI_Info or from the environment.
using HintMap = std::map<std::string, std::string, std::less<>>;

/// A rejected hint: becomes an MPI_ERR_INFO_VALUE naming key, value and cause.
struct HintError {
    std::string key;
    std::string value;
    std::string cause;
};

/// When storage-backed changes are written back (storage_alloc_sync).
enum class SyncMode {
    on_sync,  ///< at MPI_Win_sync and MPI_Win_free (default)
    async,    ///< also in the background, every STRATA_MPI_FLUSH_INTERVAL_MS
    on_free,  ///< only at MPI_Win_free / MPI_Free_mem; MPI_Win_sync orders memory only
};

std::string_view to_string(SyncMode mode) noexcept;

/// The entries of an access_style list, as bits (AccessStyle::...).
namespace access {
inline constexpr unsigned read_once = 1U << 0;
inline constexpr unsigned write_once = 1U << 1;
inline constexpr unsigned read_mostly = 1U << 2;
inline constexpr unsigned write_mostly = 1U << 3;
inline constexpr unsigned sequential = 1U << 4;
inline constexpr unsigned reverse_sequential = 1U << 5;
inline constexpr unsigned random = 1U << 6;
inline constexpr unsigned normal = 1U << 7;
}  // namespace access

/// How a storage part is mapped and filled, from access_style (the table in
/// docs/mpi-storage-windows.md, "Access styles"):
///   advice    the kernel advice of the whole storage part (first entry;
///             none: the region's page-granular MADV_RANDOM)
///   prefetch  read the data the file already holds for the window into the
///             page cache at creation, in read-ahead-sized MADV_WILLNEED steps
///             (small folios: dirty tracking stays at page size), at most half
///             the memory budget
///   populate  write_once: prepare every page for writing at creation
///             (MADV_POPULATE_WRITE), one system call instead of a fault per
///             folio while the program writes; every page is then dirty
///   direct    write_once: a storage part over bytes the file does not hold
///             yet starts as anonymous memory and MPI_Win_sync writes it with
///             O_DIRECT (Writeback::direct), when the part fits in half the
///             memory budget; otherwise the mapping with populate
///   write_behind  write_once with direct write-back where the kernel tracks
///             stores (Linux 6.7+): a thread writes the pages already filled
///             with O_DIRECT while the program still stores, so MPI_Win_sync
///             has only the rest to write
///   fill      read_once: a storage part over data the file holds, if it
///             fits in half the memory budget and the kernel tracks stores,
///             starts as anonymous memory read with several O_DIRECT reads in
///             flight (direct write-back, so later stores still reach the
///             file at MPI_Win_sync); otherwise the mapping
struct AccessPlan {
    std::optional<Advice> advice;
    bool prefetch = false;
    bool populate = false;
    bool direct = false;
    bool write_behind = false;
    bool fill = false;
};

/// The plan for an access_style bit set whose first entry maps to `first`.
AccessPlan access_plan(unsigned styles, std::optional<Advice> first) noexcept;

/// The hints of one window or allocation, validated.
struct WindowHints {
    bool storage = false;           ///< alloc_type=storage
    std::string filename_template;  ///< storage_alloc_filename before %r %w %j expansion
    std::uint64_t offset = 0;       ///< storage_alloc_offset, a page multiple
    bool factor_given = false;
    bool factor_auto = false;       ///< storage_alloc_factor=auto
    double storage_fraction = 1.0;  ///< storage_alloc_factor: share of the range on storage
    Order order = Order::memory_first;
    bool unlink = false;
    bool discard = false;
    bool allow_other_owner = false;  ///< storage_alloc_allow_other_owner: reuse another user's file
    bool remote_sync = false;        ///< storage_alloc_remote_sync: MPI_Win_sync syncs the targets written to
    std::optional<Advice> advice;    ///< from the first access_style entry
    unsigned access_styles = 0;      ///< every access_style entry (access::...)
    mode_t file_perm = 0600;
    std::optional<std::uint64_t> striping_factor;
    std::optional<std::uint64_t> striping_unit;
    SyncMode sync = SyncMode::on_sync;
    bool shared_noncontig = false;  ///< alloc_shared_noncontig
    HintMap given;                  ///< the keys this parser used, for MPI_Win_get_info

    /// The memory share a Region factor expects (the hint gives the storage share).
    [[nodiscard]] Factor memory_factor() const;
};

/// True for the keys that make a window a strata window (alloc_type and
/// storage_alloc_*): their presence selects the info over the environment.
bool is_storage_key(std::string_view key) noexcept;
/// True for every key this library reads (the storage keys plus the MPI-IO
/// reserved hints it honours and alloc_shared_noncontig).
bool is_known_key(std::string_view key) noexcept;

/// Validates every known key of `hints`; unknown keys are ignored. Storage
/// keys are only checked when alloc_type=storage, since a memory window does
/// not use them.
std::expected<WindowHints, HintError> parse_hints(const HintMap& hints);

/// The keys is_known_key accepts, comma-separated, for error messages.
std::string known_keys_list();

/// Parses STRATA_MPI_WINDOW_HINTS-style text: "key=value,key=value". With
/// `known_only`, a key this library does not read is an error naming it and
/// the known keys (strata's own variable, unlike an MPI_Info, is checked).
std::expected<HintMap, HintError> parse_hint_list(std::string_view text, std::string_view source,
                                                  bool known_only = false);

/// The period of storage_alloc_sync=async's background write-back:
/// STRATA_MPI_FLUSH_INTERVAL_MS (whole milliseconds, 1 to 86400000), 1000 when
/// unset; a HintError naming the variable, its value and the cause otherwise.
std::expected<std::chrono::milliseconds, HintError> flush_interval_from_env();

/// Expands %r (rank), %w (index of the storage allocation within the
/// process), %k (which routine made it: `kind`), %j (job id) and %% in a file name.
std::expected<std::string, HintError> expand_filename(std::string_view tmpl, int rank, unsigned index,
                                                      std::string_view job, std::string_view kind = "win");

}  // namespace strata::mpi
