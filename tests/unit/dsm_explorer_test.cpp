// SPDX-License-Identifier: MIT
// Randomized explorer of the coherence protocol: 4 simulated client processes
// and 2 homes exchange the protocol's messages over a simulated network that
// delivers FIFO per (sender, receiver) pair and in random order across pairs.
// Clients race: acquire read/write, release, evict, subscribe, unsubscribe.
// Every acquire is checked against a sequential model (the value of the last
// released write of the chunk), every pushed notification against the value
// released with that version, and the single-writer invariant after every
// step. Each subscriber hands notifications on through NotifyOrder, as the
// client's transport does: once settled, it has handed on every version since
// its subscription. Homes run with and without the direct data path (writers
// send the payload to the subscribers themselves). A failure prints the seed;
// STRATA_DSM_SEED=<n> replays one seed.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "dsm/notify_order.hpp"
#include "dsm/protocol_table.hpp"

namespace strata::dsm::proto {
namespace {

constexpr int kClients = 4;
constexpr int kHomes = 2;
constexpr int kChunks = 5;

struct Packet {
    int chunk;
    Message msg;
    std::uint64_t value;  // the payload when msg.has_data
};

// Node ids on the simulated network: clients 0..3, homes 4..5.
int home_of(int chunk) {
    return kClients + chunk % kHomes;
}

struct Counters {
    long completed_ops = 0;
    long evict_during_inv = 0;
    long write_back_during_recall = 0;
    long queued_requests = 0;
    long notifies_checked = 0;
    long direct_notifies = 0;
    long notifies_reordered = 0;
    long recalls_for_subscription = 0;
};

struct Note {
    std::uint64_t version;
    std::uint64_t value;
    bool has_data;
};

class World {
public:
    World(std::uint64_t seed, bool direct) : rng_(seed) {
        for (auto& h : home_value_) {
            h = 0;
        }
        for (auto& h : homes_) {
            h.direct = direct;
        }
        for (int c = 0; c < kChunks; ++c) {
            history_[c][0] = 0;
        }
    }

    // Runs until `ops` operations completed, then lets everything settle.
    void run(long ops) {
        long steps = 0;
        while (counters.completed_ops < ops) {
            ASSERT_LT(++steps, ops * 50) << "no progress: livelock or deadlock";
            step(true);
            if (::testing::Test::HasFatalFailure()) {
                return;
            }
        }
        // Quiesce: no new acquisitions, release everything, drain the network.
        for (int i = 0; i < 100000 && !quiet(); ++i) {
            step(false);
            if (::testing::Test::HasFatalFailure()) {
                return;
            }
        }
        ASSERT_TRUE(quiet()) << "the network did not drain";
        for (int c = 0; c < kChunks; ++c) {
            const HomeEntry& h = homes_[c];
            ASSERT_TRUE(h.state == DState::U || h.state == DState::S || h.state == DState::EM) << to_string(h.state);
            const std::uint64_t latest = h.state == DState::EM ? cache_[h.owner][c] : home_value_[c];
            EXPECT_EQ(latest, released_[c]) << "chunk " << c << " lost its last released write";
            const std::uint64_t last_version = history_[c].rbegin()->first;
            for (int p = 0; p < kClients; ++p) {
                if (subscribed_[p][c]) {
                    EXPECT_EQ(order_[p][c].waiting(), 0U) << fmt::format("seed {}: client {} chunk {}", seed_, p, c);
                    EXPECT_EQ(order_[p][c].next(), last_version + 1)
                        << fmt::format("seed {}: subscriber {} of chunk {} was not told of every version", seed_, p, c);
                }
            }
        }
    }

    Counters counters;

private:
    bool quiet() const {
        for (const auto& [pair, q] : net_) {
            if (!q.empty()) {
                return false;
            }
        }
        for (int p = 0; p < kClients; ++p) {
            for (int c = 0; c < kChunks; ++c) {
                if (clients_[p][c].held() || clients_[p][c].waiting()) {
                    return false;
                }
            }
        }
        return true;
    }

