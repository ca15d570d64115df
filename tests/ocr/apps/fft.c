/* SPDX-License-Identifier: MIT */
/* A radix-2 FFT as a tree of OCR EDTs.
 *
 *   fft <n> <in.bin> <out.bin> [serial-below]
 *
 * in.bin: n complex doubles (re, im interleaved), n a power of two. Each EDT
 * splits its block into even and odd halves for two child EDTs and returns
 * the output event of a combine EDT (the butterflies) that depends on both:
 * its own output event fires with the combined block. Blocks of fewer than
 * <serial-below> points (default 16) are transformed by a direct DFT. out.bin:
 * the n complex results. Exit 0 after writing them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ocr.h"

typedef struct {
    double re, im;
} cpx;

static u64 SERIAL = 16;

static ocrGuid_t block(u64 n, cpx** data) {
    ocrGuid_t db;
    ocrDbCreate(&db, (void**)data, n * sizeof(cpx), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    return db;
}

/* depv[0], depv[1]: the transforms of the even and odd halves. */
static ocrGuid_t combine(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 half = paramv[0];
    const cpx* even = (const cpx*)depv[0].ptr;
    const cpx* odd = (const cpx*)depv[1].ptr;
    cpx* out;
    ocrGuid_t db = block(2 * half, &out);
    for (u64 k = 0; k < half; ++k) {
        double angle = -2.0 * M_PI * (double)k / (double)(2 * half);
        double wr = cos(angle), wi = sin(angle);
        double tr = wr * odd[k].re - wi * odd[k].im, ti = wr * odd[k].im + wi * odd[k].re;
        out[k].re = even[k].re + tr;
        out[k].im = even[k].im + ti;
        out[k + half].re = even[k].re - tr;
        out[k + half].im = even[k].im - ti;
    }
    ocrDbDestroy(depv[0].guid);
    ocrDbDestroy(depv[1].guid);
    return db;
}

static ocrGuid_t transform(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 n = paramv[0];
    const cpx* in = (const cpx*)depv[0].ptr;
    if (n < SERIAL || n < 2) {
        cpx* out;
        ocrGuid_t db = block(n, &out);
        for (u64 k = 0; k < n; ++k) {
            double sr = 0, si = 0;
            for (u64 j = 0; j < n; ++j) {
                double angle = -2.0 * M_PI * (double)((j * k) % n) / (double)n;
                sr += in[j].re * cos(angle) - in[j].im * sin(angle);
                si += in[j].re * sin(angle) + in[j].im * cos(angle);
            }
            out[k].re = sr;
            out[k].im = si;
        }
        ocrDbDestroy(depv[0].guid);
        return db;
    }
    u64 half = n / 2;
    cpx *even, *odd;
    ocrGuid_t deven = block(half, &even), dodd = block(half, &odd);
    for (u64 j = 0; j < half; ++j) {
        even[j] = in[2 * j];
        odd[j] = in[2 * j + 1];
    }
    ocrDbRelease(deven);
    ocrDbRelease(dodd);
    ocrDbDestroy(depv[0].guid);
    ocrGuid_t ttransform, tcombine, e, o, c, eout, oout, result;
    ocrEdtTemplateCreate(&ttransform, transform, 1, 1);
    ocrEdtTemplateCreate(&tcombine, combine, 1, 2);
    /* The combine's output is a STICKY event made here: it may fire before this EDT returns. */
    ocrEventCreate(&result, OCR_EVENT_STICKY_T, EVT_PROP_TAKES_ARG);
    ocrEdtCreate(&e, ttransform, 1, &half, 1, NULL, EDT_PROP_NONE, NULL_HINT, &eout);
    ocrEdtCreate(&o, ttransform, 1, &half, 1, NULL, EDT_PROP_NONE, NULL_HINT, &oout);
    ocrGuid_t halves[2] = {eout, oout};
    ocrEdtCreate(&c, tcombine, 1, &half, 2, halves, EDT_PROP_OEVT_VALID, NULL_HINT, &result);
    ocrAddDependence(deven, e, 0, DB_MODE_RW);
    ocrAddDependence(dodd, o, 0, DB_MODE_RW);
    ocrEdtTemplateDestroy(ttransform);
    ocrEdtTemplateDestroy(tcombine);
    return result;
}

static ocrGuid_t output(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const char* path = (const char*)depv[0].ptr;
    u64 n = paramv[0];
    FILE* f = fopen(path, "wb");
    if (f == NULL || fwrite(depv[1].ptr, sizeof(cpx), n, f) != n || fclose(f) != 0) {
        ocrPrintf("fft: cannot write %s\n", path);
        ocrAbort(4);
        return NULL_GUID;
    }
    ocrPrintf("fft: %d points written to %s\n", (int)n, path);
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 argc = getArgc(depv[0].ptr);
    if (argc < 4) {
        ocrPrintf("usage: fft <n> <in.bin> <out.bin> [serial-below]\n");
        ocrAbort(2);
        return NULL_GUID;
    }
    u64 n = strtoull(getArgv(depv[0].ptr, 1), NULL, 10);
    if (argc > 4) SERIAL = strtoull(getArgv(depv[0].ptr, 4), NULL, 10);
    if (n == 0 || (n & (n - 1)) != 0) {
        ocrPrintf("fft: n=%d: expected a power of two\n", (int)n);
        ocrAbort(2);
        return NULL_GUID;
    }
    cpx* data;
    ocrGuid_t input = block(n, &data);
    FILE* f = fopen(getArgv(depv[0].ptr, 2), "rb");
    if (f == NULL || fread(data, sizeof(cpx), n, f) != n) {
        ocrPrintf("fft: cannot read %d complex values from %s\n", (int)n, getArgv(depv[0].ptr, 2));
        ocrAbort(2);
        return NULL_GUID;
    }
    fclose(f);
    ocrDbRelease(input);
    const char* out_path = getArgv(depv[0].ptr, 3);
    u64 len = 0;
    while (out_path[len] != '\0') ++len;
    char* p;
    ocrGuid_t pathdb;
    ocrDbCreate(&pathdb, (void**)&p, len + 1, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    for (u64 i = 0; i <= len; ++i) p[i] = out_path[i];
    ocrDbRelease(pathdb);
    ocrGuid_t ttransform, toutput, root, out, result;
    ocrEdtTemplateCreate(&ttransform, transform, 1, 1);
    ocrEdtTemplateCreate(&toutput, output, 1, 2);
    ocrEdtCreate(&root, ttransform, 1, &n, 1, NULL, EDT_PROP_NONE, NULL_HINT, &result);
    ocrEdtCreate(&out, toutput, 1, &n, 2, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(pathdb, out, 0, DB_MODE_RO);
    ocrAddDependence(result, out, 1, DB_MODE_RO);
    ocrAddDependence(input, root, 0, DB_MODE_RW);
    ocrEdtTemplateDestroy(ttransform);
    ocrEdtTemplateDestroy(toutput);
    return NULL_GUID;
}
