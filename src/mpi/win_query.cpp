// SPDX-License-Identifier: MIT
// MPI_Win_get_attr and MPI_Win_get_info for storage windows.
//
// A storage window is made with PMPI_Win_create, so MPI itself would report
// the create flavor; the program asked for MPI_Win_allocate (or _shared) and
// must see that flavor, as the MPI standard defines it for such windows. A
// translated window (exposure.hpp) reports the base, size and displacement
// unit the program gave, not MPI's.
// MPI_Win_get_info adds the storage hints in effect, so a program can see
// what it got (the file name after %r %w %j, bytes in memory and on storage,
// hints accepted without effect).
#include <array>

#include "mpi/registry.hpp"

namespace strata::mpi {

namespace {

// MPI returns attribute values of predefined keys as pointers to storage the
// implementation owns; these live as long as the library.
const int allocate_flavor = MPI_WIN_FLAVOR_ALLOCATE;
const int shared_flavor = MPI_WIN_FLAVOR_SHARED;

int get_attr(MPI_Win win, int keyval, void* attribute_val, int* flag) {
    const bool predefined = keyval == MPI_WIN_CREATE_FLAVOR || keyval == MPI_WIN_BASE || keyval == MPI_WIN_SIZE ||
                            keyval == MPI_WIN_DISP_UNIT;
    const auto record = predefined ? Registry::instance().find_window(win) : nullptr;
    const bool allocated =
        record && (record->flavor == MPI_WIN_FLAVOR_ALLOCATE || record->flavor == MPI_WIN_FLAVOR_SHARED);
    if (!record || (keyval == MPI_WIN_CREATE_FLAVOR && !allocated)) {
        return PMPI_Win_get_attr(win, keyval, attribute_val, flag);
    }
    auto* out = static_cast<void**>(attribute_val);
    if (keyval == MPI_WIN_CREATE_FLAVOR) {
        const int* flavor = record->flavor == MPI_WIN_FLAVOR_SHARED ? &shared_flavor : &allocate_flavor;
        *out = const_cast<int*>(flavor);  // MPI's API is not const-correct
    } else if (!record->translated) {
        return PMPI_Win_get_attr(win, keyval, attribute_val, flag);
    } else if (keyval == MPI_WIN_BASE) {
        *out = record->own_base;
    } else if (keyval == MPI_WIN_SIZE) {
        *out = &record->own_size;
    } else {
        *out = &record->own_disp_unit;
    }
    *flag = 1;
    return MPI_SUCCESS;
}

int get_info(MPI_Win win, MPI_Info* info_used) {
    if (const int rc = PMPI_Win_get_info(win, info_used); rc != MPI_SUCCESS) {
        return rc;
    }
    const auto record = Registry::instance().find_window(win);
    if (!record) {
        return MPI_SUCCESS;
    }
    for (const auto& [key, value] : record->reported_now()) {
        if (const int rc = PMPI_Info_set(*info_used, key.c_str(), value.c_str()); rc != MPI_SUCCESS) {
            return rc;
        }
    }
    if (record->remote) {
        const std::string served = std::to_string(record->remote->served());
        if (const int rc = PMPI_Info_set(*info_used, "strata_remote_syncs", served.c_str()); rc != MPI_SUCCESS) {
            return rc;
        }
    }
    if (record->owned && record->owned->fills_behind()) {
        // Changes after creation: the value now, not the one reported then.
        return PMPI_Info_set(*info_used, "strata_read_complete", record->owned->fill_complete() ? "true" : "false");
    }
    return MPI_SUCCESS;
}

/// A key the program sets after creation (MPI's alloc_shared_noncontig,
/// no_locks, ...) is then MPI's to report, as it would be without strata;
/// the keys that describe the storage keep the values of the placement made.
int set_info(MPI_Win win, MPI_Info info) {
    if (const int rc = PMPI_Win_set_info(win, info); rc != MPI_SUCCESS) {
        return rc;
    }
    const auto record = Registry::instance().find_window(win);
    int count = 0;
    if (!record || info == MPI_INFO_NULL || PMPI_Info_get_nkeys(info, &count) != MPI_SUCCESS) {
        return MPI_SUCCESS;
    }
    for (int i = 0; i < count; ++i) {
        std::array<char, MPI_MAX_INFO_KEY + 1> key{};
        if (PMPI_Info_get_nthkey(info, i, key.data()) == MPI_SUCCESS) {
            record->forget_reported(key.data());
        }
    }
    return MPI_SUCCESS;
}

}  // namespace

}  // namespace strata::mpi

using strata::mpi::guarded;

extern "C" int MPI_Win_get_attr(MPI_Win win, int win_keyval, void* attribute_val, int* flag) {
    return guarded("MPI_Win_get_attr", [&] { return strata::mpi::get_attr(win, win_keyval, attribute_val, flag); });
}

extern "C" int MPI_Win_set_info(MPI_Win win, MPI_Info info) {
    return guarded("MPI_Win_set_info", [&] { return strata::mpi::set_info(win, info); });
}

extern "C" int MPI_Win_get_info(MPI_Win win, MPI_Info* info_used) {
    return guarded("MPI_Win_get_info", [&] { return strata::mpi::get_info(win, info_used); });
}
