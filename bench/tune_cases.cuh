/*
 * The kernels' cases of the launch-policy programs (tune.cu, placement.cu): a kernel with
 * its element type and the reference it is checked against; random input, host
 * references for the power-of-two prefixes of it, the check of one result, and the grid
 * the backends would launch (grid_policy.h). Include after the backend's kernels.cu and
 * bench_common.cuh; each program lists its own cases with TUNE_CASE.
 */
#pragma once

#include "grid_policy.h"

#include <cuda_fp16.h>

#include <random>

typedef const void *KernelFn;

enum RefKind { REF_SUM, REF_MAX, REF_ARGMAX };

struct Case {
    const char *name;
    KernelFn fn;
    int elem;       /* bytes per element */
    int is_int;     /* int32 */
    int is_half;    /* float16 */
    int is_double;  /* float64 */
    RefKind ref;
};

#define TUNE_CASE(dt, op, o, elem, i, h, d, ref) \
    {"gs_reduce_" #dt "_" #op "_" #o, (KernelFn)&gs_reduce_##dt##_##op##_##o, elem, i, h, d, ref}

/* Element k of the host copy as a double (exact for every type here). */
static double host_value(const Case &c, const std::vector<unsigned char> &h, uint64_t k)
{
    if (c.is_int) {
        int32_t v;
        memcpy(&v, &h[k * 4], 4);
        return v;
    }
    if (c.is_half) {
        __half v;
        memcpy(&v, &h[k * 2], 2);
        return __half2float(v);
    }
    if (c.is_double) {
        double v;
        memcpy(&v, &h[k * 8], 8);
        return v;
    }
    float v;
    memcpy(&v, &h[k * 4], 4);
    return v;
}

/* The host reference of an input: the first maximum's index and value, the int32 sum
 * (wrapping, in uint32) and the double sum with the sum of magnitudes. */
struct Ref {
    uint64_t best;
    double best_value, sum, abs_sum;
    uint32_t isum;
};

/* The references of the prefixes of 2^lo .. 2^hi elements, in one pass. */
static std::vector<Ref> references(const Case &c, const std::vector<unsigned char> &h, int lo, int hi)
{
    std::vector<Ref> out;
    Ref r = {0, host_value(c, h, 0), 0, 0, 0};
    for (uint64_t k = 0; k < (1ull << hi); k++) {
        const double v = host_value(c, h, k);
        if (v > r.best_value) {
            r.best_value = v;
            r.best = k;
        }
        r.sum += v;
        r.abs_sum += fabs(v);
        r.isum += (uint32_t)(int32_t)v;
        if (k + 1 >= (1ull << lo) && ((k + 1) & k) == 0)
            out.push_back(r);
    }
    return out;
}

/* Whether the kernel's output matches the reference. SUM: int32 wraps exactly, floats
 * within a relative 1e-5 of the sum of magnitudes. */
static bool check(const Case &c, const Ref &r, const unsigned char *got)
{
    if (c.ref == REF_ARGMAX) {
        int64_t g;
        memcpy(&g, got, 8);
        return g == (int64_t)r.best;
    }
    if (c.is_int) {
        uint32_t g;
        memcpy(&g, got, 4);
        return c.ref == REF_MAX ? (int32_t)g == (int32_t)r.best_value : g == r.isum;
    }
    const double g = host_value(c, std::vector<unsigned char>(got, got + c.elem), 0);
    return c.ref == REF_MAX ? g == r.best_value : fabs(g - r.sum) <= 1e-5 * r.abs_sum + 1e-6;
}

static void fill(const Case &c, std::vector<unsigned char> &h, uint64_t n, std::mt19937_64 &rng)
{
    h.resize(n * c.elem);
    std::uniform_real_distribution<double> u(-1000.0, 1000.0);
    for (uint64_t k = 0; k < n; k++) {
        double v = u(rng);
        if (c.is_int) {
            int32_t x = (int32_t)(rng() >> 40) - (1 << 23);
            memcpy(&h[k * 4], &x, 4);
        } else if (c.is_half) {
            __half x = __float2half((float)v);
            memcpy(&h[k * 2], &x, 2);
        } else if (c.is_double) {
            memcpy(&h[k * 8], &v, 8);
        } else {
            float x = (float)v;
            memcpy(&h[k * 4], &x, 4);
        }
    }
}

/* The grid gs_reduce would launch for n elements of c's kernel: grid_policy.h with
 * per_sm resident blocks on each of sms multiprocessors. */
static unsigned int policy_grid(const Case &c, uint64_t n, unsigned int sms, int per_sm, uint64_t l2_bytes)
{
    return gs_grid_for(n, (uint64_t)c.elem, l2_bytes, gs_grid_cap(sms, per_sm, GS_GRID_THREADS_PER_SM),
                       gs_grid_cap(sms, per_sm, GS_GRID_THREADS_PER_SM_DRAM));
}

/* A case made ready: fresh random input of max_n elements (h, copied to in; each n is
 * its prefix), the host references of its prefixes of 2^lo .. 2^hi elements, and how many
 * blocks of the kernel a multiprocessor holds. */
struct Loaded {
    std::vector<Ref> refs;
    int per_sm;
};
static Loaded load_case(const Case &c, void *in, uint64_t max_n, int lo, int hi, std::vector<unsigned char> &h,
                        std::mt19937_64 &rng)
{
    Loaded l;
    l.per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&l.per_sm, c.fn, GS_BACKEND_BLOCK, 0));
    fill(c, h, max_n, rng);
    CK(cudaMemcpy(in, h.data(), max_n * c.elem, cudaMemcpyHostToDevice));
    l.refs = references(c, h, lo, hi);
    return l;
}
