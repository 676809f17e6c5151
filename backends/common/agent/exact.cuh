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
 * float32 and float64 instead go into fixed point in two doubles (exact_anchor.cuh), the
 * same identity with hi + lo (and float64's low expansion) for the expansions;
 * ExactThread holds either.
 *
 * The block's long accumulator is gs_exact_acc's fixed point (limbs of 32-bit digits from
 * 2^-1088) in shared memory, added to with 64-bit integer atomics: integer addition is
 * associative, so the order in which threads flush does not matter, and the result is the
 * same bits on any grid.
 *
 * The block's end has a fast path (exact_grid.cuh): when nothing was flushed, the threads'
 * expansions are added up with checked additions (OpCheckedSum, exact_ops.cuh), in one
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
 * float: 2^96; float64's, 2^960, is exact_anchor.cuh's), takes the slow path: every
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
 */
#pragma once

#include "exact/acc.cuh"
#include "exact/anchor.cuh"
#include "exact/grid.cuh"
#include "exact/spill.cuh"
#include "block/load.cuh"

namespace gs {

/* Per input type: the expansion's type F and length K; the minimum of resident blocks the
 * kernel is compiled for (kernels.cuh; without one, ptxas gave every exact kernel 128
 * registers on sm_90, two blocks per multiprocessor; with the prefetching loop, 4 blocks'
 * 64 registers spilled 60 .. 128 bytes); kSign: the sign bits of the elements in a 32-bit
 * word (of float64's, its odd words); kSpillFast: a block whose threads used their spill
 * terms (ExactSpill) can still be fast (exact_checked_of adds them in): where the thread's
 * terms are narrower than the two-double fold, or (float32) where the spill terms take
 * what moving the window left behind (exact_anchor.cuh). float64's two terms are as wide
 * as the fold, so a residual beyond them means the block's sum does not fit, and its spill
 * marks the block slow instead (exact_spill), and the fast path need not read the spill
 * terms (0.1 us at 2^14 .. 2^20 on an H100). float32 and float64 go into float64 fixed
 * point, hi + lo (exact_anchor.cuh, whose window is their guard); no float32 sum can
 * overflow. */
template <typename T> struct ExactIn;
#define GS_EXACT_IN(T, F_, K_, SF, Sign)                                            \
    template <> struct ExactIn<T> {                                                \
        typedef F_ F;                                                              \
        static const int K = K_;                                                   \
        static const bool kSpillFast = SF;                                         \
        static const uint32_t kSign = Sign;                                        \
    };
GS_EXACT_IN(float, double, 2, true, 0x80000000u)
GS_EXACT_IN(double, double, 2, false, 0x80000000u)
GS_EXACT_IN(__half, float, 2, true, 0x80008000u)
GS_EXACT_IN(__nv_bfloat16, float, 2, true, 0x80008000u)
#undef GS_EXACT_IN

/* The 16-bit types' guard (exact_vec, exact_scalar) on raw 32-bit words: a word w trips it
 * when ((w & kM) + kB) & kS is nonzero (exponent fields all ones, or at or above the
 * bound: adding kB carries into the field's sign position). */
template <typename T> struct ExactGuard;
template <> struct ExactGuard<__half> { /* |x| < 2^16: float never overflows */
    static const uint32_t kM = 0x7c007c00u, kB = 0x04000400u, kS = 0x80008000u;
};
template <> struct ExactGuard<__nv_bfloat16> { /* bound 2^96: biased exponent >= 0xdf */
    static const uint32_t kM = 0x7f807f80u, kB = 0x10801080u, kS = 0x80008000u;
};

template <typename T> __device__ __forceinline__ typename ExactIn<T>::F exact_widen(T x) { return widen(x); }

__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }

