/*
 * Exact float sums (GS_REDUCE_EXACT, docs/semantics.md §12): one launch, both backends.
 *
 * Representation: each thread keeps an ExactThread (exact/thread.cuh). float16 and bfloat16: a
 * K-term expansion a[0..K) fed by TwoSum (a + x == s + e exactly), each vector first tried with
 * plain additions (exact_try_plain), kept if all were exact. float32 and float64: fixed point in
 * two doubles (exact/anchor.cuh). What the form cannot hold goes to two spill terms, and what
 * they cannot hold is flushed into the block's shared limbs (gs_exact_acc) by integer atomics,
 * in any order: the same bits on any grid. Invariant: a thread's elements sum exactly to its
 * form + spill terms + what it flushed.
 *
 * Fast path (exact/grid.cuh): if nothing was flushed, the forms are added with checked additions
 * (exact/ops.cuh) in one double, else two; an exact result is the block's partial, and the last
 * block folds the partials likewise and rounds once. Slow path: a shared tree merges the
 * expansions (residuals flushed), the limbs go to the workspace by int64 atomics, and the last
 * block (docs/design.md's guard) zeroes the workspace, then normalises the total and rounds it
 * once (exact_finish) or, for the accumulator form, writes it out.
 *
 * Guards, per 16-byte vector from the raw bits: a NaN, an infinity or an element from which K
 * TwoSums could overflow (bfloat16: 2^96; float64: 2^960) takes the slow path, each element
 * counted or flushed. A thread sees fewer than 2^31 elements, so below the bound |a[0]| <
 * 2^31 * bound stays far inside the type's range.
 *
 * Limb bounds: a flush adds a digit below 2^32 to each of three limbs, an element causes at most
 * one flush, and a block gets at most 2^28 elements (backend.c's grid): |shared limb| < 2^61.
 * A block adds each limb to the workspace as its low 32 bits plus the carry from the limb below
 * (< 2^29): under 2^34 per limb, so no int64 overflows below 2^29 blocks.
 *
 * cuda_sm11_compat compiles this too (no shuffles or votes): it needs float64 and 64-bit
 * integer atomics (compute capability 2.0).
 */
#pragma once

#include "block/checked.cuh"
#include "exact/acc.cuh"
#include "exact/grid.cuh"
#include "exact/spill.cuh"
#include "exact/thread.cuh"
#include "exact/traits.cuh"

namespace gs {

/* Whether an accumulator is OpCheckedSumDd's two doubles. */
template <typename A> struct IsExactDd { static const bool value = false; };
template <> struct IsExactDd<ExactDd> { static const bool value = true; };

/* Whether a K-term expansion already is Chk's accumulator: two terms, Chk's two doubles. */
template <typename Chk, int K> struct ExactIsPair {
    static const bool value = K == 2 && IsExactDd<typename Chk::Acc>::value;
};

/* Expansion a as a one-term fold of Chk: a pair as it is, else its nonzero terms added. */
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

/* The thread's expansions, then its nonzero spill terms (where kSpillFast), as one fold of
 * Chk's checked additions, not ok if inexact. Pairs fold pairwise, others in a row (registers). */
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

/* One try of the block's fast path with Chk: returns whether every addition was exact and
 * nothing was flushed, v then the block's sum in every thread. Every thread (barriers); s is
 * read until it returns. */
template <typename Policy, typename Chk, typename T, typename F, int K, int kU>
__device__ __forceinline__ bool exact_block_try(const F (&a)[kU][K], const F *spill,
                                                CheckedScratch<Policy::kBlock, typename Chk::Acc> &s,
                                                const ExactShared &acc, ExactDd &v)
{
    const typename OpExactTree<Chk>::Acc mine = exact_checked_of<Chk, T, F, K, kU>(a, spill, Policy::kBlock);
    bool ok = mine.ok != 0;
    v = Chk::to_dd(block_reduce_checked<Policy, Chk>(mine.v, ok, s));
    /* every flush preceded the reduction's barriers, so acc.dirty is final here */
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

    /* accumulate_parts' loop (block/load.cuh): head, vectors, tail */
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
    /* the next trip's loads overlap this trip's additions */
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
        /* under kU vectors left: load them at once, not one wait per vector */
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
        acc.sign_clear = 1; /* same value from any thread: no atomic */
    const F(&a)[kRows][K] = th.end(sign_clear);

    /* fast path; acc.dirty is read after the first try's barriers, not behind its own. An
     * accumulator (mode 1) of one block comes from its limbs alone; of several, fast blocks'
     * partials are flushed into the limbs by the last block (exact/grid.cuh). */
    __shared__ ExactScratch<Policy> scratch;
    ExactDd v = {-0.0, 0.0};
    bool fast = false;
    if (!mode || gridDim.x > 1) {
        if constexpr (In::kOneDouble) {
            fast = exact_block_try<Policy, OpCheckedSum<T>, T, F, K, kRows>(a, &spill[0][t], scratch.d, acc, v);
            if (!fast)
                __syncthreads(); /* the first try's scratch reads done */
        }
        if (!fast && (!In::kOneDouble || !acc.dirty))
            fast = exact_block_try<Policy, OpCheckedSumDd<T>, T, F, K, kRows>(a, &spill[0][t], scratch.dd, acc, v);
    } else {
        __syncthreads(); /* every flush and sign_clear before the merge and the finish */
    }
    if (!fast) {
        exact_block_merge<Policy, F, K, kRows>(acc, a, spill, tree);
    } else if (gridDim.x == 1) { /* one fast block: no partials, no ticket */
        if (t == 0)
            exact_write_checked<T>(v, n, out, out_dtype);
        return;
    }
    exact_grid_finish<Policy, T>(acc, fast, v, n, out, workspace, out_dtype, mode, scratch);
}


} // namespace gs
