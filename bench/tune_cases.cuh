/*
 * The kernels' cases of the launch-policy programs (tune.cu, placement.cu): a kernel with
 * its element type and the reference it is checked against; random input, host
 * references for the power-of-two prefixes of it, the check of one result, and the grid
 * the backends would launch (dispatch/grid.h), the device, one checked launch. Include after the backend's kernels.cu and
 * bench_common.cuh; each program lists its own cases with TUNE_CASE.
 */
#pragma once

#include "dispatch/grid.h"
#include "hostref.h"

#include <cuda_fp16.h>

#include <random>

/* tune.sh names each variant's program with -DTUNE_VARIANT. */
#ifndef TUNE_VARIANT
#  define TUNE_VARIANT "unnamed"
#endif

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

/* The case's element type and operation, as hostref names them. */
static gs_dtype case_dtype(const Case &c)
{
    return c.is_int ? GS_INT32 : c.is_half ? GS_FLOAT16 : c.is_double ? GS_FLOAT64 : GS_FLOAT32;
}
static gs_op case_op(const Case &c)
{
    return c.ref == REF_SUM ? GS_OP_SUM : c.ref == REF_MAX ? GS_OP_MAX : GS_OP_ARGMAX;
}

typedef hostref_ref Ref;

/* hostref's references of the prefixes of 2^lo .. 2^hi elements, in one pass: each is the
 * one before merged with the next 2^(k-1) elements. */
static std::vector<Ref> references(const Case &c, const std::vector<unsigned char> &h, int lo, int hi)
{
    const gs_dtype t = case_dtype(c);
    const gs_op op = case_op(c);
    std::vector<Ref> out;
    Ref acc, piece;
    hostref_reduce(&acc, t, op, hostref_default_out(t, op), h.data(), 1);
    for (int k = 0; k <= hi; k++) {
        if (k > 0) {
            const uint64_t half = 1ull << (k - 1);
            hostref_reduce(&piece, t, op, hostref_default_out(t, op), &h[half * c.elem], half);
            hostref_merge(&acc, &piece);
        }
        if (k >= lo)
            out.push_back(acc);
    }
    return out;
}

/* Whether the kernel's output matches the reference: integers and MAX/ARGMAX exactly,
 * float sums within a relative 1e-5 of the sum of magnitudes. */
static bool check(const Ref &r, const unsigned char *got)
{
    const double eps_acc = std::ldexp(1.0, 1 - hostref_digits(hostref_accumulator(r.in, r.out)));
    const hostref_tolerance tol = {0, 1e-5 / eps_acc, 0, 0};
    hostref_verdict v;
    return hostref_check(&r, nullptr, got, &tol, &v) != 0;
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

/* Device 0, as the programs measure it: its properties, multiprocessors and the L2 size
 * dispatch/grid.h counts with. No device: "<prefix>no CUDA device ..." and exit 77. */
struct TuneDevice {
    cudaDeviceProp prop;
    unsigned int sms;
    uint64_t l2_bytes;
};
static TuneDevice tune_device(const char *prefix)
{
    device_count_or_exit77(prefix, "");
    TuneDevice d;
    CK(cudaGetDeviceProperties(&d.prop, 0));
    d.sms = (unsigned int)d.prop.multiProcessorCount;
    d.l2_bytes = gs_grid_l2_bytes(d.prop.l2CacheSize);
    return d;
}

/* One launch of c's kernel on s, its (16-byte) output poisoned before and read back after:
 * whether the result matches ref. */
static bool launch_checked(const Case &c, unsigned int grid, void **args, void *out, cudaStream_t s, const Ref &ref)
{
    unsigned char got[16] = {0};
    CK(cudaMemsetAsync(out, 0xff, 16, s));
    CK(cudaLaunchKernel(c.fn, grid, GS_BACKEND_BLOCK, args, 0, s));
    CK(cudaMemcpyAsync(got, out, 16, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    return check(ref, got);
}

/* A program's measuring part: body() returns how many checks failed; those are counted on
 * stderr ("<prog> <variant>: N check failures", exit status 1 if any), and an exception (a
 * failed CUDA call) is reported as "<prog>: what" with exit status 1. */
template <typename Body> static int tune_run(const char *prog, Body body)
{
    try {
        const int failures = body();
        fprintf(stderr, "%s %s: %d check failures\n", prog, TUNE_VARIANT, failures);
        return failures ? 1 : 0;
    } catch (const std::exception &e) {
        fprintf(stderr, "%s: %s\n", prog, e.what());
        return 1;
    }
}

/* The grid gs_reduce would launch for n elements of c's kernel: dispatch/grid.h with
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
