/* SPDX-License-Identifier: MIT */
/* Distributed hash table on MPI one-sided operations (paper §3.3 and §3.4,
 * after the foMPI DHT): each rank's window holds a header (the heap's next
 * free element), its local volume (LV) of --lv elements and an overflow heap
 * of --heap-factor x LV elements; an element is {key, next}. A key goes to
 * rank hash % P, slot hash % LV. Insert: compare-and-swap the slot's key from
 * 0 (empty); if taken, take a heap element with fetch-and-op, put the key,
 * and chain it in front of the slot's list with compare-and-swap on the
 * slot's next (retrying on a lost race). Every rank inserts --fill x LV
 * random 64-bit keys, then looks every one of them up again with gets.
 *
 * Phases timed: init (each rank zeroes its whole window, as the foMPI DHT
 * initializes its table), insert, and sync (MPI_Win_sync: storage windows
 * durable). Total = the three.
 *
 * Usage: dht --variant memory|storage|combined [--lv 1M] [--heap-factor 4]
 *            [--fill 0.8] [--dir DIR] [--json FILE] [--repeat N] [--label L]
 *            [--factor 0.5] [--sync ...] [--access-style ...] [--verify-passes 1]
 * --verify-passes N: look the keys up in N passes, each over 1/N of the LV (out of core: the
 *            verification's slots stay in the page cache; the verification is not timed).
 *
 * Built twice: sw-dht with libstrata-mpi (the variants of sw.h) and sw-dht-plain without it (the
 * variants plain-storage and plain-combined of plain_window.h: strata's layout made by hand), so
 * the same inserts run on the same file with and without strata. Each run reports its split
 * (memory_bytes, storage_bytes) and a checksum of where every key sits, which any two runs with the
 * same keys share. */
#include "sw.h"

#include "plain_window.h"

typedef struct {
    uint64_t key;
    uint64_t next; /* 0: end of chain; else the element index in the owner's window */
} element;

typedef struct {
    MPI_Win win;
    element* base;
    uint64_t lv, heap; /* element counts; element 0 is the header */
    int nprocs;
} table;

static MPI_Aint key_disp(uint64_t index) {
    return (MPI_Aint)(index * sizeof(element));
}

static MPI_Aint next_disp(uint64_t index) {
    return (MPI_Aint)(index * sizeof(element) + sizeof(uint64_t));
}

static void place(const table* t, uint64_t key, int* owner, uint64_t* slot) {
    const uint64_t h = sw_mix(key ^ 0x1234567ULL);
    *owner = (int)(h % (uint64_t)t->nprocs);
    *slot = 1 + (h >> 16) % t->lv;
}

static uint64_t cas(const table* t, int owner, MPI_Aint disp, uint64_t expected, uint64_t desired) {
    uint64_t result = 0;
    CHECK_MPI(MPI_Compare_and_swap(&desired, &expected, &result, MPI_UINT64_T, owner, disp, t->win));
    CHECK_MPI(MPI_Win_flush(owner, t->win));
    return result;
}

static void insert(const table* t, uint64_t key) {
    int owner;
    uint64_t slot;
    place(t, key, &owner, &slot);
    if (cas(t, owner, key_disp(slot), 0, key) == 0) return;

    uint64_t one = 1, taken = 0;
    CHECK_MPI(MPI_Fetch_and_op(&one, &taken, MPI_UINT64_T, owner, 0, MPI_SUM, t->win));
    CHECK_MPI(MPI_Win_flush(owner, t->win));
    CHECK(taken < t->heap, "the overflow heap of rank %d is full (%" PRIu64 " elements)", owner, t->heap);
    const uint64_t index = 1 + t->lv + taken;
    element fresh = {key, 0};
    uint64_t head = 0;
    CHECK_MPI(MPI_Fetch_and_op(NULL, &head, MPI_UINT64_T, owner, next_disp(slot), MPI_NO_OP, t->win));
    CHECK_MPI(MPI_Win_flush(owner, t->win));
    for (;;) {
        fresh.next = head;
        CHECK_MPI(MPI_Put(&fresh, 2, MPI_UINT64_T, owner, key_disp(index), 2, MPI_UINT64_T, t->win));
        CHECK_MPI(MPI_Win_flush(owner, t->win));
        const uint64_t seen = cas(t, owner, next_disp(slot), head, index);
        if (seen == head) return;
        head = seen;
    }
}

