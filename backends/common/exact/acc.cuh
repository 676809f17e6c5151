/*
 * The exact sums' long accumulator in shared memory: gs_exact_acc's fixed point, added to by
 * integer atomics (exact_flush) and turned into the result by the whole block (exact_finish).
 * No warp-level instructions, so both backends use it.
 */
#pragma once

#include <stdint.h>

#include "dispatch/kernel_list.h"
#include "workspace.h"
#include "../../../internal/exact_format.h"

namespace gs {

/* The block's long accumulator, in shared memory: the limbs, and the counts of NaN, +inf
 * and -inf elements, and whether some element had its sign bit clear. */
struct ExactShared {
    unsigned long long limb[GS_EXACT_LIMBS];
    unsigned long long nan, pos_inf, neg_inf;
    unsigned int sign_clear;
    int dirty; /* the limbs or counts were written: the block is not fast */
    /* exact_finish's scratch */
    long long carry[GS_EXACT_LIMBS];
    uint32_t mag[GS_EXACT_LIMBS];
    int flag[2], lo, hi, sticky, top;
};

/* *p += d, or -d when neg (0 < d < 2^32), for a shared 64-bit word read only after a
 * barrier, by 32-bit atomics: the low word gets d (or 2^32 - d), the high word the carry out
 * of it, less one for -d. The additions commute, so the word ends as the 64-bit sum in any
 * order. A 64-bit shared atomicAdd is a compare-and-swap loop that contending threads retry. */
__device__ __forceinline__ void exact_shared_add(unsigned long long *p, uint32_t d, bool neg)
{
    unsigned int *w = (unsigned int *)p; /* little-endian: the low word first */
    const unsigned int lo = neg ? 0u - d : d;
    const unsigned int old = atomicAdd(&w[0], lo);
    const bool carry = old + lo < old;
    if (carry != neg)
        atomicAdd(&w[1], neg ? 0xffffffffu : 1u);
}

/* limb += the finite double v, exactly: its significand, shifted to its place among the
 * 32-bit digits, spans three limbs; each gets its digit with v's sign. Not inlined: the rare
 * path, called from every element's TwoSums. */
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
    acc.dirty = 1;
#pragma unroll
    for (int k = 0; k < 3; k++)
        if (d[k])
            exact_shared_add(&acc.limb[w + k], (uint32_t)d[k], neg);
}


/* The block's long accumulator to zero; every thread, a barrier after. */
__device__ __forceinline__ void exact_zero(ExactShared &acc)
{
    for (unsigned int i = threadIdx.x; i < GS_EXACT_LIMBS; i += blockDim.x)
        acc.limb[i] = 0;
    if (threadIdx.x == 0) {
        acc.nan = acc.pos_inf = acc.neg_inf = 0;
        acc.sign_clear = 0;
        acc.dirty = 0;
    }
    __syncthreads();
}

/* A nonzero magnitude (its top digits m0 .. m3, the highest h) rounded by one thread. Not
 * inlined, so its loops do not weigh on the kernel's registers; the digits come by value, as
 * an array passed by address would take a stack slot. */
__device__ __noinline__ uint64_t exact_round_small(uint32_t m0, uint32_t m1, uint32_t m2, uint32_t m3, int h,
                                                   int base, int neg, int out_dtype)
{
    const uint32_t m[4] = {m0, m1, m2, m3};
    return gs_exact_round_mag(m, h, base, neg, (gs_dtype)out_dtype);
}

/* The block's accumulator (limbs below 2^62 in magnitude) to the result by the whole block
 * (kBlock >= GS_EXACT_LIMBS; every thread, after a barrier that published the limbs): carries
 * resolved in parallel passes (bounded: a carry moves one limb a pass, and after the first
 * pass carries are -1, 0 or 1), then either the normalised gs_exact_acc, or the magnitude's
 * digits (negated in parallel: above the lowest nonzero digit L every digit is complemented,
 * digit L becomes 2^32 - d) cut to the top four and a sticky bit, which one thread rounds
 * (gs_exact_round_mag, as gs_exact_round does). */
