/*
 * Exact segmented sums (GS_SEGMENTED_EXACT, docs/semantics.md §12): each segment's float SUM
 * correctly rounded, in the segmented reduction's one launch (agent/segmented.cuh).
 *
 * The segmented reduction runs with OpCheckedSum: float16, bfloat16 and float32 are summed in
 * one double, float64 in two (hi + lo), each addition checked exact by Dekker's test. An inexact
 * addition, a NaN, an infinity or an overflow makes the accumulator NaN for good: the segment
 * is "lost". A segment not lost holds its exact sum, so rounding it once is correct whatever
 * order the kernel took. A double holds exactly the sum of float32s whose exponents and sum
 * span fewer than 53 bits, and of any float16s up to 2^29.
 *
 * A lost segment is summed again element by element into the block's long accumulator
 * (exact/acc.cuh, exact for any data): an owned one at the end of its round, a crossing one by
 * the block that combines its pieces, re-reading only the lost pieces. Each element is read
 * again at most once, so the work stays bounded.
 *
 * Zero sign: accumulators start at -0.0 and IEEE gives -0 only for -0 + -0, so an exact zero is
 * -0.0 exactly when every element was (float64's hi has the sign). An empty segment is +0.0.
 */
#pragma once

#include "agent/exact.cuh"
#include "agent/segmented.cuh"

namespace gs {

template <typename T> struct SegExactOut;
template <> struct SegExactOut<__half> { static const int value = GS_FLOAT16; };
template <> struct SegExactOut<__nv_bfloat16> { static const int value = GS_BFLOAT16; };
template <> struct SegExactOut<float> { static const int value = GS_FLOAT32; };
template <> struct SegExactOut<double> { static const int value = GS_FLOAT64; };

/* One pass of carries over the limbs (each then below 2^33 in magnitude), so that 2^27
 * more elements may be flushed; every thread, barriers included. */
__device__ __forceinline__ void exact_carry_once(ExactShared &acc)
{
    const unsigned int t = threadIdx.x, L = GS_EXACT_LIMBS;
    __syncthreads(); /* every flush so far */
    long long v = 0;
    if (t < L) {
        v = (long long)acc.limb[t];
        acc.carry[t] = t < L - 1 ? v >> 32 : 0;
    }
    __syncthreads();
    if (t < L)
        acc.limb[t] = (unsigned long long)((t < L - 1 ? v & GS_EXACT_DIGIT_MASK : v) + (t ? acc.carry[t - 1] : 0));
    __syncthreads();
}

/* in[b, e) (clipped to n) into the block's accumulator, element by element; every thread.
 * since: elements flushed since the last carry pass, kept across calls on one accumulator (0
 * after exact_zero); a carry pass runs before 2^27 more, so the limbs stay below 2^61. */
template <typename T>
__device__ __forceinline__ void exact_add_range(ExactShared &acc, const T *in, uint64_t b, uint64_t e, uint64_t n,
                                                bool &sign_clear, uint64_t &since)
{
    if (e > n)
        e = n;
    const uint64_t kSlab = 1ull << 27;
    while (b < e) {
        if (since == kSlab) {
            exact_carry_once(acc);
            since = 0;
        }
        const uint64_t se = e - b > kSlab - since ? b + (kSlab - since) : e;
#pragma unroll 1
        for (uint64_t i = b + threadIdx.x; i < se; i += blockDim.x)
            exact_slow<T>(in[i], acc, sign_clear);
        since += se - b;
        b = se;
    }
    __syncthreads();
}

/* The block's accumulator, its flushes done, to *o (count: the segment's elements). */
template <typename T> __device__ __forceinline__ void exact_write(ExactShared &acc, bool sign_clear, uint64_t count, T *o)
{
    if (sign_clear)
        acc.sign_clear = 1;
    __syncthreads();
    exact_finish(acc, count, o, SegExactOut<T>::value, 0);
    __syncthreads(); /* the accumulator is reused */
}

/* SegWrite for the exact sums: lost segments of a round are listed and summed again at
 * its end; a lost crossing segment is summed again by the block that combined it. */
template <typename Policy, typename T> struct SegExactWrite {
    typedef OpCheckedSum<T> Op;
    typedef typename Op::Acc Acc;
    struct Shared {
        ExactShared acc;
        unsigned int count; /* lost segments in this round */
        unsigned short list[Policy::kBlock];
        int lost;
    };
    static __device__ __forceinline__ void begin(Shared &w)
    {
        if (threadIdx.x == 0)
            w.count = 0;
    }
    static __device__ __forceinline__ void emit(Shared &w, T *o, Acc a, uint32_t q, uint64_t len)
    {
        if (!Op::lost(a))
            *o = len ? Op::result(a) : T(0.0f);
        else
            w.list[atomicAdd(&w.count, 1u)] = (unsigned short)q;
    }
    static __device__ __forceinline__ void round_end(Shared &w, const SegRound<T, T> &r)
    {
        const unsigned int m = w.count; /* the same in every thread: read after a barrier */
        if (!m)
            return;
#pragma unroll 1
        for (unsigned int i = 0; i < m; i++) {
            const uint32_t q = w.list[i];
            const uint64_t sb = r.round_off[q];
            uint64_t se;
            seg_owned(sb, r.round_off[q + 1], r.base + q, r.hi, r.ce, &se);
            exact_zero(w.acc);
            bool sign_clear = false;
            uint64_t since = 0;
            exact_add_range<T>(w.acc, r.in, sb, se, ~0ull, sign_clear, since);
            exact_write<T>(w.acc, sign_clear, se - sb, &r.out[r.base + q]);
        }
        if (threadIdx.x == 0)
            w.count = 0;
        __syncthreads();
    }
    static __device__ __forceinline__ void cross(Shared &w, T *o, Acc a, const SegCross<T, Acc> &x)
    {
        if (threadIdx.x == 0) {
            w.lost = Op::lost(a);
            if (!w.lost)
                *o = Op::result(a);
        }
        __syncthreads();
        if (!w.lost)
            return;
        /* piece c holds the segment's positions [c chunk - sj - 1, (c + 1) chunk - sj - 1),
         * at most `chunk` whatever the offsets hold; its slot is exact unless lost */
        exact_zero(w.acc);
        bool sign_clear = false;
        uint64_t since = 0;
#pragma unroll 1
        for (uint32_t c = x.c0; c <= x.c1; c++) {
            const Acc v = gs_load_volatile(c == x.c0 ? &x.slots_b[c] : &x.slots_a[c]);
            if (!Op::lost(v)) {
                if (threadIdx.x == 0) {
                    Op::flush(w.acc, v);
                    sign_clear |= !signbit(Op::value(v));
                }
                continue;
            }
            const uint64_t lo = (uint64_t)c * x.chunk, hi = lo + x.chunk;
            uint64_t pb = lo > x.sj + 1 ? lo - x.sj - 1 : 0, pe = hi > x.sj + 1 ? hi - x.sj - 1 : 0;
            pb = pb > x.sb ? pb : x.sb;
            pe = pe < x.se ? pe : x.se;
            if (pb < pe)
                exact_add_range<T>(w.acc, x.in, pb, pe, x.n, sign_clear, since);
        }
        __syncthreads();
        exact_write<T>(w.acc, sign_clear, x.se - x.sb, o);
    }
};

} // namespace gs
