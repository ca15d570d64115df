/* SPDX-License-Identifier: MIT */
/* RMA microbenchmark in the style of IMB-RMA (paper §3.1, Figs. 5 and 6),
 * non-aggregate mode: each operation (or each round of them) is completed
 * by a flush before the next, inside one passive-target epoch. Benchmarks:
 * "single transfer" — ranks 0 and 1 only, any others wait in the barriers
 * (IMB's standard mode); rank 0 is the origin (unidirectional) or both are
 * (bidirectional):
 *   unidir_put, unidir_get, bidir_put, bidir_get, accumulate (MPI_SUM of
 *   MPI_INT), get_accumulate        — for each --sizes transfer size
 *   fetch_and_op, compare_and_swap  — one 64-bit element, latency
 * "multiple transfer" (only when --ops names them) — rank 0 puts to (gets
 * from) every other rank, then MPI_Win_flush_all, as IMB's One_put_all and
 * One_get_all; throughput counts the bytes of every target:
 *   one_put_all, one_get_all
 * "parallel transfer" (only when --ops names them) — every rank puts to (gets
 * from) its left and right neighbours, then MPI_Win_flush_all, as IMB's
 * Exchange_put and Exchange_get; seconds are the slowest rank's:
 *   exchange_put, exchange_get
 * and, only when --ops names them, the cost of durability per transfer:
 *   local_sync   rank 0 stores the bytes into its own window and calls
 *                MPI_Win_sync (storage variants)
 *   remote_sync  rank 0 puts the bytes into rank 1's window and calls
 *                MPI_Win_sync, which has rank 1 make them durable
 *                (storage-remote: storage_alloc_remote_sync=true)
 * Every variant of --variants (memory, storage, combined) has its own window;
 * they are measured alternately, operation by operation and size by size, so
 * machine noise hits them alike. --iters operations per measurement (IMB uses
 * 1000; the default here is lower and the number is reported).
 *
 * Usage: rma [--variants memory,memory-create,storage,storage-remote] [--sizes 256K,512K,1M,2M,4M]
 *            [--iters 100] [--ops unidir_put,...] [--dir DIR] [--json FILE] [--repeat N]
 * At least 2 ranks. After each data benchmark the target's window is checked
 * against what was sent (puts and accumulates of known values), and what the
 * multiple and parallel gets read against the target's own pattern. */
#include "sw.h"

enum { MAX_VARIANTS = 4, MAX_SIZES = 16 };

typedef struct {
    sw_config config;
    MPI_Win win;
    unsigned char* base;
} window;

typedef struct {
    window windows[MAX_VARIANTS];
    int nwindows;
    size_t sizes[MAX_SIZES];
    int nsizes;
    size_t max_size;
    size_t window_bytes; /* max_size, twice that with exchange_put (a slot per neighbour) */
    long iters;
    unsigned char *src, *dst;
    int argc;
    char** argv;
} bench;

/* The ops from LOCAL_SYNC on (durability, multiple and parallel transfers) run only when --ops names them. */
typedef enum {
    UNI_PUT,
    UNI_GET,
    BI_PUT,
    BI_GET,
    ACC,
    GET_ACC,
    FOP,
    CAS,
    LOCAL_SYNC,
    REMOTE_SYNC,
    ONE_PUT_ALL,
    ONE_GET_ALL,
    EXCHANGE_PUT,
    EXCHANGE_GET,
    OPS
} op_t;
static const char* const op_names[OPS] = {
    "unidir_put",       "unidir_get", "bidir_put",   "bidir_get",   "accumulate",  "get_accumulate", "fetch_and_op",
    "compare_and_swap", "local_sync", "remote_sync", "one_put_all", "one_get_all", "exchange_put",   "exchange_get"};

/* IMB-RMA's class of each benchmark. */
static const char* mode_of(op_t op) {
    return op >= EXCHANGE_PUT ? "parallel" : op >= ONE_PUT_ALL ? "multiple" : "single";
}

/* The gets of the multiple and parallel transfers read each target's pattern (its rank + 1) into a
 * slice of their own, so the origin can check what it read. */
static int reads_pattern(op_t op) {
    return op == ONE_GET_ALL || op == EXCHANGE_GET;
}

static int left_of(int rank) {
    return (rank + sw_size() - 1) % sw_size();
}

static int right_of(int rank) {
    return (rank + 1) % sw_size();
}