/* A vector's elements into a[0] by plain additions, if every one is exact: true, or false
 * with a unchanged. s = fl(a + x) is exact iff fl(s - a) == x and fl(s - x) == a: if it
 * is, both differences are exact; if not, the difference taken from the operand with the
 * larger exponent is exact (Dekker's lemma, the first step of Fast2Sum) and so differs
 * from the other operand. For ordinary data every addition is exact (a thread's sum of
 * float32s in [-1, 1) in a double, say) and this costs 3 additions and 2 compares per
 * element instead of K TwoSums; one inexact addition sends the vector down exact_add_vec. */
template <typename F, int K, int kPer>
__device__ __forceinline__ bool exact_try_plain(F (&a)[K], const F (&x)[kPer])
{
    F s = a[0];
    bool exact = true;
#pragma unroll
    for (int j = 0; j < kPer; j++) {
        const F t = add_rn(s, x[j]);
        exact &= (sub_rn(t, s) == x[j]) & (sub_rn(t, x[j]) == s);
        s = t;
    }
    if (exact)
        a[0] = s;
    return exact;
}

/* A vector's elements into a, with one test of their residuals: a branch per element kept
 * the compiler from overlapping the elements' additions. */
template <bool kMark, typename F, int K, int kPer>
__device__ __forceinline__ void exact_add_vec(F (&a)[K], const F (&x)[kPer], ExactShared &acc, ExactSpill<F> sp)
{
    ExactResiduals<F, kPer> r;
    bool any = false;
#pragma unroll
    for (int j = 0; j < kPer; j++) {
        F y = x[j];
#pragma unroll
        for (int k = 0; k < K; k++)
            two_sum(a[k], y, a[k], y);
        r.r[j] = y;
        any |= y != F(0);
    }
    if (any)
        exact_spill<kMark, F, kPer>(acc, sp, r);
}

/* One element outside the vectors (the head and tail): into the expansion when the guard
 * lets it (exact_vec's test on its bits), else on the slow path. */
template <typename T, typename F, int K>
__device__ __forceinline__ void exact_scalar(T x, F (&a)[K], ExactShared &acc, bool &sign_clear)
{
    typedef ExactGuard<T> G;
    unsigned long long b = 0;
    memcpy(&b, &x, sizeof x);
    const uint32_t w = (uint32_t)b;
    if ((((w & G::kM) + G::kB) & G::kS) != 0) {
        exact_slow<T>(x, acc, sign_clear);
        return;
    }
    sign_clear |= !((b >> (8 * sizeof x - 1)) & 1);
    exact_add<F, K>(a, (F)exact_widen<T>(x), acc);
}

/* Whether an expansion of K terms already is an accumulator of Chk: two terms, and Chk's
 * two doubles (OpCheckedSumDd's hi + lo; float64's expansions). */
