/* Striped loads of a range into per-thread accumulators, for nt cooperating threads (the
 * grid, a block or a group): the misaligned head, 16-byte vectors with Policy::kUnroll
 * loads in flight (Policy::load16), and the tail, each accumulator in index order. */
#pragma once

#include <stdint.h>
#include <string.h>

#include "thread/accum.cuh"

namespace gs {

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

} // namespace gs
