/*
 * The block's inclusive scan in gs_scan's fixed order (hostref/scan.c, steps 2 to 4): each
 * warp's values by an inclusive Kogge-Stone (v_l = v_{l-d} op v_l for d = 1, 2, .. 16, all
 * from the previous step), the warp totals by the same Kogge-Stone over the warps, then
 * I_t = WP_w op v_t. Both algorithms give those bits; the generation picks one
 * (Policy::kWarpShuffles):
 *   shuffles  a warp scans with __shfl_up_sync, warp 0 scans the totals;
 *   shared    every step through shared memory, a barrier on each side of its reads.
 * Every thread calls block_scan; it ends with a barrier after which incl[t] = I_t is
 * readable by every thread, so P_t = I_{t-1} and the tile's aggregate I_{kThreads-1} come
 * from it. The caller puts a barrier before the scratch is written again.
 */
#pragma once

namespace gs {

template <int kThreads, typename V> struct ScanScratch {
    static const int kWarps = kThreads / 32;
    static_assert(kThreads % 32 == 0 && kWarps <= 32, "whole warps, at most a warp of them");
    V incl[kThreads]; /* I_t; the shared algorithm's v_t before that */
    V warp[kWarps];   /* W_w, then the scanned totals */
};

/* Kogge-Stone over the kWarps totals in s.warp by warp 0's first lanes, through shared memory
 * (kWarps <= 32, so lanes past kWarps only wait); barriers around each step. */
template <typename Op, int kThreads>
__device__ __forceinline__ void scan_warp_totals_shared(ScanScratch<kThreads, typename Op::Acc> &s)
{
    typedef typename Op::Acc V;
    const int t = threadIdx.x, kWarps = ScanScratch<kThreads, V>::kWarps;
#pragma unroll
    for (int d = 1; d < kWarps; d *= 2) {
        V o = V(), mine = V();
        const bool step = t < kWarps && t >= d;
        if (step) {
            o = s.warp[t - d];
            mine = s.warp[t];
        }
        __syncthreads();
        if (step)
            s.warp[t] = Op::combine(o, mine);
        __syncthreads();
    }
}

/* Both algorithms' end, from each thread's warp-inclusive v: the warp totals (lane 31's v)
 * scanned, then I_t = WP_w op v_t into s.incl, published by the last barrier. */
template <typename Op, int kThreads>
__device__ __forceinline__ void scan_block_end(typename Op::Acc v, ScanScratch<kThreads, typename Op::Acc> &s)
{
    const int t = threadIdx.x, w = t >> 5;
    if ((t & 31) == 31)
        s.warp[w] = v;
    __syncthreads();
    scan_warp_totals_shared<Op, kThreads>(s);
    s.incl[t] = w ? Op::combine(s.warp[w - 1], v) : v;
    __syncthreads();
}

template <typename Policy, typename Op, bool kShuffles = Policy::kWarpShuffles> struct BlockScan;

template <typename Policy, typename Op> struct BlockScan<Policy, Op, true> {
    typedef typename Op::Acc V;
    template <int kThreads> static __device__ __forceinline__ void scan(V v, ScanScratch<kThreads, V> &s)
    {
        const int lane = threadIdx.x & 31;
#pragma unroll
        for (int d = 1; d < 32; d *= 2) {
            const V o = Policy::shfl_up(v, d);
            if (lane >= d)
                v = Op::combine(o, v);
        }
        scan_block_end<Op, kThreads>(v, s);
    }
};

template <typename Policy, typename Op> struct BlockScan<Policy, Op, false> {
    typedef typename Op::Acc V;
    template <int kThreads> static __device__ __forceinline__ void scan(V v, ScanScratch<kThreads, V> &s)
    {
        const int t = threadIdx.x, lane = t & 31;
        s.incl[t] = v;
#pragma unroll
        for (int d = 1; d < 32; d *= 2) {
            __syncthreads();
            const V o = lane >= d ? s.incl[t - d] : v;
            __syncthreads();
            if (lane >= d)
                v = Op::combine(o, v);
            s.incl[t] = v;
        }
        scan_block_end<Op, kThreads>(v, s);
    }
};

} // namespace gs
