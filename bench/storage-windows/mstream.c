/* SPDX-License-Identifier: MIT */
/* mSTREAM (paper §3.2): each rank locks its own window exclusively and
 * alternates MPI_Put and MPI_Get of one segment (a local flush after each), so
 * half the operations write and half read. Kernels:
 *   SEQ  segment i (stride = segment; no reuse)
 *   PAD  stride 2 segments, wrapping onto the odd segments
 *   RND  pseudo-random segment (fixed seed)
 *   MIX  the first half of the operations RND over the first half of the
 *        window, the second half PAD over the second half
 * One cold iteration, then --iters timed iterations; the timer stops after
 * MPI_Win_sync, so flushing (of everything changed since the kernel began,
 * as in the prototype) is included.
 * Bandwidth = window size x iterations / time. The mpiio variant does the
 * same with MPI_File_write_at / read_at on a file and ends with MPI_File_sync.
 *
 * Every window (and the mpiio file) is written whole once when it is set up,
 * untimed, and made durable (MPI_Win_sync / MPI_File_sync), as STREAM
 * initializes its arrays: a page of anonymous memory that was never written
 * is the kernel's shared zero page, so reading it copies one cache-resident
 * 4 KiB page instead of memory (issue 15: that made the memory window up to
 * 1.5x faster on the kernels that read segments they never write, SEQ and
 * PAD). memory-lazy is the memory window without that first write — the
 * baseline of the runs before it, kept to show the difference.
 *
 * memory-create is anonymous memory behind MPI_Win_create: the MPI path of a
 * storage window without the storage, so memory-create / memory is what a
 * storage window could reach if storage cost nothing.
 *
 * Usage: mstream --variants memory,memory-lazy,memory-create,storage,storage:write_mostly,combined,mpiio [--size 1G]
 *        [--segment 16M] [--iters 10] [--dir DIR] [--json FILE] [--repeat N]
 *        [--factor 0.5] [--sync on_sync|async] [--access-style S]
 * (variant:style adds access_style=style; the variants take turns kernel by
 * kernel). Every segment written in the last iteration is verified afterwards. */
#include "sw.h"

enum kernel { SEQ, PAD, RND, MIX, KERNELS };
static const char* const kernel_names[KERNELS] = {"SEQ", "PAD", "RND", "MIX"};

static size_t pad_index(size_t op, size_t first, size_t count) {
    const size_t step = 2 * op;
    return first + (step % count + (step / count) % 2) % count;
}

/* Segment of operation op (0 <= op < nseg) of a kernel. */
static size_t segment_of(enum kernel k, size_t op, size_t nseg, uint64_t* rng) {
    switch (k) {
        case SEQ: return op;
        case PAD: return pad_index(op, 0, nseg);
        case RND: return sw_next(rng) % nseg;
        case MIX: {
            const size_t half = nseg / 2;
            if (op < half) return sw_next(rng) % half;
            return pad_index(op - half, half, nseg - half);
        }
        default: return 0;
    }
}

typedef struct {
    sw_config config;
    size_t size, segment, nseg;
    long iters;
    MPI_Win win;
    unsigned char* base;
    MPI_File file;
    unsigned char *put_buf, *get_buf;
    unsigned char* written; /* per segment: tag of the last put, 0 = none */
} bench;

static int is_mpiio(const bench* b) {
    return strcmp(b->config.variant, "mpiio") == 0;
}

/* memory-lazy: the memory window whose pages are not written before the kernels. */
static int is_lazy(const bench* b) {
    return strcmp(b->config.variant, "memory-lazy") == 0;
}

static void put_segment(bench* b, size_t seg) {
    const MPI_Aint disp = (MPI_Aint)(seg * b->segment);
    if (is_mpiio(b)) {
        CHECK_MPI(MPI_File_write_at(b->file, disp, b->put_buf, (int)b->segment, MPI_BYTE, MPI_STATUS_IGNORE));
    } else {
        CHECK_MPI(MPI_Put(b->put_buf, (int)b->segment, MPI_BYTE, sw_rank(), disp, (int)b->segment, MPI_BYTE, b->win));
        CHECK_MPI(MPI_Win_flush_local(sw_rank(), b->win));
    }
    b->written[seg] = b->put_buf[0];
}

