// SPDX-License-Identifier: MIT
// OCR event semantics: ONCE, IDEM, STICKY, LATCH, COUNTED, CHANNEL, and
// dependences added before and after a satisfaction.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "runtime_ocr_support.hpp"

namespace {

using strata::test::run_ocr_program;

std::atomic<int> g_runs{0};
std::atomic<u64> g_value{0};
std::atomic<int> g_rc{-1};
std::atomic<int> g_rc2{-1};
std::mutex g_order_mutex;
std::vector<u64> g_order;

void reset() {
    g_runs = 0;
    g_value = 0;
    g_rc = -1;
    g_rc2 = -1;
    std::lock_guard lock(g_order_mutex);
    g_order.clear();
}

ocrGuid_t make_value(u64 value) {
    ocrGuid_t db;
    u64* data = nullptr;
    ocrDbCreate(&db, reinterpret_cast<void**>(&data), sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *data = value;
    ocrDbRelease(db);
    return db;
}

// Records the value of its data block (or 0) and shuts down after paramv[0] runs.
ocrGuid_t record_and_maybe_shutdown(u32, u64* paramv, u32, ocrEdtDep_t depv[]) {
    const u64 value = depv[0].ptr != nullptr ? *static_cast<u64*>(depv[0].ptr) : 0;
    g_value = value;
    {
        std::lock_guard lock(g_order_mutex);
        g_order.push_back(value);
    }
    if (g_runs.fetch_add(1) + 1 == static_cast<int>(paramv[0])) ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t consumer(u64 shutdown_after, ocrGuid_t source) {
    ocrGuid_t tpl, edt;
    ocrEdtTemplateCreate(&tpl, record_and_maybe_shutdown, 1, 1);
    u64 params[1] = {shutdown_after};
    ocrEdtCreate(&edt, tpl, EDT_PARAM_DEF, params, EDT_PARAM_DEF, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    ocrAddDependence(source, edt, 0, DB_MODE_RO);
    ocrEdtTemplateDestroy(tpl);
    return edt;
}

TEST(RuntimeOcrEvents, a_once_event_passes_its_data_block_on_and_is_destroyed_when_it_fires) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t evt;
                  ocrEventCreate(&evt, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
                  consumer(1, evt);
                  ocrEventSatisfy(evt, make_value(7));
                  g_rc = ocrEventSatisfy(evt, NULL_GUID);  // gone
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_value.load(), 7U);
    EXPECT_EQ(g_rc.load(), OCR_EINVAL);
}

TEST(RuntimeOcrEvents, an_idem_event_ignores_later_satisfactions_and_serves_later_dependences) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t evt;
                  ocrEventCreate(&evt, OCR_EVENT_IDEM_T, EVT_PROP_TAKES_ARG);
                  ocrEventSatisfy(evt, make_value(5));
                  g_rc = ocrEventSatisfy(evt, make_value(6));
                  consumer(1, evt);  // added after the satisfaction
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_rc.load(), 0);
    EXPECT_EQ(g_value.load(), 5U);
}

TEST(RuntimeOcrEvents, a_sticky_event_stays_satisfied_and_a_second_satisfy_is_an_error) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t evt;
                  ocrEventCreate(&evt, OCR_EVENT_STICKY_T, EVT_PROP_TAKES_ARG);
                  consumer(2, evt);  // before
                  ocrEventSatisfy(evt, make_value(9));
                  g_rc = ocrEventSatisfy(evt, make_value(10));
                  consumer(2, evt);  // after
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_rc.load(), OCR_EPERM);
    EXPECT_EQ(g_runs.load(), 2);
    std::lock_guard lock(g_order_mutex);
    EXPECT_EQ(g_order, (std::vector<u64>{9, 9}));
}

