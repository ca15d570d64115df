// SPDX-License-Identifier: MIT
// Program-wide OCR semantics: shutdown, abort codes, deferred errors.
#include <atomic>
#include <string>

#include <gtest/gtest.h>

#include "runtime_ocr_support.hpp"

namespace {

using strata::test::run_ocr_program;

std::atomic<int> g_runs{0};

TEST(RuntimeOcrProgram, after_shutdown_edts_that_were_not_runnable_never_run_and_the_exit_code_is_0) {
    g_runs = 0;
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t evt, tpl, edt;
                  ocrEventCreate(&evt, OCR_EVENT_STICKY_T, EVT_PROP_NONE);
                  ocrEdtTemplateCreate(
                      &tpl,
                      [](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                          g_runs.fetch_add(1);
                          return NULL_GUID;
                      },
                      0, 1);
                  ocrEdtCreate(&edt, tpl, 0, nullptr, 1, &evt, EDT_PROP_NONE, NULL_HINT, nullptr);
                  ocrShutdown();
                  ocrEventSatisfy(evt, NULL_GUID);  // runnable only after the shutdown
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_runs.load(), 0);
}

TEST(RuntimeOcrProgram, ocr_abort_ends_the_program_with_its_code) {
    testing::internal::CaptureStderr();
    const int code = run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
        ocrAbort(42);
        return NULL_GUID;
    });
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, 42);
    EXPECT_NE(err.find("ocrAbort(42)"), std::string::npos) << err;
    EXPECT_NE(err.find("runtime_ocr_program_test.cpp"), std::string::npos) << err;
}

TEST(RuntimeOcrProgram, a_slot_satisfied_twice_stops_the_program_with_file_line_error_and_guids) {
    testing::internal::CaptureStderr();
    const int code = run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
        ocrGuid_t tpl, edt;
        ocrEdtTemplateCreate(
            &tpl, [](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t { return NULL_GUID; }, 0, 2);
        ocrEdtCreate(&edt, tpl, 0, nullptr, 2, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
        ocrAddDependence(NULL_GUID, edt, 0, DB_MODE_NULL);
        ocrAddDependence(NULL_GUID, edt, 0, DB_MODE_NULL);  // the same slot again
        return NULL_GUID;
    });
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, 1);
    EXPECT_NE(err.find("runtime_ocr_program_test.cpp:"), std::string::npos) << err;
    EXPECT_NE(err.find("OCR_EPERM"), std::string::npos) << err;
    EXPECT_NE(err.find("slot 0 of EDT 0x"), std::string::npos) << err;
    EXPECT_NE(err.find("satisfied twice"), std::string::npos) << err;
}

TEST(RuntimeOcrProgram, a_program_where_no_edt_can_run_and_no_one_shuts_down_stops_with_an_error) {
    testing::internal::CaptureStderr();
    const int code = run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
        ocrGuid_t evt, tpl, edt;
        ocrEventCreate(&evt, OCR_EVENT_ONCE_T, EVT_PROP_NONE);
        ocrEdtTemplateCreate(
            &tpl, [](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t { return NULL_GUID; }, 0, 1);
        ocrEdtCreate(&edt, tpl, 0, nullptr, 1, &evt, EDT_PROP_NONE, NULL_HINT, nullptr);
        return NULL_GUID;  // nothing will ever satisfy evt
    });
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, 1);
    EXPECT_NE(err.find("ocrShutdown() was not called (1 EDT waits"), std::string::npos) << err;
    EXPECT_NE(err.find("created at " __FILE__ ":"), std::string::npos) << err;
    EXPECT_NE(err.find("waits on slot 0"), std::string::npos) << err;
}

TEST(RuntimeOcrProgram, the_api_outside_a_running_program_returns_einval) {
    ocrGuid_t evt;
    EXPECT_EQ(ocrEventCreate(&evt, OCR_EVENT_ONCE_T, EVT_PROP_NONE), OCR_EINVAL);
}

}  // namespace
