// SPDX-License-Identifier: MIT
// The port repair (src/shm/port_repair.hpp) on states built by hand: each
// prefix of each critical section a killed lock holder can leave
// (src/shm/port_layout.hpp lists them), and values no prefix leaves.
#include <cstdlib>
#include <memory>
#include <new>

#include <gtest/gtest.h>

#include "shm/port_repair.hpp"

namespace strata::shm_detail {
namespace {

constexpr std::uint64_t kProducer = 0x10001;  // a token: generation 1, slot 1

/// A port's shared state in plain memory: `slots` slots, `consumers` consumers, all active.
class Ring {
public:
    Ring(unsigned slots, unsigned consumers)
        : memory_(static_cast<std::byte*>(std::aligned_alloc(64, port_bytes(slots, 0))), &std::free) {
        port_ = ::new (memory_.get()) PortShared();
        port_->slots = slots;
        port_->consumers = consumers;
        for (unsigned k = 0; k < slots; ++k) {
            ::new (port_->slot_array() + k) PortSlot();
        }
        for (unsigned i = 0; i < consumers; ++i) {
            port_->consumer_peers[i].state = peer_active;
        }
        port_->producers[0] = PortPeer{.token = kProducer, .state = peer_active};
        port_->producers_active = 1;
        port_->producers_joined = 1;
    }
    PortShared& operator*() const { return *port_; }
    PortShared* operator->() const { return port_; }

