/*
 * gs_scan's kernel body: persistent blocks take tiles in order from the workspace's ticket;
 * each loads its tile through shared memory (coalesced 16-byte vectors where in and out
 * allow), folds each thread's elements, scans the block (block/scan.cuh), gets the tile's
 * carry from the earlier tiles (agent/scan_lookback.cuh), and writes the tile's outputs
 * through shared memory again. Every step follows hostref/scan.c's order, whose numbers
 * are internal/scan_order.h's, so the bits depend on n and the input alone: not on the
 * grid, the backend, the GPU or the alignment.
 *
 * in and out may be the same buffer (in place): a tile's input is read whole into shared
 * memory before any of its outputs is written, and only its own block reads it.
 */
#pragma once

#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "agent/scan_lookback.cuh"
#include "block/scan.cuh"
#include "gridsync_device.cuh"
#include "scan_order.h"
#include "workspace.h"

namespace gs {

/* The widest vector that divides a thread's bytes of a tile (8 at least: scan_order.h). */
template <int kBytes> struct ThreadVec { typedef uint4 type; };
template <> struct ThreadVec<8> { typedef uint2 type; };

template <typename Op, int kThreadsOf = GS_SCAN_THREADS> struct ScanShape {
    typedef typename Op::In In;
    typedef typename Op::OutT Out;
    typedef typename Op::Acc V;
    static const int kThreads = kThreadsOf;
    static const int kItems = GS_SCAN_ITEMS(sizeof(Out));
    static const int kTile = kThreads * kItems;
    static const int kInBytes = kItems * (int)sizeof(In), kOutBytes = kItems * (int)sizeof(Out);
    static const int kStageBytes = kTile * (int)(sizeof(In) > sizeof(Out) ? sizeof(In) : sizeof(Out));
    static const int kVecsIn = kTile * (int)sizeof(In) / 16; /* a whole tile's 16-byte loads */
    static_assert(kInBytes % 8 == 0 && kOutBytes % 8 == 0 && kStageBytes % 16 == 0, "vector-sized thread shares");
    /* a thread's input in chunks of one vector access each */
    static const int kInChunk = kInBytes % 16 == 0 ? 16 : 8, kInPer = kInChunk / (int)sizeof(In);
    static_assert(kInBytes % kInChunk == 0, "whole chunks of input per thread");
    static_assert(kOutBytes % 16 == 0, "whole 16-byte chunks of output per thread");

    struct Smem {
        uint4 stage[kStageBytes / 16]; /* the tile's input, then its outputs */
        ScanScratch<kThreads, V> scan;
        LookbackScratch<V> lookback;
        uint32_t tile;
        unsigned int last; /* not in `tile`: a thread may still be reading that */
    };
};

/* Thread t's share of the staged tile is kBytes from t * kBytes; chunk c of it, kChunk
 * bytes (8 or 16), to or from registers in one vector access. */
template <int kBytes, int kChunk, typename T> __device__ __forceinline__ void chunk_get(const uint4 *stage, int c, T *x)
{
    typedef typename ThreadVec<kChunk>::type TV;
    const TV v = *(const TV *)((const unsigned char *)stage + threadIdx.x * kBytes + c * kChunk);
    memcpy(x, &v, kChunk);
}
template <int kBytes, int kChunk, typename T> __device__ __forceinline__ void chunk_put(uint4 *stage, int c, const T *x)
{
    typedef typename ThreadVec<kChunk>::type TV;
    TV v;
    memcpy(&v, x, kChunk);
    *(TV *)((unsigned char *)stage + threadIdx.x * kBytes + c * kChunk) = v;
}

/* How a scan turns elements into carried values and values into results: the op's own
 * lift and result. An edge with kExact (agent/scan_exact.cuh) holds a launch's anchor, a
 * carry-in (origin) that precedes every element, and writes the elements' total. */
template <typename Op> struct ScanEdge {
    static const bool kExact = false;
    /* kAlone: one block takes every tile (values too wide for the ring); kThreads: the block */
    static const bool kAlone = false;
    static const int kThreads = GS_SCAN_THREADS;
    __device__ __forceinline__ typename Op::Acc lift(typename Op::In x) const { return Op::lift(x, 0); }
    __device__ __forceinline__ typename Op::OutT result(typename Op::Acc v) const { return Op::result(v); }
};

/* Step 7 for one element: the output, and the running value after it. */
template <typename Op, typename Edge>
__device__ __forceinline__ typename Op::OutT scan_step(const Edge &edge, Maybe<Op> &run, typename Op::In x,
                                                      bool exclusive)
{
    const typename Op::Acc xv = edge.lift(x);
    if constexpr (Edge::kExact) { /* one rounding an element, not both and a choice */
        if (exclusive) {
            const typename Op::OutT before = edge.result(run.has ? run.v : Op::identity());
            run = Maybe<Op>{run.has ? Op::combine(run.v, xv) : xv, true};
            return before;
        }
        run = Maybe<Op>{run.has ? Op::combine(run.v, xv) : xv, true};
        return edge.result(run.v);
    }
    const typename Op::OutT before = edge.result(run.has ? run.v : Op::identity());
    run = Maybe<Op>{run.has ? Op::combine(run.v, xv) : xv, true};
    return exclusive ? before : edge.result(run.v);
}

/* The scan's op: Op, except that MIN and MAX keep the left operand unless the right one is
 * a NaN or strictly better, as hostref/scan.c does, on every architecture. The min/max
 * instructions that thread/ops.cuh uses for float32 on compute capability 8.0+ order -0.0
 * below +0.0, so a tie of zeros would give other bits there than on older GPUs (gs_reduce
 * leaves that zero's sign unspecified; a scan promises its bits). */
template <typename Op> struct ScanOp : Op {};
template <typename T, typename Out> struct ScanOp<OpMin<T, Out> > : OpMin<T, Out> {
    typedef typename OpMin<T, Out>::Acc Acc;
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return is_nan(a) ? a : (is_nan(b) || b < a) ? b : a; }
};
template <typename T, typename Out> struct ScanOp<OpMax<T, Out> > : OpMax<T, Out> {
    typedef typename OpMax<T, Out>::Acc Acc;
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return is_nan(a) ? a : (is_nan(b) || a < b) ? b : a; }
};