    void send(int from, int to, int chunk, const Message& m, std::uint64_t value) {
        net_[{from, to}].push_back(Packet{chunk, m, value});
    }

    void step(bool may_start) {
        std::uniform_int_distribution<int> coin(0, 99);
        std::vector<std::pair<int, int>> ready;
        for (const auto& [pair, q] : net_) {
            if (!q.empty()) {
                ready.push_back(pair);
            }
        }
        if (!ready.empty() && coin(rng_) < 60) {
            const auto pair = ready[std::uniform_int_distribution<std::size_t>(0, ready.size() - 1)(rng_)];
            Packet p = net_[pair].front();
            net_[pair].pop_front();
            deliver(pair.first, pair.second, p);
        } else {
            client_op(std::uniform_int_distribution<int>(0, kClients - 1)(rng_), may_start);
        }
        check_single_writer();
    }

    void deliver(int from, int to, const Packet& p) {
        if (to >= kClients) {
            HomeEntry& h = homes_[p.chunk];
            if (p.msg.kind == Msg::evict && h.state == DState::wait_acks) {
                ++counters.evict_during_inv;
            }
            if (p.msg.kind == Msg::write_back && h.state == DState::wait_recall) {
                ++counters.write_back_during_recall;
            }
            if (h.state == DState::wait_acks || h.state == DState::wait_recall) {
                counters.queued_requests += (p.msg.kind == Msg::read_req || p.msg.kind == Msg::write_req) ? 1 : 0;
            }
            const Step st = home_receive(h, p.msg);
            ASSERT_TRUE(st.ok) << fmt::format("seed {}: home of chunk {}: {}", seed_, p.chunk, st.error);
            if ((p.msg.kind == Msg::subscribe || p.msg.kind == Msg::unsubscribe) && h.state == DState::wait_recall) {
                ++counters.recalls_for_subscription;
            }
            if (st.store) {
                home_value_[p.chunk] = p.value;
            }
            for (const auto& o : st.out) {
                send(to, o.client, p.chunk, o, home_value_[p.chunk]);
            }
            return;
        }
        ClientEntry& e = clients_[to][p.chunk];
        const Step st = client_receive(e, p.msg);
        ASSERT_TRUE(st.ok) << fmt::format("seed {}: client {} chunk {}: {}", seed_, to, p.chunk, st.error);
        if (st.install) {
            cache_[to][p.chunk] = p.value;
        }
        if (st.deliver) {
            counters.direct_notifies += from < kClients ? 1 : 0;
            ASSERT_TRUE(told_[to][p.chunk].insert(p.msg.version).second) << fmt::format(
                "seed {}: client {} was told of v{} of chunk {} twice", seed_, to, p.msg.version, p.chunk);
            const std::size_t held = order_[to][p.chunk].waiting();
            hand_on(to, p.chunk,
                    order_[to][p.chunk].offer(p.msg.version, Note{p.msg.version, p.value, p.msg.has_data}));
            counters.notifies_reordered += order_[to][p.chunk].waiting() > held ? 1 : 0;
        }
        if (p.msg.kind == Msg::sub_ack) {
            subscribing_[to][p.chunk] = false;
            hand_on(to, p.chunk, order_[to][p.chunk].subscribed(p.msg.version));
        }
        if (st.completed && p.msg.kind == Msg::grant) {
            acquired(to, p.chunk);
        }
        forward(to, p.chunk, st);
    }

    // Notifications a subscriber hands on: each the value released with its version.
    void hand_on(int client, int chunk, const std::vector<Note>& notes) {
        for (const Note& n : notes) {
            if (n.has_data) {
                ++counters.notifies_checked;
                ASSERT_EQ(n.value, history_[chunk].at(n.version))
                    << fmt::format("seed {}: client {} was told of v{} of chunk {} with another value", seed_, client,
                                   n.version, chunk);
            }
        }
    }

