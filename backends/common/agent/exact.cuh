/*
 * Exact float sums (GS_REDUCE_EXACT, docs/semantics.md §12), written once for both
 * backends: one launch, the exact sum rounded once by the last block, or its accumulator.
 *
 * Per thread, every element goes into a short floating-point expansion a[0..K) with an
 * error-free addition (two_sum: a + x == s + e exactly, barring overflow, which the
 * element guard below rules out), level after level; what is left after the last level
 * goes through the thread's two spill terms (ExactSpill) and what they cannot hold is
 * added to the block's long accumulator (flush). So at every moment
 *     sum of the thread's elements == sum of its expansions and spill terms + what it flushed,
 * exactly (ExBLAS: Iakymchuk, Collange, Defour, Graillat). Before that, each float16 or
 * bfloat16 vector is tried with plain additions into a[0] (exact_try_plain), kept when all
 * of them were exact: for ordinary data that is all the loop does, with no memory traffic.
 * float32 and float64 instead go into fixed point in two doubles (exact/anchor.cuh), the
 * same identity with hi + lo (and float64's low expansion) for the expansions;
 * ExactThread holds either.
 *
 * The block's long accumulator is gs_exact_acc's fixed point (limbs of 32-bit digits from
 * 2^-1088) in shared memory, added to with 64-bit integer atomics: integer addition is
 * associative, so the order in which threads flush does not matter, and the result is the
 * same bits on any grid.
 *
 * The block's end has a fast path (exact/grid.cuh): when nothing was flushed, the threads'
 * expansions are added up with checked additions (OpCheckedSum, exact/ops.cuh), in one
 * double, else in two; if that sum is exact, it is the block's partial, and the last block
 * combines the partials the same way and rounds once. Otherwise the block's threads merge
 * their expansions in a shared-memory tree (each merge exact, its residuals flushed), the
 * tree's last expansion is flushed, the block's limbs are added (int64 atomics) to the
 * launch's accumulator in the workspace, and the last block (docs/design.md's guard)
 * returns the workspace to zero and, with all its threads (exact_finish), normalises the
 * total and rounds it once (internal/exact_format.h, the code gs_exact_round runs) or
 * writes it out (the accumulator form always goes this way).
 *
 * Guards, per 16-byte vector and from the raw bits (integer ops only): a vector holding a
 * NaN or an infinity, or an element so large that K TwoSums could overflow (bfloat16 in
 * float: 2^96; float64's, 2^960, is exact/anchor.cuh's), takes the slow path: every
 * element counted (NaN, +inf, -inf) or flushed on its own. Elements below the bound cannot
 * overflow the expansion: a thread sees fewer than 2^31 elements (the grid has at least n /
 * 2^28 blocks of 256), so |a[0]| < 2^31 * bound stays far inside the type's range.
 *
 * Limb bounds: each flush adds three digits below 2^32 in magnitude, and an element causes
 * at most one flush (its residual, or itself on the slow path), so a block of at most 2^28
 * elements (the host sizes the grid for that: backend.c) keeps |shared limb| < 2^61; a block
 * adds each limb as its low 32 bits and its carry (< 2^29) into the next, less than 2^34 per
 * limb of the workspace's total: no int64 overflows for any grid below 2^29 blocks.
 *
 * cuda_sm11_compat compiles this too: no warp shuffles or votes here. Beyond compute
 * capability 1.1 it needs float64 arithmetic (1.3) and 64-bit integer atomic adds in shared
 * and global memory (2.0): docs/design.md, "Exact sums".
 */#pragma once

#include "block/checked.cuh"
#include "exact/acc.cuh"
#include "exact/grid.cuh"
#include "exact/spill.cuh"
#include "exact/thread.cuh"
#include "exact/traits.cuh"

