// SPDX-License-Identifier: MIT
// OCR data block semantics: EW exclusion, CONST isolation, visibility after
// release, deadlock-free acquisition of several blocks, placement by hint.
#include <sys/stat.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "runtime_ocr_support.hpp"
#include "support/capability.hpp"

namespace {

using strata::test::eventually;
using strata::test::run_ocr_program;

constexpr int edts = 200;
std::atomic<int> g_inside{0};
std::atomic<int> g_max_inside{0};
std::atomic<int> g_done{0};
std::atomic<u64> g_value{0};
std::atomic<u64> g_value2{0};
std::atomic<bool> g_writer_done{false};
std::atomic<int> g_rc{-1};
std::string g_path;

void reset() {
    g_inside = 0;
    g_max_inside = 0;
    g_done = 0;
    g_value = 0;
    g_value2 = 0;
    g_writer_done = false;
    g_rc = -1;
    g_path.clear();
}

// paramv[0]: EDTs in total. Increments the block's counter non-atomically,
// slowly, and records how many holders were inside at once.
ocrGuid_t exclusive_increment(u32, u64* paramv, u32, ocrEdtDep_t depv[]) {
    const int inside = g_inside.fetch_add(1) + 1;
    int seen = g_max_inside.load();
    while (inside > seen && !g_max_inside.compare_exchange_weak(seen, inside)) {
    }
    auto* counter = static_cast<volatile u64*>(depv[0].ptr);
    const u64 before = *counter;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    *counter = before + 1;
    g_inside.fetch_sub(1);
    if (g_done.fetch_add(1) + 1 == static_cast<int>(paramv[0])) {
        g_value = *counter;
        ocrShutdown();
    }
    return NULL_GUID;
}

TEST(RuntimeOcrDbs, edts_holding_a_block_in_ew_mode_never_overlap) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t db, tpl, edt;
                  u64* data = nullptr;
                  ocrDbCreate(&db, reinterpret_cast<void**>(&data), 8, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
                  *data = 0;
                  ocrDbRelease(db);
                  ocrEdtTemplateCreate(&tpl, exclusive_increment, 1, 1);
                  u64 params[1] = {edts};
                  for (int i = 0; i < edts; ++i) {
                      ocrEdtCreate(&edt, tpl, 1, params, 1, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
                      ocrAddDependence(db, edt, 0, DB_MODE_EW);
                  }
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_max_inside.load(), 1);
    EXPECT_EQ(g_value.load(), static_cast<u64>(edts));
}

// Two blocks taken in EW mode on opposite slots by many EDTs: acquisition in
// GUID order means they never wait on each other in a cycle.
TEST(RuntimeOcrDbs, edts_taking_two_blocks_in_opposite_slot_order_do_not_deadlock) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t a, b, tpl, edt;
                  void* data = nullptr;
                  ocrDbCreate(&a, &data, 8, DB_PROP_NO_ACQUIRE, NULL_HINT, NO_ALLOC);
                  ocrDbCreate(&b, &data, 8, DB_PROP_NO_ACQUIRE, NULL_HINT, NO_ALLOC);
                  ocrEdtTemplateCreate(
                      &tpl,
                      [](u32, u64* paramv, u32, ocrEdtDep_t*) -> ocrGuid_t {
                          std::this_thread::sleep_for(std::chrono::microseconds(20));
                          if (g_done.fetch_add(1) + 1 == static_cast<int>(paramv[0])) ocrShutdown();
                          return NULL_GUID;
                      },
                      1, 2);
                  u64 params[1] = {edts};
                  for (int i = 0; i < edts; ++i) {
                      ocrEdtCreate(&edt, tpl, 1, params, 2, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
                      ocrAddDependence(i % 2 == 0 ? a : b, edt, 0, DB_MODE_EW);
                      ocrAddDependence(i % 2 == 0 ? b : a, edt, 1, DB_MODE_EW);
                  }
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_done.load(), edts);
}

