/* SPDX-License-Identifier: MIT */
/* The external program of `strata bench external`: reads a file the way the
 * paper's Table 1 does, with fopen/fread, and prints how long it took.
 *
 *   reader PATH SIZE CHUNK chunks PERCENT   1 MB chunks at PERCENT % coverage, evenly spread
 *   reader PATH SIZE CHUNK full 100         one fread of the whole file
 *   reader PATH SIZE CHUNK mmap 100         mmap the file, touch one byte per page
 *
 * It waits for one byte on stdin before starting the clock (so the harness
 * can register the reader's pid first), and prints "<seconds> <checksum>"
 * where checksum sums the first byte of every 4 KiB read, for the harness to
 * check against the block. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t sum_pages(const unsigned char* bytes, size_t length) {
    uint64_t sum = 0;
    for (size_t i = 0; i < length; i += 4096) {
        sum += bytes[i];
    }
    return sum;
}

int main(int argc, char** argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: reader PATH SIZE CHUNK chunks|full|mmap PERCENT\n");
        return 2;
    }
    const char* path = argv[1];
    const size_t size = strtoull(argv[2], NULL, 10);
    const size_t chunk = strtoull(argv[3], NULL, 10);
    const char* mode = argv[4];
    const unsigned percent = (unsigned)strtoul(argv[5], NULL, 10);
    const int full = strcmp(mode, "full") == 0;
    const size_t buffer_size = full ? size : chunk;
    unsigned char* buffer = malloc(buffer_size);
    if (buffer == NULL) {
        return 3;
    }
    memset(buffer, 1, buffer_size); /* fault the buffer in before the clock starts */
    char go = 0;
    if (read(0, &go, 1) != 1) {
        return 4;
    }
    uint64_t checksum = 0;
    const double start = now();
    if (strcmp(mode, "mmap") == 0) {
        const int fd = open(path, O_RDONLY);
        if (fd < 0) {
            perror(path);
            return 5;
        }
        const unsigned char* map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            perror("mmap");
            return 6;
        }
        checksum = sum_pages(map, size);
        munmap((void*)map, size);
        close(fd);
    } else {
        FILE* file = fopen(path, "r");
        if (file == NULL) {
            perror(path);
            return 5;
        }
        if (full) {
            if (fread(buffer, 1, size, file) != size) {
                perror("fread");
                return 7;
            }
            checksum = sum_pages(buffer, size);
        } else {
            const size_t chunks = size / chunk;
            const size_t wanted = (chunks * percent + 50) / 100;
            for (size_t i = 0; i < wanted; ++i) {
                const size_t index = i * chunks / wanted;
                if (fseeko(file, (off_t)(index * chunk), SEEK_SET) != 0 || fread(buffer, 1, chunk, file) != chunk) {
                    perror("fread");
                    return 7;
                }
                checksum += sum_pages(buffer, chunk);
            }
        }
        fclose(file);
    }
    const double seconds = now() - start;
    printf("%.9f %llu\n", seconds, (unsigned long long)checksum);
    free(buffer);
    return 0;
}
