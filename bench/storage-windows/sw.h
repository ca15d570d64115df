/* SPDX-License-Identifier: MIT */
/* Shared helpers of the storage-windows applications (bench/storage-windows/):
 * argument parsing, window allocation per variant, timing, verification
 * failures that abort the job (tests/support/mpi_check.h), and JSON-lines output.
 *
 * Variants every application understands (--variant):
 *   memory     MPI_Win_allocate with no hints: MPI's own memory
 *   memory-create  MPI_Win_create over anonymous memory: the MPI path of a
 *              storage window (with several ranks MPICH gives MPI_Win_allocate
 *              memory a shared-memory path that MPI_Win_create memory lacks;
 *              a rank's RMA on its own window is one memcpy with either)
 *   storage    alloc_type=storage, the whole window in a file of --dir
 *   combined   alloc_type=storage with storage_alloc_factor=--factor (0.5)
 *   storage-remote  storage with storage_alloc_remote_sync=true: MPI_Win_sync
 *              also makes the origin's puts durable on their targets (needs
 *              MPI_THREAD_MULTIPLE: sw_init asks for it when a variant has it)
 *   mpiio      (where the application has one) the same I/O through MPI-IO
 * Tuning hints for storage and combined: --sync on_sync|async|on_free,
 * --access-style <MPI-IO access_style>, --order memory_first|storage_first.
 *
 * Header-only: each application is one C file. Include first. */
#ifndef STRATA_BENCH_SW_H
#define STRATA_BENCH_SW_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mpi_check.h" /* CHECK, CHECK_MPI: a failed verification aborts the job */

static inline int sw_rank(void) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

static inline int sw_size(void) {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
}

/* --- arguments: "--key value" pairs ------------------------------------------ */

static inline const char* sw_opt(int argc, char** argv, const char* key, const char* fallback) {
    for (int i = 1; i + 1 < argc; ++i) {
        if (strcmp(argv[i], key) == 0) return argv[i + 1];
    }
    return fallback;
}

static inline int sw_flag(int argc, char** argv, const char* key) {
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], key) == 0) return 1;
    }
    return 0;
}

/* "4096", "256K", "16M", "1G", "1.5G" in bytes. */
static inline size_t sw_parse_size(const char* key, const char* text) {
    char* end = NULL;
    const double value = strtod(text, &end);
    double scale = 1;
    switch (*end) {
        case 'k':
        case 'K':
            scale = 1024.0;
            ++end;
            break;
        case 'm':
        case 'M':
            scale = 1024.0 * 1024;
            ++end;
            break;
        case 'g':
        case 'G':
            scale = 1024.0 * 1024 * 1024;
            ++end;
            break;
        default: break;
    }
    if (*end == 'i' || *end == 'B') ++end;
    if (*end == 'B') ++end;
    CHECK(end != text && *end == '\0' && value >= 0, "%s=%s: not a size (e.g. 4096, 256K, 16M, 1G)", key, text);
    return (size_t)(value * scale);
}

static inline size_t sw_opt_size(int argc, char** argv, const char* key, const char* fallback) {
    return sw_parse_size(key, sw_opt(argc, argv, key, fallback));
}

static inline long sw_opt_long(int argc, char** argv, const char* key, long fallback) {
    const char* text = sw_opt(argc, argv, key, NULL);
    if (!text) return fallback;
    char* end = NULL;
    const long value = strtol(text, &end, 10);
    CHECK(end != text && *end == '\0', "%s=%s: not an integer", key, text);
    return value;
}

static inline double sw_opt_double(int argc, char** argv, const char* key, double fallback) {
    const char* text = sw_opt(argc, argv, key, NULL);
    if (!text) return fallback;
    char* end = NULL;
    const double value = strtod(text, &end);
    CHECK(end != text && *end == '\0', "%s=%s: not a number", key, text);
    return value;
}

/* --- windows ------------------------------------------------------------------ */

