/* SPDX-License-Identifier: MIT */
/* The physical limits the storage-windows results are read against:
 * memcpy bandwidth (what a memory window's put/get can reach at best) and
 * the disk's O_DIRECT write and read bandwidth in --dir (what a flush of
 * dirty pages can reach at best). Medians of --repeats runs, as one JSON line.
 *
 * Usage: sw-limits [--memcpy-size 512M] [--disk-size 1G] [--repeats 5]
 *                  [--dir /var/tmp] [--json FILE] */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { CHUNK = 8 << 20, ALIGN = 4096, MAX_REPEATS = 64 };

static const char* opt(int argc, char** argv, const char* key, const char* fallback) {
    for (int i = 1; i + 1 < argc; ++i) {
        if (strcmp(argv[i], key) == 0) return argv[i + 1];
    }
    return fallback;
}

static size_t parse_size(const char* text) {
    char* end = NULL;
    double v = strtod(text, &end);
    if (*end == 'K') v *= 1024;
    if (*end == 'M') v *= 1024 * 1024;
    if (*end == 'G') v *= 1024.0 * 1024 * 1024;
    return (size_t)v;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

static double median(double* v, int n) {
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void fail(const char* what) {
    fprintf(stderr, "sw-limits: %s: %s\n", what, strerror(errno));
    exit(1);
}

int main(int argc, char** argv) {
    const size_t copy_size = parse_size(opt(argc, argv, "--memcpy-size", "512M"));
    const size_t disk_size = parse_size(opt(argc, argv, "--disk-size", "1G")) / CHUNK * CHUNK;
    int repeats = atoi(opt(argc, argv, "--repeats", "5"));
    if (repeats < 1 || repeats > MAX_REPEATS) repeats = 5;
    const char* dir = opt(argc, argv, "--dir", "/var/tmp");

    unsigned char* src = aligned_alloc(ALIGN, copy_size);
    unsigned char* dst = aligned_alloc(ALIGN, copy_size);
    if (!src || !dst) fail("memcpy buffers");
    memset(src, 1, copy_size);
    memset(dst, 2, copy_size);
    memcpy(dst, src, copy_size);
    double copy[MAX_REPEATS], write_bw[MAX_REPEATS], read_bw[MAX_REPEATS];
    unsigned sink = 0;
    for (int r = 0; r < repeats; ++r) {
        const double t0 = now();
        memcpy(dst, src, copy_size);
        copy[r] = (double)copy_size / 1e9 / (now() - t0);
        sink += dst[copy_size / 2 + (size_t)r];
    }
    free(src);
    free(dst);

    char path[4096];
    snprintf(path, sizeof path, "%s/sw-limits-%d.bin", dir, (int)getpid());
    const int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);
    if (fd < 0) fail(path);
    unlink(path); /* the data stays reachable through fd; nothing is left on exit */
    uint64_t* buffer = aligned_alloc(ALIGN, CHUNK);
    if (!buffer) fail("disk buffer");
    uint64_t state = 42; /* random bytes: a virtual disk cannot compress or skip them */
    for (size_t i = 0; i < CHUNK / sizeof *buffer; ++i) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        buffer[i] = state;
    }
    for (int pass = -1; pass < repeats; ++pass) { /* pass -1 allocates the blocks */
        double t0 = now();
        for (size_t done = 0; done < disk_size; done += CHUNK) {
            if (pwrite(fd, buffer, CHUNK, (off_t)done) != CHUNK) fail("O_DIRECT pwrite");
        }
        if (fdatasync(fd) != 0) fail("fdatasync");
        if (pass < 0) continue;
        write_bw[pass] = (double)disk_size / 1e9 / (now() - t0);
        t0 = now();
        for (size_t done = 0; done < disk_size; done += CHUNK) {
            if (pread(fd, buffer, CHUNK, (off_t)done) != CHUNK) fail("O_DIRECT pread");
        }
        read_bw[pass] = (double)disk_size / 1e9 / (now() - t0);
    }
    close(fd);
    free(buffer);

    char line[1024];
    snprintf(line, sizeof line,
             "{\"app\":\"limits\",\"memcpy_bytes\":%zu,\"memcpy_gbps\":%.3f,\"disk_bytes\":%zu,"
             "\"disk_write_gbps\":%.3f,\"disk_read_gbps\":%.3f,\"repeats\":%d,\"dir\":\"%s\",\"sink\":%u}",
             copy_size, median(copy, repeats), disk_size, median(write_bw, repeats), median(read_bw, repeats), repeats,
             dir, sink % 2);
    puts(line);
    const char* json = opt(argc, argv, "--json", NULL);
    if (json) {
        FILE* out = fopen(json, "a");
        if (!out) fail(json);
        fprintf(out, "%s\n", line);
        fclose(out);
    }
    return 0;
}