static int lookup(const table* t, uint64_t key) {
    int owner;
    uint64_t slot;
    place(t, key, &owner, &slot);
    element e;
    uint64_t index = slot;
    for (;;) {
        CHECK_MPI(MPI_Get(&e, 2, MPI_UINT64_T, owner, key_disp(index), 2, MPI_UINT64_T, t->win));
        CHECK_MPI(MPI_Win_flush(owner, t->win));
        if (e.key == key) return 1;
        if (index == slot && e.key == 0) return 0;
        if (e.next == 0) return 0;
        index = e.next;
    }
}

/* Where every key sits, summed over the slots: each key hashed with its rank and slot. The order
 * of a chain and the heap indices are left out (they depend on which insert won a race), so two runs
 * of the same keys agree whatever window held them. Local loads: call after the last epoch. */
static uint64_t checksum(const table* t) {
    const uint64_t elements = 1 + t->lv + t->heap;
    uint64_t sum = 0;
    for (uint64_t slot = 1; slot <= t->lv; ++slot) {
        const uint64_t where = sw_mix(slot * (uint64_t)t->nprocs + (uint64_t)sw_rank());
        for (uint64_t at = slot, steps = 0; at != 0; at = t->base[at].next, ++steps) {
            CHECK(at < elements && steps <= t->heap,
                  "slot %" PRIu64 ": its chain leads to element %" PRIu64 " after %" PRIu64 " steps (%" PRIu64
                  " elements)",
                  slot, at, steps, elements);
            if (t->base[at].key == 0) break;
            sum += sw_mix(t->base[at].key ^ where);
        }
    }
    return sum;
}

/* The storage_alloc_factor the variant asked for: the file's share of the window. */
static double storage_factor(const sw_config* c) {
    if (strcmp(c->variant, "combined") == 0 || strcmp(c->variant, "plain-combined") == 0) return c->factor;
    return sw_is_storage(c) || plain_is_variant(c->variant) ? 1.0 : 0.0;
}

/* This rank's bytes in memory and on the file: as strata reports them (MPI_Win_get_info), or as the
 * plain window made them. */