// paramv[0]: the latch; the EDT checks that the latch has not fired yet, then
// completes the count.
TEST(RuntimeOcrEvents, a_latch_fires_only_when_its_increments_and_decrements_are_equal) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t latch;
                  ocrEventCreate(&latch, OCR_EVENT_LATCH_T, EVT_PROP_NONE);
                  consumer(1, latch);
                  ocrEventSatisfySlot(latch, NULL_GUID, OCR_EVENT_LATCH_INCR_SLOT);
                  ocrEventSatisfySlot(latch, NULL_GUID, OCR_EVENT_LATCH_INCR_SLOT);
                  ocrEventSatisfySlot(latch, NULL_GUID, OCR_EVENT_LATCH_INCR_SLOT);
                  ocrEventSatisfySlot(latch, NULL_GUID, OCR_EVENT_LATCH_DECR_SLOT);
                  ocrEventSatisfySlot(latch, NULL_GUID, OCR_EVENT_LATCH_DECR_SLOT);
                  g_rc = g_runs.load();  // 3 up, 2 down: not yet
                  ocrEventSatisfySlot(latch, NULL_GUID, OCR_EVENT_LATCH_DECR_SLOT);
                  g_rc2 = ocrEventSatisfySlot(latch, NULL_GUID, OCR_EVENT_LATCH_DECR_SLOT);  // gone after firing
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_rc.load(), 0);
    EXPECT_EQ(g_runs.load(), 1);
    EXPECT_EQ(g_rc2.load(), OCR_EINVAL);
}

TEST(RuntimeOcrEvents, a_counted_event_is_destroyed_after_firing_and_receiving_its_declared_dependences) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t evt;
                  ocrEventParams_t params{};
                  params.EVENT_COUNTED.nbDeps = 2;
                  ocrEventCreateParams(&evt, OCR_EVENT_COUNTED_T, EVT_PROP_TAKES_ARG, &params);
                  consumer(2, evt);
                  ocrEventSatisfy(evt, make_value(3));
                  consumer(2, evt);  // the second declared dependence, after the satisfaction
                  ocrGuid_t tpl, edt;
                  ocrEdtTemplateCreate(&tpl, record_and_maybe_shutdown, 1, 1);
                  u64 p[1] = {99};
                  ocrEdtCreate(&edt, tpl, 1, p, 1, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
                  g_rc = ocrAddDependence(evt, edt, 0, DB_MODE_RO);  // a third: the event is gone
                  ocrEdtDestroy(edt);
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_runs.load(), 2);
    EXPECT_EQ(g_value.load(), 3U);
    EXPECT_EQ(g_rc.load(), OCR_EINVAL);
}

TEST(RuntimeOcrEvents, a_channel_event_hands_each_satisfaction_to_one_dependence_in_order) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t channel;
                  ocrEventParams_t params{};
                  params.EVENT_CHANNEL.maxGen = 4;
                  params.EVENT_CHANNEL.nbSat = 1;
                  params.EVENT_CHANNEL.nbDeps = 1;
                  ocrEventCreateParams(&channel, OCR_EVENT_CHANNEL_T, EVT_PROP_TAKES_ARG, &params);
                  ocrEventSatisfy(channel, make_value(1));  // satisfactions before dependences
                  ocrEventSatisfy(channel, make_value(2));
                  consumer(4, channel);
                  consumer(4, channel);
                  consumer(4, channel);  // dependences before satisfactions
                  consumer(4, channel);
                  ocrEventSatisfy(channel, make_value(3));
                  ocrEventSatisfy(channel, make_value(4));
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_runs.load(), 4);
    std::lock_guard lock(g_order_mutex);
    std::vector<u64> sorted = g_order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<u64>{1, 2, 3, 4}));
}

TEST(RuntimeOcrEvents, events_chain_into_events_and_data_blocks_satisfy_events_directly) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t first, second, third;
                  ocrEventCreate(&first, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
                  ocrEventCreate(&second, OCR_EVENT_STICKY_T, EVT_PROP_TAKES_ARG);
                  ocrEventCreate(&third, OCR_EVENT_IDEM_T, EVT_PROP_TAKES_ARG);
                  consumer(1, third);
                  ocrAddDependence(first, second, 0, DB_MODE_RO);          // event -> event
                  ocrAddDependence(second, third, 0, DB_MODE_RO);          // event -> event
                  ocrAddDependence(make_value(11), first, 0, DB_MODE_RO);  // data block -> event
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_value.load(), 11U);
}

TEST(RuntimeOcrEvents, null_guid_and_data_blocks_satisfy_edt_slots_at_once) {
    reset();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  consumer(2, NULL_GUID);
                  consumer(2, make_value(4));
                  return NULL_GUID;
              }),
              0);
    EXPECT_EQ(g_runs.load(), 2);
    std::lock_guard lock(g_order_mutex);
    std::vector<u64> sorted = g_order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<u64>{0, 4}));
}

}  // namespace