    // A client's messages: notifies (direct path) to their subscriber, the rest to the home.
    void forward(int client, int chunk, const Step& st) {
        for (const auto& o : st.out) {
            send(client, o.kind == Msg::notify ? o.client : home_of(chunk), chunk, o, cache_[client][chunk]);
        }
    }

    // An acquisition completed: the data must be the last released write.
    void acquired(int client, int chunk) {
        ++counters.completed_ops;
        ASSERT_EQ(cache_[client][chunk], released_[chunk])
            << fmt::format("seed {}: client {} acquired chunk {} and read {}, the last released write is {}", seed_,
                           client, chunk, cache_[client][chunk], released_[chunk]);
        ClientEntry& e = clients_[client][chunk];
        if (e.writer) {
            cache_[client][chunk] = ++next_value_;  // the write, released later
        }
    }

    void client_op(int client, bool may_start) {
        std::uniform_int_distribution<int> coin(0, 99);
        auto& mine = clients_[client];
        int max_held = -1;
        for (int c = 0; c < kChunks; ++c) {
            if (mine[c].waiting()) {
                return;  // one outstanding request per process
            }
            if (mine[c].held()) {
                max_held = c;
            }
        }
        if (max_held >= 0 && (coin(rng_) < 50 || !may_start)) {
            ClientEntry& e = mine[max_held];
            const bool was_writer = e.writer;
            const Step st = client_receive(
                e, Message{.kind = was_writer ? Msg::op_release_write : Msg::op_release_read, .client = client});
            ASSERT_TRUE(st.ok) << fmt::format("seed {}: {}", seed_, st.error);
            if (was_writer) {
                released_[max_held] = cache_[client][max_held];
                history_[max_held][e.version] = released_[max_held];
                hand_on(client, max_held, order_[client][max_held].own_release(e.version));
            }
            ++counters.completed_ops;
            forward(client, max_held, st);
            return;
        }
        if (!may_start) {
            return;
        }
        const int roll = coin(rng_);
        const int chunk = std::uniform_int_distribution<int>(0, kChunks - 1)(rng_);
        ClientEntry& e = mine[chunk];
        if (roll < 25) {
            if (!e.held() && !e.waiting()) {
                const Step st = client_receive(e, Message{.kind = Msg::op_evict, .client = client});
                ASSERT_TRUE(st.ok) << fmt::format("seed {}: {}", seed_, st.error);
                ++counters.completed_ops;
                forward(client, chunk, st);
            }
            return;
        }
        if (roll < 27 && !subscribing_[client][chunk]) {
            // Subscribe, or subscribe again (update-on-write may change).
            subscribed_[client][chunk] = true;
            subscribing_[client][chunk] = true;
            order_[client][chunk].subscribing(e.version);
            send(client, home_of(chunk), chunk,
                 Message{.kind = Msg::subscribe, .client = client, .update = coin(rng_) < 50}, 0);
            return;
        }
        if (roll < 28 && subscribed_[client][chunk] && !subscribing_[client][chunk]) {
            subscribed_[client][chunk] = false;
            order_[client][chunk].unsubscribed();
            told_[client][chunk].clear();
            send(client, home_of(chunk), chunk, Message{.kind = Msg::unsubscribe, .client = client}, 0);
            return;
        }
        // Lock order (chunk ids ascending) keeps simulated processes free of deadlock.
        if (chunk <= max_held || e.has_deferred) {
            return;
        }
        const Msg kind = roll < 60 ? Msg::op_acquire_read : Msg::op_acquire_write;
        const Step st = client_receive(e, Message{.kind = kind, .client = client});
        ASSERT_TRUE(st.ok) << fmt::format("seed {}: {}", seed_, st.error);
        if (st.hit) {
            acquired(client, chunk);
        }
        forward(client, chunk, st);
    }