    /// Message s, committed to every consumer, as commit leaves it.
    PortSlot& commit(std::uint64_t s) {
        PortSlot& slot = loan(s);
        slot.holders = holders_for(*port_, s);
        slot.state = slot_committed;
        slot.ready.store(s + 1);
        return slot;
    }
    /// Message s, loaned, as loan leaves it.
    PortSlot& loan(std::uint64_t s) {
        PortSlot& slot = port_->slot(s);
        slot.sequence = s;
        slot.loaner = kProducer;
        slot.state = slot_loaned;
        port_->write_seq = s + 1;
        return slot;
    }

private:
    std::unique_ptr<std::byte, decltype(&std::free)> memory_;
    PortShared* port_ = nullptr;
};

TEST(ShmPortRepair, a_port_between_critical_sections_needs_no_repair) {
    Ring sut(4, 2);
    sut.commit(0);
    sut.commit(1);
    sut.loan(2);
    const PortRepair r = repair_port(*sut);
    EXPECT_TRUE(r.fault.empty()) << r.fault;
    EXPECT_TRUE(r.done.empty()) << list_text(r.done);
    EXPECT_EQ(sut->slot(2).state, slot_loaned) << "a loan is the recovery's (P4), not the repair's";
}

TEST(ShmPortRepair, a_loan_cut_before_the_write_sequence_moved_is_undone) {
    Ring sut(4, 1);
    sut.commit(0);
    PortSlot& slot = sut.loan(1);
    sut->write_seq = 1;  // the step the holder did not reach
    const PortRepair r = repair_port(*sut);
    EXPECT_TRUE(r.fault.empty()) << r.fault;
    EXPECT_EQ(slot.state, slot_free);
    EXPECT_EQ(sut->write_seq, 1U) << "the next loan takes message 1 again: no sequence is skipped";
    EXPECT_EQ(list_text(r.done), "loan of message 1 undone");
    EXPECT_TRUE(r.freed);
}

TEST(ShmPortRepair, a_commit_cut_before_the_fast_path_word_is_completed) {
    Ring sut(2, 1);
    PortSlot& slot = sut.commit(3);
    slot.ready.store(2);  // what message 1's commit of this slot left
    const PortRepair r = repair_port(*sut);
    EXPECT_TRUE(r.fault.empty()) << r.fault;
    EXPECT_EQ(slot.state, slot_committed);
    EXPECT_EQ(slot.ready.load(), 4U);
    EXPECT_EQ(list_text(r.done), "commit of message 3 completed");
    EXPECT_TRUE(r.published);
}

TEST(ShmPortRepair, a_slot_whose_last_holder_let_go_before_freeing_it_is_freed) {
    Ring sut(1, 2);
    PortSlot& slot = sut.commit(0);
    slot.holders = 0;  // both bits cleared, state not yet free
    const PortRepair r = repair_port(*sut);
    EXPECT_EQ(slot.state, slot_free);
    EXPECT_EQ(list_text(r.done), "message 0 freed");
    EXPECT_TRUE(r.freed);
}

TEST(ShmPortRepair, the_claims_of_a_consumer_that_left_are_dropped) {
    Ring sut(4, 2);
    PortSlot& first = sut.commit(0);
    PortSlot& second = sut.commit(1);
    first.holders = 0b10;  // consumer 0 released it; consumer 1 closed before dropping its bits
    sut->consumer_peers[1].state = peer_closed;
    const PortRepair r = repair_port(*sut);
    EXPECT_EQ(first.state, slot_free);
    EXPECT_EQ(second.state, slot_committed);
    EXPECT_EQ(second.holders, 0b01U);
    EXPECT_EQ(list_text(r.done),
              "consumer 1's claim on message 0 dropped, message 0 freed, consumer 1's claim on message 1 dropped");
}

TEST(ShmPortRepair, the_producer_count_is_taken_from_the_table) {
    Ring sut(4, 1);
    sut->producers[1] = PortPeer{.token = kProducer + 1, .state = peer_active};  // joined, not yet counted
    sut->producers[0].state = peer_closed;                                       // closed, not yet uncounted
    sut->producers_active = 1;
    const PortRepair r = repair_port(*sut);
    EXPECT_TRUE(r.done.empty()) << list_text(r.done);
    EXPECT_EQ(sut->producers_active, 1U);
    EXPECT_EQ(sut->producers_joined, 2U);
    sut->producers[1].state = peer_closed;
    const PortRepair again = repair_port(*sut);
    EXPECT_EQ(sut->producers_active, 0U);
    EXPECT_EQ(list_text(again.done), "active producers 1 -> 0");
    EXPECT_TRUE(again.published) << "consumers may now see the end of the stream";
}

TEST(ShmPortRepair, a_dead_producers_loans_are_abandoned_to_the_consumers_that_expect_them) {
    Ring sut(4, 2);
    sut.loan(0);
    sut.loan(1).loaner = kProducer + 1;  // another producer's
    sut->consumer_peers[1].state = peer_departed;
    bool freed = false;
    EXPECT_EQ(abandon_loans(*sut, kProducer, &freed), std::vector<std::uint64_t>{0});
    EXPECT_EQ(sut->slot(0).state, slot_abandoned);
    EXPECT_EQ(sut->slot(0).holders, 0b01U);
    EXPECT_EQ(sut->slot(1).state, slot_loaned);
    EXPECT_FALSE(freed);
}

TEST(ShmPortRepair, values_no_step_leaves_are_faults_naming_the_invariant) {
    {
        Ring sut(4, 1);
        sut->slots = 0;
        EXPECT_NE(repair_port(*sut).fault.find("(P1)"), std::string::npos);
    }
    {
        Ring sut(4, 1);
        sut.commit(0).state = 7;
        EXPECT_NE(repair_port(*sut).fault.find("slot 0 has state 7 (P2)"), std::string::npos);
    }
    {
        Ring sut(4, 1);
        sut->consumer_peers[3].state = 9;
        EXPECT_NE(repair_port(*sut).fault.find("(P2)"), std::string::npos);
    }
    {
        Ring sut(4, 1);
        sut.commit(9);
        sut->slot(9).sequence = 1;  // in slot 1's place
        EXPECT_NE(repair_port(*sut).fault.find("outside the ring's window"), std::string::npos);
    }
    {
        Ring sut(4, 1);
        sut.commit(2);
        sut->write_seq = 2;  // a committed message at the next sequence: no loan was cut there
        EXPECT_NE(repair_port(*sut).fault.find("at or past the next message 2 (P3)"), std::string::npos);
    }
    {
        Ring sut(4, 2);
        sut.commit(0).holders = 0b101;
        EXPECT_NE(repair_port(*sut).fault.find("beyond the port's 2 (P5)"), std::string::npos);
    }
}

}  // namespace
}  // namespace strata::shm_detail
