/*
 * The exact accumulator's arithmetic (gs_exact_acc, api/gridsync.h), written once for the
 * core (core/exact.c: gs_exact_round, gs_exact_combine) and the kernels' last block
 * (backends/common/exact.cuh), so a result rounded on the device and an accumulator
 * rounded on the host can never disagree. Header-only C99 that nvcc also compiles as
 * host/device code; no __int128, no floating point: every step is integer arithmetic on
 * 32-bit digits held in 64-bit words, which cannot overflow (the comments say why).
 *
 * The value of limbs l[0..GS_EXACT_LIMBS) is V = sum l[i] * 2^(32 i - 1088) (any int64
 * limbs). Rounding works on its normal form: digits d[0..GS_EXACT_LIMBS) in [0, 2^32) and
 * a signed top t with V = (sum d[i] 2^(32 i) + t 2^(32 GS_EXACT_LIMBS)) * 2^-1088.
 */
#ifndef GS_INTERNAL_EXACT_FORMAT_H
#define GS_INTERNAL_EXACT_FORMAT_H

#include <stdint.h>

#include "gridsync.h"

#if defined(__CUDACC__)
#  define GS_EXACT_FN static __host__ __device__ inline
#else
#  define GS_EXACT_FN static inline
#endif

#define GS_EXACT_DIGIT_MASK 0xffffffffll

/* In place: l[0 .. GS_EXACT_LIMBS-2] become digits in [0, 2^32), the top limb takes the
 * rest. Each step splits t = l[i] into its low 32 bits and t >> 32 (arithmetic: a floor
 * division, |t >> 32| <= 2^31), adds the incoming carry c (|c| <= 2^31 + 1) to the low
 * part (< 2^33 in magnitude) and carries (t >> 32) + (low >> 32): no int64 overflows for
 * any int64 limbs. Returns 0, or -1 when the top limb plus the carry would leave int64
 * (the limbs are then left as they were). */
GS_EXACT_FN int gs_exact_normalize(int64_t *l)
{
    int64_t c = 0;
    int64_t d[GS_EXACT_LIMBS - 1];
    for (int i = 0; i < GS_EXACT_LIMBS - 1; i++) {
        const int64_t t = l[i];
        const int64_t low = (t & GS_EXACT_DIGIT_MASK) + c;
        d[i] = low & GS_EXACT_DIGIT_MASK;
        c = (t >> 32) + (low >> 32);
    }
    const int64_t top = l[GS_EXACT_LIMBS - 1];
    if ((c > 0 && top > INT64_MAX - c) || (c < 0 && top < INT64_MIN - c))
        return -1;
    for (int i = 0; i < GS_EXACT_LIMBS - 1; i++)
        l[i] = d[i];
    l[GS_EXACT_LIMBS - 1] = top + c;
    return 0;
}

/* The layout of a result type: significand digits p (the hidden bit included), the least
 * normal exponent emin, the exponent bias and the sign's bit. */
typedef struct gs_exact_fmt {
    int p, emin, bias, sign_bit;
} gs_exact_fmt;

GS_EXACT_FN gs_exact_fmt gs_exact_fmt_of(gs_dtype t)
{
    gs_exact_fmt f;
    f.p = t == GS_FLOAT64 ? 53 : t == GS_FLOAT32 ? 24 : t == GS_FLOAT16 ? 11 : 8;
    f.bias = t == GS_FLOAT64 ? 1023 : t == GS_FLOAT16 ? 15 : 127;
    f.emin = 1 - f.bias;
    f.sign_bit = t == GS_FLOAT64 ? 63 : t == GS_FLOAT32 ? 31 : 15;
    return f;
}

/* Bits [pos, pos + 64) of the magnitude m[0 .. h] (pos >= 0; digits above h are zero). */
GS_EXACT_FN uint64_t gs_exact_bits64(const uint32_t *m, int h, int pos)
{
    uint64_t r = 0;
    const int w = pos >> 5, s = pos & 31;
    for (int k = 2; k >= 0; k--) {
        const int i = w + k;
        const uint64_t digit = i <= h ? m[i] : 0;
        /* digit k contributes at bit 32 k - s of the result */
        const int at = 32 * k - s;
        if (at >= 64)
            continue;
        r |= at >= 0 ? digit << at : digit >> -at;
    }
    return r;
}

/* NaN and infinities decide alone (docs/semantics.md §12): returns 1 and sets *bits when
 * they do. The default quiet NaN is positive. */
GS_EXACT_FN int gs_exact_round_special(int64_t nan, int64_t pos_inf, int64_t neg_inf, gs_dtype t, uint64_t *bits)
{
    const gs_exact_fmt f = gs_exact_fmt_of(t);
    const uint64_t sign = (uint64_t)1 << f.sign_bit;
    const uint64_t inf = (((uint64_t)1 << (f.sign_bit - f.p + 1)) - 1) << (f.p - 1);
    if (nan > 0 || (pos_inf > 0 && neg_inf > 0))
        *bits = inf | (uint64_t)1 << (f.p - 2);
    else if (pos_inf > 0)
        *bits = inf;
    else if (neg_inf > 0)
        *bits = sign | inf;
    else
        return 0;
    return 1;
}

/* An exact zero: -0.0 only when every element was -0.0. */
GS_EXACT_FN uint64_t gs_exact_round_zero(int64_t count, int64_t sign_clear, gs_dtype t)
{
    return count > 0 && sign_clear <= 0 ? (uint64_t)1 << gs_exact_fmt_of(t).sign_bit : 0;
}

