// SPDX-License-Identifier: MIT
// Hint parsing of libstrata-mpi, without MPI: the rules every window and
// allocation goes through (src/mpi/hints.cpp).
#include <cstdlib>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "mpi/hints.hpp"

namespace strata::mpi {
namespace {

HintMap storage(HintMap extra = {}) {
    HintMap hints{{"alloc_type", "storage"}, {"storage_alloc_filename", "/data/w-%r.dat"}};
    for (auto& [key, value] : extra) {
        hints.insert_or_assign(key, value);
    }
    return hints;
}

HintError rejected(const HintMap& hints) {
    auto sut = parse_hints(hints);
    EXPECT_FALSE(sut.has_value());
    return sut ? HintError{} : sut.error();
}

TEST(MpiHints, no_alloc_type_means_memory_and_ignores_storage_keys) {
    auto sut = parse_hints({{"storage_alloc_factor", "7"}, {"some_other_key", "x"}});
    ASSERT_TRUE(sut);
    EXPECT_FALSE(sut->storage);
}

TEST(MpiHints, storage_defaults_put_the_whole_window_on_storage) {
    auto sut = parse_hints(storage());
    ASSERT_TRUE(sut);
    EXPECT_TRUE(sut->storage);
    EXPECT_EQ(sut->filename_template, "/data/w-%r.dat");
    EXPECT_EQ(sut->storage_fraction, 1.0);
    EXPECT_EQ(sut->memory_factor().fraction(), 0.0);
    EXPECT_EQ(sut->file_perm, 0600U);
    EXPECT_EQ(sut->sync, SyncMode::on_sync);
    EXPECT_FALSE(sut->unlink || sut->discard);
}

TEST(MpiHints, factor_is_the_storage_share_and_auto_is_kept) {
    auto quarter = parse_hints(storage({{"storage_alloc_factor", "0.25"}}));
    ASSERT_TRUE(quarter);
    EXPECT_DOUBLE_EQ(quarter->memory_factor().fraction(), 0.75);
    auto automatic = parse_hints(storage({{"storage_alloc_factor", " auto "}}));
    ASSERT_TRUE(automatic);
    EXPECT_TRUE(automatic->memory_factor().is_auto());
}

TEST(MpiHints, every_value_is_parsed) {
    auto sut = parse_hints(storage({{"storage_alloc_offset", "8192"},
                                    {"storage_alloc_order", "storage_first"},
                                    {"storage_alloc_unlink", "TRUE"},
                                    {"storage_alloc_sync", "on_free"},
                                    {"access_style", "write_once,read_mostly"},
                                    {"file_perm", "644"},
                                    {"striping_factor", "4"},
                                    {"alloc_shared_noncontig", "true"},
                                    {"storage_alloc_remote_sync", "true"}}));
    ASSERT_TRUE(sut) << sut.error().cause;
    EXPECT_EQ(sut->offset, 8192U);
    EXPECT_EQ(sut->order, Order::storage_first);
    EXPECT_TRUE(sut->unlink);
    EXPECT_EQ(sut->sync, SyncMode::on_free);
    EXPECT_EQ(sut->advice, Advice::sequential);  // write_once, the first entry
    EXPECT_EQ(sut->access_styles, access::write_once | access::read_mostly);
    EXPECT_EQ(sut->file_perm, 0644U);
    EXPECT_EQ(sut->striping_factor, 4U);
    EXPECT_TRUE(sut->shared_noncontig);
    EXPECT_TRUE(sut->remote_sync);
    EXPECT_EQ(sut->given.size(), 11U);
}

TEST(MpiHints, bad_values_name_the_key_and_the_value) {
    struct Case {
        const char* key;
        const char* value;
    };
    for (const auto& c :
         {Case{"storage_alloc_factor", "1.5"}, Case{"storage_alloc_factor", "-0.1"}, Case{"storage_alloc_factor", "x"},
          Case{"storage_alloc_offset", "100"}, Case{"storage_alloc_offset", "-1"},
          Case{"storage_alloc_order", "middle"}, Case{"storage_alloc_discard", "1"},
          Case{"storage_alloc_sync", "never"}, Case{"access_style", "sideways"}, Case{"file_perm", "0999"},
          Case{"file_perm", "17777"}, Case{"striping_unit", "0"}, Case{"alloc_type", "disk"},
          Case{"storage_alloc_remote_sync", "yes"}}) {
        const HintError error = rejected(storage({{c.key, c.value}}));
        EXPECT_EQ(error.key, c.key);
        EXPECT_EQ(error.value, c.value);
        EXPECT_FALSE(error.cause.empty());
        EXPECT_EQ(error.cause.find(std::string(c.key) + "="), std::string::npos) << "cause repeats the key";
    }
}

TEST(MpiHints, storage_without_a_filename_is_rejected) {
    EXPECT_EQ(rejected({{"alloc_type", "storage"}}).key, "storage_alloc_filename");
    EXPECT_EQ(rejected(storage({{"storage_alloc_filename", "  "}})).key, "storage_alloc_filename");
}

TEST(MpiHints, discard_cannot_be_flushed_in_the_background) {
    EXPECT_EQ(rejected(storage({{"storage_alloc_discard", "true"}, {"storage_alloc_sync", "async"}})).key,
              "storage_alloc_sync");
}

// Sets an environment variable for one test and restores it.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        ::setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (old_) {
            ::setenv(name_, old_->c_str(), 1);
        } else {
            ::unsetenv(name_);
        }
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

TEST(MpiHints, a_bad_flush_interval_is_an_error_for_async_windows_only) {
    for (const char* bad : {"soon", "0", "-5", "10ms", "", "86400001"}) {
        const ScopedEnv env("STRATA_MPI_FLUSH_INTERVAL_MS", bad);
        const HintError e = rejected(storage({{"storage_alloc_sync", "async"}}));
        EXPECT_EQ(e.key, "STRATA_MPI_FLUSH_INTERVAL_MS") << bad;
        EXPECT_EQ(e.value, bad);
        EXPECT_NE(e.cause.find("milliseconds"), std::string::npos) << e.cause;
        EXPECT_TRUE(parse_hints(storage({{"storage_alloc_sync", "on_sync"}}))) << "only async windows use it";
    }
    const ScopedEnv env("STRATA_MPI_FLUSH_INTERVAL_MS", " 250 ");
    ASSERT_TRUE(parse_hints(storage({{"storage_alloc_sync", "async"}})));
    EXPECT_EQ(flush_interval_from_env().value(), std::chrono::milliseconds(250));
}

TEST(MpiHints, filenames_expand_rank_window_kind_job_and_percent) {
    auto sut = expand_filename("/d/%j/w-%r-%w-%k-100%%.dat", 3, 7, "job9", "mem");
    ASSERT_TRUE(sut);
    EXPECT_EQ(*sut, "/d/job9/w-3-7-mem-100%.dat");
    EXPECT_FALSE(expand_filename("/d/w-%x", 0, 0, "j"));
    EXPECT_FALSE(expand_filename("/d/w-%", 0, 0, "j"));
}

TEST(MpiHints, hint_lists_are_comma_separated_key_value_pairs) {
    auto sut = parse_hint_list(" alloc_type=storage , storage_alloc_filename=/d/x=1,,", "ENV");
    ASSERT_TRUE(sut);
    EXPECT_EQ(sut->at("alloc_type"), "storage");
    EXPECT_EQ(sut->at("storage_alloc_filename"), "/d/x=1");
    auto bad = parse_hint_list("alloc_type", "ENV");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().key, "ENV");
    EXPECT_EQ(bad.error().value, "alloc_type");
}