/* The durability ops run only where they mean something. */
static int applies(op_t op, const window* w) {
    if (op == LOCAL_SYNC) return sw_is_storage(&w->config);
    if (op == REMOTE_SYNC) return strcmp(w->config.variant, "storage-remote") == 0;
    return 1;
}

/* One durable transfer of `bytes`: into this rank's own window, or put into
 * the peer's, then MPI_Win_sync. */
static void one_sync(const bench* b, window* w, op_t op, size_t bytes, int peer) {
    if (op == LOCAL_SYNC) {
        memcpy(w->base, b->src, bytes);
    } else {
        CHECK_MPI(MPI_Put(b->src, (int)bytes, MPI_BYTE, peer, 0, (int)bytes, MPI_BYTE, w->win));
    }
    CHECK_MPI(MPI_Win_sync(w->win));
}

static int is_origin(op_t op) {
    if (op >= EXCHANGE_PUT) return 1;
    const int bidirectional = op == BI_PUT || op == BI_GET;
    return (bidirectional && sw_rank() < 2) || sw_rank() == 0;
}

/* One round of a multiple or parallel transfer: an operation of `bytes` on each target, then
 * MPI_Win_flush_all (non-aggregate: the round completes before the next starts). */
static void one_round(const bench* b, MPI_Win win, op_t op, size_t bytes) {
    const int rank = sw_rank(), n = sw_size();
    const int exchange = op >= EXCHANGE_PUT, put = op == ONE_PUT_ALL || op == EXCHANGE_PUT;
    const int targets = exchange ? 2 : n - 1;
    for (int i = 0; i < targets; ++i) {
        const int target = exchange ? (i ? right_of(rank) : left_of(rank)) : (rank + 1 + i) % n;
        unsigned char* slice = b->dst + (size_t)(exchange ? i : target) * b->max_size;
        if (put) {
            /* Exchange: the left neighbour's slot for its right one (offset max_size) and the other
             * way round, so no two origins write the same bytes of a target. */
            const MPI_Aint at = exchange && i == 0 ? (MPI_Aint)b->max_size : 0;
            CHECK_MPI(MPI_Put(b->src, (int)bytes, MPI_BYTE, target, at, (int)bytes, MPI_BYTE, win));
        } else {
            CHECK_MPI(MPI_Get(slice, (int)bytes, MPI_BYTE, target, 0, (int)bytes, MPI_BYTE, win));
        }
    }
    CHECK_MPI(MPI_Win_flush_all(win));
}

/* One operation of `bytes` on the peer, then a flush (non-aggregate). */
static void one_op(const bench* b, MPI_Win win, op_t op, size_t bytes, int peer) {
    const int ints = (int)(bytes / sizeof(int));
    uint64_t one = 1, compare = 0, result = 0;
    switch (op) {
        case UNI_PUT:
        case BI_PUT: CHECK_MPI(MPI_Put(b->src, (int)bytes, MPI_BYTE, peer, 0, (int)bytes, MPI_BYTE, win)); break;
        case UNI_GET:
        case BI_GET: CHECK_MPI(MPI_Get(b->dst, (int)bytes, MPI_BYTE, peer, 0, (int)bytes, MPI_BYTE, win)); break;
        case ACC: CHECK_MPI(MPI_Accumulate(b->src, ints, MPI_INT, peer, 0, ints, MPI_INT, MPI_SUM, win)); break;
        case GET_ACC:
            CHECK_MPI(
                MPI_Get_accumulate(b->src, ints, MPI_INT, b->dst, ints, MPI_INT, peer, 0, ints, MPI_INT, MPI_SUM, win));
            break;
        case FOP: CHECK_MPI(MPI_Fetch_and_op(&one, &result, MPI_UINT64_T, peer, 0, MPI_SUM, win)); break;
        case CAS: CHECK_MPI(MPI_Compare_and_swap(&one, &compare, &result, MPI_UINT64_T, peer, 0, win)); break;
        default: break;
    }
    CHECK_MPI(MPI_Win_flush(peer, win));
}

