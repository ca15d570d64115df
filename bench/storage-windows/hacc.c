/* SPDX-License-Identifier: MIT */
/* HACC-IO-like checkpoint/restart (paper §3.5.1): --particles per rank, with
 * the kernel's nine fields (xx, yy, zz, vx, vy, vz, phi as float, pid as
 * int64, mask as uint16), checkpointed to ONE shared file, each rank's fields
 * in its own page-aligned block. Variants:
 *   storage     a storage window per rank on the shared file at the rank's
 *               offset; checkpoint = stores into the window + MPI_Win_sync
 *   mpiio       MPI_File_write_at per field (independent) + MPI_File_sync
 *   mpiio-coll  MPI_File_write_at_all per field (collective) + MPI_File_sync
 * Restart: the file's pages are dropped from the page cache, a fresh window
 * (or file handle) reads everything back and every value is verified.
 * Hints of the storage windows: --access-style for the checkpoint window,
 * --restart-access-style for the restart window (default: the same), as a
 * program would pass write_once and read_once. The record also gives rank 0's
 * phases: open (window or file), copy (stores or write/read calls), sync
 * (MPI_Win_sync / MPI_File_sync) and close (MPI_Win_free / MPI_File_close),
 * and each phase's maximum over the ranks (*_phases_slowest).
 *
 * Usage: hacc --variant storage|mpiio|mpiio-coll [--particles 2M]
 *             [--access-style S] [--restart-access-style S]
 *             [--dir DIR] [--json FILE] [--repeat N] [--label L] */
#include "sw.h"

enum { FLOATS = 7, FIELDS = 9 };
static const char* const field_names[FIELDS] = {"xx", "yy", "zz", "vx", "vy", "vz", "phi", "pid", "mask"};

typedef struct {
    size_t n;
    float* f[FLOATS];
    int64_t* pid;
    uint16_t* mask;
} particles;

static size_t field_size(int field, size_t n) {
    return n * (field < FLOATS ? sizeof(float) : field == 7 ? sizeof(int64_t) : sizeof(uint16_t));
}

static void* field_data(particles* p, int field) {
    return field < FLOATS ? (void*)p->f[field] : field == 7 ? (void*)p->pid : (void*)p->mask;
}

static float expected_float(int field, int64_t id) {
    return (float)(id % 1000003) * 0.25f + (float)field;
}

static void allocate(particles* p, size_t n) {
    p->n = n;
    for (int f = 0; f < FLOATS; ++f) p->f[f] = malloc(n * sizeof(float));
    p->pid = malloc(n * sizeof(int64_t));
    p->mask = malloc(n * sizeof(uint16_t));
    CHECK(p->pid && p->mask && p->f[FLOATS - 1], "cannot allocate %zu particles", n);
}

static void fill(particles* p) {
    const int64_t first = (int64_t)sw_rank() * (int64_t)p->n;
    for (size_t i = 0; i < p->n; ++i) {
        const int64_t id = first + (int64_t)i;
        for (int f = 0; f < FLOATS; ++f) p->f[f][i] = expected_float(f, id);
        p->pid[i] = id;
        p->mask[i] = (uint16_t)(id * 7);
    }
}

static void verify(const particles* p) {
    const int64_t first = (int64_t)sw_rank() * (int64_t)p->n;
    for (size_t i = 0; i < p->n; ++i) {
        const int64_t id = first + (int64_t)i;
        for (int f = 0; f < FLOATS; ++f) {
            CHECK(p->f[f][i] == expected_float(f, id), "particle %zu field %s is %g, expected %g", i, field_names[f],
                  p->f[f][i], expected_float(f, id));
        }
        CHECK(p->pid[i] == id, "particle %zu pid is %" PRId64, i, p->pid[i]);
        CHECK(p->mask[i] == (uint16_t)(id * 7), "particle %zu mask is %u", i, p->mask[i]);
    }
}

static size_t block_size(size_t n) {
    size_t bytes = 0;
    for (int f = 0; f < FIELDS; ++f) bytes += field_size(f, n);
    return (bytes + 4095) / 4096 * 4096;
}

/* Copies between the particles and a rank block (to_block: checkpoint). */
static void copy_block(particles* p, unsigned char* block, int to_block) {
    size_t at = 0;
    for (int f = 0; f < FIELDS; ++f) {
        const size_t bytes = field_size(f, p->n);
        if (to_block) {
            memcpy(block + at, field_data(p, f), bytes);
        } else {
            memcpy(field_data(p, f), block + at, bytes);
        }
        at += bytes;
    }
}

static MPI_Win open_window(const sw_config* c, const char* access_style, const char* path, size_t block,
                           unsigned char** base) {
    MPI_Info info;
    MPI_Info_create(&info);
    char offset[32];
    snprintf(offset, sizeof offset, "%zu", (size_t)sw_rank() * block);
    MPI_Info_set(info, "alloc_type", "storage");
    MPI_Info_set(info, "storage_alloc_filename", path);
    MPI_Info_set(info, "storage_alloc_offset", offset);
    MPI_Info_set(info, "storage_alloc_sync", c->sync);
    if (access_style) MPI_Info_set(info, "access_style", access_style);
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate((MPI_Aint)block, 1, info, MPI_COMM_WORLD, base, &win));
    MPI_Info_free(&info);
    return win;
}