template <typename Chk, int K> struct ExactIsPair {
    static const bool value = K == 2 && sizeof(typename Chk::Acc) == sizeof(ExactDd);
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
 * the others in a row, each one double addition deep, where a pairwise fold (and one of
 * the last block's partials) cost cuda_sm11_compat's float32 kernel 4 bytes of spills on
 * sm_90, and its sums at 2^24 .. 2^28 about a microsecond on an H100. */
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

/* Element k of a vector's words, by register moves: a memcpy of the vector into an array
 * gave the array a stack slot whose stores the compiler kept (the slot's address also went
 * to a call), 16 bytes of local-memory stores per vector. */
template <typename T> __device__ __forceinline__ T exact_elem(const uint32_t (&w)[4], int k);
template <> __device__ __forceinline__ __half exact_elem<__half>(const uint32_t (&w)[4], int k)
{
    return __ushort_as_half((unsigned short)(w[k / 2] >> (16 * (k % 2))));
}
template <> __device__ __forceinline__ __nv_bfloat16 exact_elem<__nv_bfloat16>(const uint32_t (&w)[4], int k)
{
    return __ushort_as_bfloat16((unsigned short)(w[k / 2] >> (16 * (k % 2))));
}

/* One 16-byte vector into expansion a, or, when the guard trips, element by element. */
template <typename T, typename F, int K>
__device__ __forceinline__ void exact_vec(const uint4 &raw, F (&a)[K], ExactShared &acc, ExactSpill<F> sp, uint32_t &sign_and,
                                          bool &sign_clear)
{
    typedef ExactIn<T> In;
    typedef ExactGuard<T> G;
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
    uint32_t trip = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        trip |= (w[k] & G::kM) + G::kB;
        sign_and &= w[k];
    }
    const int kPer = 16 / sizeof(T);
    T v[kPer];
#pragma unroll
    for (int k = 0; k < kPer; k++)
        v[k] = exact_elem<T>(w, k);
    if (trip & G::kS) {
        /* unrolled: a rolled loop indexed v at run time, which put v in local memory, and
         * its stores, on every vector, cut the exact kernels to a third of the default's
         * bandwidth on an H100 */
#pragma unroll
        for (int k = 0; k < kPer; k++)
            exact_slow<T>(v[k], acc, sign_clear);
        return;
    }
    F x[kPer];
#pragma unroll
    for (int k = 0; k < kPer; k++)
        x[k] = (F)exact_widen<T>(v[k]);
    if (!exact_try_plain<F, K, kPer>(a, x))
        exact_add_vec<!In::kSpillFast, F, K, kPer>(a, x, acc, sp);
}

/* A thread's sums (exact_kernel): float16 and bfloat16 in kU expansions of K terms, one
 * per vector of a trip (independent chains of additions); float32 and float64 in fixed
 * point (exact_anchor.cuh, ExactAnchorThread), which ends as one expansion of two terms
 * (float64: two, with its low one). trip: at each trip's start; vec: vector u of a trip
 * whose first count of kU vectors are loaded (float32 only: the other types' rolled loop
 * has vectors one by one, for one); scalar: the head and the tail; end: the kRows
 * expansions, after the last element (sign_clear final). */
template <typename T, int kU> struct ExactThread {
    typedef typename ExactIn<T>::F F;
    static const int K = ExactIn<T>::K, kRows = kU;
    F a[kU][K];
    __device__ __forceinline__ ExactThread()
    {
#pragma unroll
        for (int u = 0; u < kU; u++)
#pragma unroll
            for (int k = 0; k < K; k++)
                a[u][k] = k ? F(0) : F(-0.0); /* -0: the zero sign of OpCheckedSum */
    }
    __device__ __forceinline__ void trip(ExactShared &, ExactSpill<F>) {}
    __device__ __forceinline__ void vec(const uint4 (&raw)[kU], int u, int, ExactShared &acc, ExactSpill<F> sp,
                                        uint32_t &sign_and, bool &sign_clear)
    {
        exact_vec<T, F, K>(raw[u], a[u], acc, sp, sign_and, sign_clear);
    }
    __device__ __forceinline__ void one(const uint4 &raw, ExactShared &acc, ExactSpill<F> sp, uint32_t &sign_and,
                                        bool &sign_clear)
    {
        exact_vec<T, F, K>(raw, a[0], acc, sp, sign_and, sign_clear);
    }
    __device__ __forceinline__ void scalar(T x, ExactShared &acc, ExactSpill<F>, bool &sign_clear)
    {
        exact_scalar<T, F, K>(x, a[0], acc, sign_clear);
    }
    __device__ __forceinline__ F (&end(bool))[kU][K] { return a; }
};
template <typename T, int kU> struct ExactAnchorThread {
    typedef double F;
    static const int K = 2, kRows = AnchorFmt<T>::kLow ? 2 : 1;
    static_assert(kU * AnchorFmt<T>::kPer <= AnchorFmt<T>::kTrip, "exact_anchor.cuh's bounds: elements a trip");
    static_assert(AnchorFmt<T>::kMark == !ExactIn<T>::kSpillFast, "the spill terms' rule, the same");
    ExactAnchor s;
    F a[kRows][2];
    __device__ __forceinline__ ExactAnchorThread() : s(exact_anchor_init<T>()) {}
    __device__ __forceinline__ void trip(ExactShared &acc, ExactSpill<F> sp) { exact_anchor_trip<T>(s, acc, sp); }
    __device__ __forceinline__ void vec(const uint4 (&raw)[kU], int u, int count, ExactShared &acc, ExactSpill<F> sp,
                                        uint32_t &sign_and, bool &sign_clear)
    {
        exact_anchor_vec<T, kU>(s, raw, u, count, acc, sp, sign_and, sign_clear);
    }
    __device__ __forceinline__ void one(const uint4 &raw, ExactShared &acc, ExactSpill<F> sp, uint32_t &sign_and,
                                        bool &sign_clear)
    {
        exact_anchor_one<T>(s, raw, acc, sp, sign_and, sign_clear);
    }
    __device__ __forceinline__ void scalar(T x, ExactShared &acc, ExactSpill<F> sp, bool &sign_clear)
    {
        exact_anchor_scalar(s, x, acc, sp, sign_clear);
    }
    /* hi + lo as one expansion, and (kLow) low as the other */
    __device__ __forceinline__ F (&end(bool sign_clear))[kRows][2]
    {
        exact_anchor_end(s, sign_clear, a[0]);
        if constexpr (kRows > 1) {
            a[1][0] = s.low[0];
            a[1][1] = s.low[1];
        }
        return a;
    }
};
template <int kU> struct ExactThread<float, kU> : ExactAnchorThread<float, kU> {};
template <int kU> struct ExactThread<double, kU> : ExactAnchorThread<double, kU> {};

template <typename Policy, typename T>
__device__ __forceinline__ void exact_kernel(const T *__restrict__ in, uint64_t n, void *__restrict__ out,
                                             unsigned char *workspace, int out_dtype, uint32_t mode)
{
    const int kU = Policy::kUnroll, kPer = 16 / sizeof(T);
    typedef ExactThread<T, kU> Th;
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

    /* The grid-stride loop of accumulate_parts (reduce.cuh): head, vectors, tail. */
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
    if constexpr (sizeof(T) == 4) {
        /* float32: fewer than kU vectors left, their loads issued at once. The small sums' grids
         * (gs_grid_for_exact) leave a thread one to three vectors; loaded one after the other, as
         * accumulate_parts does, each waited for memory in turn (on an H100, float32 at 2^18
         * gained 0.25 us, 2^20 0.2 us; measured with one expansion per vector, before
         * exact_anchor.cuh). Not for float64, whose sum at 2^20 lost 0.2 us with it (with its
         * expansions, before exact_anchor.cuh took it; not measured since), nor for
         * float16 and bfloat16: it changed the registers of their main loop (66 more moves), which
         * cost them 1 .. 2 % at 2^26, below the 0.95 target, for 0.2 us at 2^12 and 2^20. */
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
    sign_clear |= (sign_and & ExactIn<T>::kSign) != ExactIn<T>::kSign;
    if (sign_clear)
        acc.sign_clear = 1; /* the same value from any thread: no atomic needed */
    const F(&a)[kRows][K] = th.end(sign_clear);

    /* The fast path (exact_grid.cuh): nothing went into the limbs, and the threads'
     * expansions add up exactly in one double (cheaper, and enough for most data; not for
     * float64), else in two: the block's sum is v. Whether anything went into the limbs
     * (acc.dirty) is read after the first try's barriers, not behind one of its own; a
     * dirty block's tries are wasted work, but such blocks are rare. */
    __shared__ ExactScratch<Policy> scratch;
    ExactDd v = {-0.0, 0.0};
    bool fast = false;
    if (!mode) {
        if constexpr (sizeof(T) < 8) { /* float64: the two-double try only */
            fast = exact_block_try<Policy, OpCheckedSum<T>, T, F, K, kRows>(a, &spill[0][t], scratch.d, acc, v);
            if (!fast)
                __syncthreads(); /* the first try's reads of the scratch done */
        }
        /* acc.dirty only after the first try's barrier (float64's try reads it itself) */
        if (!fast && (sizeof(T) == 8 || !acc.dirty))
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
