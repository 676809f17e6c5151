/*
 * The single-launch reduction, written once for both backends.
 *
 * A backend instantiates gs::reduce_kernel with a Policy that supplies what differs
 * between GPU generations:
 *   Policy::kBlock                 threads per block (a multiple of 32)
 *   Policy::kUnroll                independent 16-byte loads in flight per thread
 *   Policy::kMinBlocks             the minimum of resident blocks per multiprocessor the
 *                                  SUM and PROD kernels are compiled for (kernels.cuh;
 *                                  0: none)
 *   Policy::kSegMinBlocks          the same for the segmented kernels (kernels.cuh),
 *   Policy::kSegMinBlocksArg       and for the segmented ARGMIN/ARGMAX kernels
 *   Policy::load16(p)              one 16-byte load of read-only input
 *   Policy::block_reduce<Op>(v, s) the block's combination of one value per thread,
 *                                  valid in thread 0; s is Policy::Scratch<Acc> in
 *                                  shared memory; ends with every thread past its last
 *                                  read of s only after a later __syncthreads
 *   Policy::last_arrival(counter, expected)
 *                                  the last-block guard: takes the ticket in thread 0,
 *                                  releasing what thread 0 wrote before and acquiring
 *                                  what the earlier tickets released, and returns, in
 *                                  every thread, whether this block is the expected-th
 *                                  to arrive (the last); a barrier
 * and, for the segmented reduction (segmented.cuh):
 *   Policy::kGroup                 threads that work on one medium segment together
 *   Policy::kGroupAlone            whether group_reduce holds no block-wide barrier, so a
 *                                  group with nothing to do may skip it
 *   Policy::group_reduce<Op>(v, s) their combination, valid in the group's first thread
 *   Policy::block_compact(p, q, list, any_q)
 *                                  the threads where p holds, in thread order, into
 *                                  list[0, count) (returns count), and any_q whether q
 *                                  holds in any thread; ends with a barrier that
 *                                  publishes list
 *   Policy::block_count(p)         in how many threads p holds; a barrier
 * and, for the exact sums (exact.cuh, exact_grid.cuh):
 *   Policy::block_reduce_checked<Chk>(v, ok, s)
 *                                  the block's values added with Chk::add, the sum and in
 *                                  ok whether every addition was exact (a value that
 *                                  came in not ok counts as inexact), in every thread;
 *                                  s is a gs::CheckedScratch<kBlock, V>
 *   Policy::block_reduce_checked2<Chk1, Chk>(v, ok, s)
 *                                  the same for two-double values, tried in one double
 *                                  (Chk1) first; s is an ExactScratch
 * Everything else - the grid-stride loop, head/tail handling, the fences and the
 * protocol of docs/design.md - is here.
 */
#pragma once

#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gridsync_device.cuh"
#include "kernel_list.h"
#include "ops.cuh"
#include "timeline.cuh"