typedef struct {
    const char* variant;      /* memory, storage, combined, mpiio */
    const char* dir;          /* where storage files go */
    double factor;            /* storage share of combined windows */
    const char* sync;         /* storage_alloc_sync */
    const char* access_style; /* access_style hint, or NULL */
    const char* order;        /* storage_alloc_order */
} sw_config;

static inline sw_config sw_config_from(int argc, char** argv, const char* default_variant) {
    sw_config c;
    c.variant = sw_opt(argc, argv, "--variant", default_variant);
    c.dir = sw_opt(argc, argv, "--dir", "/var/tmp");
    c.factor = sw_opt_double(argc, argv, "--factor", 0.5);
    c.sync = sw_opt(argc, argv, "--sync", "on_sync");
    c.access_style = sw_opt(argc, argv, "--access-style", NULL);
    c.order = sw_opt(argc, argv, "--order", "memory_first");
    CHECK(strcmp(c.variant, "memory") == 0 || strcmp(c.variant, "storage") == 0 || strcmp(c.variant, "combined") == 0 ||
              strcmp(c.variant, "mpiio") == 0 || strcmp(c.variant, "mpiio-coll") == 0 ||
              strcmp(c.variant, "memory-create") == 0 || strcmp(c.variant, "storage-remote") == 0,
          "--variant=%s: expected memory, memory-create, storage, storage-remote, combined, mpiio or mpiio-coll",
          c.variant);
    CHECK(c.factor >= 0 && c.factor <= 1, "--factor=%g: outside [0, 1]", c.factor);
    return c;
}

static inline int sw_is_storage(const sw_config* c) {
    return strcmp(c->variant, "storage") == 0 || strcmp(c->variant, "combined") == 0 ||
           strcmp(c->variant, "storage-remote") == 0;
}

/* The hints of the configured variant; name is the file name under --dir
 * (%r is expanded by libstrata-mpi). unlink: remove the file at free. */
static inline MPI_Info sw_hints(const sw_config* c, const char* name, int unlink) {
    MPI_Info info = MPI_INFO_NULL;
    if (!sw_is_storage(c)) return info;
    MPI_Info_create(&info);
    char path[4096], factor[32];
    snprintf(path, sizeof path, "%s/%s", c->dir, name);
    snprintf(factor, sizeof factor, "%.6f", strcmp(c->variant, "combined") == 0 ? c->factor : 1.0);
    MPI_Info_set(info, "alloc_type", "storage");
    MPI_Info_set(info, "storage_alloc_filename", path);
    MPI_Info_set(info, "storage_alloc_factor", factor);
    MPI_Info_set(info, "storage_alloc_order", c->order);
    MPI_Info_set(info, "storage_alloc_sync", c->sync);
    MPI_Info_set(info, "storage_alloc_unlink", unlink ? "true" : "false");
    if (c->access_style) MPI_Info_set(info, "access_style", c->access_style);
    if (strcmp(c->variant, "storage-remote") == 0) MPI_Info_set(info, "storage_alloc_remote_sync", "true");
    return info;
}

static inline void* sw_win_allocate(const sw_config* c, const char* name, int unlink, size_t bytes, int disp_unit,
                                    MPI_Win* win) {
    if (strcmp(c->variant, "memory-create") == 0) {
        /* Anonymous memory behind MPI_Win_create: the MPI path a storage
         * window takes, so a comparison isolates page cache vs anonymous memory.
         * The memory is leaked deliberately at free (a benchmark process ends soon after). */
        void* memory = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
        CHECK(memory != NULL, "cannot allocate %zu bytes", bytes);
        memset(memory, 0, bytes);
        CHECK_MPI(MPI_Win_create(memory, (MPI_Aint)bytes, disp_unit, MPI_INFO_NULL, MPI_COMM_WORLD, win));
        return memory;
    }
    MPI_Info info = sw_hints(c, name, unlink);
    void* base = NULL;
    CHECK_MPI(MPI_Win_allocate((MPI_Aint)bytes, disp_unit, info, MPI_COMM_WORLD, &base, win));
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    return base;
}