static void placement(const sw_config* c, MPI_Win win, const plain_window* by_hand, size_t bytes, size_t out[2]) {
    out[0] = bytes;
    out[1] = 0;
    if (by_hand) {
        out[0] = by_hand->memory_bytes;
        out[1] = by_hand->storage_bytes;
        return;
    }
    if (!sw_is_storage(c)) return;
    MPI_Info info;
    CHECK_MPI(MPI_Win_get_info(win, &info));
    const char* keys[2] = {"strata_memory_bytes", "strata_storage_bytes"};
    for (int i = 0; i < 2; ++i) {
        char value[64] = "";
        int length = (int)sizeof value, flag = 0;
        CHECK_MPI(MPI_Info_get_string(info, keys[i], &length, value, &flag));
        CHECK(flag, "MPI_Win_get_info: no %s on a %s window", keys[i], c->variant);
        out[i] = (size_t)strtoull(value, NULL, 10);
    }
    MPI_Info_free(&info);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int plain = plain_is_variant(sw_opt(argc, argv, "--variant", "memory"));
#ifdef STRATA_SW_PLAIN
    CHECK(plain,
          "--variant=%s: sw-dht-plain is built without libstrata-mpi and runs plain-storage and "
          "plain-combined only; run the others with sw-dht",
          sw_opt(argc, argv, "--variant", "memory"));
#else
    CHECK(!plain,
          "--variant=%s: the plain variants bypass strata: run them with sw-dht-plain, which is built "
          "without libstrata-mpi",
          sw_opt(argc, argv, "--variant", "memory"));
#endif
    const sw_config config = plain ? plain_config_from(argc, argv) : sw_config_from(argc, argv, "memory");
    CHECK(strcmp(config.variant, "mpiio") != 0 && strcmp(config.variant, "mpiio-coll") != 0,
          "--variant=%s: the DHT runs on windows only", config.variant);
    table t = {0};
    t.nprocs = sw_size();
    t.lv = sw_opt_size(argc, argv, "--lv", "1M");
    const long heap_factor = sw_opt_long(argc, argv, "--heap-factor", 4);
    const double fill = sw_opt_double(argc, argv, "--fill", 0.8);
    CHECK(t.lv > 0 && heap_factor >= 1 && fill > 0 && fill <= 1, "--lv, --heap-factor, --fill out of range");
    t.heap = t.lv * (uint64_t)heap_factor;
    const size_t bytes = (1 + t.lv + t.heap) * sizeof(element);
    const uint64_t count = (uint64_t)(fill * (double)t.lv);

    plain_window by_hand = {.fd = -1};
    char name[64];
    snprintf(name, sizeof name, "dht-%d.dat", sw_rank()); /* the name strata gives dht-%r.dat */
    t.base = plain ? plain_win_create(config.variant, config.dir, config.factor, name, bytes, &t.win, &by_hand)
                   : sw_win_allocate(&config, "dht-%r.dat", 1, bytes, 1, &t.win);
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    memset(t.base, 0, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    const double inserted_from = MPI_Wtime();

    CHECK_MPI(MPI_Win_lock_all(0, t.win));
    uint64_t rng = 0xd47ULL * (uint64_t)(sw_rank() + 1) + (uint64_t)sw_opt_long(argc, argv, "--repeat", 0);
    const uint64_t seed = rng;
    for (uint64_t i = 0; i < count; ++i) {
        uint64_t key = sw_next(&rng);
        insert(&t, key ? key : 1);
    }
    CHECK_MPI(MPI_Win_unlock_all(t.win));
    MPI_Barrier(MPI_COMM_WORLD);
    const double synced_from = MPI_Wtime();
    if (plain) {
        plain_win_sync_self(t.win, &by_hand);
    } else {
        sw_win_sync_self(t.win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double end = MPI_Wtime();

    /* Every key this rank inserted is found, and the heaps hold exactly the
     * keys that did not get a slot. */
    CHECK_MPI(MPI_Win_lock_all(0, t.win));
    /* In --verify-passes passes over the keys, each looking up only the keys whose slot lies in
     * its share of the LV: out of core, the slots a pass touches stay in the page cache, where
     * lookups in insert order would fault a random page of the LV for nearly every key. */
    const uint64_t passes = (uint64_t)sw_opt_long(argc, argv, "--verify-passes", 1);
    CHECK(passes >= 1 && passes <= t.lv, "--verify-passes=%" PRIu64 ": expected 1 to --lv", passes);
    uint64_t found = 0;
    for (uint64_t pass = 0; pass < passes; ++pass) {
        const uint64_t from = 1 + pass * t.lv / passes, to = 1 + (pass + 1) * t.lv / passes;
        rng = seed;
        for (uint64_t i = 0; i < count; ++i) {
            uint64_t key = sw_next(&rng), slot;
            int owner;
            key = key ? key : 1;
            place(&t, key, &owner, &slot);
            if (slot < from || slot >= to) continue;
            CHECK(lookup(&t, key), "key %" PRIu64 " (insert %" PRIu64 ") is missing", key, i);
            ++found;
        }
    }
    CHECK(found == count, "%" PRIu64 " of %" PRIu64 " keys looked up", found, count);
    CHECK_MPI(MPI_Win_unlock_all(t.win));
    uint64_t local[3] = {t.base[0].key, 0, checksum(&t)}, global[3];
    for (uint64_t i = 1; i <= t.lv; ++i) local[1] += t.base[i].key != 0;
    MPI_Allreduce(local, global, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    size_t split[2];
    placement(&config, t.win, plain ? &by_hand : NULL, bytes, split);
    CHECK(global[0] + global[1] == count * (uint64_t)t.nprocs,
          "%" PRIu64 " slots + %" PRIu64 " heap elements used, %" PRIu64 " keys inserted", global[1], global[0],
          count * (uint64_t)t.nprocs);

    sw_emit(argc, argv,
            "\"app\":\"dht\",\"label\":\"%s\",\"variant\":\"%s\",\"repeat\":%ld,\"ranks\":%d,\"lv\":%" PRIu64
            ",\"heap_factor\":%ld,\"fill\":%g,\"window_bytes\":%zu,\"dht_bytes\":%zu,\"factor\":%g,\"sync\":\"%s\","
            "\"access_style\":\"%s\",\"inserts\":%" PRIu64 ",\"heap_used\":%" PRIu64
            ",\"init_seconds\":%.6f,\"insert_seconds\":%.6f,\"sync_seconds\":%.6f,\"seconds\":%.6f,\"verified\":true"
            ",\"memory_bytes\":%zu,\"storage_bytes\":%zu,\"checksum\":\"%016" PRIx64 "\"",
            sw_opt(argc, argv, "--label", "in-core"), config.variant, sw_opt_long(argc, argv, "--repeat", 0), t.nprocs,
            t.lv, heap_factor, fill, bytes, bytes * (size_t)t.nprocs, storage_factor(&config), config.sync,
            config.access_style ? config.access_style : "", count * (uint64_t)t.nprocs, global[0],
            inserted_from - start, synced_from - inserted_from, end - synced_from, end - start, split[0], split[1],
            global[2]);
    if (plain) {
        plain_win_free(&t.win, &by_hand);
    } else {
        CHECK_MPI(MPI_Win_free(&t.win));
    }
    sw_finalize();
    return 0;
}
