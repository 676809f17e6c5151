/*
 * The segmented reduction in one launch, for both backends; docs/design.md, "The segmented
 * reduction", gives the protocol and its reasons.
 *
 * Chunks: segment j's marker sits at merged index offsets[j] + j, just before its first element.
 * The n + S merged items are cut into nchunks chunks of `chunk` items, taken by the blocks from
 * a work queue, so a chunk holds at most `chunk` elements and segments together. Chunk k covers
 * merged [d0, d1): it owns the segments [lo, hi) whose markers lie in it and the positions
 * [cb, ce) = [d0 - lo, d1 - hi); an owned segment that ends in it is reduced there.
 *
 * Slots: at most two segments cross a chunk's edges, one coming in (piece in slot A[k]) and the
 * last owned one going out (B[k]). A segment spanning chunks c0 < c1 has pieces B[c0], A[c0+1],
 * ..., A[c1]; each piece's block takes a ticket on counter[c0] (release before, acquire and
 * volatile loads after), and the last one combines them in chunk order. The split depends only
 * on n, S, the op and the offsets, and folds have a fixed order, so results repeat run to run.
 *
 * Bounded work (docs/semantics.md §11), bad offsets costing no more than good ones: offsets are
 * read clamped to [0, n], and the split's search is monotone whatever they hold, so the owned
 * ranges partition [0, S). A chunk gives up on its remaining owned segments (outputs
 * unwritten) when it owns more than `chunk`, the first begins before cb, or a round holds a
 * decreasing pair; until then they read disjoint positions in [cb, ce), as do the clipped
 * crossing pieces: a chunk reads about 2 x chunk elements and 2 x (chunk + kBlock) offsets
 * beyond its search. The last block zeroes the queue and counters, so no memset is needed.
 *
 * Workspace: the queue at GS_SEG_QUEUE_OFFSET, slots A and B (scratch) from GS_PARTIALS_OFFSET,
 * the counters (zero between launches) at GS_SEG_COUNTERS_OFFSET.
 */
#pragma once

#include "block/load.cuh"
#include "gridsync_device.cuh"
#include "workspace.h"

