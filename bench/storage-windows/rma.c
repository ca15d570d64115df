/* SPDX-License-Identifier: MIT */
/* RMA microbenchmark in the style of IMB-RMA "single transfer" (paper §3.1),
 * non-aggregate mode: one operation per flush, inside one passive-target
 * epoch. Two ranks; rank 0 is the origin (unidirectional) or both ranks are
 * (bidirectional). Benchmarks:
 *   unidir_put, unidir_get, bidir_put, bidir_get, accumulate (MPI_SUM of
 *   MPI_INT), get_accumulate        — for each --sizes transfer size
 *   fetch_and_op, compare_and_swap  — one 64-bit element, latency
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
 * After each data benchmark the target's window is checked against what was
 * sent (puts and accumulates of known values). */
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
    long iters;
    unsigned char *src, *dst;
    int argc;
    char** argv;
} bench;

typedef enum { UNI_PUT, UNI_GET, BI_PUT, BI_GET, ACC, GET_ACC, FOP, CAS, LOCAL_SYNC, REMOTE_SYNC, OPS } op_t;
static const char* const op_names[OPS] = {"unidir_put", "unidir_get",     "bidir_put",    "bidir_get",
                                          "accumulate", "get_accumulate", "fetch_and_op", "compare_and_swap",
                                          "local_sync", "remote_sync"};

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
    const int bidirectional = op == BI_PUT || op == BI_GET;
    return bidirectional || sw_rank() == 0;
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
    memset(w->base, 0, b->max_size);
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = 0;
    if (is_origin(op)) {
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

/* The target's window holds what the operations left there. */
static void verify(const bench* b, window* w, op_t op, size_t bytes) {
    const int written_to_me = (op == UNI_PUT || op == ACC || op == GET_ACC || op == REMOTE_SYNC) ? sw_rank() == 1
                              : op == LOCAL_SYNC                                                 ? sw_rank() == 0
                                                                                                 : op == BI_PUT;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, sw_rank(), 0, w->win));
    CHECK_MPI(MPI_Win_sync(w->win));
    if (written_to_me && (op == UNI_PUT || op == BI_PUT || op == LOCAL_SYNC || op == REMOTE_SYNC)) {
        CHECK(memcmp(w->base, b->src, bytes) == 0, "%s %zu: the target's window differs from what was put",
              op_names[op], bytes);
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
        const double moved = (double)bytes * (double)b->iters * ((op == BI_PUT || op == BI_GET) ? 2 : 1);
        sw_emit(b->argc, b->argv,
                "\"app\":\"rma\",\"variant\":\"%s\",\"op\":\"%s\",\"bytes\":%zu,\"iters\":%ld,\"repeat\":%ld,"
                "\"seconds\":%.6f,\"gbps\":%.4f,\"usec_per_op\":%.3f",
                w->config.variant, op_names[op], bytes, b->iters, sw_opt_long(b->argc, b->argv, "--repeat", 0), seconds,
                data_op ? moved / seconds / 1e9 : 0.0, seconds / (double)b->iters * 1e6);
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
    CHECK(sw_size() == 2, "run with exactly 2 ranks (mpiexec -n 2), not %d", sw_size());
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
    b.dst = aligned_alloc(4096, b.max_size);
    CHECK(b.src && b.dst, "cannot allocate 2 x %zu bytes", b.max_size);
    for (size_t i = 0; i < b.max_size / sizeof(int); ++i) ((int*)b.src)[i] = 1;

    snprintf(list, sizeof list, "%s", sw_opt(argc, argv, "--variants", "memory,memory-create,storage"));
    for (char* s = strtok(list, ","); s && b.nwindows < MAX_VARIANTS; s = strtok(NULL, ",")) {
        window* w = &b.windows[b.nwindows];
        w->config = sw_config_from(argc, argv, "memory");
        w->config.variant = strdup(s);
        CHECK(strcmp(s, "memory") == 0 || strcmp(s, "memory-create") == 0 || sw_is_storage(&w->config),
              "--variants: %s is not a window variant", s);
        char name[64];
        snprintf(name, sizeof name, "rma-%s-%%r.dat", s);
        w->base = sw_win_allocate(&w->config, name, 1, b.max_size, 1, &w->win);
        ++b.nwindows;
    }
    const char* ops = sw_opt(argc, argv, "--ops", NULL);
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
    MPI_Finalize();
    return 0;
}
