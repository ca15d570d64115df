// SPDX-License-Identifier: MIT
// OCR EDT semantics: parameters and dependences, output events, finish
// EDTs, caller-supplied output events, destruction, argc/argv.
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "runtime_ocr_support.hpp"

namespace {

using strata::test::run_ocr_program;
using strata::test::to_guid;
using strata::test::to_u64;

std::atomic<int> g_runs{0};
std::atomic<int> g_children_done{0};
std::atomic<int> g_seen_at_finish{-1};
std::atomic<u64> g_value{0};
std::atomic<int> g_rc{-1};
std::string g_text;

void reset() {
    g_runs = 0;
    g_children_done = 0;
    g_seen_at_finish = -1;
    g_value = 0;
    g_rc = -1;
    g_text.clear();
}

ocrGuid_t shutdown_edt(u32, u64*, u32, ocrEdtDep_t depv[]) {
    g_value = depv[0].ptr != nullptr ? *static_cast<u64*>(depv[0].ptr) : 1000;
    g_seen_at_finish = g_children_done.load();
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t after(ocrGuid_t event) {
    ocrGuid_t tpl, edt;
    ocrEdtTemplateCreate(&tpl, shutdown_edt, 0, 1);
    ocrEdtCreate(&edt, tpl, 0, nullptr, 1, &event, EDT_PROP_NONE, NULL_HINT, nullptr);
    ocrEdtTemplateDestroy(tpl);
    return edt;
}

TEST(RuntimeOcrEdts, parameters_and_data_blocks_reach_the_edt_function) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t tpl, edt, db;
                  u64* data = nullptr;
                  ocrDbCreate(&db, reinterpret_cast<void**>(&data), 16, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
                  data[0] = 40;
                  ocrDbRelease(db);
                  ocrEdtTemplateCreate(
                      &tpl,
                      [](u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) -> ocrGuid_t {
                          g_value = paramv[0] + paramv[1] + *static_cast<u64*>(depv[0].ptr);
                          g_rc = static_cast<int>(paramc * 10 + depc);
                          EXPECT_TRUE(ocrGuidIsNull(depv[1].guid));
                          EXPECT_EQ(depv[1].ptr, nullptr);
                          ocrShutdown();
                          return NULL_GUID;
                      },
                      2, 2);
                  u64 params[2] = {1, 1};
                  ocrGuid_t deps[2] = {db, NULL_GUID};
                  ocrEdtCreate(&edt, tpl, EDT_PARAM_DEF, params, EDT_PARAM_DEF, deps, EDT_PROP_NONE, NULL_HINT,
                               nullptr);
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_value.load(), 42U);
    EXPECT_EQ(g_rc.load(), 22);
}

TEST(RuntimeOcrEdts, the_output_event_carries_the_data_block_the_edt_returns) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t tpl, edt, out;
                  ocrEdtTemplateCreate(
                      &tpl,
                      [](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                          ocrGuid_t db;
                          u64* data = nullptr;
                          ocrDbCreate(&db, reinterpret_cast<void**>(&data), 8, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
                          *data = 77;
                          return db;
                      },
                      0, 1);
                  // Connect the output event before the last input is satisfied.
                  ocrEdtCreate(&edt, tpl, 0, nullptr, 1, nullptr, EDT_PROP_NONE, NULL_HINT, &out);
                  after(out);
                  ocrAddDependence(NULL_GUID, edt, 0, DB_MODE_NULL);
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_value.load(), 77U);
}

// A finish EDT whose children each create a grandchild that sleeps; its
// output event must wait for all of them.
ocrGuid_t grandchild(u32, u64*, u32, ocrEdtDep_t*) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    g_children_done.fetch_add(1);
    return NULL_GUID;
}

