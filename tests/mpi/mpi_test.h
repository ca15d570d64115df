/* SPDX-License-Identifier: MIT */
/* Helpers for the MPI storage window tests: exact checks that abort the job
 * on the first mismatch (CHECK, CHECK_MPI: tests/support/mpi_check.h), a
 * per-run directory, and views of /proc.
 * Include first (it defines _GNU_SOURCE). Header-only: every test is one C file. */
#ifndef STRATA_MPI_TEST_H
#define STRATA_MPI_TEST_H

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpi_check.h"

/* An info object from key, value pairs ending with NULL. */
static inline MPI_Info make_info(const char* key, ...) {
    MPI_Info info;
    MPI_Info_create(&info);
    va_list args;
    va_start(args, key);
    for (const char* k = key; k != NULL; k = va_arg(args, const char*)) {
        const char* v = va_arg(args, const char*);
        MPI_Info_set(info, k, v);
    }
    va_end(args);
    return info;
}

/* A fresh directory for this run, made by rank 0 and known to every rank of comm. */
static inline void make_test_dir(MPI_Comm comm, const char* name, char* out, size_t size) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        snprintf(out, size, "/tmp/strata-mpi-%s-XXXXXX", name);
        CHECK(mkdtemp(out) != NULL, "mkdtemp: %s", strerror(errno));
    }
    MPI_Bcast(out, (int)size, MPI_CHAR, 0, comm);
}

/* Number of regular files in dir. */
static inline int count_files(const char* dir) {
    DIR* d = opendir(dir);
    CHECK(d != NULL, "opendir %s: %s", dir, strerror(errno));
    int n = 0;
    for (struct dirent* e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Rank 0 removes every file of dir and dir itself (after all ranks are done with it). */
static inline void remove_test_dir(MPI_Comm comm, const char* dir) {
    int rank;
    MPI_Barrier(comm);
    MPI_Comm_rank(comm, &rank);
    if (rank != 0) return;
    DIR* d = opendir(dir);
    if (d == NULL) return;
    char path[4096];
    for (struct dirent* e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    CHECK(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
}

static inline int file_exists(const char* path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static inline long long file_size(const char* path) {
    struct stat st;
    CHECK(stat(path, &st) == 0, "stat %s: %s", path, strerror(errno));
    return (long long)st.st_size;
}

/* Reads exactly length bytes at offset of path (through the page cache). */
static inline void read_file(const char* path, long long offset, void* buffer, size_t length) {
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    ssize_t got = pread(fd, buffer, length, (off_t)offset);
    CHECK(got == (ssize_t)length, "pread %s: got %zd of %zu bytes", path, got, length);
    close(fd);
}

static inline void write_file(const char* path, const void* data, size_t length) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    CHECK(write(fd, data, length) == (ssize_t)length, "write %s", path);
    CHECK(fsync(fd) == 0, "fsync %s", path);
    close(fd);
}

static inline int count_open_fds(void) {
    DIR* d = opendir("/proc/self/fd");
    CHECK(d != NULL, "opendir /proc/self/fd");
    int n = 0;
    for (struct dirent* e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the descriptor of the DIR itself */
}

/* One line of /proc/self/maps. */
struct mapping {
    uintptr_t start, end;
    char perms[5];
    char path[512]; /* empty for anonymous memory */
};

/* The mappings that intersect [address, address+length), in address order. */
static inline int find_mappings(const void* address, size_t length, struct mapping* out, int max) {
    FILE* maps = fopen("/proc/self/maps", "r");
    CHECK(maps != NULL, "fopen /proc/self/maps");
    uintptr_t lo = (uintptr_t)address, hi = lo + length;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, maps) != NULL && n < max) {
        struct mapping m = {0};
        unsigned long long offset, inode;
        char device[32];
        int consumed = 0;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s %llx %31s %llu %n", &m.start, &m.end, m.perms, &offset, device,
                   &inode, &consumed) < 6)
            continue;
        if (m.end <= lo || m.start >= hi) continue;
        snprintf(m.path, sizeof m.path, "%s", line + consumed);
        m.path[strcspn(m.path, "\n")] = '\0';
        out[n++] = m;
    }
    fclose(maps);
    return n;
}

/* Dirty bytes (Shared_Dirty + Private_Dirty, from /proc/self/smaps) of the
 * mappings intersecting [address, address+length). */
static inline size_t dirty_bytes(const void* address, size_t length) {
    FILE* smaps = fopen("/proc/self/smaps", "r");
    CHECK(smaps != NULL, "fopen /proc/self/smaps");
    uintptr_t lo = (uintptr_t)address, hi = lo + length;
    char line[1024];
    int inside = 0;
    size_t kib = 0;
    while (fgets(line, sizeof line, smaps) != NULL) {
        uintptr_t start, end;
        char perms[8];
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &start, &end, perms) == 3) {
            inside = start < hi && end > lo;
            continue;
        }
        unsigned long long value;
        if (inside &&
            (sscanf(line, "Shared_Dirty: %llu kB", &value) == 1 || sscanf(line, "Private_Dirty: %llu kB", &value) == 1))
            kib += value;
    }
    fclose(smaps);
    return kib * 1024;
}

