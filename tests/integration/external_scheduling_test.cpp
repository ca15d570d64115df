// SPDX-License-Identifier: MIT
// External tasks and the scheduler: running programs do not occupy workers
// (100 sleeping programs on 2 cores while normal EDTs keep computing), and
// the OCR access modes hold while a program reads a block.
#include <sched.h>

#include <atomic>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include <gtest/gtest.h>

#include "external_support.hpp"
#include "support/capability.hpp"

namespace strata::test {
namespace {

// ---- 100 external tasks on 2 cores --------------------------------------

constexpr int external_count = 100;
std::atomic<int> g_done{0}, g_ok{0}, g_compute{0}, g_compute_while_running{0};
std::mutex g_cpus_mutex;
std::set<int> g_compute_cpus;
std::map<int, int> g_while_running_per_cpu;  // compute EDTs that ran while programs were running
ocrGuid_t g_latch, g_spin_tpl;

// A program that succeeded delivers its (empty) output block; a failed one NULL_GUID.
ocrGuid_t done_edt(u32, u64*, u32, ocrEdtDep_t depv[]) {
    if (depv[0].guid.guid != 0) {
        g_ok.fetch_add(1);
        ocrDbDestroy(depv[0].guid);
    }
    g_done.fetch_add(1);
    ocrEventSatisfySlot(g_latch, NULL_GUID, OCR_EVENT_LATCH_DECR_SLOT);
    return NULL_GUID;
}

// About a millisecond of arithmetic, then the next link of the chain while
// programs are still running.
ocrGuid_t spin_edt(u32, u64*, u32, ocrEdtDep_t[]) {
    volatile double x = 1;
    for (int i = 0; i < 200000; ++i) x = x * 1.0000001 + 1e-9;
    g_compute.fetch_add(1);
    const int cpu = ::sched_getcpu();
    const bool running = g_done.load() < external_count;
    {
        std::lock_guard lock(g_cpus_mutex);
        g_compute_cpus.insert(cpu);
        if (running) ++g_while_running_per_cpu[cpu];
    }
    if (running) {
        g_compute_while_running.fetch_add(1);
        ocrGuid_t next;
        ocrEdtCreate(&next, g_spin_tpl, 0, nullptr, 0, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    } else {
        ocrEventSatisfySlot(g_latch, NULL_GUID, OCR_EVENT_LATCH_DECR_SLOT);
    }
    return NULL_GUID;
}

ocrGuid_t shutdown_edt(u32, u64*, u32, ocrEdtDep_t[]) {
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t many_main(u32, u64*, u32, ocrEdtDep_t[]) {
    if (ocrExternalConfigLoad(detail::g_config_path.c_str()) != 0) {
        ocrAbort(3);
        return NULL_GUID;
    }
    ocrEventParams_t params;
    params.EVENT_LATCH.counter = external_count + 2;
    ocrEventCreateParams(&g_latch, OCR_EVENT_LATCH_T, EVT_PROP_NONE, &params);
    ocrGuid_t end_tpl, end;
    ocrEdtTemplateCreate(&end_tpl, shutdown_edt, 0, 1);
    ocrEdtCreate(&end, end_tpl, 0, nullptr, 1, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    ocrAddDependence(g_latch, end, 0, DB_MODE_NULL);

    ocrGuid_t ext_tpl, done_tpl;
    ocrExternalTemplateCreate(&ext_tpl, "nap", 0, 1);
    ocrEdtTemplateCreate(&done_tpl, done_edt, 0, 1);
    for (int i = 0; i < external_count; ++i) {
        ocrGuid_t out, task, done;
        ocrEventCreate(&out, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
        ocrEdtCreate(&done, done_tpl, 0, nullptr, 1, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
        ocrAddDependence(out, done, 0, DB_MODE_RO);
        ocrExternalTaskCreate(&task, ext_tpl, 0, nullptr, 1, &out);  // starts at once: no inputs
    }
    ocrEdtTemplateCreate(&g_spin_tpl, spin_edt, 0, 0);
    for (int i = 0; i < 2; ++i) {
        ocrGuid_t spin;
        ocrEdtCreate(&spin, g_spin_tpl, 0, nullptr, 0, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    }
    return NULL_GUID;
}

TEST(ExternalScheduling, a_hundred_sleeping_programs_on_two_cores_leave_both_cores_computing) {
    cpu_set_t mask;
    ASSERT_EQ(::sched_getaffinity(0, sizeof mask, &mask), 0);
    ASSERT_GE(CPU_COUNT(&mask), 2) << "the test needs 2 CPUs";
    TempDir dir;
    detail::g_config_path = (dir / "external.toml").string();
    write_text(detail::g_config_path,
               "[nap]\ncommand = \"sleep 1\"\nstdout = \"[out:0]\"\nallow_empty_outputs = true\n");
    ocr::OcrOptions options;
    options.runtime.monitor = runtime::no_monitor();
    int first = -1, second = -1;
    for (int cpu = 0; cpu < CPU_SETSIZE && second < 0; ++cpu) {
        if (CPU_ISSET(static_cast<std::size_t>(cpu), &mask)) (first < 0 ? first : second) = cpu;
    }
    options.runtime.cpus = {first, second};
    char arg0[] = "test";
    char* argv[] = {arg0, nullptr};
    auto code = ocr::run_ocr(many_main, 1, argv, options);
    ASSERT_TRUE(code.has_value());
    EXPECT_EQ(*code, 0);
    EXPECT_EQ(g_done.load(), external_count);
    EXPECT_EQ(g_ok.load(), external_count) << "every program exits 0 after its second of sleep";
    // A worker waiting for a child would leave, with 100 children, no worker to
    // compute until they exit. Each second of sleep gives ~1000 one-millisecond
    // links per core on a quiet machine, fewer under load (printed); 10 per
    // core is 10 ms of its CPU in that second, which load does not take away.
    std::cout << "100 sleeping programs: " << g_compute_while_running.load() << " compute EDTs ran while they slept ("
              << g_while_running_per_cpu[first] << " on cpu " << first << ", " << g_while_running_per_cpu[second]
              << " on cpu " << second << "), " << g_compute.load() << " in all, on " << g_compute_cpus.size()
              << " CPUs\n";
    EXPECT_GE(g_while_running_per_cpu[first], 10)
        << "normal EDTs hardly ran on cpu " << first << " while programs slept";
    EXPECT_GE(g_while_running_per_cpu[second], 10)
        << "normal EDTs hardly ran on cpu " << second << " while programs slept";
    EXPECT_EQ(g_compute_cpus, (std::set<int>{first, second})) << "compute ran on one core only";
    EXPECT_EQ(strata_memfds(), std::vector<std::string>{});
}

// ---- access modes while a program reads a block -----------------------

std::atomic<int> g_ro_saw{-1}, g_const_saw{-1}, g_rw_saw{-1};
std::string g_read_by_program;
ocrGuid_t g_task, g_end_latch;

int state_now() {
    ocrExternalStatus_t st{};
    ocrExternalTaskStatus(g_task, &st);
    return st.state;
}

ocrGuid_t reader_edt(u32, u64* paramv, u32, ocrEdtDep_t[]) {
    (paramv[0] == 0 ? g_ro_saw : g_const_saw).store(state_now());
    ocrEventSatisfySlot(g_end_latch, NULL_GUID, OCR_EVENT_LATCH_DECR_SLOT);
    return NULL_GUID;
}

ocrGuid_t writer_edt(u32, u64*, u32, ocrEdtDep_t depv[]) {
    g_rw_saw.store(state_now());
    std::memcpy(depv[0].ptr, "CHANGED!", 8);
    ocrEventSatisfySlot(g_end_latch, NULL_GUID, OCR_EVENT_LATCH_DECR_SLOT);
    return NULL_GUID;
}

ocrGuid_t output_edt(u32, u64*, u32, ocrEdtDep_t depv[]) {
    if (depv[0].guid.guid != 0) {
        auto info = ocr::db_info(depv[0].guid);
        g_read_by_program.assign(static_cast<const char*>(depv[0].ptr), info ? info->size : 0);
    }
    ocrEventSatisfySlot(g_end_latch, NULL_GUID, OCR_EVENT_LATCH_DECR_SLOT);
    return NULL_GUID;
}

ocrGuid_t modes_main(u32, u64*, u32, ocrEdtDep_t[]) {
    ocrExternalConfigLoad(detail::g_config_path.c_str());
    ocrEventParams_t params;
    params.EVENT_LATCH.counter = 4;
    ocrEventCreateParams(&g_end_latch, OCR_EVENT_LATCH_T, EVT_PROP_NONE, &params);
    ocrGuid_t end_tpl, end;
    ocrEdtTemplateCreate(&end_tpl, shutdown_edt, 0, 1);
    ocrEdtCreate(&end, end_tpl, 0, nullptr, 1, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    ocrAddDependence(g_end_latch, end, 0, DB_MODE_NULL);

    ocrGuid_t block;
    void* p = nullptr;
    ocrDbCreate(&block, &p, 8, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    std::memcpy(p, "original", 8);
    ocrDbRelease(block);

    ocrGuid_t ext_tpl, out, out_tpl, out_edt;
    ocrExternalTemplateCreate(&ext_tpl, "slowcat", 1, 1);
    ocrEventCreate(&out, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
    ocrEdtTemplateCreate(&out_tpl, output_edt, 0, 1);
    ocrEdtCreate(&out_edt, out_tpl, 0, nullptr, 1, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    ocrAddDependence(out, out_edt, 0, DB_MODE_RO);
    ocrExternalTaskCreate(&g_task, ext_tpl, 1, nullptr, 1, &out);
    ocrAddDependence(block, g_task, 0, DB_MODE_RO);  // the program starts now and reads for ~0.5 s

    // Requests are granted in arrival order: the readers come before the writer.
    ocrGuid_t reader_tpl, writer_tpl, e;
    ocrEdtTemplateCreate(&reader_tpl, reader_edt, 1, 1);
    ocrEdtTemplateCreate(&writer_tpl, writer_edt, 0, 1);
    u64 which = 0;
    ocrEdtCreate(&e, reader_tpl, 1, &which, 1, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    ocrAddDependence(block, e, 0, DB_MODE_RO);
    which = 1;
    ocrEdtCreate(&e, reader_tpl, 1, &which, 1, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    ocrAddDependence(block, e, 0, DB_MODE_CONST);
    ocrEdtCreate(&e, writer_tpl, 0, nullptr, 1, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    ocrAddDependence(block, e, 0, DB_MODE_RW);
    return NULL_GUID;
}

// (exposure, placement): the hold is the runtime's, whichever way the program reads.
class ExternalAccessModes : public ::testing::TestWithParam<std::pair<const char*, ocr::DbPlacement>> {};

TEST_P(ExternalAccessModes, ro_and_const_run_beside_a_reading_program_and_rw_waits_for_it) {
    TempDir dir;
    detail::g_config_path = (dir / "external.toml").string();
    write_text(detail::g_config_path,
               "[slowcat]\ncommand = \"sh -c 'sleep 0.5; cat \\\"$1\\\"' sh [in:0]\"\nstdout = \"[out:0]\"\n");
    g_ro_saw = g_const_saw = g_rw_saw = -1;
    g_read_by_program.clear();
    const std::string exposure = GetParam().first;
    if (exposure == "fuse") STRATA_REQUIRE(::access("/dev/fuse", R_OK | W_OK) == 0, "/dev/fuse (strata-fsd)");
    ocr::OcrOptions options;
    options.runtime.monitor = runtime::no_monitor();
    options.db_placement = GetParam().second;
    char arg0[] = "test";
    char* argv[] = {arg0, nullptr};
    ::setenv("STRATA_EXTERNAL_EXPOSURE", exposure.c_str(), 1);
    auto code = ocr::run_ocr(modes_main, 1, argv, options);
    ::unsetenv("STRATA_EXTERNAL_EXPOSURE");
    ASSERT_TRUE(code.has_value());
    EXPECT_EQ(*code, 0);
    EXPECT_EQ(g_read_by_program, "original") << "the program saw a block changed under it";
    EXPECT_EQ(g_ro_saw.load(), OCR_EXTERNAL_PENDING) << "an RO reader waited for the program";
    EXPECT_EQ(g_const_saw.load(), OCR_EXTERNAL_PENDING) << "a CONST reader waited for the program";
    EXPECT_EQ(g_rw_saw.load(), OCR_EXTERNAL_OK) << "an RW writer ran while the program read the block";
    EXPECT_EQ(strata_memfds(), std::vector<std::string>{});
}

INSTANTIATE_TEST_SUITE_P(
    ExposuresAndPlacements, ExternalAccessModes,
    ::testing::Values(std::pair{"memfd", ocr::DbPlacement::memory}, std::pair{"memfd", ocr::DbPlacement::memfd},
                      std::pair{"fuse", ocr::DbPlacement::memory}, std::pair{"fuse", ocr::DbPlacement::memfd}),
    [](const auto& p) { return std::string(p.param.first) + "_" + std::string(ocr::to_string(p.param.second)); });

}  // namespace
}  // namespace strata::test