namespace gs {

/* Bytes of one slot: every accumulator but ARGMIN/ARGMAX's fits in 8. The host sizes the
 * chunk count with the same rule (GS_SEG_SLOT_BYTES in dispatch/kernel_list.h). */
template <typename Acc> struct SegSlot {
    static const int kBytes = sizeof(Acc) <= 8 ? 8 : 16;
    static_assert(sizeof(Acc) <= 16, "segment slot too small");
};

/* offsets[j] clamped to [0, n]. */
__device__ __forceinline__ uint64_t seg_offset(const int64_t *offsets, uint64_t j, uint64_t n)
{
    const int64_t v = offsets[j];
    return v < 0 ? 0 : ((uint64_t)v > n ? n : (uint64_t)v);
}

/* The chunk that holds merged index m (clamped: bad offsets can point past the end). */
__device__ __forceinline__ uint32_t seg_chunk_of(uint64_t m, uint64_t chunk, uint32_t nchunks)
{
    const uint64_t c = m / chunk;
    return c < nchunks ? (uint32_t)c : nchunks - 1;
}

/* For both targets, the first j in [0, S) with offset(j) + j >= target, else S. Each round the
 * block counts which of kBlock evenly spaced j lie below the target, and every thread narrows
 * the range alike. For any offsets the loop ends (each round shrinks the range) and a larger
 * target's count is never smaller, so the owned ranges partition [0, S). Call uniformly. */
template <typename Policy>
__device__ __forceinline__ void seg_split2(const int64_t *offsets, uint64_t S, uint64_t n, uint64_t target0,
                                           uint64_t target1, uint64_t *res0, uint64_t *res1)
{
    const uint64_t target[2] = {target0, target1};
    uint64_t lo[2] = {0, 0}, hi[2] = {S, S}; /* the answer is in [lo, hi] */
    while (lo[0] < hi[0] || lo[1] < hi[1]) {
#pragma unroll
        for (int q = 0; q < 2; q++) {
            const uint64_t step = lo[q] < hi[q] ? (hi[q] - lo[q] + Policy::kBlock - 1) / Policy::kBlock : 1;
            const uint64_t p = lo[q] + (uint64_t)threadIdx.x * step;
            const bool below = lo[q] < hi[q] && p < hi[q] && seg_offset(offsets, p, n) + p < target[q];
            const uint64_t m = Policy::block_count(below);
            if (lo[q] < hi[q]) {
                const uint64_t samples = (hi[q] - lo[q] + step - 1) / step;
                const uint64_t new_lo = m ? lo[q] + (m - 1) * step + 1 : lo[q];
                hi[q] = m < samples ? lo[q] + m * step : hi[q];
                lo[q] = new_lo;
            }
        }
    }
    /* Sorted offsets give an answer in [target - n, target] already; the clamp keeps the
     * chunk's positions inside [0, n] for any others (and keeps the answer monotone). */
    for (int q = 0; q < 2; q++) {
        const uint64_t least = target[q] > n ? target[q] - n : 0;
        lo[q] = lo[q] < least ? least : (lo[q] > target[q] ? target[q] : lo[q]);
    }
    *res0 = lo[0];
    *res1 = lo[1];
}

/* Owned segment j with clamped offsets b, e as this chunk reads it: [b, *re), the end clipped
 * to [b, ce]. Returns whether it goes out to a later chunk (round -1 reads its piece). */
__device__ __forceinline__ bool seg_owned(uint64_t b, uint64_t e, uint64_t j, uint64_t hi, uint64_t ce, uint64_t *re)
{
    *re = e < ce ? (e > b ? e : b) : (ce > b ? ce : b);
    return j == hi - 1 && e > ce && b <= ce;
}

/* A chunk's owned segments [lo, hi) and its positions [cb, ce). */
struct SegSpan {
    uint64_t lo, hi, cb, ce;
};

/* What a round of owned segments needs to find segment base + q again (SegWrite::round_end). */
template <typename T, typename OutT> struct SegRound {
    const T *in;
    OutT *out;
    const uint64_t *round_off; /* the round's offsets, shared */
    uint64_t base, hi, ce;
};

/* What the block that combines a crossing segment's pieces knows of it (SegWrite::cross):
 * segment sj, its clamped offsets [sb, se), its pieces' chunks c0 .. c1 and their slots. */
template <typename T, typename Acc> struct SegCross {
    const T *in;
    uint64_t n, chunk, sj, sb, se;
    uint32_t c0, c1;
    const Acc *slots_a, *slots_b;
};

/* What becomes of a complete segment's accumulator: the result is written (agent/seg_exact.cuh
 * sums lost ones again). Shared: the block's state; begin: every thread, before the first
 * barrier; emit: the thread holding segment base + q's accumulator a (len: its elements);
 * round_end: every thread, after a barrier following a round's emits; cross: every thread, a
 * valid in thread 0. */
template <typename Policy, typename Op> struct SegWrite {
    typedef typename Op::Acc Acc;
    typedef typename Op::OutT OutT;
    struct Shared {};
    static __device__ __forceinline__ void begin(Shared &) {}
    static __device__ __forceinline__ void emit(Shared &, OutT *o, Acc a, uint32_t, uint64_t) { *o = Op::result(a); }
    static __device__ __forceinline__ void round_end(Shared &, const SegRound<typename Op::In, OutT> &) {}
    static __device__ __forceinline__ void cross(Shared &, OutT *o, Acc a, const SegCross<typename Op::In, Acc> &)
    {
        if (threadIdx.x == 0)
            *o = Op::result(a);
    }
};

/* One piece of a segment that spans chunks c0 < c1: thread 0 publishes it in `slot`, the
 * block takes a ticket on counter[c0], and the block with the last ticket combines
 * B[c0], A[c0+1], ..., A[c1] in chunk order and writes the result. Call uniformly. */
template <typename Policy, typename Op, typename Write>
__device__ __forceinline__ void seg_publish_piece(typename Op::Acc piece, typename Op::Acc *slot,
                                                  unsigned int *counters, const SegCross<typename Op::In, typename Op::Acc> &x,
                                                  typename Op::OutT *out_j,
                                                  typename Policy::template Scratch<typename Op::Acc> &s,
                                                  typename Write::Shared &w)
{
    const uint32_t c0 = x.c0, c1 = x.c1;
    const typename Op::Acc *slots_a = x.slots_a, *slots_b = x.slots_b;
    typedef typename Op::Acc Acc;
    if (threadIdx.x == 0)
        *slot = piece;
    /* thread 0's ticket releases the piece and acquires the other pieces announced by
     * their tickets (Policy::last_arrival) */
    if (Policy::last_arrival(&counters[c0], c1 - c0 + 1)) {
        /* thread t folds pieces c0 + t, c0 + t + kBlock, ... in order, four loads in
         * flight at a time (a giant segment has thousands of pieces) */
        Acc a = Op::identity();
#pragma unroll 1
        for (uint32_t c = c0 + threadIdx.x; c <= c1; c += 4 * Policy::kBlock) {
            Acc v[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const uint32_t cu = c + (uint32_t)u * Policy::kBlock;
                v[u] = cu > c1 ? Op::identity() : gs_load_volatile(cu == c0 ? &slots_b[c0] : &slots_a[cu]);
            }
#pragma unroll
            for (int u = 0; u < 4; u++)
                a = Op::combine(a, v[u]);
        }
        a = Policy::template block_reduce<Op>(a, s);
        Write::cross(w, out_j, a, x);
    }
}

template <typename Policy, typename Op, typename Write = SegWrite<Policy, Op> >
__device__ __forceinline__ void segmented_kernel(const typename Op::In *__restrict__ in, uint64_t n,
                                                 const int64_t *__restrict__ offsets, uint64_t S,
                                                 typename Op::OutT *__restrict__ out, unsigned char *workspace,
                                                 uint64_t chunk, uint32_t nchunks)
{
    typedef typename Op::In T;
    typedef typename Op::Acc Acc;
    const int kSlot = SegSlot<Acc>::kBytes;
    /* A segment this short (in bytes) is reduced by one thread; one this long by the block. */
    const uint64_t kShort = 64 / sizeof(T);
    const uint64_t kLong = (uint64_t)Policy::kBlock * (16 / sizeof(T)) * 2;
    const int kGroups = Policy::kBlock / Policy::kGroup;
    static_assert(Policy::kGroup < Policy::kBlock, "groups are smaller than the block");

    static_assert(sizeof(gs_work_queue) <= GS_SEG_QUEUE_BYTES, "the queue fits its region");
    gs_work_queue *queue = (gs_work_queue *)(workspace + GS_SEG_QUEUE_OFFSET);
    Acc *slots_a = (Acc *)(workspace + GS_PARTIALS_OFFSET);
    Acc *slots_b = (Acc *)(workspace + GS_PARTIALS_OFFSET + (uint64_t)kSlot * nchunks);
    unsigned int *counters = (unsigned int *)(workspace + GS_SEG_COUNTERS_OFFSET);
    __shared__ typename Policy::template Scratch<Acc> scratch;
    /* Block-wide decisions use only these shared copies or a barrier's count, so offsets
     * changed by a caller's race give wrong results, not a barrier threads disagree on.
     * edge (offsets lo - 1, lo, hi - 1, hi) and span: written once per chunk; round_off:
     * written before each round's vote, read after; give_up: set by any thread, read after
     * the vote. */
    __shared__ uint64_t edge[4];
    __shared__ SegSpan span;
    __shared__ uint64_t round_off[Policy::kBlock + 1];
    __shared__ unsigned short medium_list[Policy::kBlock]; /* a round's medium segments */
    __shared__ int give_up;
    __shared__ typename Write::Shared wshared;
    Write::begin(wshared);

    const unsigned int t = threadIdx.x;
    const unsigned int group = t / Policy::kGroup, lane = t % Policy::kGroup;
    const uint64_t total = n + S;

    for (long long item; (item = gs_queue_fetch(queue, nchunks)) >= 0;) {
        const uint32_t k = (uint32_t)item;
        const uint64_t d0 = (uint64_t)k * chunk;
        const uint64_t d1 = k == nchunks - 1 ? total : d0 + chunk;

        {
            /* lo, hi: the owned segments (their markers lie in [d0, d1)); cb, ce: the positions. */
            uint64_t lo, hi;
            seg_split2<Policy>(offsets, S, n, d0, d1, &lo, &hi);
            const uint64_t cb = d0 - lo;
            const uint64_t ce = d1 - hi > cb ? d1 - hi : cb; /* only bad offsets make it smaller */
            if (t < 4) {
                const uint64_t e = t < 2 ? lo - 1 + t : hi - 3 + t;
                edge[t] = e <= S ? seg_offset(offsets, e, n) : 0; /* lo - 1 or hi - 1 may be -1 */
            }
            /* sorted offsets own at most `chunk` segments, the first from cb on */
            if (t == 0) {
                give_up = hi - lo > chunk || (lo < hi && seg_offset(offsets, lo, n) < cb);
                span.lo = lo;
                span.hi = hi;
                span.cb = cb;
                span.ce = ce;
            }
        }
        __syncthreads(); /* span, edge, give_up visible; the last chunk's readers are done */

        /* Round -1: the pieces crossing the chunk's edges; rounds 0, 1, ...: the owned
         * segments, kBlock at a time. One loop, so each kind of work is compiled once. */
        for (int64_t r = -1;; r++) {
            const uint64_t base = span.lo + (r < 0 ? 0 : (uint64_t)r * Policy::kBlock);
            if (r >= 0 && base >= span.hi)
                break;
            const uint64_t rend = r < 0 ? span.lo
                                        : (base + Policy::kBlock < span.hi ? base + Policy::kBlock : span.hi);
            bool medium = false, longer = false;
            const uint64_t j = base + t;
            if (r >= 0 && j < rend) {
                const uint64_t sb = seg_offset(offsets, j, n), se0 = seg_offset(offsets, j + 1, n);
                round_off[t] = sb;
                if (j + 1 == rend)
                    round_off[t + 1] = se0;
                uint64_t se;
                const bool outgoing = seg_owned(sb, se0, j, span.hi, span.ce, &se);
                if (se0 < sb) /* sorted offsets never decrease */
                    give_up = 1;
                if (outgoing) {
                    /* the owned segment going out to a later chunk: round -1 did it */
                } else if (se - sb <= kShort) {
                    /* at most 64 bytes: element by element, in index order */
                    Acc a = Op::identity();
#pragma unroll 1
                    for (uint64_t i = sb; i < se; i++)
                        a = Accum<Op>::add(a, in[i], (int64_t)(i - sb));
                    Write::emit(wshared, &out[j], a, t, se - sb);
                } else if (se - sb >= kLong) {
                    longer = true;
                } else {
                    medium = true;
                }
            }
            /* the round's medium segments in order (places q), and whether any is long */
            bool any_long = r < 0;
            unsigned int nmedium = 0;
            if (r >= 0)
                nmedium = Policy::block_compact(medium, longer, medium_list, any_long);
            /* Past out-of-order offsets the owned segments may overlap, each could read
             * `chunk` elements, so the chunk stops (short ones read 64 bytes at most). */
            const bool stop = r >= 0 && give_up;
            if (stop) {
                nmedium = 0;
                any_long = false;
            }
            /* Group g takes list entries g, g + kGroups, ...; unless kGroupAlone, every group
             * runs every trip (the identity past the list's end), as group_reduce holds block
             * barriers. A segment is taken only if the shared offsets make it medium: under
             * kLong elements even under a caller's race. */
#pragma unroll 1
            for (unsigned int first = 0; first < nmedium; first += kGroups) {
                const unsigned int m = first + group;
                if (Policy::kGroupAlone && m >= nmedium)
                    break;
                uint32_t q = 0;
                uint64_t sb = 0, se = 0;
                bool mine = false;
                if (m < nmedium) {
                    q = medium_list[m];
                    sb = round_off[q];
                    const bool outgoing = seg_owned(sb, round_off[q + 1], base + q, span.hi, span.ce, &se);
                    mine = se - sb > kShort && se - sb < kLong && !outgoing;
                }
                if (Policy::kGroupAlone && !mine)
                    continue;
                Acc a = mine ? accumulate<Policy, Op>(in + sb, se - sb, 0, lane, Policy::kGroup) : Op::identity();
                a = Policy::template group_reduce<Op>(a, scratch);
                if (mine && lane == 0)
                    Write::emit(wshared, &out[base + q], a, q, se - sb);
            }
            if (any_long) {
                const uint64_t ntasks = r < 0 ? 2 : rend - base;
#pragma unroll 1
                for (uint64_t q = 0; q < ntasks; q++) {
                    /* segment sj's piece [pb, pe); crossing pieces clipped to [cb, ce) */
                    uint64_t sj, pb, pe, sb, se;
                    bool cross = false, outgoing = false;
                    if (r < 0 && q == 0) {
                        /* coming in from an earlier chunk: [cb, min(end, ce)) */
                        if (span.lo == 0)
                            continue;
                        sj = span.lo - 1;
                        sb = edge[0];
                        se = edge[1];
                        if (!(sb <= span.cb && se > span.cb && span.ce > span.cb))
                            continue;
                        pb = span.cb;
                        pe = se < span.ce ? se : span.ce;
                        cross = true;
                    } else if (r < 0) {
                        /* going out: the last owned one, empty if its marker ends the chunk */
                        if (span.hi <= span.lo)
                            continue;
                        sj = span.hi - 1;
                        sb = edge[2];
                        se = edge[3];
                        uint64_t unused;
                        if (!seg_owned(sb, se, sj, span.hi, span.ce, &unused))
                            continue;
                        pb = sb > span.cb ? sb : span.cb;
                        pe = span.ce;
                        cross = outgoing = true;
                    } else {
                        sj = base + q;
                        sb = round_off[q];
                        if (seg_owned(sb, round_off[q + 1], sj, span.hi, span.ce, &pe) || pe - sb < kLong)
                            continue;
                        pb = sb;
                    }
                    __syncthreads(); /* the block's scratch is free */
                    Acc a = accumulate<Policy, Op>(in + pb, pe - pb, pb - sb, t, Policy::kBlock);
                    a = Policy::template block_reduce<Op>(a, scratch);
                    if (!cross) {
                        if (t == 0)
                            Write::emit(wshared, &out[sj], a, (uint32_t)q, pe - sb);
                        continue;
                    }
                    /* the segment's marker is at sb + sj, its last element at se + sj */
                    const SegCross<T, Acc> x = {in, n, chunk, sj, sb, se, seg_chunk_of(sb + sj, chunk, nchunks),
                                                seg_chunk_of(se + sj, chunk, nchunks), slots_a, slots_b};
                    seg_publish_piece<Policy, Op, Write>(a, outgoing ? &slots_b[k] : &slots_a[k], counters, x,
                                                         &out[sj], scratch, wshared);
                }
            }
            __syncthreads(); /* the scratch is reused next round */
            if (r >= 0) {
                const SegRound<T, typename Op::OutT> rd = {in, out, round_off, base, span.hi, span.ce};
                Write::round_end(wshared, rd);
            }
            if (stop)
                break;
        }
        __syncthreads(); /* gs_queue_fetch's contract: a barrier between two fetches */
    }

    /* the last block to finish resets the queue and the counters */
    if (gs_queue_finish(queue)) {
        for (uint32_t c = t; c < nchunks; c += Policy::kBlock)
            counters[c] = 0;
    }
}

} // namespace gs
