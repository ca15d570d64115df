// SPDX-License-Identifier: MIT
// A few hundred SIGKILLs at random moments against ports in use, producers
// and consumers, blocking and busy-poll, 1 and 4 slots (shm_kill_rounds.hpp):
// no port ends broken, every survivor is told which peer died, and nothing
// committed is lost or delivered twice. The long run of the same rounds is
// bench/shm-kills (docs/benchmarks/shm-kills/).
//
// STRATA_SHM_KILL_ROUNDS overrides the number of rounds (default 256).
#include <cstdlib>

#include <gtest/gtest.h>

#include "integration/shm_kill_rounds.hpp"
#include "unit/shm_test_support.hpp"

namespace strata {
namespace {

int rounds_to_run() {
    const char* text = std::getenv("STRATA_SHM_KILL_ROUNDS");
    const int n = text != nullptr ? std::atoi(text) : 0;
    return n > 0 ? n : 256;
}

TEST(ShmPortHealRandom, users_killed_at_random_moments_leave_no_port_broken_and_every_committed_message_once) {
    test::ShmFixture f;
    {
        STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only));
        test::kills::Options options;
        options.dir = f.dir.path();
        options.segment = f.name;
        options.rounds = rounds_to_run();
        options.seed = 28;
        int failures = 0;
        options.on_round = [&](const test::kills::Round& r) {
            if (!r.failure.empty()) {
                ADD_FAILURE() << "round " << r.index << " (" << r.config.name() << (r.widen ? ", widened" : "") << ", "
                              << r.victim << " killed after " << r.delay_us << " us): " << r.failure;
                ++failures;
            }
            return failures < 5;  // the first few failures say enough
        };
        const std::vector<test::kills::Round> rounds = test::kills::run_rounds(options);
        int in_lock = 0;
        int producers_killed = 0;
        std::uint64_t committed = 0;
        for (const auto& r : rounds) {
            in_lock += r.in_lock ? 1 : 0;
            producers_killed += r.victim.starts_with("producer") ? 1 : 0;
            committed += r.committed;
            EXPECT_FALSE(r.broken) << "round " << r.index;
            EXPECT_EQ(r.named, r.survivors) << "round " << r.index;
        }
        EXPECT_EQ(rounds.size(), static_cast<std::size_t>(options.rounds));
        EXPECT_EQ(test::kills::check_ports_usable(options), "") << "a port cannot be opened after the rounds";
        // The run exercised what it is for: kills of both roles, some while the lock was held, real traffic.
        EXPECT_GT(in_lock, 0) << "no kill landed while the victim held a port's lock";
        EXPECT_GT(producers_killed, 0);
        EXPECT_LT(producers_killed, static_cast<int>(rounds.size()));
        EXPECT_GT(committed, rounds.size()) << "hardly any message was committed";
        std::printf("%zu rounds, %d kills while holding the port's lock, %llu messages committed\n", rounds.size(),
                    in_lock, static_cast<unsigned long long>(committed));
    }
    EXPECT_TRUE(f.dir.entries().empty()) << "a segment file was left behind";
}

}  // namespace
}  // namespace strata
