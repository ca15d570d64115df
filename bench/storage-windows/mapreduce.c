/* SPDX-License-Identifier: MIT */
/* MapReduce word count (paper §3.5.2), one-sided (MR-1S) and two-sided
 * (MR-2S), on a generated corpus with a Zipf word distribution.
 *
 * The corpus is cut into --task-size map tasks, dealt round-robin to ranks.
 *   1s  map and reduce overlap: each task's words (combined within the task)
 *       are accumulated straight into the owner's window, a hash table of
 *       {key, count} claimed with compare-and-swap (a key's slot, once
 *       known, is remembered, so later tasks only accumulate: one
 *       MPI_Accumulate per owner and task, through an indexed datatype).
 *       The table is a window of the --variant kind (storage by default),
 *       with or without checkpoints.
 *       --checkpoint windows: after each task round every rank makes its
 *       table durable with MPI_Win_sync (a storage window; the round number
 *       is in the table's header), between two barriers so the checkpoint
 *       is globally consistent.
 *       --checkpoint snapshot: the same consistent cut, written behind the
 *       next map phase: after the first barrier every rank copies its table
 *       into one of two slots of a checkpoint storage window, a second
 *       barrier lets the ranks go on, and a thread makes the slot durable
 *       with MPI_Win_sync while the next tasks are mapped. Checkpoint k is
 *       declared complete at checkpoint k+1 (or at the end): every rank
 *       joins its thread (the slot is durable) before the barrier that
 *       follows. Every run initializes MPI with MPI_THREAD_MULTIPLE, so the
 *       variants compared differ only in their checkpoints.
 *       --checkpoint snapshot-nb: the same cut and slots without stopping the
 *       ranks at the same point: MPI_Ibarrier instead of both barriers, the
 *       copy taken while the next task is mapped (see "non-blocking cut").
 *       --verify-cuts (snapshot, snapshot-nb; a test mode): once a snapshot is
 *       durable, each rank reads its slot back from the checkpoint file and
 *       checks it against the counts of its keys in rounds 0..k recomputed
 *       from the corpus: the run fails if a cut missed an update of its round
 *       or held one of a later round. --slot-access-style STYLE: the
 *       access_style hint of the checkpoint window (default: --access-style's).
 *       --skew-ms MS (a test mode): before each
 *       of its maps the last rank spends MS milliseconds driving MPI progress
 *       without polling its cut, a slow rank, so that a cut which let a faster
 *       rank's next round through would be caught.
 *   2s  map emits (key, 1) pairs, as MR-MPI does, kept until the shuffle
 *       (MPI_Alltoallv) and the reduce after all maps. --combine merges each
 *       task's pairs first (a stronger baseline).
 *       --checkpoint mpiio: after each task round the round's pairs are
 *       written to one shared file with collective MPI-IO + MPI_File_sync.
 * Every run checks that the counts add up to the words read and prints a
 * checksum of the result that must be equal across implementations.
 *
 * Usage: mapreduce --generate FILE [--corpus-size 256M] [--vocabulary 100000]
 *        mapreduce --impl 1s|2s [--checkpoint none|windows|snapshot|snapshot-nb|mpiio] [--combine]
 *                  --corpus FILE [--task-size 16M] [--table-slots 128K] [--verify-cuts]
 *                  [--dir DIR] [--json FILE] [--repeat N] [--bind B]
 * --bind and --schedule only record how the harness ran this (mpiexec -bind-to B; the order of the
 * variants within a repeat: shuffled, or adjacent — each implementation's variants back to back).
 * --no-poll: MR-1S does not poll MPI progress while mapping (see poll_progress). */
#include "sw.h"

#include <math.h>
#include <pthread.h>

typedef struct {
    uint64_t key, count;
} pair;

/* --- corpus ------------------------------------------------------------------- */

static void word_of(uint64_t id, char* out) {
    uint64_t h = sw_mix(id);
    const int length = 2 + (int)(h % 9);
    for (int i = 0; i < length; ++i) {
        out[i] = (char)('a' + (h >> (5 * i % 60)) % 26);
    }
    snprintf(out + length, 12, "%" PRIu64, id % 1000); /* distinct words for distinct ids */
}

