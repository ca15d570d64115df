/* SPDX-License-Identifier: MIT */
/* The output side of `strata bench external`: an external program that writes
 * SIZE bytes in CHUNK pieces with fopen/fwrite, as a program writing its
 * output file would. Waits for one byte on stdin, then prints "<seconds>".
 *
 *   writer PATH SIZE CHUNK */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: writer PATH SIZE CHUNK\n");
        return 2;
    }
    const size_t size = strtoull(argv[2], NULL, 10);
    const size_t chunk = strtoull(argv[3], NULL, 10);
    unsigned char* buffer = malloc(chunk);
    if (buffer == NULL) {
        return 3;
    }
    for (size_t i = 0; i < chunk; ++i) {
        buffer[i] = (unsigned char)(i * 131u);
    }
    char go = 0;
    if (read(0, &go, 1) != 1) {
        return 4;
    }
    const double start = now();
    FILE* file = fopen(argv[1], "w");
    if (file == NULL) {
        perror(argv[1]);
        return 5;
    }
    for (size_t at = 0; at < size; at += chunk) {
        const size_t n = size - at < chunk ? size - at : chunk;
        if (fwrite(buffer, 1, n, file) != n) {
            perror("fwrite");
            return 6;
        }
    }
    if (fclose(file) != 0) {
        perror("fclose");
        return 7;
    }
    printf("%.9f\n", now() - start);
    free(buffer);
    return 0;
}