__device__ __forceinline__ void exact_finish(ExactShared &acc, uint64_t n, void *out, int out_dtype, uint32_t mode)
{
    const int t = (int)threadIdx.x, L = GS_EXACT_LIMBS;
    if (t == 0) {
        acc.flag[0] = 0;
        acc.lo = L;
        acc.hi = -1;
        acc.sticky = 0;
        acc.top = -1;
    }
    __syncthreads();
    /* The carries run only up to limb T, two above the highest nonzero limb H: the value
     * is below 2^62 2^(32 H) (1 + 2^-32 + ...) < 2^(32 T) in magnitude, so limb T ends as
     * its sign (0 or -1) and every limb above as that sign's extension, written at once
     * below, instead of a negative sum's borrow climbing one limb a pass to the top. */
    if (t < L && acc.limb[t])
        atomicMax(&acc.top, t);
    __syncthreads();
    const int T = acc.top + 2 < L - 1 ? acc.top + 2 : L - 1;
#pragma unroll 1
    for (int pass = 0; pass < L + 2; pass++) {
        const int p = pass & 1;
        long long v = 0;
        if (t <= T) {
            v = (long long)acc.limb[t];
            const long long c = t < T ? v >> 32 : 0;
            acc.carry[t] = c;
            if (c)
                acc.flag[p] = 1;
        }
        if (t == 0)
            acc.flag[p ^ 1] = 0;
        __syncthreads();
        if (!acc.flag[p])
            break;
        if (t <= T)
            acc.limb[t] = (unsigned long long)((t < T ? v & GS_EXACT_DIGIT_MASK : v) + (t ? acc.carry[t - 1] : 0));
        __syncthreads();
    }
    if (T < L - 1) { /* the normal form above T: digits 0 or 2^32 - 1, the top 0 or -1 */
        const bool below = (long long)acc.limb[T] < 0;
        __syncthreads();
        if (t >= T && t < L)
            acc.limb[t] = below ? (t == L - 1 ? ~0ull : 0xffffffffull) : 0ull;
        __syncthreads();
    }
    if (mode) {
        gs_exact_acc *o = (gs_exact_acc *)out;
        if (t < L)
            o->limb[t] = (int64_t)acc.limb[t];
        if (t == 0) {
            o->count = (int64_t)n;
            o->nan = (int64_t)acc.nan;
            o->pos_inf = (int64_t)acc.pos_inf;
            o->neg_inf = (int64_t)acc.neg_inf;
            o->sign_clear = acc.sign_clear ? 1 : 0;
            o->reserved[0] = o->reserved[1] = o->reserved[2] = 0;
        }
        return;
    }
    uint64_t bits = 0;
    const long long top = (long long)acc.limb[L - 1];
    const bool neg = top < 0;
    const bool special = gs_exact_round_special((int64_t)acc.nan, (int64_t)acc.pos_inf, (int64_t)acc.neg_inf,
                                                (gs_dtype)out_dtype, &bits);
    const bool huge = top < -(1ll << 31) || top >= (1ll << 31); /* |V| >= 2^1087: +-inf */
    if (!special && !huge) {
        uint32_t d = t < L ? (uint32_t)acc.limb[t] : 0;
        if (neg && d)
            atomicMin(&acc.lo, t);
        __syncthreads();
        if (neg && t < L)
            d = t < acc.lo ? 0u : t == acc.lo ? 0u - d : ~d;
        if (t < L) {
            acc.mag[t] = d;
            if (d)
                atomicMax(&acc.hi, t);
        }
        __syncthreads();
        const int h = acc.hi;
        if (t < h - 3 && d)
            acc.sticky = 1;
        __syncthreads();
        if (t == 0) {
            if (h < 0) {
                bits = gs_exact_round_zero(n ? 1 : 0, acc.sign_clear, (gs_dtype)out_dtype);
            } else {
                const int base = h >= 3 ? h - 3 : 0;
                const uint32_t m0 = acc.mag[base] | (base > 0 && acc.sticky ? 1u : 0u);
                const uint32_t m1 = base + 1 <= h ? acc.mag[base + 1] : 0u;
                const uint32_t m2 = base + 2 <= h ? acc.mag[base + 2] : 0u;
                const uint32_t m3 = base + 3 <= h ? acc.mag[base + 3] : 0u;
                bits = exact_round_small(m0, m1, m2, m3, h - base, base, neg, out_dtype);
            }
        }
    } else if (huge && !special) {
        if (t == 0) /* any value in the top binades: the type's infinity with V's sign */
            bits = exact_round_small(1u, 0u, 0u, 0u, 0, L, neg, out_dtype);
    }
    if (t == 0) {
        if (out_dtype == GS_FLOAT64)
            *(unsigned long long *)out = bits;
        else if (out_dtype == GS_FLOAT32)
            *(unsigned int *)out = (unsigned int)bits;
        else
            *(unsigned short *)out = (unsigned short)bits;
    }
}

} // namespace gs