static void generate(const char* path, size_t size, uint64_t vocabulary) {
    double* cdf = malloc(vocabulary * sizeof(double));
    CHECK(cdf, "cannot allocate the Zipf table");
    double total = 0;
    for (uint64_t i = 0; i < vocabulary; ++i) cdf[i] = (total += 1.0 / (double)(i + 1));
    FILE* out = fopen(path, "w");
    CHECK(out, "--generate=%s: %s", path, strerror(errno));
    uint64_t rng = 7;
    size_t written = 0;
    char word[32];
    while (written < size) {
        const double u = (double)(sw_next(&rng) >> 11) / 9007199254740992.0 * total;
        uint64_t lo = 0, hi = vocabulary - 1;
        while (lo < hi) {
            const uint64_t mid = (lo + hi) / 2;
            if (cdf[mid] < u)
                lo = mid + 1;
            else
                hi = mid;
        }
        word_of(lo, word);
        written += (size_t)fprintf(out, "%s%c", word, sw_next(&rng) % 12 == 0 ? '\n' : ' ');
    }
    CHECK(fclose(out) == 0, "writing %s failed", path);
    free(cdf);
}

/* --- a local open-addressing table (combiner, slot cache, 2s reduce) ----------- */

typedef struct {
    pair* slots;
    uint64_t capacity, used;
} local_table;

static void lt_init(local_table* t, uint64_t capacity) {
    t->capacity = capacity;
    t->used = 0;
    t->slots = calloc(capacity, sizeof(pair));
    CHECK(t->slots, "cannot allocate a table of %" PRIu64, capacity);
}

static void lt_add(local_table* t, uint64_t key, uint64_t count);

static void lt_grow(local_table* t) {
    local_table bigger;
    lt_init(&bigger, t->capacity * 2);
    for (uint64_t i = 0; i < t->capacity; ++i) {
        if (t->slots[i].key) lt_add(&bigger, t->slots[i].key, t->slots[i].count);
    }
    free(t->slots);
    *t = bigger;
}

static pair* lt_find(local_table* t, uint64_t key, int create) {
    if (create && t->used * 2 >= t->capacity) lt_grow(t);
    for (uint64_t i = sw_mix(key) & (t->capacity - 1);; i = (i + 1) & (t->capacity - 1)) {
        if (t->slots[i].key == key) return &t->slots[i];
        if (t->slots[i].key == 0) {
            if (!create) return NULL;
            t->slots[i].key = key;
            ++t->used;
            return &t->slots[i];
        }
    }
}

static void lt_add(local_table* t, uint64_t key, uint64_t count) {
    lt_find(t, key, 1)->count += count;
}

/* --- map ------------------------------------------------------------------------- */

/* FNV-1a of a word, never 0 (0 marks an empty slot). */
static uint64_t word_key(const char* w, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; ++i) h = (h ^ (unsigned char)w[i]) * 1099511628211ULL;
    return h ? h : 1;
}

typedef void (*emit_fn)(void* context, uint64_t key);

/* MR-1S: while a rank maps, the other rank's one-sided operations on its table wait for its MPI
 * progress engine (MPICH has no progress thread by default; MPI_Win_create windows take active
 * messages). Without a poll, a rank whose reduce falls into the other's map phase waits until that
 * phase ends, and the ranks lock into that pattern or not from run to run: runs of the same
 * configuration took either 2.2 or 3.7 s. Polling every POLL_WORDS words (one MPI_Iprobe, about a
 * microsecond per millisecond of mapping) serves them. */
enum { POLL_WORDS = 1 << 11 };
static int poll_progress;

static void poll_open_cut(void); /* --checkpoint snapshot-nb: tests the cut in flight */

static void progress(void) {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    poll_open_cut();
}

/* Reads task `task` of the corpus (word-aligned) and emits each word's key.
 * Returns the number of words. */
static uint64_t map_task(int fd, size_t corpus, size_t task_size, size_t task, char* buffer, emit_fn emit,
                         void* context) {
    size_t begin = task * task_size, end = begin + task_size;
    if (end > corpus) end = corpus;
    const size_t extra = 64; /* a word is shorter: enough to finish the last one */
    const size_t want = end - begin + extra + 1;
    const ssize_t got = pread(fd, buffer, want, (off_t)(begin ? begin - 1 : 0));
    CHECK(got > 0, "reading task %zu: %s", task, strerror(errno));
    size_t i = begin ? 1 : 0; /* buffer[0] is the byte before the task */
    if (begin) {
        while (i < (size_t)got && buffer[i - 1] != ' ' && buffer[i - 1] != '\n') ++i; /* the previous task's word */
    }
    uint64_t words = 0;
    const size_t stop = end - begin + (begin ? 1 : 0);
    while (i < stop) {
        while (i < (size_t)got && (buffer[i] == ' ' || buffer[i] == '\n')) ++i;
        if (i >= stop) break;
        const size_t start = i;
        while (i < (size_t)got && buffer[i] != ' ' && buffer[i] != '\n') ++i;
        emit(context, word_key(buffer + start, i - start));
        ++words;
        if (poll_progress && words % POLL_WORDS == 0) progress();
    }
    return words;
}

static void combine(void* context, uint64_t key) {
    lt_add(context, key, 1);
}

