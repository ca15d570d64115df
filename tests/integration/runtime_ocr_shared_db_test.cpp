// SPDX-License-Identifier: MIT
// Data blocks placed in shared memory are strata segment objects
// (ocr-db-shm.h): another process loads one by its handle with no copy, sees
// the program's writes and the program sees its writes; a read-only holder
// gets a handle that maps the block PROT_READ; blocks elsewhere have none.
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "ocr/extensions/ocr-db-shm.h"
#include "ocr/ocr.h"
#include "strata/shm.hpp"
#include "support/process.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"
#include "unit/runtime_ocr_support.hpp"

namespace {

using strata::test::run_ocr_program;

constexpr u64 block_bytes = 4U << 20U;
constexpr u64 child_offset = 1U << 20U;
constexpr char child_words[] = "written by the child";

std::atomic<int> g_rc{-1};
std::string g_text;
u8 g_writable = 255;
u64 g_size = 0;
strata::test::ChildStatus g_child;
std::string g_seen_by_program;
std::string g_segment_file;

void reset() {
    g_rc = -1;
    g_text.clear();
    g_writable = 255;
    g_size = 0;
    g_child = {};
    g_seen_by_program.clear();
    g_segment_file.clear();
}

unsigned char pattern(u64 i) {
    return static_cast<unsigned char>((i * 131U + 7U) >> 3U);
}

// The child: loads the block by its handle text, checks every byte the
// program wrote, then writes its words (or, for a read-only handle, tries to).
int load_in_child(const std::string& text, bool try_write) {
    auto named = strata::parse_named_handle(text);
    STRATA_CHILD_CHECK_OK(named);
    auto seg = strata::open_segment(*named);
    STRATA_CHILD_CHECK_OK(seg);
    auto block = seg->load<strata::vector<std::uint8_t>>(named->handle);
    STRATA_CHILD_CHECK_OK(block);
    STRATA_CHILD_CHECK((*block)->size() == block_bytes);
    for (u64 i = 0; i < block_bytes; ++i) {
        STRATA_CHILD_CHECK((**block)[i] == pattern(i));
    }
    if (try_write) {
        std::memcpy((*block)->data() + child_offset, child_words, sizeof child_words);
    }
    return 0;
}

// paramv[0]: 1 to create the block with OCR_HINT_DB_INTER, 0 for NULL_HINT (the run's placement).
ocrGuid_t writer_and_child(u32, u64* paramv, u32, ocrEdtDep_t*) {
    ocrHint_t hint;
    ocrHintInit(&hint, OCR_HINT_DB_T);
    ocrSetHintValue(&hint, OCR_HINT_DB_INTER, 1);
    ocrGuid_t db;
    unsigned char* data = nullptr;
    g_rc = ocrDbCreate(&db, reinterpret_cast<void**>(&data), block_bytes, DB_PROP_NONE,
                       paramv[0] != 0 ? &hint : NULL_HINT, NO_ALLOC);
    if (g_rc == 0) {
        for (u64 i = 0; i < block_bytes; ++i) data[i] = pattern(i);
        ocrDbShmHandle_t h;
        g_rc = ocrDbGetShmHandle(db, &h);
        if (g_rc == 0) {
            g_text = h.text;
            g_writable = h.writable;
            g_size = h.size;
            g_child = strata::test::run_in_child([] { return load_in_child(g_text, true); });
            g_seen_by_program.assign(reinterpret_cast<const char*>(data + child_offset), sizeof child_words - 1);
            g_segment_file = strata::ocr::db_info(db)->path.string();
        }
        ocrDbDestroy(db);
    }
    ocrShutdown();
    return NULL_GUID;
}

int run_writer(bool hint, strata::ocr::DbPlacement placement) {
    static u64 with_hint;
    with_hint = hint ? 1 : 0;
    return run_ocr_program(
        [](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
            ocrGuid_t tpl, edt;
            ocrEdtTemplateCreate(&tpl, writer_and_child, 1, 0);
            ocrEdtCreate(&edt, tpl, 1, &with_hint, 0, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
            return NULL_GUID;
        },
        {}, placement);
}

TEST(RuntimeOcrSharedDb, another_process_loads_a_shared_block_by_its_handle_and_writes_show_both_ways) {
    reset();
    EXPECT_EQ(run_writer(true, strata::ocr::DbPlacement::memory), 0);
    ASSERT_EQ(g_rc.load(), 0) << "ocrDbCreate / ocrDbGetShmHandle";
    EXPECT_TRUE(g_text.starts_with("shm:strata-ocr-")) << g_text;
    EXPECT_TRUE(g_text.ends_with(":rw")) << g_text;
    EXPECT_EQ(g_writable, 1);
    EXPECT_EQ(g_size, block_bytes);
    EXPECT_TRUE(g_child.exited && g_child.exit_code == 0) << "the child saw other bytes, or could not load the block";
    EXPECT_EQ(g_seen_by_program, std::string(child_words)) << "the child's write did not reach the program's block";
    EXPECT_FALSE(g_segment_file.empty());
    EXPECT_FALSE(std::filesystem::exists(g_segment_file)) << g_segment_file << " outlived its block and its users";
}

TEST(RuntimeOcrSharedDb, strata_ocr_db_placement_shared_places_blocks_without_a_hint_in_segments) {
    reset();
    ::setenv("STRATA_OCR_DB_PLACEMENT", "shared", 1);
    auto options = strata::ocr::OcrOptions::from_env();
    ::unsetenv("STRATA_OCR_DB_PLACEMENT");
    ASSERT_TRUE(options.has_value()) << options.error().what();
    ASSERT_EQ(options->db_placement, strata::ocr::DbPlacement::shared);
    EXPECT_EQ(run_writer(false, options->db_placement), 0);
    ASSERT_EQ(g_rc.load(), 0);
    EXPECT_TRUE(g_child.exited && g_child.exit_code == 0);
    EXPECT_EQ(g_seen_by_program, std::string(child_words));
}

TEST(RuntimeOcrSharedDb, an_unknown_placement_is_refused_naming_the_variable_the_value_and_the_choices) {
    ::setenv("STRATA_OCR_DB_PLACEMENT", "sharde", 1);
    auto options = strata::ocr::OcrOptions::from_env();
    ::unsetenv("STRATA_OCR_DB_PLACEMENT");
    EXPECT_TRUE(strata::test::fails_with(options, strata::Errc::invalid_argument,
                                         {"STRATA_OCR_DB_PLACEMENT=sharde", "memory, shared, storage"}));
}

// A reader EDT holding the block RO: its handle is "ro", the child's mapping
// is PROT_READ, and the child's store is stopped by the kernel (SIGSEGV).
ocrGuid_t read_only_reader(u32, u64*, u32, ocrEdtDep_t depv[]) {
    ocrDbShmHandle_t h;
    g_rc = ocrDbGetShmHandle(depv[0].guid, &h);
    if (g_rc == 0) {
        g_text = h.text;
        g_writable = h.writable;
        g_child = strata::test::run_in_child([] { return load_in_child(g_text, true); });
    }
    ocrDbDestroy(depv[0].guid);
    ocrShutdown();
    return NULL_GUID;
}

TEST(RuntimeOcrSharedDb, a_read_only_holder_gets_a_read_only_handle_whose_loader_cannot_write) {
    reset();
    EXPECT_EQ(run_ocr_program(
                  [](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                      ocrGuid_t db, tpl, edt;
                      unsigned char* data = nullptr;
                      ocrDbCreate(&db, reinterpret_cast<void**>(&data), block_bytes, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
                      for (u64 i = 0; i < block_bytes; ++i) data[i] = pattern(i);
                      ocrDbRelease(db);
                      ocrEdtTemplateCreate(&tpl, read_only_reader, 0, 1);
                      ocrEdtCreate(&edt, tpl, 0, nullptr, 1, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
                      ocrAddDependence(db, edt, 0, DB_MODE_RO);
                      return NULL_GUID;
                  },
                  {}, strata::ocr::DbPlacement::shared),
              0);
    ASSERT_EQ(g_rc.load(), 0);
    EXPECT_TRUE(g_text.ends_with(":ro")) << g_text;
    EXPECT_EQ(g_writable, 0);
    EXPECT_TRUE(g_child.signaled && g_child.signal == SIGSEGV)
        << "the child's store into a read-only handle's block was not refused (exited=" << g_child.exited
        << " code=" << g_child.exit_code << ")";
}

ocrGuid_t empty_shared_block(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t db;
    void* data = nullptr;
    g_rc = ocrDbCreate(&db, &data, 0, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    ocrDbShmHandle_t h;
    if (g_rc == 0 && data != nullptr) g_rc = ocrDbGetShmHandle(db, &h);
    if (g_rc == 0 && data != nullptr) {
        g_size = h.size;
        g_text = h.text;
        g_child = strata::test::run_in_child([] {
            auto named = strata::parse_named_handle(g_text);
            STRATA_CHILD_CHECK_OK(named);
            auto seg = strata::open_segment(*named);
            STRATA_CHILD_CHECK_OK(seg);
            auto block = seg->load<strata::vector<std::uint8_t>>(named->handle);
            STRATA_CHILD_CHECK_OK(block);
            STRATA_CHILD_CHECK((*block)->empty());
            return 0;
        });
    } else if (data == nullptr) {
        g_rc = -2;
    }
    ocrDbDestroy(db);
    ocrShutdown();
    return NULL_GUID;
}

TEST(RuntimeOcrSharedDb, a_shared_block_of_zero_bytes_has_an_address_and_an_empty_object) {
    reset();
    EXPECT_EQ(run_ocr_program(
                  [](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                      ocrGuid_t tpl, edt;
                      ocrEdtTemplateCreate(&tpl, empty_shared_block, 0, 0);
                      ocrEdtCreate(&edt, tpl, 0, nullptr, 0, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
                      return NULL_GUID;
                  },
                  {}, strata::ocr::DbPlacement::shared),
              0);
    ASSERT_EQ(g_rc.load(), 0) << "-2: ocrDbCreate gave a null address";
    EXPECT_EQ(g_size, 0U);
    EXPECT_TRUE(g_child.exited && g_child.exit_code == 0);
}

// The child's program: two shared blocks, their handles written to fd
// g_pipe_fd, then it waits to be killed.
int g_pipe_fd = -1;

ocrGuid_t two_blocks_then_wait(u32, u64*, u32, ocrEdtDep_t*) {
    std::string lines;
    for (int b = 0; b < 2; ++b) {
        ocrGuid_t db;
        unsigned char* data = nullptr;
        ocrDbShmHandle_t h;
        if (ocrDbCreate(&db, reinterpret_cast<void**>(&data), block_bytes, DB_PROP_NONE, NULL_HINT, NO_ALLOC) != 0 ||
            ocrDbGetShmHandle(db, &h) != 0) {
            std::_Exit(3);
        }
        for (u64 i = 0; i < block_bytes; ++i) data[i] = pattern(i);
        lines += std::string(h.text) + "\n";
    }
    if (::write(g_pipe_fd, lines.data(), lines.size()) != static_cast<ssize_t>(lines.size())) std::_Exit(4);
    for (;;) ::pause();
}

TEST(RuntimeOcrSharedDb, a_killed_program_leaves_a_loaded_block_readable_and_gc_takes_the_block_no_one_loaded) {
    strata::test::TempDir dir;
    ::setenv("STRATA_SHM_DIR", dir.path().c_str(), 1);
    struct RestoreShmDir {
        ~RestoreShmDir() { ::unsetenv("STRATA_SHM_DIR"); }
    } restore_shm_dir;
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    g_pipe_fd = fds[1];
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        run_ocr_program(
            [](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                ocrGuid_t tpl, edt;
                ocrEdtTemplateCreate(&tpl, two_blocks_then_wait, 0, 0);
                ocrEdtCreate(&edt, tpl, 0, nullptr, 0, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
                return NULL_GUID;
            },
            {}, strata::ocr::DbPlacement::shared);
        std::_Exit(2);
    }
    ::close(fds[1]);
    std::string text;
    char buffer[1024];
    for (ssize_t n;
         std::count(text.begin(), text.end(), '\n') < 2 && (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) {
        text.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    const auto newline = text.find('\n');
    ASSERT_NE(newline, std::string::npos) << "the program printed no handle";
    const std::string loaded_text = text.substr(0, newline);
    const std::string other_text = text.substr(newline + 1, text.find('\n', newline + 1) - newline - 1);
    {
        STRATA_ASSERT_ASSIGN(named, strata::parse_named_handle(loaded_text));
        STRATA_ASSERT_ASSIGN(seg, strata::open_segment(named));
        STRATA_ASSERT_ASSIGN(block, seg.load<strata::vector<std::uint8_t>>(named.handle));
        ::kill(child, SIGKILL);
        const auto status = strata::test::wait_for_child(child);
        EXPECT_TRUE(status.signaled) << "the program ended by itself (exit " << status.exit_code << ")";
        u64 wrong = 0;
        for (u64 i = 0; i < block_bytes; ++i) wrong += (*block)[i] != pattern(i) ? 1U : 0U;
        EXPECT_EQ(wrong, 0U) << "bytes of the loaded block changed when its program died";
        STRATA_ASSERT_ASSIGN(other, strata::parse_named_handle(other_text));
        // gc takes the dead program's segments no one uses (the other block, its
        // argument block) and leaves the loaded one, with its one live user.
        STRATA_ASSERT_ASSIGN(collected, strata::collect_segments(dir.path()));
        EXPECT_NE(std::find(collected.begin(), collected.end(), other.segment), collected.end());
        STRATA_ASSERT_ASSIGN(kept, strata::list_segments(dir.path()));
        ASSERT_EQ(kept.size(), 1U);
        EXPECT_EQ(kept[0].name, named.segment);
        EXPECT_EQ(kept[0].users_alive, 1U);
        EXPECT_TRUE(strata::test::fails_with(strata::open_segment(other), strata::Errc::not_found, {other.segment}));
    }
    STRATA_ASSERT_ASSIGN(left, strata::list_segments(dir.path()));
    EXPECT_TRUE(left.empty()) << "the last user's close did not remove " << (left.empty() ? "" : left[0].name);
}

ocrGuid_t memory_block_handle(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t db;
    void* data = nullptr;
    ocrDbCreate(&db, &data, 4096, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    ocrDbShmHandle_t h;
    g_rc = ocrDbGetShmHandle(db, &h);
    ocrDbDestroy(db);
    ocrShutdown();
    return NULL_GUID;
}

TEST(RuntimeOcrSharedDb, a_block_in_memory_has_no_shm_handle_and_the_warning_names_its_placement) {
    reset();
    testing::internal::CaptureStderr();
    EXPECT_EQ(run_ocr_program([](u32, u64*, u32, ocrEdtDep_t*) -> ocrGuid_t {
                  ocrGuid_t tpl, edt;
                  ocrEdtTemplateCreate(&tpl, memory_block_handle, 0, 0);
                  ocrEdtCreate(&edt, tpl, 0, nullptr, 0, nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
                  return NULL_GUID;
              }),
              0);
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_EQ(g_rc.load(), OCR_EPERM);
    EXPECT_NE(log.find("ocrDbGetShmHandle(db="), std::string::npos) << log;
    EXPECT_NE(log.find("placed in memory (heap), not in shared memory"), std::string::npos) << log;
    EXPECT_NE(log.find("OCR_HINT_DB_INTER or STRATA_OCR_DB_PLACEMENT=shared"), std::string::npos) << log;
}

}  // namespace