/*
 * flags: GS_BACKEND_SCAN_EXCLUSIVE (bit 0). The host launches GS_SCAN_THREADS threads per
 * block and makes the ntiles + gridDim.x tickets fit 32 bits: each block stops at its first
 * ticket past the tiles.
 */
template <typename Policy, typename KernelOp, typename Edge = ScanEdge<ScanOp<KernelOp> > >
__device__ __forceinline__ void scan_kernel(const typename KernelOp::In *in, uint64_t n, typename KernelOp::OutT *out,
                                            unsigned char *workspace, unsigned int flags, const Edge &edge = Edge())
{
    typedef ScanOp<KernelOp> Op;
    typedef ScanShape<Op, Edge::kThreads> S;
    typedef typename S::In In;
    typedef typename S::Out Out;
    typedef typename S::V V;
    const int kItems = S::kItems, kTile = S::kTile, kThreads = S::kThreads;
    __shared__ typename S::Smem sm;
    typedef typename std::conditional<Edge::kAlone, ScanNoRing, ScanRing<V> >::type Ring;
    const Ring ring(workspace);
    unsigned int *ticket = (unsigned int *)(workspace + GS_TICKET_OFFSET);
    unsigned int *exits = (unsigned int *)(workspace + GS_SCAN_EXITS_OFFSET);
    const uint32_t ntiles = (uint32_t)((n + kTile - 1) / kTile);
    const bool exclusive = flags & 1u;
    const bool vec_in = ((uintptr_t)in & 15u) == 0, vec_out = ((uintptr_t)out & 15u) == 0;
    /* One block alone takes the tiles in order and keeps the carries itself: no ticket, no
     * ring, the same folds (hostref/scan.c's loop). */
    const bool alone = Edge::kAlone || gridDim.x == 1;
    Maybe<Op> before{V(), false}, within{V(), false};
    const int t = threadIdx.x;
    /* A block takes its next tile only when it is free for it, so the lowest tile left is
     * always taken first. Tickets only order the tiles (relaxed): the ring's own
     * operations order its data. */
    for (uint32_t lone = 0;; lone++) {
        if (t == 0)
            sm.tile = alone ? lone : atomicAdd(ticket, 1u);
        __syncthreads();
        const uint32_t j = sm.tile;
        if (j >= ntiles) {
            /* Every block ends here once; the last to arrive (acq_rel, after a fence that
             * orders the block's ring writes before it) finds every tile done and puts the
             * ring, the ticket and the exits back to zero for the next launch. */
            if constexpr (!Edge::kAlone) {
                if (!alone) {
                    if (t == 0) {
                        __threadfence();
                        sm.last = gs_ticket_acq_rel(exits) == gridDim.x - 1;
                    }
                    __syncthreads();
                    if (sm.last) {
                        ring.reset((ntiles + GS_SCAN_GROUP - 1) / GS_SCAN_GROUP);
                        if (t == 0) {
                            *ticket = 0;
                            *exits = 0;
                        }
                    }
                }
            }
            return;
        }
        const uint64_t base = (uint64_t)j * kTile;
        const int len = n - base < (uint64_t)kTile ? (int)(n - base) : kTile;
        /* the tile into shared memory, coalesced */
        if (len == kTile && vec_in) {
            /* every load in flight before the first store to shared memory */
            const uint4 *src = (const uint4 *)(in + base);
            uint4 r[S::kVecsIn / kThreads + (S::kVecsIn % kThreads != 0)];
#pragma unroll
            for (int k = 0; k < (int)(sizeof r / sizeof r[0]); k++)
                if (S::kVecsIn % kThreads == 0 || k * kThreads + t < S::kVecsIn)
                    r[k] = Policy::load16(src + k * kThreads + t);
#pragma unroll
            for (int k = 0; k < (int)(sizeof r / sizeof r[0]); k++)
                if (S::kVecsIn % kThreads == 0 || k * kThreads + t < S::kVecsIn)
                    sm.stage[k * kThreads + t] = r[k];
        } else {
            In *stage_in = (In *)sm.stage;
            for (int e = t; e < len; e += kThreads)
                stage_in[e] = in[base + e];
        }
        __syncthreads();
        /* 1: the thread's elements (the last tile's tail: fewer, or none) folded left, read
         * chunk by chunk from the stage (no copy of them stays live across steps 2-5) */
        const int first = t * kItems, mine = len - first < 0 ? 0 : len - first < kItems ? len - first : kItems;
        V a = Op::identity(); /* a lane with no element: padding, which reaches no output */
#pragma unroll
        for (int c = 0; c < S::kInBytes / S::kInChunk; c++) {
            In xs[S::kInPer];
            chunk_get<S::kInBytes, S::kInChunk>(sm.stage, c, xs);
#pragma unroll
            for (int i = 0; i < S::kInPer; i++) {
                const int k = c * S::kInPer + i;
                if (k < mine)
                    a = k ? Op::combine(a, edge.lift(xs[i])) : edge.lift(xs[i]);
            }
        }
        /* 2-4: I_t for every thread; P_t = I_{t-1}; AGG_j = I_{kThreads-1} */
        BlockScan<Policy, Op>::template scan<kThreads>(a, sm.scan);
        const V agg = sm.scan.incl[kThreads - 1];
        const Maybe<Op> prev{sm.scan.incl[t > 0 ? t - 1 : 0], t > 0};
        /* 5: C_j */
        Maybe<Op> carry;
        if (alone) {
            carry = Maybe<Op>::join(before, within);
            within = Maybe<Op>::join(within, Maybe<Op>{agg, true});
            if (j % GS_SCAN_GROUP == GS_SCAN_GROUP - 1) {
                before = Maybe<Op>::join(before, within);
                within = Maybe<Op>{V(), false};
            }
        } else if constexpr (!Edge::kAlone) {
            carry = scan_carry<Op>(ring, j, agg, sm.lookback);
        }
        if constexpr (Edge::kExact) {
            /* the ring and the alone path carry the elements alone; the carry-in goes first */
            if (j == ntiles - 1)
                edge.total(Maybe<Op>::join(carry, Maybe<Op>{agg, true}).v, n);
            carry = Maybe<Op>::join(Maybe<Op>{edge.origin, true}, carry);
        }
        /* 6, 7: T_t, then each element; exclusive outputs the running value before it. The
         * stage still holds the input: read again, the outputs written over it. */
        Maybe<Op> run = Maybe<Op>::join(carry, prev);
        if constexpr (sizeof(In) == sizeof(Out)) {
            /* a chunk's outputs take its inputs' place */
#pragma unroll
            for (int c = 0; c < S::kInBytes / S::kInChunk; c++) {
                In xs[S::kInPer];
                Out ys[S::kInPer];
                chunk_get<S::kInBytes, S::kInChunk>(sm.stage, c, xs);
#pragma unroll
                for (int i = 0; i < S::kInPer; i++)
                    if (c * S::kInPer + i < mine)
                        ys[i] = scan_step<Op>(edge, run, xs[i], exclusive);
                chunk_put<S::kOutBytes, S::kInChunk>(sm.stage, c, ys);
            }
        } else {
            /* wider outputs cover other threads' inputs: every input read before any output */
            In xs[kItems];
            Out ys[kItems];
#pragma unroll
            for (int c = 0; c < S::kInBytes / S::kInChunk; c++)
                chunk_get<S::kInBytes, S::kInChunk>(sm.stage, c, xs + c * S::kInPer);
            __syncthreads();
#pragma unroll
            for (int k = 0; k < kItems; k++)
                if (k < mine)
                    ys[k] = scan_step<Op>(edge, run, xs[k], exclusive);
#pragma unroll
            for (int c = 0; c < S::kOutBytes / 16; c++)
                chunk_put<S::kOutBytes, 16>(sm.stage, c, ys + c * (16 / (int)sizeof(Out)));
        }
        __syncthreads();
        if (len == kTile && vec_out) {
            uint4 *dst = (uint4 *)(out + base);
#pragma unroll
            for (int k = 0; k < S::kOutBytes / 16; k++)
                dst[k * kThreads + t] = sm.stage[k * kThreads + t];
        } else {
            const Out *stage_out = (const Out *)sm.stage;
            for (int e = t; e < len; e += kThreads)
                out[base + e] = stage_out[e];
        }
        __syncthreads(); /* the stage, the scratch and sm.tile are the next tile's */
    }
}

} // namespace gs
