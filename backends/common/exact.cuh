/*
 * Exact float sums (GS_REDUCE_EXACT, docs/semantics.md §12), written once for both
 * backends: one launch, the exact sum rounded once by the last block, or its accumulator.
 *
 * Per thread, every element goes into a short floating-point expansion a[0..K) with
 * TwoSum (error-free: a + x == s + e exactly, barring overflow, which the element guard
 * below rules out), level after level; what is left after the last level is added to the
 * block's long accumulator (flush). So at every moment
 *     sum of the thread's elements == sum of its expansions + what it flushed,
 * exactly (ExBLAS: Iakymchuk, Collange, Defour, Graillat). For ordinary data the residual
 * is zero and the loop is K TwoSums per element and no memory traffic.
 *
 * The block's long accumulator is gs_exact_acc's fixed point (limbs of 32-bit digits from
 * 2^-1088) in shared memory, added to with 64-bit integer atomics: integer addition is
 * associative, so the order in which threads flush does not matter, and the result is the
 * same bits on any grid. The block's threads then merge their expansions in a shared-memory
 * tree (each merge exact, its residuals flushed), the tree's last expansion is flushed, the
 * block's limbs are normalised and added (int64 atomics) to the launch's accumulator in the
 * workspace, and the last block (docs/design.md's guard) rounds that once
 * (internal/exact_format.h, the code gs_exact_round runs) or writes it out, and returns the
 * workspace to zero.
 *
 * Guards, per 16-byte vector and from the raw bits (integer ops only): a vector holding a
 * NaN or an infinity, or an element so large that K TwoSums could overflow (float64: |x| >=
 * 2^960, bfloat16 in float: 2^96), takes the slow path: every element counted (NaN, +inf,
 * -inf) or flushed on its own. Elements below the bound cannot overflow the expansion: a
 * thread sees fewer than 2^31 elements (the grid has at least n / 2^28 blocks of 256), so
 * |a[0]| < 2^31 * bound stays far inside the type's range.
 *
 * Limb bounds: each flush adds three digits below 2^32 in magnitude, and an element causes
 * at most one flush (its residual, or itself on the slow path), so a block of at most 2^28
 * elements (the host sizes the grid for that: backend.c) keeps |shared limb| < 2^61; blocks
 * add normalised limbs (< 2^32) to the workspace: no int64 overflows for any grid.
 *
 * cuda_sm11_compat compiles this too: no warp shuffles or votes here. Beyond compute
 * capability 1.1 it needs float64 arithmetic (1.3) and 64-bit integer atomic adds in shared
 * and global memory (2.0): docs/design.md, "Exact sums".
 */
#pragma once

#include "reduce.cuh"
#include "../../internal/exact_format.h"