/* MPI_Win_sync inside a lock of this rank's own window: for storage windows
 * it returns once the window's dirty pages are durable. */
static inline void sw_win_sync_self(MPI_Win win) {
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, sw_rank(), 0, win));
    CHECK_MPI(MPI_Win_sync(win));
    CHECK_MPI(MPI_Win_unlock(sw_rank(), win));
}

/* --- output ---------------------------------------------------------------------- */

/* Appends one JSON object (the caller's fields, no braces) as a line to
 * --json FILE (rank 0 only) and echoes it to stdout. */
static inline void sw_emit(int argc, char** argv, const char* format, ...) {
    if (sw_rank() != 0) return;
    char line[8192];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    printf("{%s}\n", line);
    fflush(stdout);
    const char* path = sw_opt(argc, argv, "--json", NULL);
    if (!path) return;
    FILE* out = fopen(path, "a");
    CHECK(out != NULL, "--json=%s: cannot open: %s", path, strerror(errno));
    fprintf(out, "{%s}\n", line);
    fclose(out);
}

/* --- the end of a job ------------------------------------------------------------ */

enum { SW_FINALIZE_QUIET_US = 200000, SW_FINALIZE_TIMEOUT_S = 5 };

static void sw_finalize_timed_out(int signal) {
    (void)signal;
    static const char message[] =
        "warning: MPI_Finalize did not return within 5 s after every rank finished (the MPICH 4.0.2 ch4:ucx "
        "finalize deadlock across nodes); the job's work is complete, exiting with status 0\n";
    const ssize_t written = write(STDERR_FILENO, message, sizeof message - 1); /* async-signal-safe */
    (void)written;
    _exit(0);
}

/* MPI_Finalize once every rank's work is done. Across nodes (ranks that share no memory: the
 * emulated nodes, MPIR_CVAR_NOLOCAL) MPICH 4.0.2's ch4:ucx finalize can deadlock over UCX's TCP
 * transport: a rank whose disconnects completed blocks in the PMI barrier and no longer progresses a
 * peer's disconnect (fixed upstream by MPICH PR #6596; docs/video.md, "What MPICH 4.0.2 does", item 1).
 * As apps/video does: a barrier, 200 ms of quiet (which made it rare there), then MPI_Finalize under
 * a 5 s watchdog that ends the rank with success and a warning, since the barrier showed every rank
 * done; mpiexec may still fail then, and bench/storage-windows/run accepts such a job and counts it.
 * On one node (shared memory, no UCX traffic) it never hung: MPI_Finalize alone. */
static inline void sw_finalize(void) {
    MPI_Comm node = MPI_COMM_NULL;
    int local = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    if (local < sw_size()) {
        MPI_Barrier(MPI_COMM_WORLD);
        /* The quiet drives MPI progress (a sleeping rank would leave its peers' last protocol
         * messages unanswered, which is what the quiet is for). */
        const double until = MPI_Wtime() + SW_FINALIZE_QUIET_US * 1e-6;
        while (MPI_Wtime() < until) {
            int flag = 0;
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        }
        signal(SIGUSR1, SIG_IGN); /* hydra's notice that a peer's watchdog ended it: our own ends us */
        signal(SIGALRM, sw_finalize_timed_out);
        alarm(SW_FINALIZE_TIMEOUT_S);
    }
    MPI_Finalize();
    alarm(0);
}

/* --- small utilities ------------------------------------------------------------ */

/* splitmix64: a fast, seedable generator with good bits for hashing too. */
static inline uint64_t sw_mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline uint64_t sw_next(uint64_t* state) {
    *state += 0x9e3779b97f4a7c15ULL;
    return sw_mix(*state - 0x9e3779b97f4a7c15ULL);
}

/* Drops a file's clean pages from the page cache, so a restart reads the
 * device, not memory (the file must have been synced). */
static inline void sw_drop_cache(const char* path) {
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

#endif /* STRATA_BENCH_SW_H */
