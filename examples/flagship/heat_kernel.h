/* SPDX-License-Identifier: MIT */
/* The numerics of the flagship's heat diffusion (examples/flagship/heat.c), kept apart so that
 * a reader sees the physics in one place: one explicit step of the 2-D heat equation on a
 * b×b tile with the five-point Laplacian, u' = u + alpha (N + S + W + E - 4u), the field held
 * at 0 outside the grid. alpha <= 0.25 keeps the scheme stable. A missing edge (NULL) is the
 * grid's border. tests/python/test_flagship.py computes the same steps with numpy. */
#ifndef STRATA_FLAGSHIP_HEAT_KERNEL_H
#define STRATA_FLAGSHIP_HEAT_KERNEL_H

#include <stddef.h>

/* The initial field: 100 inside the disk of radius n/4 around the grid's centre, 0 elsewhere. */
static inline double heat_initial(size_t n, size_t i, size_t j) {
    const long long di = (long long)i - (long long)(n / 2), dj = (long long)j - (long long)(n / 2);
    const long long r = (long long)(n / 4);
    return di * di + dj * dj < r * r ? 100.0 : 0.0;
}

static inline void heat_step(size_t b, double alpha, const double* in, double* out, const double* north,
                             const double* south, const double* west, const double* east) {
    for (size_t i = 0; i < b; ++i) {
        for (size_t j = 0; j < b; ++j) {
            const double u = in[i * b + j];
            const double up = i > 0 ? in[(i - 1) * b + j] : (north != NULL ? north[j] : 0.0);
            const double down = i + 1 < b ? in[(i + 1) * b + j] : (south != NULL ? south[j] : 0.0);
            const double left = j > 0 ? in[i * b + j - 1] : (west != NULL ? west[i] : 0.0);
            const double right = j + 1 < b ? in[i * b + j + 1] : (east != NULL ? east[i] : 0.0);
            out[i * b + j] = u + alpha * (up + down + left + right - 4.0 * u);
        }
    }
}

/* Edge d (0 north row, 1 south row, 2 west column, 3 east column) of a b×b tile, into edge[b]. */
static inline void heat_edge(size_t b, const double* tile, int d, double* edge) {
    for (size_t k = 0; k < b; ++k) {
        edge[k] = d == 0 ? tile[k] : d == 1 ? tile[(b - 1) * b + k] : d == 2 ? tile[k * b] : tile[k * b + b - 1];
    }
}

/* The rank a tile of a q×q tiling lives on: contiguous runs of tiles (rows of tiles for 2 ranks). */
static inline int heat_rank_of(size_t tile, size_t q, int ranks) {
    return (int)(tile * (size_t)ranks / (q * q));
}

/* A frame pixel: the temperature mapped onto 0..255 (0 -> black, 100 and above -> white). */
static inline unsigned char heat_pixel(double u) {
    const double v = u * 2.55;
    return v <= 0.0 ? 0 : v >= 255.0 ? 255 : (unsigned char)(v + 0.5);
}

#endif /* STRATA_FLAGSHIP_HEAT_KERNEL_H */