/* The VmFlags line of the mapping holding address ("rd wr sh mr mw me ms rr ..."). */
static inline void vm_flags(const void* address, char* out, size_t size) {
    FILE* smaps = fopen("/proc/self/smaps", "r");
    CHECK(smaps != NULL, "fopen /proc/self/smaps");
    const uintptr_t a = (uintptr_t)address;
    char line[1024];
    int inside = 0;
    out[0] = '\0';
    while (fgets(line, sizeof line, smaps) != NULL) {
        uintptr_t start, end;
        char perms[8];
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &start, &end, perms) == 3) {
            inside = start <= a && a < end;
        } else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            line[strcspn(line, "\n")] = '\0';
            const size_t length = strlen(line + 8) < size - 1 ? strlen(line + 8) : size - 1;
            memcpy(out, line + 8, length);
            out[length] = '\0';
            break;
        }
    }
    fclose(smaps);
}

/* Every rank of comm must hold the same text. */
static inline void check_same_text(MPI_Comm comm, const char* text) {
    int size;
    MPI_Comm_size(comm, &size);
    char mine[MPI_MAX_ERROR_STRING] = "";
    snprintf(mine, sizeof mine, "%s", text);
    char* all = malloc((size_t)size * sizeof mine);
    CHECK(all != NULL, "malloc");
    MPI_Allgather(mine, sizeof mine, MPI_CHAR, all, sizeof mine, MPI_CHAR, comm);
    for (int r = 0; r < size; ++r)
        CHECK(strcmp(all + (size_t)r * sizeof mine, mine) == 0, "rank %d has \"%s\", this rank \"%s\"", r,
              all + (size_t)r * sizeof mine, mine);
    free(all);
}

/* The text a window's info holds under key, into out (size bytes); the key must be there. */
static inline void info_text(MPI_Win win, const char* key, char* out, int size) {
    MPI_Info info;
    CHECK_MPI(MPI_Win_get_info(win, &info));
    out[0] = '\0';
    int length = size - 1, flag = 0;
    MPI_Info_get_string(info, key, &length, out, &flag);
    MPI_Info_free(&info);
    CHECK(flag, "MPI_Win_get_info has no %s", key);
}

/* Checks that a window's info holds exactly value under key. */
static inline void expect_info(MPI_Win win, const char* key, const char* value) {
    char got[64];
    info_text(win, key, got, sizeof got);
    CHECK(strcmp(got, value) == 0, "%s is \"%s\", expected \"%s\"", key, got, value);
}

/* The number a window's info holds under key (strata reports its layout there). */
static inline long info_number(MPI_Win win, const char* key) {
    char value[64];
    info_text(win, key, value, sizeof value);
    return atol(value);
}

static inline long page_size(void) {
    return sysconf(_SC_PAGESIZE);
}

#endif /* STRATA_MPI_TEST_H */