namespace gs {

/* Per input type: the expansion's type F and length K; the minimum of resident blocks the
 * kernel is compiled for (kernels.cuh; without one, ptxas gave every exact kernel 128
 * registers on sm_90, two blocks per multiprocessor: 64 registers for 4 blocks leave the
 * float64 loop spilling, 80 for 3 do not); and the guard on raw 32-bit words:
 * a word w trips it when ((w & kM) + kB) & kS is nonzero (exponent fields all ones, or at
 * or above the bound: adding kB carries into the field's sign position). kSign: the sign
 * bits of the elements in a word; kHiWords: only the odd words hold exponents (float64). */
template <typename T> struct ExactIn;
template <> struct ExactIn<float> { /* float32 in float64: exact, and no sum can overflow */
    typedef double F;
    static const int K = 2;
    static const uint32_t kM = 0x7f800000u, kB = 0x00800000u, kS = 0x80000000u, kSign = 0x80000000u;
    static const bool kHiWords = false;
    static const int kMinBlocks = 4;
};
template <> struct ExactIn<double> { /* bound 2^960: biased exponent >= 0x7bf */
    typedef double F;
    static const int K = 3;
    static const uint32_t kM = 0x7ff00000u, kB = 0x04100000u, kS = 0x80000000u, kSign = 0x80000000u;
    static const bool kHiWords = true;
    static const int kMinBlocks = 3; /* 80 registers: three expansions of K doubles in flight */
};
template <> struct ExactIn<__half> { /* |x| < 2^16: float never overflows */
    typedef float F;
    static const int K = 2;
    static const uint32_t kM = 0x7c007c00u, kB = 0x04000400u, kS = 0x80008000u, kSign = 0x80008000u;
    static const bool kHiWords = false;
    static const int kMinBlocks = 4;
};
template <> struct ExactIn<__nv_bfloat16> { /* bound 2^96: biased exponent >= 0xdf */
    typedef float F;
    static const int K = 2;
    static const uint32_t kM = 0x7f807f80u, kB = 0x10801080u, kS = 0x80008000u, kSign = 0x80008000u;
    static const bool kHiWords = false;
    static const int kMinBlocks = 4;
};

template <typename T> __device__ __forceinline__ typename ExactIn<T>::F exact_widen(T x) { return widen(x); }
template <> __device__ __forceinline__ double exact_widen<float>(float x) { return (double)x; }
template <> __device__ __forceinline__ double exact_widen<double>(double x) { return x; }

/* TwoSum (Knuth): s + e == a + b exactly when s does not overflow; the _rn intrinsics are
 * never contracted into FMAs or reordered. */
__device__ __forceinline__ void two_sum(double a, double b, double &s, double &e)
{
    s = __dadd_rn(a, b);
    const double bb = __dsub_rn(s, a);
    e = __dadd_rn(__dsub_rn(a, __dsub_rn(s, bb)), __dsub_rn(b, bb));
}
__device__ __forceinline__ void two_sum(float a, float b, float &s, float &e)
{
    s = __fadd_rn(a, b);
    const float bb = __fsub_rn(s, a);
    e = __fadd_rn(__fsub_rn(a, __fsub_rn(s, bb)), __fsub_rn(b, bb));
}

/* The block's long accumulator, in shared memory: the limbs, and the counts of NaN, +inf
 * and -inf elements, and whether some element had its sign bit clear. */
struct ExactShared {
    unsigned long long limb[GS_EXACT_LIMBS];
    unsigned long long nan, pos_inf, neg_inf;
    unsigned int sign_clear;
};

/* limb += the finite value v (any double), exactly: its significand, shifted to its place
 * among the 32-bit digits, spans three limbs; each gets its digit with v's sign. */
/* Not inlined: it is the rare path, called from every element's TwoSums. */
__device__ __noinline__ void exact_flush(ExactShared &acc, double v)
{
    const unsigned long long b = (unsigned long long)__double_as_longlong(v);
    unsigned long long m = b & 0xfffffffffffffull;
    int ex = (int)(b >> 52) & 0x7ff;
    if (ex)
        m |= 1ull << 52;
    else
        ex = 1; /* subnormal: m 2^-1074 */
    if (!m)
        return;
    const int bit = ex - 1075 - GS_EXACT_LOW_EXPONENT; /* v = m 2^(bit - 1088), bit >= 14 */
    const int w = bit >> 5, s = bit & 31;
    const unsigned long long lo = m << s, hi = s ? m >> (64 - s) : 0ull;
    const unsigned long long d[3] = {lo & 0xffffffffull, lo >> 32, hi};
    const bool neg = b >> 63;
#pragma unroll
    for (int k = 0; k < 3; k++)
        if (d[k])
            atomicAdd(&acc.limb[w + k], neg ? 0ull - d[k] : d[k]);
}

/* x into the expansion a: K TwoSums, the residual flushed. */
template <typename F, int K> __device__ __forceinline__ void exact_add(F (&a)[K], F x, ExactShared &acc)
{
#pragma unroll
    for (int k = 0; k < K; k++)
        two_sum(a[k], x, a[k], x);
    if (x != F(0))
        exact_flush(acc, (double)x);
}

/* One element on the slow path: counted if it is not finite, else flushed on its own. */
template <typename T> __device__ __forceinline__ void exact_slow(T x, ExactShared &acc, bool &sign_clear)
{
    const double v = (double)exact_widen<T>(x);
    const unsigned long long b = (unsigned long long)__double_as_longlong(v);
    sign_clear |= !(b >> 63);
    if (v != v)
        atomicAdd(&acc.nan, 1ull);
    else if (v - v != 0.0) /* an infinity */
        atomicAdd(b >> 63 ? &acc.neg_inf : &acc.pos_inf, 1ull);
    else
        exact_flush(acc, v);
}

/* One 16-byte vector into expansion a, or, when the guard trips, element by element. */
template <typename T, typename F, int K>
__device__ __forceinline__ void exact_vec(const uint4 &raw, F (&a)[K], ExactShared &acc, uint32_t &sign_and,
                                          bool &sign_clear)
{
    typedef ExactIn<T> In;
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
    uint32_t trip = 0;
#pragma unroll
    for (int k = In::kHiWords ? 1 : 0; k < 4; k += In::kHiWords ? 2 : 1) {
        trip |= (w[k] & In::kM) + In::kB;
        sign_and &= w[k];
    }
    const int kPer = 16 / sizeof(T);
    T v[kPer];
    memcpy(v, &raw, 16);
    if (trip & In::kS) {
#pragma unroll 1
        for (int k = 0; k < kPer; k++)
            exact_slow<T>(v[k], acc, sign_clear);
        return;
    }
#pragma unroll
    for (int k = 0; k < kPer; k++)
        exact_add<F, K>(a, (F)exact_widen<T>(v[k]), acc);
}

/* The launch's accumulator in the workspace (a gs_exact_acc's layout), inside the
 * segmented reduction's counter region: every kernel leaves that region zero. */
#define GS_EXACT_ACC_OFFSET GS_SEG_COUNTERS_OFFSET

/* The one-thread steps, not inlined: their digit arrays would otherwise weigh on the
 * registers of the whole kernel (128 and spills on sm_90 when inlined). */
__device__ __noinline__ void exact_normalize(ExactShared &acc)
{
    gs_exact_normalize((int64_t *)acc.limb);
}
__device__ __noinline__ void exact_round(const ExactShared &acc, uint64_t n, void *out, int out_dtype)
{
    const uint64_t bits = gs_exact_round_bits((const int64_t *)acc.limb, (int64_t)n, (int64_t)acc.nan,
                                              (int64_t)acc.pos_inf, (int64_t)acc.neg_inf, acc.sign_clear,
                                              (gs_dtype)out_dtype);
    if (out_dtype == GS_FLOAT64)
        *(unsigned long long *)out = bits;
    else if (out_dtype == GS_FLOAT32)
        *(unsigned int *)out = (unsigned int)bits;
    else
        *(unsigned short *)out = (unsigned short)bits;
}

template <typename Policy, typename T>
__device__ __forceinline__ void exact_kernel(const T *__restrict__ in, uint64_t n, void *__restrict__ out,
                                             unsigned char *workspace, int out_dtype, uint32_t mode)
{
    typedef typename ExactIn<T>::F F;
    const int K = ExactIn<T>::K, kU = Policy::kUnroll, kPer = 16 / sizeof(T);
    __shared__ ExactShared acc;
    __shared__ F tree[K][Policy::kBlock];
    const unsigned int t = threadIdx.x;
    for (unsigned int i = t; i < GS_EXACT_LIMBS; i += Policy::kBlock)
        acc.limb[i] = 0;
    if (t == 0) {
        acc.nan = acc.pos_inf = acc.neg_inf = 0;
        acc.sign_clear = 0;
    }
    __syncthreads();

    /* The grid-stride loop of accumulate_parts (reduce.cuh): head, vectors, tail. */
    const uint64_t gt = (uint64_t)blockIdx.x * Policy::kBlock + t, nt = (uint64_t)gridDim.x * Policy::kBlock;
    const uint64_t misalign = ((uintptr_t)in & 15u) / sizeof(T);
    uint64_t head = misalign ? (uint64_t)kPer - misalign : 0;
    if (head > n)
        head = n;
    const uint64_t nvec = (n - head) / kPer, tail_begin = head + nvec * kPer;
    const uint4 *vin = (const uint4 *)(in + head);
    F a[kU][K];
#pragma unroll
    for (int u = 0; u < kU; u++)
#pragma unroll
        for (int k = 0; k < K; k++)
            a[u][k] = F(0);
    uint32_t sign_and = ~0u;
    bool sign_clear = false;
#pragma unroll 1
    for (uint64_t h = gt; h < head; h += nt)
        exact_slow<T>(in[h], acc, sign_clear);
    uint64_t i = gt;
    for (; i + (kU - 1) * nt < nvec; i += kU * nt) {
        uint4 raw[kU];
#pragma unroll
        for (int u = 0; u < kU; u++)
            raw[u] = Policy::load16(vin + i + u * nt);
#pragma unroll
        for (int u = 0; u < kU; u++)
            exact_vec<T, F, K>(raw[u], a[u], acc, sign_and, sign_clear);
    }
#pragma unroll 1
    for (; i < nvec; i += nt)
        exact_vec<T, F, K>(Policy::load16(vin + i), a[0], acc, sign_and, sign_clear);
#pragma unroll 1
    for (uint64_t r = tail_begin + gt; r < n; r += nt)
        exact_slow<T>(in[r], acc, sign_clear);
    sign_clear |= (sign_and & ExactIn<T>::kSign) != ExactIn<T>::kSign;
    if (sign_clear)
        acc.sign_clear = 1; /* the same value from any thread: no atomic needed */

    /* The thread's expansions into a[0], then the block's in a tree through shared memory;
     * every merge exact, its residuals flushed. */
#pragma unroll
    for (int u = 1; u < kU; u++)
#pragma unroll
        for (int k = 0; k < K; k++)
            exact_add<F, K>(a[0], a[u][k], acc);
#pragma unroll
    for (int k = 0; k < K; k++)
        tree[k][t] = a[0][k];
#pragma unroll 1
    for (unsigned int half = Policy::kBlock / 2; half > 0; half /= 2) {
        __syncthreads();
        if (t < half) {
#pragma unroll
            for (int k = 0; k < K; k++)
                exact_add<F, K>(a[0], tree[k][t + half], acc);
#pragma unroll
            for (int k = 0; k < K; k++)
                tree[k][t] = a[0][k];
        }
    }
    if (t == 0)
#pragma unroll
        for (int k = 0; k < K; k++)
            exact_flush(acc, (double)a[0][k]);
    __syncthreads();
    if (t == 0)
        exact_normalize(acc); /* |limb| < 2^61 here: never fails */
    __syncthreads();

    gs_exact_acc *total = (gs_exact_acc *)(workspace + GS_EXACT_ACC_OFFSET);
    if (gridDim.x > 1) {
        /* Into the launch's accumulator (L2 atomics), then docs/design.md's guard: every
         * thread's atomics are ordered before thread 0's ticket by the fence and barrier. */
        if (t < GS_EXACT_LIMBS && acc.limb[t])
            atomicAdd((unsigned long long *)&total->limb[t], acc.limb[t]);
        if (t == GS_EXACT_LIMBS && acc.nan)
            atomicAdd((unsigned long long *)&total->nan, acc.nan);
        if (t == GS_EXACT_LIMBS + 1 && acc.pos_inf)
            atomicAdd((unsigned long long *)&total->pos_inf, acc.pos_inf);
        if (t == GS_EXACT_LIMBS + 2 && acc.neg_inf)
            atomicAdd((unsigned long long *)&total->neg_inf, acc.neg_inf);
        if (t == GS_EXACT_LIMBS + 3 && acc.sign_clear)
            atomicAdd((unsigned long long *)&total->sign_clear, 1ull);
        __threadfence();
        __syncthreads();
        unsigned int *counter = (unsigned int *)workspace;
        if (!Policy::last_arrival(counter, gridDim.x))
            return;
        /* The last block: read the total (volatile: from L2, past any stale L1 line), put
         * it in shared memory, and return the workspace to zero for the next launch. */
        int64_t *words = (int64_t *)total;
        if (t < GS_EXACT_LIMBS)
            acc.limb[t] = (unsigned long long)gs_load_volatile(&words[t]);
        if (t == 0) {
            acc.nan = (unsigned long long)gs_load_volatile(&total->nan);
            acc.pos_inf = (unsigned long long)gs_load_volatile(&total->pos_inf);
            acc.neg_inf = (unsigned long long)gs_load_volatile(&total->neg_inf);
            acc.sign_clear = gs_load_volatile(&total->sign_clear) != 0;
        }
        __syncthreads();
        if (t < GS_EXACT_ACC_WORDS)
            words[t] = 0;
        if (t == 0) {
            exact_normalize(acc); /* the normalised limbs of < 2^31 blocks: never fails */
            gs_reset_counter(counter);
        }
        __syncthreads();
    }

    /* The result, from the block's (or the launch's) normalised accumulator. */
    if (mode) {
        gs_exact_acc *o = (gs_exact_acc *)out;
        if (t < GS_EXACT_LIMBS)
            o->limb[t] = (int64_t)acc.limb[t];
        if (t == 0) {
            o->count = (int64_t)n;
            o->nan = (int64_t)acc.nan;
            o->pos_inf = (int64_t)acc.pos_inf;
            o->neg_inf = (int64_t)acc.neg_inf;
            o->sign_clear = acc.sign_clear ? 1 : 0;
            o->reserved[0] = o->reserved[1] = o->reserved[2] = 0;
        }
    } else if (t == 0) {
        exact_round(acc, n, out, out_dtype);
    }
}

} // namespace gs