TEST(MpiHints, strict_hint_lists_name_an_unknown_key_and_the_known_ones) {
    auto typo = parse_hint_list("alloc_typ=storage,storage_alloc_filename=/d/x", "STRATA_MPI_WINDOW_HINTS", true);
    ASSERT_FALSE(typo);
    EXPECT_EQ(typo.error().key, "STRATA_MPI_WINDOW_HINTS");
    EXPECT_EQ(typo.error().value, "alloc_typ=storage");
    EXPECT_NE(typo.error().cause.find("unknown key 'alloc_typ'"), std::string::npos) << typo.error().cause;
    EXPECT_NE(typo.error().cause.find("alloc_type, storage_alloc_filename,"), std::string::npos) << typo.error().cause;
    // An MPI_Info-like list (not strict) ignores it, as MPI requires.
    EXPECT_TRUE(parse_hint_list("alloc_typ=storage", "ENV"));
}

TEST(MpiHints, access_styles_choose_advice_and_prefetch) {
    // No hint: page-granular faults, data already in the file fetched first.
    EXPECT_EQ(access_plan(0, std::nullopt).advice, std::nullopt);
    EXPECT_TRUE(access_plan(0, std::nullopt).prefetch);
    // read_once, write_once, sequential: large-folio read-ahead on faults.
    for (auto [style, first] :
         {std::pair{access::read_once, Advice::sequential}, std::pair{access::write_once, Advice::sequential},
          std::pair{access::sequential, Advice::sequential}}) {
        EXPECT_EQ(access_plan(style, first).advice, Advice::sequential);
    }
    // None of them prefetches: faults on large folios read ahead of the program (measured faster).
    EXPECT_FALSE(access_plan(access::read_once, Advice::sequential).prefetch);
    EXPECT_FALSE(access_plan(access::write_once, Advice::sequential).prefetch);
    EXPECT_FALSE(access_plan(access::sequential, Advice::sequential).prefetch);
    // write_once: populated, or direct write-back where it fits in memory.
    EXPECT_TRUE(access_plan(access::write_once, Advice::sequential).populate);
    EXPECT_TRUE(access_plan(access::write_once, Advice::sequential).direct);
    EXPECT_FALSE(access_plan(access::read_once, Advice::sequential).populate);
    // read_once: read into anonymous memory with parallel O_DIRECT reads, so direct write-back.
    EXPECT_TRUE(access_plan(access::read_once, Advice::sequential).direct);
    EXPECT_TRUE(access_plan(access::read_once, Advice::sequential).fill);
    EXPECT_FALSE(access_plan(access::write_once, Advice::sequential).fill);
    EXPECT_FALSE(access_plan(0, std::nullopt).fill);
    EXPECT_FALSE(access_plan(0, std::nullopt).direct);
    // write_once writes behind the program; write_mostly is direct without it (rewrites would fault).
    EXPECT_TRUE(access_plan(access::write_once, Advice::sequential).write_behind);
    EXPECT_TRUE(access_plan(access::write_mostly, Advice::random).direct);
    EXPECT_FALSE(access_plan(access::write_mostly, Advice::random).write_behind);
    EXPECT_FALSE(access_plan(access::write_mostly, Advice::random).populate);
    EXPECT_FALSE(access_plan(access::random, Advice::random).direct);
    EXPECT_FALSE(access_plan(access::sequential, Advice::sequential).direct);
    // read_mostly: page-granular, everything fetched.
    EXPECT_EQ(access_plan(access::read_mostly, Advice::read_mostly).advice, std::nullopt);
    EXPECT_TRUE(access_plan(access::read_mostly, Advice::read_mostly).prefetch);
    // Any write or random entry: nothing fetched.
    EXPECT_FALSE(access_plan(access::read_mostly | access::write_mostly, Advice::read_mostly).prefetch);
    EXPECT_FALSE(access_plan(access::random, Advice::random).prefetch);
}

TEST(MpiHints, storage_keys_select_the_info_over_the_environment) {
    EXPECT_TRUE(is_storage_key("alloc_type"));
    EXPECT_TRUE(is_storage_key("storage_alloc_whatever"));
    EXPECT_FALSE(is_storage_key("access_style"));
    EXPECT_TRUE(is_known_key("access_style"));
    EXPECT_FALSE(is_known_key("no_locks"));
}

}  // namespace
}  // namespace strata::mpi
