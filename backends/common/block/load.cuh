/* Striped loads of a range into per-thread accumulators, for nt cooperating threads (the
 * grid, a block or a group), each accumulator seeing increasing indices. */
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

/* Thread t of nt folds its share of n elements at `in` (element-aligned; the first has index
 * `first`): the misaligned head and the tail one element per thread, the 16-byte vectors
 * between with kUnroll loads in flight (Policy::load16), load u into acc[u]. */
template <typename Policy, typename Op, int kUnroll>
__device__ __forceinline__ void accumulate_parts(const typename Op::In *__restrict__ in, uint64_t n, uint64_t first,
                                                 uint64_t t, uint64_t nt, typename Op::Acc (&acc)[kUnroll])
{
    typedef typename Op::In T;
    const int kPer = 16 / sizeof(T);

    /* The core checks element alignment, so head < kPer. */
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

    /* Loops that run a few times at most stay rolled: unrolling them only adds code. */
#pragma unroll 1
    for (uint64_t h = t; h < head; h += nt)
        acc[0] = Accum<Op>::add(acc[0], in[h], (int64_t)(first + h));

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

/* accumulate_parts' accumulators, combined. */
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
