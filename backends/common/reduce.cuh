/*
 * The single-launch reduction, written once for both backends.
 *
 * A backend instantiates gs::reduce_kernel with a Policy that supplies what differs
 * between GPU generations:
 *   Policy::kBlock                 threads per block (a multiple of 32)
 *   Policy::kUnroll                independent 16-byte loads in flight per thread
 *   Policy::load16(p)              one 16-byte load of read-only input
 *   Policy::block_reduce<Op>(v, s) the block's combination of one value per thread,
 *                                  valid in thread 0; s is Policy::Scratch<Acc> in
 *                                  shared memory; ends with every thread past its last
 *                                  read of s only after a later __syncthreads
 *   Policy::last_block(counter)    the last-block guard: takes the ticket in thread 0 and
 *                                  returns, in every thread, whether this block is last
 * Everything else - the grid-stride loop, head/tail handling, the fences and the
 * protocol of DESIGN.md - is here.
 */
#pragma once

#include <stdint.h>

#include "gridsync_device.cuh"
#include "kernel_list.h"

namespace gs {

/* ---- operations ----------------------------------------------------------------------
 * Each op has an accumulator type Acc, an identity, lift (input element -> Acc), combine,
 * and result (Acc -> output element). Integer SUM accumulates in the unsigned type of the
 * same width so that overflow wraps (two's complement) instead of being undefined. */

template <typename T> struct Unsigned { typedef T type; };
template <> struct Unsigned<int32_t> { typedef uint32_t type; };
template <> struct Unsigned<int64_t> { typedef uint64_t type; };

template <typename T> __device__ __forceinline__ bool is_nan(T) { return false; }
template <> __device__ __forceinline__ bool is_nan<float>(float x) { return x != x; }
template <> __device__ __forceinline__ bool is_nan<double>(double x) { return x != x; }

template <typename T> struct Bounds;
template <> struct Bounds<int32_t> {
    static __device__ __forceinline__ int32_t lowest() { return INT32_MIN; }
    static __device__ __forceinline__ int32_t highest() { return INT32_MAX; }
};
template <> struct Bounds<float> {
    static __device__ __forceinline__ float lowest() { return -__int_as_float(0x7f800000); }
    static __device__ __forceinline__ float highest() { return __int_as_float(0x7f800000); }
};
template <> struct Bounds<double> {
    static __device__ __forceinline__ double lowest() { return -__longlong_as_double(0x7ff0000000000000ll); }
    static __device__ __forceinline__ double highest() { return __longlong_as_double(0x7ff0000000000000ll); }
};

template <typename T> struct OpSum {
    typedef T In;
    typedef typename Unsigned<T>::type Acc;
    typedef T Out;
    static __device__ __forceinline__ Acc identity() { return Acc(0); }
    static __device__ __forceinline__ Acc lift(T x) { return Acc(x); }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return a + b; }
    static __device__ __forceinline__ Out result(Acc a) { return Out(a); }
};

/* MIN/MAX propagate NaN: once either side is NaN the result is NaN. Ties keep the left
 * operand, and partials are always combined left (lower index) to right, so the result
 * does not depend on which block finishes first. */
template <typename T> struct OpMin {
    typedef T In;
    typedef T Acc;
    typedef T Out;
    static __device__ __forceinline__ Acc identity() { return Bounds<T>::highest(); }
    static __device__ __forceinline__ Acc lift(T x) { return x; }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return (b < a || is_nan(b)) && !is_nan(a) ? b : a; }
    static __device__ __forceinline__ Out result(Acc a) { return a; }
};

template <typename T> struct OpMax {
    typedef T In;
    typedef T Acc;
    typedef T Out;
    static __device__ __forceinline__ Acc identity() { return Bounds<T>::lowest(); }
    static __device__ __forceinline__ Acc lift(T x) { return x; }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return (a < b || is_nan(b)) && !is_nan(a) ? b : a; }
    static __device__ __forceinline__ Out result(Acc a) { return a; }
};

/* ---- the kernel body -----------------------------------------------------------------*/

template <typename Policy, typename Op>
__device__ __forceinline__ typename Op::Acc fold16(typename Op::Acc acc, const uint4 &raw)
{
    typedef typename Op::In T;
    const int kPer = 16 / sizeof(T);
    T v[kPer];
    memcpy(v, &raw, 16);
#pragma unroll
    for (int k = 0; k < kPer; k++)
        acc = Op::combine(acc, Op::lift(v[k]));
    return acc;
}