/* --- MR-1S -------------------------------------------------------------------------- */

typedef struct {
    MPI_Win win;
    pair* table; /* table[0] is the header: {checkpointed round, 0} */
    uint64_t slots;
    local_table where; /* key -> slot + 1 in its owner's table */
} one_sided;

/* The slot of key in its owner's table: remembered, or claimed with CAS. */
static uint64_t slot_of(one_sided* s, uint64_t key, int owner) {
    pair* known = lt_find(&s->where, key, 0);
    if (known) return known->count - 1;
    uint64_t slot = 1 + sw_mix(key) % s->slots;
    for (;; slot = slot % s->slots + 1) {
        uint64_t zero = 0, seen = 0;
        CHECK_MPI(
            MPI_Compare_and_swap(&key, &zero, &seen, MPI_UINT64_T, owner, (MPI_Aint)(slot * sizeof(pair)), s->win));
        CHECK_MPI(MPI_Win_flush(owner, s->win));
        if (seen == 0 || seen == key) break;
    }
    lt_add(&s->where, key, slot + 1);
    return slot;
}

/* Reduces one task's counts into the owners' tables: one MPI_Accumulate per
 * owner, its target an indexed datatype over the counts' slots. */
static void reduce_task(one_sided* s, const local_table* counts) {
    const int p = sw_size();
    uint64_t* values = malloc(counts->used * sizeof(uint64_t) + 1);
    int* displacements = malloc(counts->used * sizeof(int) + 1);
    CHECK(values && displacements, "cannot allocate %" PRIu64 " counts", counts->used);
    for (int owner = 0; owner < p; ++owner) {
        int n = 0;
        for (uint64_t i = 0; i < counts->capacity; ++i) {
            const pair* c = &counts->slots[i];
            if (!c->key || (int)(c->key % (uint64_t)p) != owner) continue;
            values[n] = c->count;
            displacements[n++] = (int)(slot_of(s, c->key, owner) * 2 + 1); /* in uint64 units: the count */
        }
        if (n == 0) continue;
        MPI_Datatype target;
        CHECK_MPI(MPI_Type_create_indexed_block(n, 1, displacements, MPI_UINT64_T, &target));
        CHECK_MPI(MPI_Type_commit(&target));
        CHECK_MPI(MPI_Accumulate(values, n, MPI_UINT64_T, owner, 0, 1, target, MPI_SUM, s->win));
        CHECK_MPI(MPI_Win_flush(owner, s->win));
        CHECK_MPI(MPI_Type_free(&target));
    }
    free(values);
    free(displacements);
}

/* --- snapshot checkpoints --------------------------------------------------------------- */

typedef struct {
    MPI_Win win;
    pthread_t thread;
    int running;
    size_t round; /* the round whose snapshot the thread makes durable */
} writer;

static void* make_durable(void* context) {
    writer* w = context;
    CHECK_MPI(MPI_Win_sync(w->win)); /* returns once the slot's pages are on the device */
    return NULL;
}

/* Waits until the last snapshot is durable on this rank. */
static void join_writer(writer* w) {
    if (!w->running) return;
    pthread_join(w->thread, NULL);
    w->running = 0;
}

static void start_writer(writer* w, size_t round) {
    w->round = round;
    CHECK(pthread_create(&w->thread, NULL, make_durable, w) == 0, "cannot start the checkpoint writer");
    w->running = 1;
}

/* --- --verify-cuts: a durable slot against the corpus ---------------------------------- */

typedef struct {
    int on;
    int corpus_fd, slot_fd; /* the corpus; this rank's checkpoint file, read back */
    size_t corpus, task_size, tasks, table_bytes;
    uint64_t slots;
    char* buffer;
    local_table expected; /* this rank's keys: counts over the rounds added so far */
    size_t rounds_added, checked;
} cut_check;

static void add_owned(void* context, uint64_t key) {
    if ((int)(key % (uint64_t)sw_size()) == sw_rank()) lt_add(context, key, 1);
}

/* Snapshot `round` is durable: its slot in the file must hold exactly this rank's counts of rounds
 * 0..round, recomputed here from the corpus (every rank's tasks of those rounds, not the table). */
