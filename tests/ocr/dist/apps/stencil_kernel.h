/* SPDX-License-Identifier: MIT */
/* The kernel of the distributed 2-D stencil (tests/ocr/dist/apps/stencil.c) and of the
 * hand-written MPI stencil it is measured against (bench/ocr-dist/mpi_stencil.c): one Jacobi
 * step of a b×b tile, each point the mean of itself and its four neighbours, zero outside the
 * grid. A missing edge (NULL) is the grid's border. */
#ifndef STRATA_STENCIL_KERNEL_H
#define STRATA_STENCIL_KERNEL_H

#include <stddef.h>

static inline void stencil_tile(size_t b, const double* in, double* out, const double* north, const double* south,
                                const double* west, const double* east) {
    for (size_t i = 0; i < b; ++i) {
        for (size_t j = 0; j < b; ++j) {
            const double up = i > 0 ? in[(i - 1) * b + j] : (north != NULL ? north[j] : 0.0);
            const double down = i + 1 < b ? in[(i + 1) * b + j] : (south != NULL ? south[j] : 0.0);
            const double left = j > 0 ? in[i * b + j - 1] : (west != NULL ? west[i] : 0.0);
            const double right = j + 1 < b ? in[i * b + j + 1] : (east != NULL ? east[i] : 0.0);
            out[i * b + j] = 0.2 * (in[i * b + j] + up + down + left + right);
        }
    }
}

/* Edge d (0 north row, 1 south row, 2 west column, 3 east column) of a b×b tile, into edge[b]. */
static inline void stencil_edge(size_t b, const double* tile, int d, double* edge) {
    for (size_t k = 0; k < b; ++k) {
        edge[k] = d == 0 ? tile[k] : d == 1 ? tile[(b - 1) * b + k] : d == 2 ? tile[k * b] : tile[k * b + b - 1];
    }
}

/* The tile of a q×q tiling that lives on which of `ranks` ranks: contiguous runs of tiles. */
static inline int stencil_rank_of(size_t tile, size_t q, int ranks) {
    return (int)(tile * (size_t)ranks / (q * q));
}

#endif /* STRATA_STENCIL_KERNEL_H */