template <typename Policy, typename Op>
__device__ __forceinline__ void reduce_kernel(const typename Op::In *__restrict__ in, uint64_t n,
                                              typename Op::Out *__restrict__ out, unsigned char *workspace)
{
    typedef typename Op::In T;
    typedef typename Op::Acc Acc;
    const int kPer = 16 / sizeof(T);
    const int kUnroll = Policy::kUnroll;
    unsigned int *counter = (unsigned int *)workspace;
    Acc *partials = (Acc *)(workspace + GS_PARTIALS_OFFSET);
    __shared__ typename Policy::template Scratch<Acc> scratch;

    /* Split [0, n) into a misaligned head, whole 16-byte vectors, and a tail, once. The
     * input is element-aligned (checked by the core), so head < kPer. */
    const uint64_t misalign = ((uintptr_t)in & 15u) / sizeof(T);
    uint64_t head = misalign ? (uint64_t)kPer - misalign : 0;
    if (head > n)
        head = n;
    const uint64_t nvec = (n - head) / kPer;
    const uint64_t tail_begin = head + nvec * kPer;
    const uint4 *vin = (const uint4 *)(in + head);

    const uint64_t tid = threadIdx.x;
    const uint64_t gtid = (uint64_t)blockIdx.x * Policy::kBlock + tid;
    const uint64_t stride = (uint64_t)gridDim.x * Policy::kBlock;

    Acc acc[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; u++)
        acc[u] = Op::identity();

    /* Head and tail elements: one per thread of the first threads of the grid. */
    if (gtid < head)
        acc[0] = Op::combine(acc[0], Op::lift(in[gtid]));
    if (gtid < n - tail_begin)
        acc[kUnroll - 1] = Op::combine(acc[kUnroll - 1], Op::lift(in[tail_begin + gtid]));

    /* kUnroll independent loads in flight, then fold each into its own accumulator. */
    uint64_t i = gtid;
    for (; i + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) {
        uint4 raw[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; u++)
            raw[u] = Policy::load16(vin + i + u * stride);
#pragma unroll
        for (int u = 0; u < kUnroll; u++)
            acc[u] = fold16<Policy, Op>(acc[u], raw[u]);
    }
    for (; i < nvec; i += stride)
        acc[0] = fold16<Policy, Op>(acc[0], Policy::load16(vin + i));
#pragma unroll
    for (int u = 1; u < kUnroll; u++)
        acc[0] = Op::combine(acc[0], acc[u]);

    Acc block = Policy::template block_reduce<Op>(acc[0], scratch);

    if (gridDim.x == 1) {
        /* One block: no other block to wait for, the counter stays 0. */
        if (tid == 0)
            *out = Op::result(block);
        return;
    }

    /* DESIGN.md's protocol. (1) publish the partial; (2) release: the partial is visible
     * device-wide before the ticket that announces it. */
    if (tid == 0) {
        partials[blockIdx.x] = block;
        gs_publish();
    }
    /* (3) ticket and (4) guard, per backend. Both variants contain a __syncthreads, which
     * also separates the two uses of `scratch`. */
    if (Policy::last_block(counter)) {
        /* (5) acquire: without this fence the loads below may see partials older than
         * the tickets this block observed through its atomic; volatile loads, because a
         * cached (L1) load could return a stale line even after the fence. */
        gs_acquire();
        /* (6) combine in block-index order: thread t folds partials t, t + B, ... in
         * increasing order, then the block combines threads in a fixed tree, so the
         * result is the same whichever block finished last. */
        Acc a = Op::identity();
        for (unsigned int b = threadIdx.x; b < gridDim.x; b += Policy::kBlock)
            a = Op::combine(a, gs_load_volatile(&partials[b]));
        a = Policy::template block_reduce<Op>(a, scratch);
        if (tid == 0) {
            /* (7) the result, then the counter back to 0 for the next launch on this
             * stream's workspace: no memset, and a captured graph replays correctly. */
            *out = Op::result(a);
            gs_reset_counter(counter);
        }
    }
}

} // namespace gs

/* Instantiation helpers: a backend's kernels.cu defines GS_POLICY and includes
 * kernels.cuh. */