namespace gs {

/* Whether an accumulator is two doubles (OpCheckedSumDd's hi + lo). */
template <typename A> struct IsExactDd { static const bool value = false; };
template <> struct IsExactDd<ExactDd> { static const bool value = true; };

/* Whether an expansion of K terms already is an accumulator of Chk: two terms, and Chk's
 * two doubles (OpCheckedSumDd's hi + lo; float64's expansions). */
template <typename Chk, int K> struct ExactIsPair {
    static const bool value = K == 2 && IsExactDd<typename Chk::Acc>::value;
};

/* One expansion a (a[0] its leading term, the others error terms) as a one-term fold of
 * Chk: a pair (ExactIsPair) as it is, hi + lo, no addition needed; else the terms added,
 * the error terms' zeros skipped. */
template <typename Chk, typename F, int K>
__device__ __forceinline__ typename OpExactTree<Chk>::Acc exact_expansion_of(const F (&a)[K])
{
    typedef OpExactTree<Chk> Tree;
    if constexpr (ExactIsPair<Chk, K>::value)
        return Tree::of(typename Chk::Acc{(double)a[0], (double)a[1]});
    typename Tree::Acc v = Tree::of(Chk::term((double)a[0]));
#pragma unroll
    for (int k = 1; k < K; k++)
        if (a[k] != F(0))
            v = Tree::combine(v, Tree::of(Chk::term((double)a[k])));
    return v;
}

/* The thread's expansions and spill terms as one fold of Chk's checked additions
 * (OpExactTree<OpCheckedSum> or <OpCheckedSumDd>; not ok if that cannot be exact): the
 * expansions, then the spill terms that are not zero (where ExactIn's kSpillFast; a
 * float64 block that used them is not fast). Pairs (ExactIsPair) are added
 * pairwise (exact_fold_pairs), each a TwoSum and two checked additions deep;
 * the others in a row, each one double addition deep: a pairwise fold there made
 * cuda_sm11_compat's float32 kernel spill on sm_90. */
template <typename Chk, typename T, typename F, int K, int kU>
__device__ __forceinline__ typename OpExactTree<Chk>::Acc exact_checked_of(const F (&a)[kU][K], const F *spill,
                                                                            int stride)
{
    typedef OpExactTree<Chk> Tree;
    typename Tree::Acc v;
    if constexpr (ExactIsPair<Chk, K>::value) {
        typename Tree::Acc e[kU];
#pragma unroll
        for (int u = 0; u < kU; u++)
            e[u] = exact_expansion_of<Chk, F, K>(a[u]);
        v = exact_fold_pairs<Tree, kU>(e);
    } else {
        v = exact_expansion_of<Chk, F, K>(a[0]);
#pragma unroll
        for (int u = 1; u < kU; u++)
            v = Tree::combine(v, exact_expansion_of<Chk, F, K>(a[u]));
    }
    if (ExactIn<T>::kSpillFast)
        for (int k = 0; k < 2; k++)
            if (spill[k * stride] != F(0))
                v = Tree::combine(v, Tree::of(Chk::term((double)spill[k * stride])));
    return v;
}

/* One try of the block's fast path with Chk (OpCheckedSum or OpCheckedSumDd): the
 * threads' expansions added with checked additions, then over the block
 * (block_reduce_checked). Whether every addition was exact and nothing went into the long
 * accumulator, and then the block's sum v, the same in every thread. Every thread; holds
 * barriers; reads s until it returns (a barrier before s is written again). */
template <typename Policy, typename Chk, typename T, typename F, int K, int kU>
__device__ __forceinline__ bool exact_block_try(const F (&a)[kU][K], const F *spill,
                                                CheckedScratch<Policy::kBlock, typename Chk::Acc> &s,
                                                const ExactShared &acc, ExactDd &v)
{
    const typename OpExactTree<Chk>::Acc mine = exact_checked_of<Chk, T, F, K, kU>(a, spill, Policy::kBlock);
    bool ok = mine.ok != 0;
    v = Chk::to_dd(block_reduce_checked<Policy, Chk>(mine.v, ok, s));
    /* after the block reduction's barriers, which every thread reached after its last
     * flush: acc.dirty is final (only a block that is not fast, as every thread then
     * knows, flushes again) */
    return ok && !acc.dirty;
}

template <typename Policy, typename T>
__device__ __forceinline__ void exact_kernel(const T *__restrict__ in, uint64_t n, void *__restrict__ out,
                                             unsigned char *workspace, int out_dtype, uint32_t mode)
{
    const int kU = Policy::kUnroll, kPer = 16 / sizeof(T);
    typedef ExactThread<T, kU> Th;
    typedef ExactIn<T> In;
    typedef typename Th::F F;
    const int K = Th::K, kRows = Th::kRows;
    static_assert(Policy::kBlock >= GS_EXACT_LIMBS + 4, "a thread per limb and per count");
    __shared__ ExactShared acc;
    __shared__ F tree[K][Policy::kBlock];
    __shared__ F spill[2][Policy::kBlock];
    const unsigned int t = threadIdx.x;
    spill[0][t] = spill[1][t] = F(0);
    const ExactSpill<F> sp = {&spill[0][t], Policy::kBlock};
    exact_zero(acc);

    /* The grid-stride loop of accumulate_parts (block/load.cuh): head, vectors, tail. */
    const uint64_t gt = (uint64_t)blockIdx.x * Policy::kBlock + t, nt = (uint64_t)gridDim.x * Policy::kBlock;
    const uint64_t misalign = ((uintptr_t)in & 15u) / sizeof(T);
    uint64_t head = misalign ? (uint64_t)kPer - misalign : 0;
    if (head > n)
        head = n;
    const uint64_t nvec = (n - head) / kPer, tail_begin = head + nvec * kPer;
    const uint4 *vin = (const uint4 *)(in + head);
    Th th;
    uint32_t sign_and = ~0u;
    bool sign_clear = false;
#pragma unroll 1
    for (uint64_t h = gt; h < head; h += nt)
        th.scalar(in[h], acc, sp, sign_clear);
    /* kU vectors per trip, and the next trip's loads issued before this trip's additions,
     * so the loads never wait for the arithmetic. */
    uint64_t i = gt;
    if (i + (kU - 1) * nt < nvec) {
        uint4 raw[kU];
#pragma unroll
        for (int u = 0; u < kU; u++)
            raw[u] = Policy::load16(vin + i + u * nt);
        for (;;) {
            const uint64_t next = i + kU * nt;
            const bool more = next + (kU - 1) * nt < nvec;
            uint4 ahead[kU];
            if (more)
#pragma unroll
                for (int u = 0; u < kU; u++)
                    ahead[u] = Policy::load16(vin + next + u * nt);
            th.trip(acc, sp);
#pragma unroll
            for (int u = 0; u < kU; u++)
                th.vec(raw, u, kU, acc, sp, sign_and, sign_clear);
            i = next;
            if (!more)
                break;
#pragma unroll
            for (int u = 0; u < kU; u++)
                raw[u] = ahead[u];
        }
    }
    if constexpr (In::kPartTrip) {
        /* Fewer than kU vectors left, their loads issued at once: the small sums' grids
         * (gs_grid_for_exact) leave a thread one to three vectors, which loaded one after
         * the other would each wait for memory in turn (kPartTrip: the other types' main
         * loops lost registers to it). */
        if (i < nvec) {
            uint4 raw[kU];
            int count = 0;
#pragma unroll
            for (int u = 0; u < kU; u++) {
                raw[u] = make_uint4(0, 0, 0, 0);
                if (u < kU - 1 && i + u * nt < nvec) {
                    raw[u] = Policy::load16(vin + i + u * nt);
                    count++;
                }
            }
            th.trip(acc, sp);
#pragma unroll
            for (int u = 0; u < kU - 1; u++)
                if (u < count)
                    th.vec(raw, u, count, acc, sp, sign_and, sign_clear);
        }
    } else {
#pragma unroll 1
        for (; i < nvec; i += nt)
            th.one(Policy::load16(vin + i), acc, sp, sign_and, sign_clear);
    }
#pragma unroll 1
    for (uint64_t r = tail_begin + gt; r < n; r += nt)
        th.scalar(in[r], acc, sp, sign_clear);
    sign_clear |= (sign_and & In::kSign) != In::kSign;
    if (sign_clear)
        acc.sign_clear = 1; /* the same value from any thread: no atomic needed */
    const F(&a)[kRows][K] = th.end(sign_clear);

    /* The fast path (exact/grid.cuh): nothing went into the limbs, and the threads'
     * expansions add up exactly in one double (cheaper, and enough for most data; not for
     * float64), else in two: the block's sum is v. Whether anything went into the limbs
     * (acc.dirty) is read after the first try's barriers, not behind one of its own; a
     * dirty block's tries are wasted work, but such blocks are rare. */
    __shared__ ExactScratch<Policy> scratch;
    ExactDd v = {-0.0, 0.0};
    bool fast = false;
    if (!mode) {
        if constexpr (In::kOneDouble) {
            fast = exact_block_try<Policy, OpCheckedSum<T>, T, F, K, kRows>(a, &spill[0][t], scratch.d, acc, v);
            if (!fast)
                __syncthreads(); /* the first try's reads of the scratch done */
        }
        /* acc.dirty only after the first try's barrier (float64's try reads it itself) */
        if (!fast && (!In::kOneDouble || !acc.dirty))
            fast = exact_block_try<Policy, OpCheckedSumDd<T>, T, F, K, kRows>(a, &spill[0][t], scratch.dd, acc, v);
    } else {
        __syncthreads(); /* every flush and sign_clear before the merge and the finish */
    }
    if (!fast) {
        exact_block_merge<Policy, F, K, kRows>(acc, a, spill, tree);
    } else if (gridDim.x == 1) { /* one block, fast: no partials, no ticket, no call */
        if (t == 0)
            exact_write_checked<T>(v, n, out, out_dtype);
        return;
    }
    exact_grid_finish<Policy, T>(acc, fast, v, n, out, workspace, out_dtype, mode, scratch);
}


} // namespace gs