static void get_segment(bench* b, size_t seg) {
    const MPI_Aint disp = (MPI_Aint)(seg * b->segment);
    if (is_mpiio(b)) {
        CHECK_MPI(MPI_File_read_at(b->file, disp, b->get_buf, (int)b->segment, MPI_BYTE, MPI_STATUS_IGNORE));
    } else {
        CHECK_MPI(MPI_Get(b->get_buf, (int)b->segment, MPI_BYTE, sw_rank(), disp, (int)b->segment, MPI_BYTE, b->win));
        CHECK_MPI(MPI_Win_flush_local(sw_rank(), b->win));
    }
}

static void iteration(bench* b, enum kernel k, unsigned char tag) {
    memset(b->put_buf, tag, b->segment);
    uint64_t rng = 0x5eed0000u + (uint64_t)k;
    for (size_t op = 0; op < b->nseg; ++op) {
        const size_t seg = segment_of(k, op, b->nseg, &rng);
        if (op % 2 == 0) {
            put_segment(b, seg);
        } else {
            get_segment(b, seg);
        }
    }
}

static void make_durable(bench* b) {
    if (is_mpiio(b)) {
        CHECK_MPI(MPI_File_sync(b->file));
    } else {
        CHECK_MPI(MPI_Win_sync(b->win));
    }
}

/* Writes every segment once through the variant's own write path and makes
 * it durable, before any kernel and untimed: afterwards every page of the
 * window is real memory (or page cache), as in a program whose data exists. */
static void write_whole(bench* b) {
    memset(b->put_buf, 0xa5, b->segment);
    if (!is_mpiio(b)) CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, sw_rank(), 0, b->win));
    for (size_t seg = 0; seg < b->nseg; ++seg) {
        put_segment(b, seg);
    }
    make_durable(b);
    if (!is_mpiio(b)) CHECK_MPI(MPI_Win_unlock(sw_rank(), b->win));
}

static void verify(bench* b, enum kernel k) {
    unsigned char* check = b->get_buf;
    for (size_t seg = 0; seg < b->nseg; ++seg) {
        if (!b->written[seg]) continue;
        if (is_mpiio(b)) {
            CHECK_MPI(MPI_File_read_at(b->file, (MPI_Offset)(seg * b->segment), check, (int)b->segment, MPI_BYTE,
                                       MPI_STATUS_IGNORE));
        } else {
            check = b->base + seg * b->segment;
        }
        for (size_t i = 0; i < b->segment; i += 8) {
            CHECK(check[i] == b->written[seg], "%s: segment %zu byte %zu is %u, expected %u", kernel_names[k], seg, i,
                  check[i], b->written[seg]);
        }
    }
}

static void run_kernel(bench* b, enum kernel k, int argc, char** argv) {
    memset(b->written, 0, b->nseg);
    if (!is_mpiio(b)) CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, sw_rank(), 0, b->win));
    iteration(b, k, 1); /* cold: faults the window in; its changes are flushed with the timed ones */
    const double start = MPI_Wtime();
    for (long it = 0; it < b->iters; ++it) {
        iteration(b, k, (unsigned char)(2 + it % 250));
    }
    const double flush_start = MPI_Wtime();
    make_durable(b);
    const double end = MPI_Wtime();
    if (!is_mpiio(b)) CHECK_MPI(MPI_Win_unlock(sw_rank(), b->win));
    verify(b, k);

    double times[2] = {end - start, end - flush_start}, worst[2];
    MPI_Reduce(times, worst, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    const double bytes = (double)b->size * (double)b->iters * sw_size();
    sw_emit(argc, argv,
            "\"app\":\"mstream\",\"variant\":\"%s\",\"kernel\":\"%s\",\"repeat\":%ld,\"ranks\":%d,"
            "\"window_bytes\":%zu,\"segment_bytes\":%zu,\"iters\":%ld,\"factor\":%g,\"sync\":\"%s\","
            "\"access_style\":\"%s\",\"written_first\":%s,\"seconds\":%.6f,\"flush_seconds\":%.6f,\"gbps\":%.4f,"
            "\"flush_share\":%.4f",
            b->config.variant, kernel_names[k], sw_opt_long(argc, argv, "--repeat", 0), sw_size(), b->size, b->segment,
            b->iters, strcmp(b->config.variant, "combined") == 0 ? b->config.factor : 1.0, b->config.sync,
            b->config.access_style ? b->config.access_style : "", is_lazy(b) ? "false" : "true", worst[0], worst[1],
            bytes / worst[0] / 1e9, worst[1] / worst[0]);
}

