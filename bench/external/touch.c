/* SPDX-License-Identifier: MIT */
/* The program of the launch benchmark (bench/external/launch.cpp): reads its
 * input file (up to 64 KiB) and writes those bytes to its output file, as a
 * small external task does. Exit 0, or 1 naming what failed.
 *
 *   touch IN OUT */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char** argv) {
    static char buffer[65536];
    if (argc != 3) {
        fprintf(stderr, "usage: touch IN OUT\n");
        return 2;
    }
    const int in = open(argv[1], O_RDONLY | O_CLOEXEC);
    const ssize_t n = in < 0 ? -1 : read(in, buffer, sizeof buffer);
    const int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (n < 0 || out < 0 || write(out, buffer, (size_t)n) != n) {
        perror(n < 0 ? argv[1] : argv[2]);
        return 1;
    }
    return 0;
}
