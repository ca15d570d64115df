/* SPDX-License-Identifier: MIT */
/* MPI's own point-to-point bandwidth between two ranks on this node: the sanity
 * check for the shm / MPI ratios of `strata bench shared-objects`.
 *
 * Rank 0 sends --iterations messages of --bytes to rank 1 with MPI_Send, rank 1
 * receives them with MPI_Recv into one buffer, and a zero-byte reply closes the
 * timing; --warmup messages go first (first touch, connection setup). The
 * workflow's mpi method moves the same 10 MB messages (MPI_Isend/MPI_Irecv)
 * and also writes and checks every byte, so its throughput can only be lower.
 * Rank 0 prints one JSON object: bytes, iterations, seconds, mb_s (1e6 B/s).
 *
 * Usage: mpiexec -n 2 bench_shared_objects_mpi_p2p [--bytes 10000000]
 *        [--iterations 200] [--warmup 10] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long option(int argc, char** argv, const char* name, long fallback) {
    for (int i = 1; i + 1 < argc; ++i) {
        if (strcmp(argv[i], name) == 0) {
            char* end = NULL;
            const long value = strtol(argv[i + 1], &end, 10);
            if (*end != '\0' || value <= 0) {
                fprintf(stderr, "mpi_p2p: %s=%s: expected a positive integer\n", name, argv[i + 1]);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            return value;
        }
    }
    return fallback;
}

static void stream(int rank, char* buffer, long bytes, long count) {
    for (long i = 0; i < count; ++i) {
        if (rank == 0) {
            MPI_Send(buffer, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        } else {
            MPI_Recv(buffer, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    if (rank == 0) {
        MPI_Recv(NULL, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Send(NULL, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "mpi_p2p: needs exactly 2 ranks, got %d\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const long bytes = option(argc, argv, "--bytes", 10000000);
    const long iterations = option(argc, argv, "--iterations", 200);
    const long warmup = option(argc, argv, "--warmup", 10);
    if (bytes > 2147483647L) {
        if (rank == 0) fprintf(stderr, "mpi_p2p: --bytes=%ld: at most 2147483647 (an int count)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char* buffer = malloc((size_t)bytes);
    if (buffer == NULL) {
        fprintf(stderr, "mpi_p2p: --bytes=%ld: out of memory\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buffer, rank + 1, (size_t)bytes);
    stream(rank, buffer, bytes, warmup);
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    stream(rank, buffer, bytes, iterations);
    const double seconds = MPI_Wtime() - start;
    if (rank == 0) {
        printf("{\"bytes\":%ld,\"iterations\":%ld,\"seconds\":%.6f,\"mb_s\":%.3f}\n", bytes, iterations, seconds,
               (double)bytes * (double)iterations / seconds / 1e6);
    }
    free(buffer);
    MPI_Finalize();
    return 0;
}