ocrGuid_t child(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t tpl, edt;
    ocrEdtTemplateCreate(&tpl, grandchild, 0, 0);
    ocrEdtCreate(&edt, tpl, 0, nullptr, 0, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    ocrEdtTemplateDestroy(tpl);
    g_children_done.fetch_add(1);
    return NULL_GUID;
}

ocrGuid_t finish_body(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t tpl, edt;
    ocrEdtTemplateCreate(&tpl, child, 0, 0);
    for (int i = 0; i < 10; ++i) {
        ocrEdtCreate(&edt, tpl, 0, nullptr, 0, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    }
    ocrEdtTemplateDestroy(tpl);
    return NULL_GUID;
}

TEST(RuntimeOcrEdts, a_finish_edt_output_fires_after_every_edt_created_inside_it_completed) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t tpl, edt, out;
                  ocrEdtTemplateCreate(&tpl, finish_body, 0, 1);
                  ocrEdtCreate(&edt, tpl, 0, nullptr, 1, nullptr, EDT_PROP_FINISH, NULL_HINT, &out);
                  after(out);
                  ocrAddDependence(NULL_GUID, edt, 0, DB_MODE_NULL);
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_seen_at_finish.load(), 20);
    EXPECT_EQ(g_value.load(), 1000U) << "a finish EDT's output event carries no data block";
}

TEST(RuntimeOcrEdts, with_oevt_valid_the_callers_sticky_event_is_the_output_event) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t tpl, edt, sticky;
                  ocrEventCreate(&sticky, OCR_EVENT_STICKY_T, EVT_PROP_TAKES_ARG);
                  ocrEdtTemplateCreate(
                      &tpl, [](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t { return NULL_GUID; }, 0, 0);
                  ocrGuid_t out = sticky;
                  ocrEdtCreate(&edt, tpl, 0, nullptr, 0, nullptr, EDT_PROP_OEVT_VALID, NULL_HINT, &out);
                  g_rc = ocrGuidIsEq(out, sticky) ? 1 : 0;
                  after(sticky);  // may be added after the EDT completed: sticky events stay satisfied
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_rc.load(), 1);
    EXPECT_EQ(g_value.load(), 1000U);
}

TEST(RuntimeOcrEdts, a_destroyed_edt_never_runs) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t tpl, edt, evt;
                  ocrEventCreate(&evt, OCR_EVENT_STICKY_T, EVT_PROP_NONE);
                  ocrEdtTemplateCreate(
                      &tpl,
                      [](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                          g_runs.fetch_add(1);
                          return NULL_GUID;
                      },
                      0, 1);
                  ocrEdtCreate(&edt, tpl, 0, nullptr, 1, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
                  g_rc = ocrEdtDestroy(edt);
                  ocrEventSatisfy(evt, NULL_GUID);
                  after(evt);
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_rc.load(), 0);
    EXPECT_EQ(g_runs.load(), 0);
}

TEST(RuntimeOcrEdts, a_parameter_count_that_contradicts_the_template_is_einval) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t tpl, edt;
                  ocrEdtTemplateCreate(&tpl, shutdown_edt, 2, 1);
                  u64 params[3] = {1, 2, 3};
                  g_rc = ocrEdtCreate(&edt, tpl, 3, params, 1, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
                  ocrShutdown();
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_rc.load(), OCR_EINVAL);
}

TEST(RuntimeOcrEdts, main_edt_receives_argc_and_argv) {
    reset();
    EXPECT_EQ(run_ocr_program(
                  [](u32 paramc, u64*, u32 depc, ocrEdtDep_t depv[]) -> ocrGuid_t {
                      g_rc = static_cast<int>(ocrGetArgc(depv[0].ptr) * 100 + paramc * 10 + depc);
                      g_text = std::string(ocrGetArgv(depv[0].ptr, 1)) + "|" + ocrGetArgv(depv[0].ptr, 2);
                      ocrShutdown();
                      return NULL_GUID;
                  },
                  {"alpha", "beta gamma"}),
              0);
    EXPECT_EQ(g_rc.load(), 301);
    EXPECT_EQ(g_text, "alpha|beta gamma");
}

}  // namespace
