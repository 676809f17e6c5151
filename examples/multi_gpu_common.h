/*
 * What the multi-GPU examples (multi_gpu_nccl.c, multi_gpu_scan.c) share: a failed call ends
 * the program with its text and its library's words, and the data (splitmix64 from a seed,
 * --seed sets g_rng). Header-only, for examples built on their own.
 */
#ifndef GS_EXAMPLES_MULTI_GPU_COMMON_H
#define GS_EXAMPLES_MULTI_GPU_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "gridsync.h"

/* Each failure ends the program with what failed: the call's text, its library's words. */
static void die(const char *file, int line, const char *call, const char *why, const char *detail)
{
    fprintf(stderr, "%s:%d: %s: %s%s%s\n", file, line, call, why, detail ? ": " : "", detail ? detail : "");
    exit(1);
}
#define CK(call) ck_cuda((call), __FILE__, __LINE__, #call)
#define NK(call) ck_nccl((call), __FILE__, __LINE__, #call)
#define GK(call) ck_gs((call), __FILE__, __LINE__, #call)
static void ck_cuda(cudaError_t e, const char *f, int l, const char *c)
{
    if (e != cudaSuccess)
        die(f, l, c, cudaGetErrorString(e), NULL);
}
static void ck_nccl(ncclResult_t r, const char *f, int l, const char *c)
{
    if (r != ncclSuccess)
        die(f, l, c, ncclGetErrorString(r), NULL);
}
static void ck_gs(gs_status s, const char *f, int l, const char *c)
{
    if (s != GS_SUCCESS)
        die(f, l, c, gs_status_string(s), gs_last_error_message());
}

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Values over 40 binades (2^-20 .. 2^20) and both signs, so a float sum in any order loses
 * bits and the exact one has something to show; or (g_unit) uniform in (-1, 1). */
static int g_unit;

static void fill(void *p, size_t n, gs_dtype t)
{
    for (size_t i = 0; i < n; i++) {
        const uint64_t r = rnd();
        const double m = (double)(r >> 11) * 0x1p-53 * ((r & 1) ? -1.0 : 1.0);
        const double v = g_unit ? m : ldexp(m, (int)((r >> 1) % 40) - 20);
        if (t == GS_FLOAT32)
            ((float *)p)[i] = (float)v;
        else
            ((double *)p)[i] = v;
    }
}

#endif