    void check_single_writer() {
        for (int c = 0; c < kChunks; ++c) {
            int exclusive = 0;
            int valid = 0;
            for (int p = 0; p < kClients; ++p) {
                const CState s = clients_[p][c].state;
                exclusive += (s == CState::E || s == CState::M) ? 1 : 0;
                valid += s != CState::I ? 1 : 0;
            }
            ASSERT_TRUE(exclusive == 0 || valid == 1)
                << fmt::format("seed {}: chunk {} has {} exclusive and {} valid copies", seed_, c, exclusive, valid);
        }
    }

public:
    std::uint64_t seed_ = 0;

private:
    std::mt19937_64 rng_;
    std::map<std::pair<int, int>, std::deque<Packet>> net_;
    HomeEntry homes_[kChunks];
    std::uint64_t home_value_[kChunks];
    ClientEntry clients_[kClients][kChunks];
    std::uint64_t cache_[kClients][kChunks] = {};
    bool subscribed_[kClients][kChunks] = {};
    bool subscribing_[kClients][kChunks] = {};
    NotifyOrder<Note> order_[kClients][kChunks];
    std::set<std::uint64_t> told_[kClients][kChunks];  // versions received since the client subscribed
    std::uint64_t released_[kChunks] = {};
    std::map<std::uint64_t, std::uint64_t> history_[kChunks];  // version -> released value
    std::uint64_t next_value_ = 0;
};

std::vector<std::uint64_t> seeds() {
    if (const char* s = std::getenv("STRATA_DSM_SEED"); s != nullptr) {
        return {std::strtoull(s, nullptr, 10)};
    }
    std::vector<std::uint64_t> v;
    std::random_device rd;
    for (int i = 0; i < 16; ++i) {
        v.push_back((static_cast<std::uint64_t>(rd()) << 32) | rd());
    }
    return v;
}

void explore(bool direct) {
    Counters total;
    for (const std::uint64_t seed : seeds()) {
        World w(seed, direct);
        w.seed_ = seed;
        w.run(10000);
        if (::testing::Test::HasFatalFailure() || ::testing::Test::HasFailure()) {
            FAIL() << "replay with STRATA_DSM_SEED=" << seed;
        }
        EXPECT_GE(w.counters.completed_ops, 10000) << "seed " << seed;
        total.evict_during_inv += w.counters.evict_during_inv;
        total.write_back_during_recall += w.counters.write_back_during_recall;
        total.queued_requests += w.counters.queued_requests;
        total.notifies_checked += w.counters.notifies_checked;
        total.direct_notifies += w.counters.direct_notifies;
        total.notifies_reordered += w.counters.notifies_reordered;
        total.recalls_for_subscription += w.counters.recalls_for_subscription;
    }
    // The races the explorer exists for did happen.
    EXPECT_GT(total.evict_during_inv, 0);
    EXPECT_GT(total.write_back_during_recall, 0);
    EXPECT_GT(total.queued_requests, 0);
    EXPECT_GT(total.notifies_checked, 0);
    if (direct) {
        EXPECT_GT(total.direct_notifies, 0);
        EXPECT_GT(total.notifies_reordered, 0);
        EXPECT_GT(total.recalls_for_subscription, 0);
    } else {
        EXPECT_EQ(total.direct_notifies, 0);
    }
    std::printf(
        "explorer (direct %d): %ld evictions during an invalidation, %ld write-backs crossing a recall, %ld queued "
        "requests, %ld pushed notifications checked, %ld from the writer, %ld held for an earlier version, %ld "
        "recalls for a subscription\n",
        direct ? 1 : 0, total.evict_during_inv, total.write_back_during_recall, total.queued_requests,
        total.notifies_checked, total.direct_notifies, total.notifies_reordered, total.recalls_for_subscription);
}

TEST(DsmExplorer, racing_clients_always_read_the_last_released_write_over_a_reordering_network) {
    explore(false);
}

TEST(DsmExplorer, with_the_direct_data_path_every_subscriber_is_told_of_every_version_in_order) {
    explore(true);
}

}  // namespace
}  // namespace strata::dsm::proto