static void check_cut(cut_check* v, size_t round) {
    if (!v->on) return;
    const size_t p = (size_t)sw_size();
    const int polling = poll_progress;
    poll_progress = 0; /* no cut may be taken from inside this map */
    for (; v->rounds_added <= round; ++v->rounds_added) {
        for (size_t r = 0; r < p; ++r) {
            const size_t task = v->rounds_added * p + r;
            if (task < v->tasks)
                map_task(v->corpus_fd, v->corpus, v->task_size, task, v->buffer, add_owned, &v->expected);
        }
    }
    poll_progress = polling;
    pair* slot = malloc(v->table_bytes);
    CHECK(slot, "cannot allocate %zu bytes", v->table_bytes);
    const ssize_t got = pread(v->slot_fd, slot, v->table_bytes, (off_t)((round % 2) * v->table_bytes));
    CHECK(got == (ssize_t)v->table_bytes, "checkpoint %zu: reading its slot back gave %zd of %zu bytes: %s", round, got,
          v->table_bytes, got < 0 ? strerror(errno) : "short read");
    CHECK(slot[0].key == round + 1, "checkpoint %zu: the slot's header says round %" PRIu64, round, slot[0].key - 1);
    uint64_t keys = 0;
    for (uint64_t i = 1; i <= v->slots; ++i) {
        if (!slot[i].key) continue;
        ++keys;
        const pair* want = lt_find(&v->expected, slot[i].key, 0);
        CHECK(want,
              "checkpoint %zu: key %016" PRIx64 " is in the slot (count %" PRIu64
              "), but not in rounds 0..%zu of the corpus (an inconsistent cut)",
              round, slot[i].key, slot[i].count, round);
        CHECK(want->count == slot[i].count,
              "checkpoint %zu: key %016" PRIx64 " counts %" PRIu64 " in the slot, but %" PRIu64
              " in rounds 0..%zu of the corpus (an inconsistent cut)",
              round, slot[i].key, slot[i].count, want->count, round);
    }
    CHECK(keys == v->expected.used,
          "checkpoint %zu: the slot holds %" PRIu64 " keys, rounds 0..%zu of the corpus %" PRIu64
          " (an inconsistent cut)",
          round, keys, round, v->expected.used);
    free(slot);
    ++v->checked;
}

/* Waits until this rank's last snapshot is durable, and checks it under --verify-cuts. */
static void join_and_check(writer* w, cut_check* v) {
    if (!w->running) return;
    join_writer(w);
    check_cut(v, w->round);
}

/* --- non-blocking cut (--checkpoint snapshot-nb) ----------------------------------------- */

/* Round k's cut without stopping the ranks at the same point:
 *   1. after its round-k operations are flushed (reduce_task), a rank joins the writer of snapshot
 *      k-1 and enters MPI_Ibarrier b1_k;
 *   2. it maps its round-k+1 task; map_task's progress polls test b1_k (poll_open_cut);
 *   3. once b1_k has completed (in a poll, or in the wait after the map), the rank copies its table
 *      into slot k%2, starts the writer thread (MPI_Win_sync of the checkpoint window) and enters
 *      MPI_Ibarrier b2_k;
 *   4. it waits for b2_k before its own round-k+1 operations (reduce_task).
 * Why the cut is consistent, i.e. snapshot k of every table holds exactly the updates of rounds <= k:
 *   - none is missing: a rank enters b1_k only after MPI_Win_flush has returned for each of its
 *     operations of rounds <= k (complete at the target), and b1_k completes on the owner only once
 *     every rank has entered it; so when the owner copies, every such update is in its table (MPICH's
 *     unified model; the fence orders the copy's reads after the test that saw b1_k complete).
 *   - none of a later round is in it: a rank issues its first round-k+1 operation on any table (the
 *     compare-and-swap claiming a slot, or the accumulate) only after b2_k has completed, which needs
 *     every rank to have entered b2_k, and a rank enters b2_k only after its copy of snapshot k is
 *     taken. So every table's snapshot k is taken before any round-k+1 operation can reach it.
 * Durable before complete: a rank joins the writer of snapshot k-1 (its MPI_Win_sync has returned)
 * before it enters b1_k, so b1_k's completion means every rank's snapshot k-1 is durable: checkpoint
 * k-1 is declared complete there (the last one after the loop, at a barrier).
 * Slots: snapshot k overwrites snapshot k-2 (slot k%2) after b1_k, when checkpoint k-1 is already
 * complete, so a complete checkpoint exists at every moment. Two cuts are never in flight at once:
 * b2_k is waited for before round k+1's operations, b1_k+1 entered after them. */
typedef struct {
    MPI_Request b1, b2;
    int b1_open, b2_open;
    size_t round; /* the round whose cut is in flight */
    pair *table, *slots;
    size_t table_bytes;
    writer* behind;
    double copy_seconds; /* the copies taken inside the map's polls (the others are timed by finish_cut's caller) */
    size_t complete;     /* checkpoints declared complete */
} cut;

static cut* open_cut; /* the cut polled while mapping (snapshot-nb only) */