namespace gs {

/* The shared memory of the backends' checked block folds (block_reduce_checked): one slot
 * per thread, and the result with its verdict, which thread 0 writes and take() hands to
 * every thread. */
template <int kBlock, typename V> struct CheckedScratch {
    V v[kBlock];
    V sum;
    unsigned int ok;
    /* after thread 0 wrote sum and ok: a barrier, then both in every thread */
    __device__ __forceinline__ V take(bool &exact)
    {
        __syncthreads();
        exact = ok != 0;
        return sum;
    }
};

/* ---- folding elements into a thread's accumulator -------------------------------------
 * Accum<Op>::add(acc, x, i) is combine(acc, lift(x, i)), and add_vec the same over one
 * vector of consecutive elements, where every element folded into `acc` so far has a
 * lower index (the kernel's loops visit each accumulator's elements in increasing index
 * order). For ARGMIN/ARGMAX that order makes the tie-break free (the accumulator wins
 * ties), and lets a vector that cannot improve on the accumulator be skipped after one
 * min/max per element, which keeps ARGMAX near memory speed. */
template <typename Op> struct Accum {
    static __device__ __forceinline__ typename Op::Acc add(typename Op::Acc a, typename Op::In x, int64_t i)
    {
        return Op::combine(a, Op::lift(x, i));
    }
    template <int kPer>
    static __device__ __forceinline__ typename Op::Acc add_vec(typename Op::Acc a, const typename Op::In (&v)[kPer],
                                                               uint64_t first)
    {
#pragma unroll
        for (int k = 0; k < kPer; k++)
            a = add(a, v[k], (int64_t)(first + k));
        return a;
    }
};

/* VecBest<T, kMax>::best(v, m): m = the largest (kMax) or smallest element of the vector,
 * and whether the vector may hold a NaN (then m is meaningless and the caller scans
 * exactly). same(x, m): whether element x equals m, for a vector without NaNs. Generic:
 * the min/max of the elements and a NaN test of each; float32 and the 16-bit floats use
 * the NaN-propagating min/max of compute capability 8.0+ (one instruction, and a NaN
 * anywhere makes m NaN), pairwise for the 16-bit types. Signed zeros compare equal, as
 * in the operation itself. */
template <typename T, bool kMax> struct VecBest {
    typedef typename Wide<T>::type M;
    template <int kPer> static __device__ __forceinline__ bool best(const T (&v)[kPer], M &m)
    {
        M w = widen(v[0]);
        bool nan = is_nan(w);
#pragma unroll
        for (int k = 1; k < kPer; k++) {
            const M x = widen(v[k]);
            w = kMax ? vmax(w, x) : vmin(w, x);
            nan |= is_nan(x);
        }
        m = w;
        return nan;
    }
    static __device__ __forceinline__ bool same(T x, M m) { return widen(x) == m; }
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <bool kMax> struct VecBest<float, kMax> {
    typedef float M;
    static __device__ __forceinline__ float pick(float a, float b)
    {
        return kMax ? NanMinMax<float>::max(a, b) : NanMinMax<float>::min(a, b);
    }
    template <int kPer> static __device__ __forceinline__ bool best(const float (&v)[kPer], float &m)
    {
        m = v[0];
#pragma unroll
        for (int k = 1; k < kPer; k++)
            m = pick(m, v[k]);
        return m != m;
    }
    static __device__ __forceinline__ bool same(float x, float m) { return x == m; }
};

/* __half and __nv_bfloat16: pairs with the packed NaN-propagating min/max, then the two
 * halves of the last pair. */
template <typename H, typename H2, bool kMax> struct VecBestHalf {
    typedef H M;
    static __device__ __forceinline__ H2 pick2(H2 a, H2 b) { return kMax ? __hmax2_nan(a, b) : __hmin2_nan(a, b); }
    static __device__ __forceinline__ H pick(H a, H b) { return kMax ? __hmax_nan(a, b) : __hmin_nan(a, b); }
    template <int kPer> static __device__ __forceinline__ bool best(const H (&v)[kPer], H &m)
    {
        static_assert(kPer % 2 == 0, "16-bit vectors hold pairs");
        H2 p;
        memcpy(&p, &v[0], sizeof p);
#pragma unroll
        for (int k = 2; k < kPer; k += 2) {
            H2 q;
            memcpy(&q, &v[k], sizeof q);
            p = pick2(p, q);
        }
        H half[2];
        memcpy(half, &p, sizeof p);
        m = pick(half[0], half[1]);
        return __hisnan(m);
    }
    static __device__ __forceinline__ bool same(H x, H m) { return __heq(x, m); }
};
template <bool kMax> struct VecBest<__half, kMax> : VecBestHalf<__half, __half2, kMax> {};
template <bool kMax> struct VecBest<__nv_bfloat16, kMax> : VecBestHalf<__nv_bfloat16, __nv_bfloat162, kMax> {};
#endif

template <typename T, typename Out, bool kMax> struct AccumArg {
    typedef OpArgBase<T, Out, kMax> Base;
    typedef typename Base::V V;
    /* Whether x, later in index order than best, replaces it: best is a number and x is a
     * NaN or strictly better. */
    static __device__ __forceinline__ bool better(V best, V x)
    {
        return !is_nan(best) && (is_nan(x) || (kMax ? best < x : x < best));
    }
    static __device__ __forceinline__ typename Base::Acc merge(typename Base::Acc a, V x, int64_t i)
    {
        if (a.i < 0 || better(a.v, x)) {
            a.v = x;
            a.i = i;
        }
        return a;
    }
    static __device__ __forceinline__ typename Base::Acc add(typename Base::Acc a, T x, int64_t i)
    {
        return merge(a, widen(x), i);
    }
    /* One vector, without a branch per element: its best value m (VecBest: kPer - 1
     * min/max instructions), the position of m's first occurrence (a compare and a select
     * per element), then one merge into the accumulator. The vector's own best decides,
     * since every element of the vector comes after everything in the accumulator and
     * before everything folded later. A vector holding a NaN (VecBest may also say so
     * when unsure: the answer is the same) takes the exact scan, element by element. No
     * thread waits on a data-dependent branch for numbers; the earlier version skipped
     * vectors that could not improve the accumulator, which diverged within a warp
     * whenever one thread's vector could - nearly always while threads have seen few
     * vectors (on an H100, ARGMAX gained 10 .. 40 % at 2^12 .. 2^25 elements, 1 .. 5 %
     * above; bench/NOTES.md, v6). */
    template <int kPer>
    static __device__ __forceinline__ typename Base::Acc add_vec(typename Base::Acc a, const T (&v)[kPer],
                                                                 uint64_t first)
    {
        typename VecBest<T, kMax>::M m;
        if (VecBest<T, kMax>::template best<kPer>(v, m)) {
#pragma unroll
            for (int k = 0; k < kPer; k++)
                a = merge(a, widen(v[k]), (int64_t)(first + (uint64_t)k));
            return a;
        }
        int pos = kPer - 1;
#pragma unroll
        for (int k = kPer - 2; k >= 0; k--)
            pos = VecBest<T, kMax>::same(v[k], m) ? k : pos;
        const V mv = widen(m); /* not a NaN */
        /* Selects, not a branch: whether the vector wins differs from lane to lane, and
         * with `if` the compiler sank the position into a branch that most warps then ran
         * both ways. */
        const bool take = a.i < 0 || (!is_nan(a.v) && (kMax ? a.v < mv : mv < a.v));
        const int64_t idx = (int64_t)(first + (uint64_t)pos);
        a.v = take ? mv : a.v;
        a.i = take ? idx : a.i;
        return a;
    }
};

template <typename T, typename Out> struct Accum<OpArgMin<T, Out> > : AccumArg<T, Out, false> {};
template <typename T, typename Out> struct Accum<OpArgMax<T, Out> > : AccumArg<T, Out, true> {};

/* ---- the kernel body -----------------------------------------------------------------*/

/* Folds the 16 / sizeof(T) elements of one vector, whose first has index `first`. */
template <typename Op>
__device__ __forceinline__ typename Op::Acc fold16(typename Op::Acc acc, const uint4 &raw, uint64_t first)
{
    typedef typename Op::In T;
    const int kPer = 16 / sizeof(T);
    T v[kPer];
    memcpy(v, &raw, 16);
    return Accum<Op>::template add_vec<kPer>(acc, v, first);
}

/* Folds n consecutive elements starting at `in` (element-aligned), whose first has index
 * `first`, as thread t of nt cooperating threads: the misaligned head and the tail one
 * element per thread, the 16-byte vectors in between with kUnroll independent loads in
 * flight, each into its own accumulator acc[u], which sees increasing indices.
 * accumulate() below returns the thread's share, combined in a fixed order. Used with
 * nt = the grid (gs_reduce), a block, or a group of threads (segmented reduction). */
template <typename Policy, typename Op, int kUnroll>
__device__ __forceinline__ void accumulate_parts(const typename Op::In *__restrict__ in, uint64_t n, uint64_t first,
                                                 uint64_t t, uint64_t nt, typename Op::Acc (&acc)[kUnroll])
{
    typedef typename Op::In T;
    const int kPer = 16 / sizeof(T);

    /* Split [0, n) into a misaligned head, whole 16-byte vectors, and a tail, once. The
     * input is element-aligned (checked by the core), so head < kPer. */
    const uint64_t misalign = ((uintptr_t)in & 15u) / sizeof(T);
    uint64_t head = misalign ? (uint64_t)kPer - misalign : 0;
    if (head > n)
        head = n;
    const uint64_t nvec = (n - head) / kPer;
    const uint64_t tail_begin = head + nvec * kPer;
    const uint4 *vin = (const uint4 *)(in + head);

#pragma unroll
    for (int u = 0; u < kUnroll; u++)
        acc[u] = Op::identity();

    /* Head elements (before every vector). The loops that run a few times at most are
     * kept rolled (`unroll 1`): the compiler would otherwise unroll them by four in every
     * copy of this function, for nothing. */
#pragma unroll 1
    for (uint64_t h = t; h < head; h += nt)
        acc[0] = Accum<Op>::add(acc[0], in[h], (int64_t)(first + h));

    /* kUnroll independent loads in flight, then fold each into its own accumulator. */
    uint64_t i = t;
    for (; i + (kUnroll - 1) * nt < nvec; i += kUnroll * nt) {
        uint4 raw[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; u++)
            raw[u] = Policy::load16(vin + i + u * nt);
#pragma unroll
        for (int u = 0; u < kUnroll; u++)
            acc[u] = fold16<Op>(acc[u], raw[u], first + head + (i + u * nt) * kPer);
    }
#pragma unroll 1
    for (; i < nvec; i += nt)
        acc[0] = fold16<Op>(acc[0], Policy::load16(vin + i), first + head + i * kPer);
    /* Tail elements (after every vector), also in increasing index order per accumulator. */
#pragma unroll 1
    for (uint64_t r = tail_begin + t; r < n; r += nt)
        acc[0] = Accum<Op>::add(acc[0], in[r], (int64_t)(first + r));
}

/* A thread's accumulators combined in a fixed order: ((acc0 + acc1) + acc2) + ... */
template <typename Op, int kUnroll>
__device__ __forceinline__ typename Op::Acc combine_parts(const typename Op::Acc (&acc)[kUnroll])
{
    typename Op::Acc a = acc[0];
#pragma unroll
    for (int u = 1; u < kUnroll; u++)
        a = Op::combine(a, acc[u]);
    return a;
}

/* The same as accumulate_parts, as one value. */
template <typename Policy, typename Op, int kUnrollArg = 0>
__device__ __forceinline__ typename Op::Acc accumulate(const typename Op::In *__restrict__ in, uint64_t n,
                                                       uint64_t first, uint64_t t, uint64_t nt)
{
    const int kUnroll = kUnrollArg ? kUnrollArg : Policy::kUnroll;
    typename Op::Acc acc[kUnroll];
    accumulate_parts<Policy, Op, kUnroll>(in, n, first, t, nt, acc);
    return combine_parts<Op, kUnroll>(acc);
}

/* Which gs_reduce kernels have timeline.cuh's hooks (compiled in with GS_TIMELINE only):
 * the float SUMs into their own type. */
template <typename Op> struct TimelineOn {
    static const bool value = false;
};
template <typename T> struct TimelineOn<OpSum<T, T> > {
    static const bool value = TimelineId<T>::value >= 0;
};

/* Combines one value per thread of the grid (acc) into *out: the block's reduction, then
 * docs/design.md's protocol, the last block combining the partials. */
template <typename Policy, typename Op>
__device__ __forceinline__ void grid_combine(typename Op::Acc acc, typename Op::OutT *__restrict__ out,
                                             unsigned char *workspace)
{
    typedef typename Op::Acc Acc;
    unsigned int *counter = (unsigned int *)workspace;
    Acc *partials = (Acc *)(workspace + GS_PARTIALS_OFFSET);
    __shared__ typename Policy::template Scratch<Acc> scratch;
    const unsigned int tid = threadIdx.x;

    constexpr bool kTimeline = TimelineOn<Op>::value;
    if constexpr (kTimeline)
        timeline_stamp(1);
    Acc block = Policy::template block_reduce<Op>(acc, scratch);
    if constexpr (kTimeline)
        timeline_stamp(2);

    if (gridDim.x == 1) {
        /* One block: no other block to wait for, the counter stays 0. */
        if (tid == 0)
            *out = Op::result(block);
        return;
    }

    /* docs/design.md's protocol. (1) publish the partial, from thread 0. */
    if (tid == 0)
        partials[blockIdx.x] = block;
    /* (2) release, (3) ticket, (4) guard and (5) acquire, per backend: thread 0's ticket
     * is an acquire-release atomic (gs_ticket_acq_rel), so the partial is visible
     * device-wide before the ticket that announces it, and the loads below, ordered after
     * the ticket by the guard's barrier, see every partial the earlier tickets announced;
     * volatile loads, because a cached (L1) load could return a stale line. Both guards
     * contain a __syncthreads, which also separates the two uses of `scratch`. */
    const bool last = Policy::last_arrival(counter, gridDim.x);
    if constexpr (kTimeline)
        timeline_stamp(3);
    if (last) {
        /* (6) combine in block-index order: thread t folds partials t, t + B, ... in
         * increasing order, then the block combines threads in a fixed tree, so the
         * result is the same whichever block finished last. */
        /* All of a thread's loads are issued before the first combine (at most
         * GS_MAX_BLOCKS / kBlock of them), so the last block waits for one round trip to
         * memory instead of one per partial. */
        const int kMaxPer = (GS_MAX_BLOCKS + Policy::kBlock - 1) / Policy::kBlock;
        Acc v[kMaxPer];
#pragma unroll
        for (int k = 0; k < kMaxPer; k++) {
            const unsigned int b = threadIdx.x + (unsigned int)k * Policy::kBlock;
            v[k] = b < gridDim.x ? gs_load_volatile(&partials[b]) : Op::identity();
        }
        /* (only the loaded ones: a small grid leaves most threads one partial or none) */
        Acc a = v[0];
#pragma unroll
        for (int k = 1; k < kMaxPer; k++)
            if (threadIdx.x + (unsigned int)k * Policy::kBlock < gridDim.x)
                a = Op::combine(a, v[k]);
        a = Policy::template block_reduce<Op>(a, scratch);
        if constexpr (kTimeline)
            timeline_stamp(4);
        if (tid == 0) {
            /* (7) the result, then the counter back to 0 for the next launch on this
             * stream's workspace: no memset, and a captured graph replays correctly. */
            *out = Op::result(a);
            gs_reset_counter(counter);
        }
        if constexpr (kTimeline)
            timeline_report<Policy, false, typename Op::In>();
    }
}

template <typename Policy, typename Op>
__device__ __forceinline__ void reduce_kernel(const typename Op::In *__restrict__ in, uint64_t n,
                                              typename Op::OutT *__restrict__ out, unsigned char *workspace)
{
    const uint64_t gtid = (uint64_t)blockIdx.x * Policy::kBlock + threadIdx.x;
    const uint64_t stride = (uint64_t)gridDim.x * Policy::kBlock;
    typename Op::Acc acc[Policy::kUnroll];
    if constexpr (TimelineOn<Op>::value)
        timeline_stamp(0);
    accumulate_parts<Policy, Op, Policy::kUnroll>(in, n, 0, gtid, stride, acc);
    if constexpr (ArgKey<Op>::kUsable) {
        typedef ArgKey<Op> K;
        if (n <= K::kMaxN) {
            /* ARGMIN/ARGMAX: the rest on keys (the thread's own accumulators too) */
            typename K::Op::Acc k = K::key(acc[0]);
#pragma unroll
            for (int u = 1; u < Policy::kUnroll; u++)
                k = K::Op::combine(k, K::key(acc[u]));
            grid_combine<Policy, typename K::Op>(k, out, workspace);
            return;
        }
    }
    grid_combine<Policy, Op>(combine_parts<Op, Policy::kUnroll>(acc), out, workspace);
}

} // namespace gs

/* Instantiation helpers: a backend's kernels.cu defines GS_POLICY and includes
 * kernels.cuh. */
