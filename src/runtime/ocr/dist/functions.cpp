// SPDX-License-Identifier: MIT
// Function pointers across ranks (functions.hpp).
#include "functions.hpp"

#include <link.h>
#include <mutex>
#include <unordered_map>

namespace strata::ocr::dist {

namespace {

struct Found {
    std::uintptr_t address = 0;
    const char* name = nullptr;
    std::uintptr_t base = 0;
};

// The loaded object whose PT_LOAD segment holds `address`.
int find_containing(dl_phdr_info* info, std::size_t /*size*/, void* data) {
    auto* found = static_cast<Found*>(data);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD) {
            continue;
        }
        const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
        if (found->address >= start && found->address < start + ph.p_memsz) {
            found->name = info->dlpi_name;
            found->base = info->dlpi_addr;
            return 1;
        }
    }
    return 0;
}

struct Named {
    const std::string* name = nullptr;
    std::uintptr_t base = 0;
    bool found = false;
};

int find_named(dl_phdr_info* info, std::size_t /*size*/, void* data) {
    auto* named = static_cast<Named*>(data);
    const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
    if (*named->name == name) {
        named->base = info->dlpi_addr;
        named->found = true;
        return 1;
    }
    return 0;
}

std::mutex g_mutex;
std::unordered_map<std::string, std::uintptr_t> g_bases;  // guarded by g_mutex

}  // namespace

Result<FunctionRef> encode_function(const void* function) {
    Found found;
    found.address = reinterpret_cast<std::uintptr_t>(function);
    if (dl_iterate_phdr(find_containing, &found) == 0) {
        return make_error(Errc::invalid_argument, "function {}: in no object loaded in this process", function);
    }
    return FunctionRef{found.name != nullptr ? found.name : "", found.address - found.base};
}

Result<void*> decode_function(const FunctionRef& ref) {
    std::uintptr_t base = 0;
    {
        std::lock_guard lock(g_mutex);
        if (auto it = g_bases.find(ref.module); it != g_bases.end()) {
            base = it->second;
        } else {
            Named named{&ref.module};
            dl_iterate_phdr(find_named, &named);
            if (!named.found) {
                return make_error(Errc::not_found,
                                  "function at {:#x} of '{}': that object is not loaded on this rank (every rank must "
                                  "run the same program with the same libraries)",
                                  ref.offset, ref.module.empty() ? "the program" : ref.module);
            }
            base = g_bases.emplace(ref.module, named.base).first->second;
        }
    }
    return reinterpret_cast<void*>(base + ref.offset);
}

}  // namespace strata::ocr::dist