/* Returns the seconds it took. */
static double take_snapshot(cut* c) {
    const double t = MPI_Wtime();
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (c->round > 0) c->complete = c->round; /* b1_k done: every rank's snapshot k-1 is durable */
    pair* slot = (pair*)((char*)c->slots + (c->round % 2) * c->table_bytes);
    memcpy(slot, c->table, c->table_bytes);
    slot[0] = (pair){c->round + 1, 0}; /* the header: the checkpointed round */
    start_writer(c->behind, c->round);
    CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &c->b2));
    c->b1_open = 0;
    c->b2_open = 1;
    return MPI_Wtime() - t;
}

static void poll_open_cut(void) {
    if (!open_cut || !open_cut->b1_open) return;
    int done = 0;
    CHECK_MPI(MPI_Test(&open_cut->b1, &done, MPI_STATUS_IGNORE));
    if (done) open_cut->copy_seconds += take_snapshot(open_cut);
}

/* Steps 3 and 4 for what the map did not finish: adds the wait for b1 to phase[0], the copy to phase[1],
 * the wait for b2 to phase[2] (the caller times the whole). */
static void finish_cut(cut* c, double phase[3]) {
    const double start = MPI_Wtime();
    if (c->b1_open) {
        CHECK_MPI(MPI_Wait(&c->b1, MPI_STATUS_IGNORE));
        phase[0] += MPI_Wtime() - start;
        phase[1] += take_snapshot(c);
    }
    const double copied = MPI_Wtime();
    if (c->b2_open) {
        CHECK_MPI(MPI_Wait(&c->b2, MPI_STATUS_IGNORE));
        c->b2_open = 0;
        phase[2] += MPI_Wtime() - copied;
    }
}

/* --skew-ms: a slow rank that serves the others' operations but has not looked at its cut yet. */
static void skew(long ms) {
    const double until = MPI_Wtime() + (double)ms / 1000;
    while (MPI_Wtime() < until) {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        usleep(100);
    }
}

/* --- main ---------------------------------------------------------------------------- */

typedef struct {
    pair* pairs;
    size_t count, capacity;
} pair_list;

static void push(void* context, uint64_t key) {
    pair_list* l = context;
    if (l->count == l->capacity) {
        l->capacity = l->capacity ? 2 * l->capacity : 1 << 20;
        l->pairs = realloc(l->pairs, l->capacity * sizeof(pair));
        CHECK(l->pairs, "cannot grow the pair list to %zu", l->capacity);
    }
    l->pairs[l->count++] = (pair){key, 1};
}