/* The last step of every rounding here and in the exact scan's (backends/common/exact/
 * fixed.cuh): mant (p bits at most, the quantum's multiple below |V|), the rounding bit and
 * the sticky bit under it, to nearest-even, with V's binade e and sign s. Normal: the
 * biased exponent minus one, plus the significand with its hidden bit, so a significand
 * that rounded up to 2^p carries into the exponent; subnormal: the significand alone, and
 * one that rounded up to 2^(p-1) is the least normal number. */
GS_EXACT_FN uint64_t gs_exact_round_finish(uint64_t mant, int round, int sticky, int e, gs_exact_fmt f, uint64_t s)
{
    const uint64_t inf = (((uint64_t)1 << (f.sign_bit - f.p + 1)) - 1) << (f.p - 1);
    if (round && (sticky || (mant & 1u)))
        mant++;
    uint64_t bits = e >= f.emin ? ((uint64_t)(e + f.bias - 1) << (f.p - 1)) + mant : mant;
    if (bits >= inf)
        bits = inf;
    return s | bits;
}

/* A nonzero magnitude, rounded: digits m[0 .. h] with m[h] != 0 stand for
 * sum m[i] 2^(32 (i + base) - 1088), negated when neg. Any digits below the rounding
 * position may be folded into one sticky bit in m[0] (the device keeps four digits); so
 * that the rounding bit is among them, h >= 3 whenever base > 0. */
GS_EXACT_FN uint64_t gs_exact_round_mag(const uint32_t *m, int h, int base, int neg, gs_dtype t)
{
    const gs_exact_fmt f = gs_exact_fmt_of(t);
    const uint64_t inf = (((uint64_t)1 << (f.sign_bit - f.p + 1)) - 1) << (f.p - 1);
    const uint64_t s = neg ? (uint64_t)1 << f.sign_bit : 0;
    int top_bit = 31;
    while (!(m[h] >> top_bit & 1u))
        top_bit--;
    const int msb = 32 * (h + base) + top_bit;   /* the leading bit, counted from 2^-1088 */
    const int e = msb + GS_EXACT_LOW_EXPONENT;   /* 2^e <= |V| < 2^(e+1) */
    if (e > f.bias) /* beyond the largest finite value's binade */
        return s | inf;
    /* The quantum of the result: 2^(max(e, emin) - p + 1); its bit position is at least
     * 1088 - 1074 = 14 for every type (and at least 32 h - 52 >= 44 above m[0] when base >
     * 0), so there is a rounding bit below it. */
    const int q = (e > f.emin ? e : f.emin) - f.p + 1;
    const int pos = q - GS_EXACT_LOW_EXPONENT - 32 * base;
    uint64_t mant = gs_exact_bits64(m, h, pos); /* < 2^p */
    const int half = pos - 1;
    const uint32_t hd = (half >> 5) <= h ? m[half >> 5] : 0;
    const int round = hd >> (half & 31) & 1u;
    int sticky = (hd & ((1u << (half & 31)) - 1u)) != 0;
    for (int i = 0; i < (half >> 5) && i <= h && !sticky; i++)
        sticky = m[i] != 0;
    return gs_exact_round_finish(mant, round, sticky, e, f, s);
}

/* The bits of the correctly rounded result of type t (GS_FLOAT16, GS_BFLOAT16, GS_FLOAT32,
 * GS_FLOAT64), in the low bits of the return value, for an accumulator's limbs (any int64
 * values) and counts (docs/semantics.md §12: NaN, then infinities, then the value; a zero
 * value is -0.0 only when count > 0 and sign_clear == 0). */
GS_EXACT_FN uint64_t gs_exact_round_bits(const int64_t *limbs, int64_t count, int64_t nan, int64_t pos_inf,
                                         int64_t neg_inf, int64_t sign_clear, gs_dtype t)
{
    uint64_t bits;
    if (gs_exact_round_special(nan, pos_inf, neg_inf, t, &bits))
        return bits;
    /* Normal form as digits m[0 .. GS_EXACT_LIMBS) and a signed top digit, carried as in
     * gs_exact_normalize but without its limit: the top limb's own high half goes on as a
     * carry into one more digit, so this works for every int64 limb. */
    uint32_t m[GS_EXACT_LIMBS + 1];
    int64_t c = 0;
    for (int i = 0; i < GS_EXACT_LIMBS; i++) {
        const int64_t x = limbs[i];
        const int64_t low = (x & GS_EXACT_DIGIT_MASK) + c;
        m[i] = (uint32_t)(low & GS_EXACT_DIGIT_MASK);
        c = (x >> 32) + (low >> 32); /* |c| <= 2^31 + 1 */
    }
    const int neg = c < 0;
    m[GS_EXACT_LIMBS] = (uint32_t)(c & GS_EXACT_DIGIT_MASK);
    if (neg) { /* the magnitude: two's complement over every digit (|V| < 2^(32*69 - 1)) */
        uint64_t carry = 1;
        for (int i = 0; i <= GS_EXACT_LIMBS; i++) {
            const uint64_t v = (uint64_t)(uint32_t)~m[i] + carry;
            m[i] = (uint32_t)v;
            carry = v >> 32;
        }
    }
    int h = GS_EXACT_LIMBS;
    while (h >= 0 && m[h] == 0)
        h--;
    if (h < 0)
        return gs_exact_round_zero(count, sign_clear, t);
    return gs_exact_round_mag(m, h, 0, neg, t);
}

#endif
