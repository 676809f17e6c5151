/*
 * The exact sums' checked block folds: the block's values added with Chk::add, which
 * clears ok when its addition is not exact. The sum comes back in every thread, with ok
 * set when every addition was; a value that came in not ok enters as Chk::lost_acc(),
 * whose additions fail in turn, so no flag travels beside the values. Two algorithms, the
 * generation's capabilities choosing (Policy::kWarpShuffles):
 *   CheckedWarp  warp 0 alone adds: kBlock / 32 values per lane from shared memory,
 *                pairwise, then over the lanes with Policy::shfl_down, each lane keeping
 *                its own tests until one vote (Policy::warp_all), so a level waits for its
 *                addition, not for the test beside it;
 *   CheckedTree  the shared-memory tree of block/fan_tree.cuh, thread 0 adding the last
 *                level and publishing the result.
 * Every thread calls them; they hold barriers and read the scratch until they return, so
 * the caller puts a barrier before the scratch is written again.
 */
#pragma once

#include "block/fan_tree.cuh"

namespace gs {

/* One slot per thread, and the result with its verdict, which thread 0 writes and take()
 * hands to every thread. */
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

/* The scratch of block_reduce_checked2: one double's fold, then two doubles'. */
template <int kBlock, typename Dd> union CheckedScratch2 {
    CheckedScratch<kBlock, double> d;
    CheckedScratch<kBlock, Dd> dd;
};

template <typename Policy> struct CheckedWarp {
    static const int kPer = Policy::kBlock / 32;
    static_assert(Policy::kBlock % 32 == 0, "whole warps");

    /* Warp 0's part: lane values w added pairwise, then over the lanes; the sum in lane 0,
     * and whether it is exact in every lane (a lane tests only the additions whose sums
     * reach lane 0: lane < off at each level). */
    template <typename Chk, int kN>
    static __device__ __forceinline__ typename Chk::Acc warp_sum(typename Chk::Acc (&w)[kN], bool &ok)
    {
        const unsigned int lane = threadIdx.x & 31;
        bool mine = true;
#pragma unroll
        for (int h = 1; h < kN; h *= 2)
#pragma unroll
            for (int k = 0; k + h < kN; k += 2 * h)
                w[k] = Chk::add(w[k], w[k + h], mine);
        typename Chk::Acc v = w[0];
        Policy::warp_sync(); /* converged: the shuffles' fast path */
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            bool e = true;
            v = Chk::add(v, Policy::shfl_down(v, off), e);
            mine &= e | (lane >= (unsigned int)off);
        }
        ok = Policy::warp_all(mine);
        return v;
    }

    template <typename Chk, typename V>
    static __device__ __forceinline__ V reduce(V v, bool &ok, CheckedScratch<Policy::kBlock, V> &s)
    {
        const unsigned int t = threadIdx.x;
        s.v[t] = ok ? v : Chk::lost_acc();
        __syncthreads();
        if (t < 32) {
            V w[kPer];
#pragma unroll
            for (int k = 0; k < kPer; k++)
                w[k] = s.v[t + 32 * k];
            bool mine;
            v = warp_sum<Chk>(w, mine);
            if (t == 0) {
                s.sum = v;
                s.ok = mine;
            }
        }
        return s.take(ok);
    }

    /* Two-double values whose sum one double may hold: warp 0 tries one double (Chk1)
     * first, then two (Chk) from the values it already holds, with no second pass through
     * shared memory and its barriers. */
    template <typename Chk1, typename Chk, typename S>
    static __device__ __forceinline__ typename Chk::Acc reduce2(typename Chk::Acc v, bool &ok, S &s)
    {
        const unsigned int t = threadIdx.x;
        s.dd.v[t] = ok ? v : Chk::lost_acc();
        __syncthreads();
        if (t < 32) {
            typename Chk::Acc w[kPer];
            typename Chk1::Acc x[kPer];
#pragma unroll
            for (int k = 0; k < kPer; k++) {
                w[k] = s.dd.v[t + 32 * k];
                x[k] = Chk1::of_dd(w[k]);
            }
            bool mine;
            v = Chk1::to_dd(warp_sum<Chk1>(x, mine));
            if (!mine)
                v = warp_sum<Chk>(w, mine);
            if (t == 0) {
                s.dd.sum = v;
                s.dd.ok = mine;
            }
        }
        return s.dd.take(ok);
    }
};

template <typename Policy> struct CheckedTree {
    /* A thread whose tests failed passes Chk::lost_acc() on instead of its sum. */
    template <typename Chk, typename V>
    static __device__ __forceinline__ V reduce(V v, bool &ok, CheckedScratch<Policy::kBlock, V> &s)
    {
        s.v[threadIdx.x] = ok ? v : Chk::lost_acc();
        bool mine = true;
        fan_tree<Policy::kBlock>(v, s.v, [&](V a, V b) { return Chk::add(a, b, mine); },
                                 [&](unsigned int t, V a, bool last) {
                                     if (!last)
                                         s.v[t] = mine ? a : Chk::lost_acc();
                                     else {
                                         s.sum = a;
                                         s.ok = mine;
                                     }
                                 });
        return s.take(ok);
    }

    /* The tree in one double (Chk1) first, then, if that was not exact, in two (Chk). */
    template <typename Chk1, typename Chk, typename S>
    static __device__ __forceinline__ typename Chk::Acc reduce2(typename Chk::Acc v, bool &ok, S &s)
    {
        bool one = ok;
        const typename Chk1::Acc x = reduce<Chk1>(Chk1::of_dd(v), one, s.d);
        if (one)
            return Chk1::to_dd(x);
        __syncthreads(); /* every thread's reads of s.d done */
        return reduce<Chk>(v, ok, s.dd);
    }
};

template <bool kWarp, typename Policy> struct CheckedPick { typedef CheckedWarp<Policy> type; };
template <typename Policy> struct CheckedPick<false, Policy> { typedef CheckedTree<Policy> type; };
template <typename Policy> using Checked = typename CheckedPick<Policy::kWarpShuffles, Policy>::type;

/* The block's values (ok: whether this thread's is exact) added with Chk's checked
 * additions: the sum and whether it is exact, in every thread. */
template <typename Policy, typename Chk, typename V>
__device__ __forceinline__ V block_reduce_checked(V v, bool &ok, CheckedScratch<Policy::kBlock, V> &s)
{
    return Checked<Policy>::template reduce<Chk>(v, ok, s);
}

/* The same for Chk's two-double values, tried in one double (Chk1) first; s a
 * CheckedScratch2. */
template <typename Policy, typename Chk1, typename Chk, typename S>
__device__ __forceinline__ typename Chk::Acc block_reduce_checked2(typename Chk::Acc v, bool &ok, S &s)
{
    return Checked<Policy>::template reduce2<Chk1, Chk>(v, ok, s);
}

} // namespace gs