static void file_io(particles* p, MPI_File file, size_t block, int collective, int writing) {
    MPI_Offset at = (MPI_Offset)((size_t)sw_rank() * block);
    for (int f = 0; f < FIELDS; ++f) {
        const int bytes = (int)field_size(f, p->n);
        void* data = field_data(p, f);
        if (writing && collective) {
            CHECK_MPI(MPI_File_write_at_all(file, at, data, bytes, MPI_BYTE, MPI_STATUS_IGNORE));
        } else if (writing) {
            CHECK_MPI(MPI_File_write_at(file, at, data, bytes, MPI_BYTE, MPI_STATUS_IGNORE));
        } else if (collective) {
            CHECK_MPI(MPI_File_read_at_all(file, at, data, bytes, MPI_BYTE, MPI_STATUS_IGNORE));
        } else {
            CHECK_MPI(MPI_File_read_at(file, at, data, bytes, MPI_BYTE, MPI_STATUS_IGNORE));
        }
        at += bytes;
    }
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const sw_config config = sw_config_from(argc, argv, "storage");
    const int windows = strcmp(config.variant, "storage") == 0;
    const int collective = strcmp(config.variant, "mpiio-coll") == 0;
    CHECK(windows || strncmp(config.variant, "mpiio", 5) == 0, "--variant=%s: expected storage, mpiio or mpiio-coll",
          config.variant);
    const size_t n = sw_opt_size(argc, argv, "--particles", "2M");
    const size_t block = block_size(n);
    char path[4096];
    snprintf(path, sizeof path, "%s/hacc-%s.dat", config.dir, config.variant);

    particles p;
    allocate(&p, n);
    fill(&p);

    const char* restart_style = sw_opt(argc, argv, "--restart-access-style", config.access_style);
    double phase[2][4]; /* checkpoint, restart: open, copy, sync, close */
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    if (windows) {
        unsigned char* base = NULL;
        MPI_Win win = open_window(&config, config.access_style, path, block, &base);
        phase[0][0] = MPI_Wtime();
        copy_block(&p, base, 1);
        phase[0][1] = MPI_Wtime();
        sw_win_sync_self(win);
        phase[0][2] = MPI_Wtime();
        CHECK_MPI(MPI_Win_free(&win));
    } else {
        MPI_File file;
        CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &file));
        phase[0][0] = MPI_Wtime();
        file_io(&p, file, block, collective, 1);
        phase[0][1] = MPI_Wtime();
        CHECK_MPI(MPI_File_sync(file));
        phase[0][2] = MPI_Wtime();
        CHECK_MPI(MPI_File_close(&file));
    }
    phase[0][3] = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    const double checkpoint = MPI_Wtime() - start;
    for (int i = 3; i > 0; --i) phase[0][i] -= phase[0][i - 1];
    phase[0][0] -= start;

    /* Restart: forget the particles and the page cache, read, verify. */
    for (int f = 0; f < FIELDS; ++f) memset(field_data(&p, f), 0, field_size(f, n));
    if (sw_rank() == 0) sw_drop_cache(path);
    MPI_Barrier(MPI_COMM_WORLD);
    start = MPI_Wtime();
    if (windows) {
        unsigned char* base = NULL;
        MPI_Win win = open_window(&config, restart_style, path, block, &base);
        phase[1][0] = MPI_Wtime();
        copy_block(&p, base, 0);
        phase[1][1] = phase[1][2] = MPI_Wtime();
        CHECK_MPI(MPI_Win_free(&win));
    } else {
        MPI_File file;
        CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &file));
        phase[1][0] = MPI_Wtime();
        file_io(&p, file, block, collective, 0);
        phase[1][1] = phase[1][2] = MPI_Wtime();
        CHECK_MPI(MPI_File_close(&file));
    }
    phase[1][3] = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    const double restart = MPI_Wtime() - start;
    for (int i = 3; i > 0; --i) phase[1][i] -= phase[1][i - 1];
    phase[1][0] -= start;
    verify(&p);
    double slowest[2][4]; /* each phase's maximum over the ranks */
    MPI_Reduce(phase, slowest, 8, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (sw_rank() == 0) unlink(path);

    const double bytes = (double)block * sw_size();
    sw_emit(argc, argv,
            "\"app\":\"hacc\",\"variant\":\"%s\",\"label\":\"%s\",\"access_style\":\"%s\","
            "\"restart_access_style\":\"%s\",\"repeat\":%ld,\"ranks\":%d,\"particles_per_rank\":%zu,"
            "\"file_bytes\":%.0f,\"checkpoint_seconds\":%.6f,\"restart_seconds\":%.6f,\"checkpoint_gbps\":%.4f,"
            "\"restart_gbps\":%.4f,\"checkpoint_phases\":{\"open\":%.6f,\"copy\":%.6f,\"sync\":%.6f,\"close\":%.6f},"
            "\"restart_phases\":{\"open\":%.6f,\"copy\":%.6f,\"close\":%.6f},"
            "\"checkpoint_phases_slowest\":{\"open\":%.6f,\"copy\":%.6f,\"sync\":%.6f,\"close\":%.6f},"
            "\"restart_phases_slowest\":{\"open\":%.6f,\"copy\":%.6f,\"close\":%.6f},\"verified\":true",
            config.variant, sw_opt(argc, argv, "--label", config.variant),
            windows && config.access_style ? config.access_style : "", windows && restart_style ? restart_style : "",
            sw_opt_long(argc, argv, "--repeat", 0), sw_size(), n, bytes, checkpoint, restart, bytes / checkpoint / 1e9,
            bytes / restart / 1e9, phase[0][0], phase[0][1], phase[0][2], phase[0][3], phase[1][0], phase[1][1],
            phase[1][3], slowest[0][0], slowest[0][1], slowest[0][2], slowest[0][3], slowest[1][0], slowest[1][1],
            slowest[1][3]);
    for (int f = 0; f < FLOATS; ++f) free(p.f[f]);
    free(p.pid);
    free(p.mask);
    sw_finalize();
    return 0;
}