static int by_owner(const void* a, const void* b) {
    const int p = sw_size();
    const uint64_t x = ((const pair*)a)->key % (uint64_t)p, y = ((const pair*)b)->key % (uint64_t)p;
    return (x > y) - (x < y);
}

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE is not available (got %d)", provided);
    const char* generate_path = sw_opt(argc, argv, "--generate", NULL);
    if (generate_path) {
        if (sw_rank() == 0) {
            generate(generate_path, sw_opt_size(argc, argv, "--corpus-size", "256M"),
                     (uint64_t)sw_opt_long(argc, argv, "--vocabulary", 100000));
        }
        sw_finalize();
        return 0;
    }
    sw_config config = sw_config_from(argc, argv, "storage");
    const char* impl = sw_opt(argc, argv, "--impl", "1s");
    const char* checkpoint = sw_opt(argc, argv, "--checkpoint", "none");
    const int combine_2s = sw_flag(argc, argv, "--combine");
    const int one = strcmp(impl, "1s") == 0;
    CHECK(one || strcmp(impl, "2s") == 0, "--impl=%s: expected 1s or 2s", impl);
    CHECK(strcmp(checkpoint, "none") == 0 || strcmp(checkpoint, one ? "windows" : "mpiio") == 0 ||
              (one && (strcmp(checkpoint, "snapshot") == 0 || strcmp(checkpoint, "snapshot-nb") == 0)),
          "--checkpoint=%s: expected none or %s for --impl %s", checkpoint,
          one ? "windows, snapshot or snapshot-nb" : "mpiio", impl);
    const int checkpointing = strcmp(checkpoint, "none") != 0;
    const int nonblocking = strcmp(checkpoint, "snapshot-nb") == 0;
    const int snapshot = strcmp(checkpoint, "snapshot") == 0 || nonblocking; /* both write slots behind */
    const int verify_cuts = sw_flag(argc, argv, "--verify-cuts");
    const char* slot_access_style = sw_opt(argc, argv, "--slot-access-style", config.access_style);
    const long skew_ms = sw_opt_long(argc, argv, "--skew-ms", 0);
    CHECK(skew_ms >= 0 && skew_ms <= 10000, "--skew-ms=%ld: expected 0 to 10000 milliseconds", skew_ms);
    CHECK(!verify_cuts || snapshot,
          "--verify-cuts: checks snapshot slots; expected --checkpoint snapshot or "
          "snapshot-nb, got --checkpoint %s",
          checkpoint);
    const char* corpus_path = sw_opt(argc, argv, "--corpus", NULL);
    CHECK(corpus_path, "--corpus FILE is required (make one with --generate FILE)");
    const int fd = open(corpus_path, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0, "--corpus=%s: %s", corpus_path, strerror(errno));
    struct stat st;
    fstat(fd, &st);
    const size_t corpus = (size_t)st.st_size, task_size = sw_opt_size(argc, argv, "--task-size", "16M");
    const size_t tasks = (corpus + task_size - 1) / task_size;
    const size_t rounds = (tasks + (size_t)sw_size() - 1) / (size_t)sw_size();
    char* buffer = malloc(task_size + 128);

    one_sided s = {0};
    poll_progress = one && !sw_flag(argc, argv, "--no-poll");
    if (one) {
        s.slots = sw_opt_size(argc, argv, "--table-slots", "128K");
        /* The table lives in the window kind --variant names (storage by default) with or without
         * checkpoints, so the end-to-end overhead compares the same window with and without
         * MPI_Win_sync, not a storage window against a memory window (whose MPI path differs). */
        s.table = sw_win_allocate(&config, "mr-table-%r.dat", 1, (s.slots + 1) * sizeof(pair), 1, &s.win);
        memset(s.table, 0, (s.slots + 1) * sizeof(pair));
        lt_init(&s.where, 1 << 16);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_MPI(MPI_Win_lock_all(0, s.win));
    }
    /* --checkpoint snapshot: two slots of the table's size, written back behind the map phases. */
    MPI_Win ckpt_win = MPI_WIN_NULL;
    pair* ckpt_slots = NULL;
    const size_t table_bytes = (s.slots + 1) * sizeof(pair);
    writer behind = {0};
    if (snapshot) {
        sw_config slots = config;
        slots.variant = "storage";
        slots.access_style = slot_access_style;
        ckpt_slots = sw_win_allocate(&slots, "mr-snapshot-%r.dat", 1, 2 * table_bytes, 1, &ckpt_win);
        CHECK_MPI(MPI_Win_lock_all(0, ckpt_win));
        behind.win = ckpt_win;
    }
    cut_check check = {.on = verify_cuts};
    if (verify_cuts) {
        char path[4096];
        snprintf(path, sizeof path, "%s/mr-snapshot-%d.dat", config.dir, sw_rank());
        check.slot_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        CHECK(check.slot_fd >= 0, "--verify-cuts: cannot open the checkpoint file %s: %s", path, strerror(errno));
        check.corpus_fd = fd;
        check.corpus = corpus;
        check.task_size = task_size;
        check.tasks = tasks;
        check.table_bytes = table_bytes;
        check.slots = s.slots;
        check.buffer = malloc(task_size + 128);
        CHECK(check.buffer, "cannot allocate %zu bytes", task_size + 128);
        lt_init(&check.expected, 1 << 16);
    }
    cut nb = {.table = s.table, .slots = ckpt_slots, .table_bytes = table_bytes, .behind = &behind};
    if (nonblocking) open_cut = &nb;
    MPI_File ckpt = MPI_FILE_NULL;
    if (!one && checkpointing) {
        char path[4096];
        snprintf(path, sizeof path, "%s/mr-2s-checkpoint.dat", config.dir);
        CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE,
                                MPI_INFO_NULL, &ckpt));
    }

    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    double checkpoint_seconds = 0;
    double ckpt_phase[3] = {0, 0, 0}; /* 1s: first barrier, MPI_Win_sync, second barrier; 2s: -, write, sync */
    uint64_t words = 0;
    pair_list emitted = {0};
    MPI_Offset ckpt_at = 0;
    for (size_t round = 0; round < rounds; ++round) {
        const size_t task = round * (size_t)sw_size() + (size_t)sw_rank();
        const size_t emitted_before = emitted.count;
        if (task < tasks) {
            if (skew_ms && sw_rank() == sw_size() - 1) skew(skew_ms);
            if (one || combine_2s) {
                local_table task_counts;
                lt_init(&task_counts, 1 << 16);
                words += map_task(fd, corpus, task_size, task, buffer, combine, &task_counts);
                if (nonblocking) { /* the cut of the previous round, before this round's operations */
                    const double wait = MPI_Wtime();
                    finish_cut(&nb, ckpt_phase);
                    checkpoint_seconds += MPI_Wtime() - wait;
                }
                if (one) {
                    reduce_task(&s, &task_counts);
                } else {
                    for (uint64_t i = 0; i < task_counts.capacity; ++i) {
                        const pair* p = &task_counts.slots[i];
                        if (!p->key) continue;
                        push(&emitted, p->key);
                        emitted.pairs[emitted.count - 1].count = p->count;
                    }
                }
                free(task_counts.slots);
            } else {
                words += map_task(fd, corpus, task_size, task, buffer, push, &emitted);
            }
        } else if (nonblocking) { /* no task this round: only the previous round's cut */
            const double wait = MPI_Wtime();
            finish_cut(&nb, ckpt_phase);
            checkpoint_seconds += MPI_Wtime() - wait;
        }
        if (!checkpointing) continue;
        const double ckpt_start = MPI_Wtime();
        if (nonblocking) {
            /* This round's operations are flushed: the previous snapshot must be durable before b1 of
             * this round is entered (see "non-blocking cut"); the rest happens while the next task is
             * mapped. */
            join_and_check(&behind, &check);
            nb.round = round;
            CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &nb.b1));
            nb.b1_open = 1;
            ckpt_phase[1] += MPI_Wtime() - ckpt_start;
        } else if (snapshot) {
            MPI_Barrier(MPI_COMM_WORLD); /* every accumulate of this round has landed */
            const double synced = MPI_Wtime();
            ckpt_phase[0] += synced - ckpt_start;
            /* The previous snapshot was made durable behind the map phase; once every rank has
             * joined its writer, the barrier below declares that checkpoint complete. */
            join_and_check(&behind, &check);
            /* MPICH's unified model: after the origins' flushes and the barrier, the table holds
             * every update of the round; the fence orders our reads after the barrier. */
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            s.table[0].key = round + 1;
            memcpy((char*)ckpt_slots + (round % 2) * table_bytes, s.table, table_bytes);
            ckpt_phase[1] += MPI_Wtime() - synced;
            const double released = MPI_Wtime();
            MPI_Barrier(MPI_COMM_WORLD); /* every snapshot is taken before any table changes */
            ckpt_phase[2] += MPI_Wtime() - released;
            if (round > 0) nb.complete = round; /* every rank joined its writer before the barriers */
            start_writer(&behind, round);
        } else if (one) {
            MPI_Barrier(MPI_COMM_WORLD); /* every accumulate of this round has landed */
            const double synced = MPI_Wtime();
            ckpt_phase[0] += synced - ckpt_start;
            s.table[0].key = round + 1;
            CHECK_MPI(MPI_Win_sync(s.win));
            ckpt_phase[1] += MPI_Wtime() - synced;
            const double released = MPI_Wtime();
            MPI_Barrier(MPI_COMM_WORLD); /* nobody changes a table before all are durable */
            ckpt_phase[2] += MPI_Wtime() - released;
        } else {
            const long long mine = (long long)((emitted.count - emitted_before) * sizeof(pair));
            long long before = 0, total = 0;
            MPI_Exscan(&mine, &before, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
            MPI_Allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
            if (sw_rank() == 0) before = 0;
            const double written = MPI_Wtime();
            CHECK_MPI(MPI_File_write_at_all(ckpt, ckpt_at + before, emitted.pairs + emitted_before, (int)mine, MPI_BYTE,
                                            MPI_STATUS_IGNORE));
            const double synced = MPI_Wtime();
            ckpt_phase[1] += synced - written;
            CHECK_MPI(MPI_File_sync(ckpt));
            ckpt_phase[2] += MPI_Wtime() - synced;
            ckpt_at += total;
        }
        checkpoint_seconds += MPI_Wtime() - ckpt_start;
    }

    if (snapshot) {        /* the last checkpoint: durable on every rank, then declared complete */
        if (nonblocking) { /* the last round's cut is still open: nothing to overlap it with */
            const double wait = MPI_Wtime();
            finish_cut(&nb, ckpt_phase);
            checkpoint_seconds += MPI_Wtime() - wait;
            open_cut = NULL;
            checkpoint_seconds += nb.copy_seconds; /* copies taken inside the maps' polls */
            ckpt_phase[1] += nb.copy_seconds;
        }
        CHECK(nb.complete + 1 == rounds, "%zu of the first %zu checkpoints were declared complete", nb.complete,
              rounds - 1);
        const double ckpt_start = MPI_Wtime();
        join_and_check(&behind, &check);
        MPI_Barrier(MPI_COMM_WORLD);
        checkpoint_seconds += MPI_Wtime() - ckpt_start;
        ckpt_phase[1] += MPI_Wtime() - ckpt_start;
        nb.complete = rounds;
        CHECK(!verify_cuts || check.checked == rounds, "--verify-cuts: %zu of %zu checkpoints were checked",
              check.checked, rounds);
    }

    /* Reduce: 1s has reduced already; 2s shuffles its pairs to their owners. */
    local_table result = {0};
    uint64_t distinct = 0, counted = 0, checksum = 0;
    if (one) {
        CHECK_MPI(MPI_Win_unlock_all(s.win));
        MPI_Barrier(MPI_COMM_WORLD);
        for (uint64_t i = 1; i <= s.slots; ++i) {
            if (!s.table[i].key) continue;
            ++distinct;
            counted += s.table[i].count;
            checksum += sw_mix(s.table[i].key) * s.table[i].count;
        }
    } else {
        const int p = sw_size();
        qsort(emitted.pairs, emitted.count, sizeof(pair), by_owner);
        int *send = calloc((size_t)p, sizeof(int)), *recv = calloc((size_t)p, sizeof(int));
        int *sdisp = calloc((size_t)p, sizeof(int)), *rdisp = calloc((size_t)p, sizeof(int));
        for (size_t i = 0; i < emitted.count; ++i) send[emitted.pairs[i].key % (uint64_t)p] += (int)sizeof(pair);
        MPI_Alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD);
        size_t incoming = 0;
        for (int r = 0; r < p; ++r) {
            sdisp[r] = r ? sdisp[r - 1] + send[r - 1] : 0;
            rdisp[r] = r ? rdisp[r - 1] + recv[r - 1] : 0;
            incoming += (size_t)recv[r];
        }
        pair* received = malloc(incoming + 1);
        MPI_Alltoallv(emitted.pairs, send, sdisp, MPI_BYTE, received, recv, rdisp, MPI_BYTE, MPI_COMM_WORLD);
        lt_init(&result, 1 << 16);
        for (size_t i = 0; i < incoming / sizeof(pair); ++i) lt_add(&result, received[i].key, received[i].count);
        for (uint64_t i = 0; i < result.capacity; ++i) {
            if (!result.slots[i].key) continue;
            ++distinct;
            counted += result.slots[i].count;
            checksum += sw_mix(result.slots[i].key) * result.slots[i].count;
        }
        free(received);
        free(send);
        free(recv);
        free(sdisp);
        free(rdisp);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double seconds = MPI_Wtime() - start;

    uint64_t local[4] = {words, counted, distinct, checksum}, global[4];
    MPI_Allreduce(local, global, 4, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(global[0] == global[1], "the counts add up to %" PRIu64 ", but %" PRIu64 " words were read", global[1],
          global[0]);
    double worst_checkpoint = 0, worst_phase[3];
    MPI_Allreduce(&checkpoint_seconds, &worst_checkpoint, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(ckpt_phase, worst_phase, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    sw_emit(argc, argv,
            "\"app\":\"mapreduce\",\"impl\":\"%s\",\"checkpoint\":\"%s\",\"combine\":%s,\"repeat\":%ld,\"ranks\":%d,"
            "\"bind\":\"%s\",\"schedule\":\"%s\",\"poll\":%s,"
            "\"corpus_bytes\":%zu,\"task_bytes\":%zu,\"tasks\":%zu,\"checkpoints\":%zu,\"words\":%" PRIu64
            ",\"distinct\":%" PRIu64 ",\"checksum\":\"%016" PRIx64
            "\",\"seconds\":%.6f,\"checkpoint_seconds\":%.6f,\"checkpoint_phases\":{\"enter\":%.6f,\"write\":%.6f,"
            "\"leave\":%.6f},\"slot_access_style\":\"%s\",\"cuts_verified\":%zu,\"verified\":true",
            impl, checkpoint, combine_2s ? "true" : "false", sw_opt_long(argc, argv, "--repeat", 0), sw_size(),
            sw_opt(argc, argv, "--bind", "none"), sw_opt(argc, argv, "--schedule", "shuffled"),
            poll_progress ? "true" : "false", corpus, task_size, tasks, checkpointing ? rounds : 0, global[0],
            global[2], global[3], seconds, worst_checkpoint, worst_phase[0], worst_phase[1], worst_phase[2],
            snapshot && slot_access_style ? slot_access_style : "none", check.checked);

    if (ckpt != MPI_FILE_NULL) CHECK_MPI(MPI_File_close(&ckpt));
    if (snapshot) {
        CHECK_MPI(MPI_Win_unlock_all(ckpt_win));
        CHECK_MPI(MPI_Win_free(&ckpt_win));
    }
    if (one) {
        CHECK_MPI(MPI_Win_free(&s.win));
        free(s.where.slots);
    }
    if (verify_cuts) {
        close(check.slot_fd);
        free(check.buffer);
        free(check.expected.slots);
    }
    free(result.slots);
    free(emitted.pairs);
    free(buffer);
    close(fd);
    sw_finalize();
    return 0;
}