/* Seconds for --iters operations (the slowest origin's). */
static double measure(const bench* b, window* w, op_t op, size_t bytes) {
    const int peer = 1 - sw_rank();
    memset(w->base, reads_pattern(op) ? sw_rank() + 1 : 0, b->window_bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = 0;
    if (is_origin(op) && op >= ONE_PUT_ALL) {
        CHECK_MPI(MPI_Win_lock_all(0, w->win));
        one_round(b, w->win, op, bytes); /* warm-up */
        const double start = MPI_Wtime();
        for (long i = 0; i < b->iters; ++i) one_round(b, w->win, op, bytes);
        seconds = MPI_Wtime() - start;
        CHECK_MPI(MPI_Win_unlock_all(w->win));
    } else if (is_origin(op)) {
        const int sync = op == LOCAL_SYNC || op == REMOTE_SYNC;
        const int locked = op == LOCAL_SYNC ? sw_rank() : peer;
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, locked, 0, w->win));
        sync ? one_sync(b, w, op, bytes, peer) : one_op(b, w->win, op, bytes, peer); /* warm-up */
        const double start = MPI_Wtime();
        for (long i = 0; i < b->iters; ++i) {
            sync ? one_sync(b, w, op, bytes, peer) : one_op(b, w->win, op, bytes, peer);
        }
        seconds = MPI_Wtime() - start;
        CHECK_MPI(MPI_Win_unlock(locked, w->win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double slowest = 0;
    MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

/* What the gets of a multiple or parallel transfer read: each target's pattern, in its slice. */
static void verify_reads(const bench* b, op_t op, size_t bytes) {
    const int rank = sw_rank(), n = sw_size(), exchange = op == EXCHANGE_GET;
    if (!exchange && rank != 0) return;
    for (int i = 0; i < (exchange ? 2 : n - 1); ++i) {
        const int target = exchange ? (i ? right_of(rank) : left_of(rank)) : i + 1;
        const unsigned char* slice = b->dst + (size_t)(exchange ? i : target) * b->max_size;
        for (size_t k = 0; k < bytes; ++k) {
            CHECK(slice[k] == (unsigned char)(target + 1), "%s %zu: byte %zu read from rank %d is %d, expected %d",
                  op_names[op], bytes, k, target, slice[k], target + 1);
        }
    }
}

/* The target's window holds what the operations left there. */
static void verify(const bench* b, window* w, op_t op, size_t bytes) {
    if (reads_pattern(op)) {
        verify_reads(b, op, bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
    const int rank = sw_rank();
    const int written_to_me = op == EXCHANGE_PUT                                                   ? 1
                              : op == ONE_PUT_ALL                                                  ? rank != 0
                              : rank > 1                                                           ? 0
                              : (op == UNI_PUT || op == ACC || op == GET_ACC || op == REMOTE_SYNC) ? rank == 1
                              : op == LOCAL_SYNC                                                   ? rank == 0
                                                                                                   : op == BI_PUT;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, sw_rank(), 0, w->win));
    CHECK_MPI(MPI_Win_sync(w->win));
    if (written_to_me &&
        (op == UNI_PUT || op == BI_PUT || op == LOCAL_SYNC || op == REMOTE_SYNC || op >= ONE_PUT_ALL)) {
        CHECK(memcmp(w->base, b->src, bytes) == 0, "%s %zu: the target's window differs from what was put",
              op_names[op], bytes);
        CHECK(op != EXCHANGE_PUT || memcmp(w->base + b->max_size, b->src, bytes) == 0,
              "%s %zu: the right neighbour's slot differs from what was put", op_names[op], bytes);
    } else if (written_to_me) { /* accumulates of ints all 1: warm-up + iters */
        const int* v = (const int*)w->base;
        for (size_t i = 0; i < bytes / sizeof(int); ++i) {
            CHECK(v[i] == (int)b->iters + 1, "%s %zu: element %zu is %d, expected %ld", op_names[op], bytes, i, v[i],
                  b->iters + 1);
        }
    } else if ((op == FOP || op == CAS) && sw_rank() == 1) {
        const uint64_t expected = op == FOP ? (uint64_t)b->iters + 1 : 1;
        CHECK(*(uint64_t*)w->base == expected, "%s: target holds %" PRIu64 ", expected %" PRIu64, op_names[op],
              *(uint64_t*)w->base, expected);
    }
    CHECK_MPI(MPI_Win_unlock(sw_rank(), w->win));
    MPI_Barrier(MPI_COMM_WORLD);
}

static void run(bench* b, op_t op, size_t bytes) {
    for (int v = 0; v < b->nwindows; ++v) {
        /* Alternate which variant goes first, so neither always runs warm. */
        window* w = &b->windows[(v + (int)(bytes / 4096) + op) % b->nwindows];
        if (!applies(op, w)) continue;
        const double seconds = measure(b, w, op, bytes);
        verify(b, w, op, bytes);
        const int data_op = op < FOP || op >= LOCAL_SYNC;
        /* Transfers per operation (per round): bidirectional 2; multiple, one per target (IMB's
         * throughput x N); parallel, the 2 of one rank (its time is what IMB reports). */
        const int per_op = (op == BI_PUT || op == BI_GET || op >= EXCHANGE_PUT) ? 2
                           : op >= ONE_PUT_ALL                                  ? sw_size() - 1
                                                                                : 1;
        const double moved = (double)bytes * (double)b->iters * per_op;
        sw_emit(b->argc, b->argv,
                "\"app\":\"rma\",\"variant\":\"%s\",\"op\":\"%s\",\"mode\":\"%s\",\"ranks\":%d,\"bytes\":%zu,"
                "\"iters\":%ld,\"repeat\":%ld,\"seconds\":%.6f,\"gbps\":%.4f,\"usec_per_op\":%.3f",
                w->config.variant, op_names[op], mode_of(op), sw_size(), bytes, b->iters,
                sw_opt_long(b->argc, b->argv, "--repeat", 0), seconds, data_op ? moved / seconds / 1e9 : 0.0,
                seconds / (double)b->iters * 1e6);
    }
}

int main(int argc, char** argv) {
    /* Remote sync's agent thread calls MPI while the program does. */
    if (strstr(sw_opt(argc, argv, "--variants", ""), "storage-remote") != NULL) {
        int provided = 0;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    CHECK(sw_size() >= 2 && sw_size() < 255, "run with 2 to 254 ranks (mpiexec -n 2), not %d", sw_size());
    bench b = {.argc = argc, .argv = argv};
    b.iters = sw_opt_long(argc, argv, "--iters", 100);
    CHECK(b.iters > 0, "--iters=%ld: must be positive", b.iters);

    char list[1024];
    snprintf(list, sizeof list, "%s", sw_opt(argc, argv, "--sizes", "256K,512K,1M,2M,4M"));
    for (char* s = strtok(list, ","); s && b.nsizes < MAX_SIZES; s = strtok(NULL, ",")) {
        b.sizes[b.nsizes] = sw_parse_size("--sizes", s);
        CHECK(b.sizes[b.nsizes] >= sizeof(uint64_t) && b.sizes[b.nsizes] % sizeof(int) == 0,
              "--sizes: %s is not a positive multiple of 4 bytes", s);
        if (b.sizes[b.nsizes] > b.max_size) b.max_size = b.sizes[b.nsizes];
        ++b.nsizes;
    }
    b.src = aligned_alloc(4096, b.max_size);
    b.dst = aligned_alloc(4096, (size_t)sw_size() * b.max_size); /* a slice per target of one_get_all */
    CHECK(b.src && b.dst, "cannot allocate %d x %zu bytes", sw_size() + 1, b.max_size);
    for (size_t i = 0; i < b.max_size / sizeof(int); ++i) ((int*)b.src)[i] = 1;

    const char* ops = sw_opt(argc, argv, "--ops", NULL);
    b.window_bytes = (ops && strstr(ops, "exchange_put") ? 2 : 1) * b.max_size;
    snprintf(list, sizeof list, "%s", sw_opt(argc, argv, "--variants", "memory,memory-create,storage"));
    for (char* s = strtok(list, ","); s && b.nwindows < MAX_VARIANTS; s = strtok(NULL, ",")) {
        window* w = &b.windows[b.nwindows];
        w->config = sw_config_from(argc, argv, "memory");
        w->config.variant = strdup(s);
        CHECK(strcmp(s, "memory") == 0 || strcmp(s, "memory-create") == 0 || sw_is_storage(&w->config),
              "--variants: %s is not a window variant", s);
        char name[64];
        snprintf(name, sizeof name, "rma-%s-%%r.dat", s);
        w->base = sw_win_allocate(&w->config, name, 1, b.window_bytes, 1, &w->win);
        ++b.nwindows;
    }
    for (int op = 0; op < OPS; ++op) {
        if (ops ? !strstr(ops, op_names[op]) : op >= LOCAL_SYNC) continue;
        if (op >= FOP && op < LOCAL_SYNC) {
            run(&b, (op_t)op, sizeof(uint64_t));
            continue;
        }
        for (int s = 0; s < b.nsizes; ++s) run(&b, (op_t)op, b.sizes[s]);
    }
    for (int v = 0; v < b.nwindows; ++v) CHECK_MPI(MPI_Win_free(&b.windows[v].win));
    free(b.src);
    free(b.dst);
    sw_finalize();
    return 0;
}