/* One variant of --variants: "storage" or "storage:sequential" (with an access_style hint). */
static void setup(bench* b, int index, const char* spec, int argc, char** argv) {
    b->config = sw_config_from(argc, argv, "memory");
    char* variant = strdup(spec);
    char* style = strchr(variant, ':');
    if (style) {
        *style++ = '\0';
        b->config.access_style = style;
    }
    b->config.variant = variant;
    CHECK(strcmp(variant, "memory") == 0 || is_lazy(b) || strcmp(variant, "memory-create") == 0 ||
              sw_is_storage(&b->config) || is_mpiio(b),
          "--variants: %s is not memory, memory-lazy, memory-create, storage, combined or mpiio", variant);
    b->written = calloc(b->nseg, 1);
    CHECK(b->written, "cannot allocate");
    char name[64];
    snprintf(name, sizeof name, "mstream-%d-%%r.dat", index);
    if (is_mpiio(b)) {
        char path[4096];
        snprintf(path, sizeof path, "%s/mstream-%d-%d.dat", b->config.dir, index, sw_rank());
        CHECK_MPI(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                                MPI_INFO_NULL, &b->file));
        CHECK_MPI(MPI_File_preallocate(b->file, (MPI_Offset)b->size));
    } else {
        b->base = sw_win_allocate(&b->config, name, 1, b->size, 1, &b->win);
    }
    if (!is_lazy(b)) write_whole(b);
}

enum { MAX_VARIANTS = 10 };

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    bench shared = {0};
    shared.size = sw_opt_size(argc, argv, "--size", "1G");
    shared.segment = sw_opt_size(argc, argv, "--segment", "16M");
    shared.iters = sw_opt_long(argc, argv, "--iters", 10);
    CHECK(shared.segment > 0 && shared.segment <= (1u << 30) && shared.size % shared.segment == 0 &&
              shared.size / shared.segment >= 2,
          "--size=%zu --segment=%zu: the window must hold at least two whole segments", shared.size, shared.segment);
    shared.nseg = shared.size / shared.segment;
    shared.put_buf = aligned_alloc(4096, shared.segment);
    shared.get_buf = aligned_alloc(4096, shared.segment);
    CHECK(shared.put_buf && shared.get_buf, "cannot allocate 2 x %zu bytes of buffers", shared.segment);

    /* All variants live side by side and take turns kernel by kernel, so
     * the machine's noise hits them alike. */
    bench variants[MAX_VARIANTS];
    int count = 0;
    char list[1024];
    snprintf(list, sizeof list, "%s", sw_opt(argc, argv, "--variants", sw_opt(argc, argv, "--variant", "memory")));
    for (char* spec = strtok(list, ","); spec && count < MAX_VARIANTS; spec = strtok(NULL, ",")) {
        variants[count] = shared;
        setup(&variants[count], count, spec, argc, argv);
        ++count;
    }
    const long repeat = sw_opt_long(argc, argv, "--repeat", 0);
    for (int k = 0; k < KERNELS; ++k) {
        for (int v = 0; v < count; ++v) {
            run_kernel(&variants[(v + k + (int)repeat) % count], (enum kernel)k, argc, argv);
        }
    }
    for (int v = 0; v < count; ++v) {
        if (is_mpiio(&variants[v])) {
            CHECK_MPI(MPI_File_close(&variants[v].file));
        } else {
            CHECK_MPI(MPI_Win_free(&variants[v].win));
        }
        free(variants[v].written);
    }
    free(shared.put_buf);
    free(shared.get_buf);
    MPI_Finalize();
    return 0;
}