// The CONST reader lets a writer start, waits until it has written, and
// reads again: the data did not change under it.
ocrGuid_t const_reader(u32, u64* paramv, u32, ocrEdtDep_t depv[]) {
    const auto* data = static_cast<const u64*>(depv[0].ptr);
    g_value = data[0];
    ocrEventSatisfy(strata::test::to_guid(paramv[0]), NULL_GUID);  // the writer may start now
    g_rc = eventually([] { return g_writer_done.load(); }) ? 1 : 0;
    g_value2 = data[0];
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t rw_writer(u32, u64*, u32, ocrEdtDep_t depv[]) {
    static_cast<u64*>(depv[0].ptr)[0] = 2;
    g_writer_done = true;
    return NULL_GUID;
}

TEST(RuntimeOcrDbs, a_const_holder_sees_no_change_while_a_concurrent_rw_holder_writes) {
    STRATA_REQUIRE(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "two CPUs (the writer must run beside the reader)");
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t db, go, reader_tpl, writer_tpl, reader, writer;
                  u64* data = nullptr;
                  ocrDbCreate(&db, reinterpret_cast<void**>(&data), 8, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
                  data[0] = 1;
                  ocrDbRelease(db);
                  ocrEventCreate(&go, OCR_EVENT_ONCE_T, EVT_PROP_NONE);
                  ocrEdtTemplateCreate(&writer_tpl, rw_writer, 0, 2);
                  ocrEdtCreate(&writer, writer_tpl, 0, nullptr, 2, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
                  ocrAddDependence(go, writer, 1, DB_MODE_NULL);
                  ocrAddDependence(db, writer, 0, DB_MODE_RW);
                  ocrEdtTemplateCreate(&reader_tpl, const_reader, 1, 1);
                  u64 params[1] = {strata::test::to_u64(go)};
                  ocrEdtCreate(&reader, reader_tpl, 1, params, 1, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
                  ocrAddDependence(db, reader, 0, DB_MODE_CONST);
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_rc.load(), 1) << "the writer never ran beside the reader";
    EXPECT_EQ(g_value.load(), 1U);
    EXPECT_EQ(g_value2.load(), 1U);
}

// The writer releases the block, then satisfies the event the reader waits on.
TEST(RuntimeOcrDbs, writes_before_a_release_are_visible_to_an_edt_that_depends_on_the_releaser) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t db, evt, tpl, reader, writer_tpl, writer;
                  void* data = nullptr;
                  ocrDbCreate(&db, &data, 4096, DB_PROP_NO_ACQUIRE, NULL_HINT, NO_ALLOC);
                  ocrEventCreate(&evt, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
                  ocrEdtTemplateCreate(
                      &tpl,
                      [](u32, u64*, u32, ocrEdtDep_t depv[]) -> ocrGuid_t {
                          const auto* words = static_cast<const u64*>(depv[0].ptr);
                          u64 sum = 0;
                          for (int i = 0; i < 512; ++i) sum += words[i];
                          g_value = sum;
                          ocrShutdown();
                          return NULL_GUID;
                      },
                      0, 1);
                  ocrEdtCreate(&reader, tpl, 0, nullptr, 1, &evt, EDT_PROP_NONE, NULL_HINT, nullptr);
                  ocrEdtTemplateCreate(
                      &writer_tpl,
                      [](u32, u64* paramv, u32, ocrEdtDep_t depv[]) -> ocrGuid_t {
                          auto* words = static_cast<u64*>(depv[0].ptr);
                          for (int i = 0; i < 512; ++i) words[i] = static_cast<u64>(i);
                          ocrDbRelease(depv[0].guid);
                          ocrEventSatisfy(strata::test::to_guid(paramv[0]), depv[0].guid);
                          return NULL_GUID;
                      },
                      1, 1);
                  u64 params[1] = {strata::test::to_u64(evt)};
                  ocrEdtCreate(&writer, writer_tpl, 1, params, 1, &db, EDT_PROP_NONE, NULL_HINT, nullptr);
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_value.load(), 511U * 512U / 2U);
}

ocrGuid_t placed_block(u32, u64* paramv, u32, ocrEdtDep_t*) {
    ocrHint_t hint;
    ocrHintInit(&hint, OCR_HINT_DB_T);
    ocrSetHintValue(&hint, static_cast<ocrHintProp_t>(paramv[0]), 1);
    ocrGuid_t db;
    u64* data = nullptr;
    g_rc = ocrDbCreate(&db, reinterpret_cast<void**>(&data), 1 << 20, DB_PROP_NONE, &hint, NO_ALLOC);
    if (g_rc == 0) {
        data[(1 << 17) - 1] = 123;
        auto info = strata::ocr::db_info(db);
        if (info) {
            g_value = static_cast<u64>(info->kind);
            g_path = info->path.string();
            g_value2 = std::filesystem::exists(info->path) ? data[(1 << 17) - 1] : 0;
        }
        ocrDbDestroy(db);
    }
    ocrShutdown();
    return NULL_GUID;
}

// Placement memfd (STRATA_OCR_DB_PLACEMENT=memfd): the block's memfd has all its pages when
// ocrDbCreate returns (allocated in one call, not faulted in one by one as
// the task writes, which leaves them scattered and slower to read).
ocrGuid_t memfd_block(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t db;
    void* data = nullptr;
    constexpr u64 size = 4 << 20;
    g_rc = ocrDbCreate(&db, &data, size, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    if (g_rc == 0) {
        // The block's own memfd, found by its name among this process's descriptors.
        for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
            std::error_code error;
            const auto target = std::filesystem::read_symlink(entry.path(), error).string();
            if (error || target.find("memfd:strata-ocr-db-") == std::string::npos) continue;
            struct stat st {};
            if (::stat(entry.path().c_str(), &st) == 0 && static_cast<u64>(st.st_size) == size) {
                g_value = static_cast<u64>(st.st_blocks) * 512;
                g_value2 = static_cast<u64>(st.st_size);
            }
        }
        ocrDbDestroy(db);
    }
    ocrShutdown();
    return NULL_GUID;
}

TEST(RuntimeOcrDbs, a_block_placed_in_a_memfd_has_all_its_pages_when_created) {
    reset();
    const int rc = run_ocr_program(
        [](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
            ocrGuid_t tpl, edt;
            ocrEdtTemplateCreate(&tpl, memfd_block, 0, 0);
            ocrEdtCreate(&edt, tpl, 0, nullptr, 0, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
            return NULL_GUID;
        },
        {}, strata::ocr::DbPlacement::memfd);
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(g_rc.load(), 0);
    ASSERT_EQ(g_value2.load(), 4U << 20) << "no memfd of the block's size among the descriptors";
    EXPECT_GE(g_value.load(), 4U << 20) << "bytes allocated to the block's memfd at creation";
}

class RuntimeOcrDbPlacement : public ::testing::TestWithParam<std::pair<ocrHintProp_t, strata::RegionKind>> {};

TEST_P(RuntimeOcrDbPlacement, a_placement_hint_puts_the_block_in_that_region_kind_and_destroy_removes_it) {
    reset();
    static ocrHintProp_t prop;
    prop = GetParam().first;
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t tpl, edt;
                  ocrEdtTemplateCreate(&tpl, placed_block, 1, 0);
                  u64 params[1] = {static_cast<u64>(prop)};
                  ocrEdtCreate(&edt, tpl, 1, params, 0, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_rc.load(), 0);
    EXPECT_EQ(static_cast<strata::RegionKind>(g_value.load()), GetParam().second);
    if (GetParam().second != strata::RegionKind::memory) {
        EXPECT_EQ(g_value2.load(), 123U) << g_path;
        EXPECT_FALSE(std::filesystem::exists(g_path)) << g_path << " is left behind";
    }
}

INSTANTIATE_TEST_SUITE_P(Hints, RuntimeOcrDbPlacement,
                         ::testing::Values(std::pair{OCR_HINT_DB_NEAR, strata::RegionKind::memory},
                                           std::pair{OCR_HINT_DB_INTER, strata::RegionKind::shared},
                                           std::pair{OCR_HINT_DB_FAR, strata::RegionKind::storage}));

}  // namespace
