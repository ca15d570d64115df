/* SPDX-License-Identifier: MIT */
/* The MPI baselines of bench/ocr-dist/run, between ranks 0 and 1 of the same kind of job.
 *
 *   mpiexec -n 2 ocr_dist_bench_mpi pingpong <iterations> <bytes>
 *       MPI_Send/MPI_Recv of <bytes> there and back; prints "pingpong_us <mean µs per round trip>"
 *   mpiexec -n 2 ocr_dist_bench_mpi bw <iterations> <bytes>
 *       osu_bw's pattern: rank 0 posts a window of 64 MPI_Isend of <bytes>, rank 1 as many
 *       MPI_Irecv, then a 4-byte acknowledgement; prints "bw_mbps <MB/s>" (MB = 10^6 bytes)
 *
 * The first tenth of the iterations are warm-up. Exit 2 on bad arguments. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <strata/launcher.h>
#include <string.h>
#include <unistd.h>

enum { WINDOW = 64 };

/* Ends the rank after every rank got here, without MPI_Finalize: MPICH 4.0.2's ch4:ucx finalize
 * deadlocks now and then between nodes (seen here across emulated nodes, after the figures were
 * printed; src/runtime/ocr/dist/wire.hpp says the same of the OCR runtime). Hydra is told the
 * end is deliberate (strata/launcher.h), else it may report the rank as failed. */
static void finish(int code) {
    MPI_Barrier(MPI_COMM_WORLD);
    fflush(stdout);
    fflush(stderr);
    (void)strata_launcher_finalize(2000);
    _exit(code);
}

static double pingpong(int rank, long iterations, size_t bytes, char* buffer) {
    const long warm = iterations / 10;
    double t0 = 0;
    for (long i = 0; i < iterations + warm; ++i) {
        if (i == warm) t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buffer, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buffer, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buffer, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buffer, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / (double)iterations * 1e6;
}

static double bandwidth(int rank, long iterations, size_t bytes, char* buffer) {
    const long warm = iterations / 10;
    MPI_Request requests[WINDOW];
    MPI_Status statuses[WINDOW];
    double t0 = 0;
    int ack = 0;
    for (long i = 0; i < iterations + warm; ++i) {
        if (i == warm) t0 = MPI_Wtime();
        for (int w = 0; w < WINDOW; ++w) {
            if (rank == 0) {
                MPI_Isend(buffer, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &requests[w]);
            } else {
                MPI_Irecv(buffer, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &requests[w]);
            }
        }
        MPI_Waitall(WINDOW, requests, statuses);
        if (rank == 0) {
            MPI_Recv(&ack, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Send(&ack, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
        }
    }
    const double seconds = MPI_Wtime() - t0;
    return (double)bytes * WINDOW * (double)iterations / seconds / 1e6;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long iterations = argc == 4 ? strtol(argv[2], NULL, 10) : 0;
    const size_t bytes = argc == 4 ? strtoull(argv[3], NULL, 10) : 0;
    if (size != 2 || iterations <= 0 || bytes == 0 || bytes > (1u << 30) ||
        (strcmp(argv[1], "pingpong") != 0 && strcmp(argv[1], "bw") != 0)) {
        if (rank == 0) {
            fprintf(stderr, "usage: mpiexec -n 2 %s pingpong|bw <iterations> <bytes> (1 B to 1 GiB)\n", argv[0]);
        }
        MPI_Finalize();
        return 2;
    }
    char* buffer = calloc(1, bytes);
    if (strcmp(argv[1], "pingpong") == 0) {
        const double us = pingpong(rank, iterations, bytes, buffer);
        if (rank == 0) printf("pingpong_us %.3f\n", us);
    } else {
        const double mbps = bandwidth(rank, iterations, bytes, buffer);
        if (rank == 0) printf("bw_mbps %.1f\n", mbps);
    }
    free(buffer);
    finish(0);
}
