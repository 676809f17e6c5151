/*
 * The exact scan's numbers (agent/scan_exact.cuh): a fixed point of W 32-bit words, two's
 * complement, V = m * 2^a for one anchor a per launch, and the special-value flags of the
 * elements it sums. Integer additions are exact and associative, so any order of them gives
 * the same V, and a prefix rounded from its V is the correctly rounded prefix sum.
 *
 * The anchor is at or below every element's (and the carry-in's) lowest bit, and W words
 * hold the largest prefix: the scan's plan (exact_scan_plan) picks both, so no operation here
 * loses a bit or overflows. Host and device code alike (tests/unit/test_exact_fixed.cpp runs
 * it on the CPU against hostref's exact sums); rounding follows gs_exact_round_mag
 * (internal/exact_format.h) step for step.
 */
#pragma once

#include <stdint.h>

#include "gridsync.h"
#include "../../../internal/exact_format.h"

#ifndef GS_FX_FN
#  if defined(__CUDACC__)
#    define GS_FX_FN __host__ __device__ __forceinline__
#  else
#    define GS_FX_FN inline
#  endif
#endif

namespace gs {

/* Loops over a value's words unroll up to 16 words; the widest values, a slow path, keep
 * them rolled, which spares their kernels' code size and build time. */
template <int W> struct FxUnroll {
    static constexpr int value = W <= 16 ? W : 1;
};

/* Flags of what a prefix holds beside its finite value. */
enum : uint32_t {
    kFxNan = 1u,       /* a NaN */
    kFxPosInf = 2u,    /* a +inf */
    kFxNegInf = 4u,    /* a -inf */
    kFxSignClear = 8u, /* an element (or carry-in) with its sign bit clear */
    kFxNonempty = 16u  /* at least one element (or a carry-in of count > 0) */
};

template <int W> struct Fx {
    uint32_t w[W]; /* m, little-endian words, two's complement */
    uint32_t flags;
};

/* 128 bits (W = 4, the width ordinary data takes) as one unsigned __int128: the same values,
 * with the compiler's carry chains and funnel shifts in place of word-by-word selects. */
__extension__ typedef unsigned __int128 fx_u128;
GS_FX_FN fx_u128 fx_get128(const Fx<4> &v)
{
    return (fx_u128)((uint64_t)v.w[3] << 32 | v.w[2]) << 64 | ((uint64_t)v.w[1] << 32 | v.w[0]);
}
GS_FX_FN void fx_put128(Fx<4> &v, fx_u128 x)
{
    const uint64_t lo = (uint64_t)x, hi = (uint64_t)(x >> 64);
    v.w[0] = (uint32_t)lo;
    v.w[1] = (uint32_t)(lo >> 32);
    v.w[2] = (uint32_t)hi;
    v.w[3] = (uint32_t)(hi >> 32);
}
GS_FX_FN int fx_clz32(uint32_t x)
{
#if defined(__CUDA_ARCH__)
    return __clz((int)x);
#else
    return x ? __builtin_clz(x) : 32;
#endif
}

GS_FX_FN int fx_clz64(uint64_t x)
{
#if defined(__CUDA_ARCH__)
    return __clzll((long long)x);
#else
    return x ? __builtin_clzll(x) : 64;
#endif
}

template <int W> GS_FX_FN Fx<W> fx_zero()
{
    Fx<W> r;
#pragma unroll(FxUnroll<W>::value)
    for (int i = 0; i < W; i++)
        r.w[i] = 0;
    r.flags = 0;
    return r;
}

/* a + b: the values' sum (modulo 2^(32 W), exact within the plan's bounds), the flags' union. */
template <int W> GS_FX_FN Fx<W> fx_add(const Fx<W> &a, const Fx<W> &b)
{
    Fx<W> r;
    uint32_t c = 0;
#pragma unroll(FxUnroll<W>::value)
    for (int i = 0; i < W; i++) {
        const uint64_t s = (uint64_t)a.w[i] + b.w[i] + c;
        r.w[i] = (uint32_t)s;
        c = (uint32_t)(s >> 32);
    }
    r.flags = a.flags | b.flags;
    return r;
}

/* a - b's value (a's flags): the total of a launch's own elements, its carry-in taken off. */
template <int W> GS_FX_FN Fx<W> fx_sub(const Fx<W> &a, const Fx<W> &b)
{
    Fx<W> r;
    uint32_t c = 1; /* a + ~b + 1 */
#pragma unroll(FxUnroll<W>::value)
    for (int i = 0; i < W; i++) {
        const uint64_t s = (uint64_t)a.w[i] + (uint32_t)~b.w[i] + c;
        r.w[i] = (uint32_t)s;
        c = (uint32_t)(s >> 32);
    }
    r.flags = a.flags;
    return r;
}

/* The float formats' fields: kMant fraction bits, kBias, the exponent field's mask. */
template <typename Bits> struct FxFmt;
#define GS_FX_FMT(Bits, Mant, Bias, ExpBits)                                                   \
    template <> struct FxFmt<Bits> {                                                           \
        static const int kMant = Mant, kBias = Bias, kSignBit = Mant + ExpBits;                \
        static const uint32_t kExpMax = (1u << ExpBits) - 1u;                                  \
    };
GS_FX_FMT(uint16_t, 10, 15, 5) /* float16 */
GS_FX_FMT(uint32_t, 23, 127, 8)
GS_FX_FMT(uint64_t, 52, 1023, 11)
#undef GS_FX_FMT
struct FxBf16 {
    static const int kMant = 7, kBias = 127, kSignBit = 15;
    static const uint32_t kExpMax = 255u;
};

/* An element's exponent field, the lowest of its bit's exponents that the plan's anchor must
 * reach: a field f > 0 has its last bit at 2^(f - bias - mant), a subnormal (f = 0) at f = 1's. */
template <typename F> GS_FX_FN int fx_lsb_of_field(uint32_t f)
{
    return (int)(f ? f : 1u) - F::kBias - F::kMant;
}

/* One element, given as its bits (F its format), at anchor a: its value and flags. A NaN or
 * an infinity adds nothing to the value, only its flag. */
template <int W, typename F, typename Bits> GS_FX_FN Fx<W> fx_lift(Bits bits, int a)
{
    if constexpr (W == 4) { /* with selects, no branch: every element of a tile takes it */
        const uint64_t b = (uint64_t)bits;
        const bool neg = (b >> F::kSignBit) & 1u;
        const uint32_t f = (uint32_t)(b >> F::kMant) & F::kExpMax;
        const uint64_t frac = b & ((1ull << F::kMant) - 1u);
        const bool special = f == F::kExpMax;
        Fx<4> r;
        r.flags = kFxNonempty | (neg ? 0u : kFxSignClear) |
                  (special ? (frac ? kFxNan : neg ? kFxNegInf : kFxPosInf) : 0u);
        const uint64_t M = special ? 0u : f ? frac | 1ull << F::kMant : frac;
        /* >= 0: the plan's anchor is at or below every nonzero element's last bit */
        const int s = special || !M ? 0 : fx_lsb_of_field<F>(f) - a;
        const fx_u128 v = (fx_u128)M << s;
        fx_put128(r, neg ? (fx_u128)0 - v : v);
        return r;
    }
    Fx<W> r = fx_zero<W>();
    const uint64_t b = (uint64_t)bits;
    const bool neg = (b >> F::kSignBit) & 1u;
    const uint32_t f = (uint32_t)(b >> F::kMant) & F::kExpMax;
    const uint64_t frac = b & ((1ull << F::kMant) - 1u);
    r.flags = kFxNonempty | (neg ? 0u : kFxSignClear);
    if (f == F::kExpMax) {
        r.flags |= frac ? kFxNan : neg ? kFxNegInf : kFxPosInf;
        return r;
    }
    const uint64_t M = f ? frac | 1ull << F::kMant : frac;
    if (!M)
        return r;
    const int s = fx_lsb_of_field<F>(f) - a; /* >= 0: the plan's anchor is at or below */
    const int wi = s >> 5, sh = s & 31;
    const uint32_t lo = (uint32_t)M, hi = (uint32_t)(M >> 32);
    const uint32_t d0 = lo << sh, d1 = (hi << sh) | (sh ? lo >> (32 - sh) : 0u), d2 = sh ? hi >> (32 - sh) : 0u;
#pragma unroll(FxUnroll<W>::value)
    for (int i = 0; i < W; i++)
        r.w[i] = i == wi ? d0 : i == wi + 1 ? d1 : i == wi + 2 ? d2 : 0u;
    if (neg) {
        uint32_t c = 1;
#pragma unroll(FxUnroll<W>::value)
        for (int i = 0; i < W; i++) {
            const uint64_t t = (uint64_t)(uint32_t)~r.w[i] + c;
            r.w[i] = (uint32_t)t;
            c = (uint32_t)(t >> 32);
        }
    }
    return r;
}

/* A nonzero magnitude rounded to out: top holds its 64 bits from the leading one down (zeros
 * below its bit 0), sticky_low whether any bit lies below those, 2^e <= |V| < 2^(e+1). */
GS_FX_FN uint64_t fx_round_top(uint64_t top, bool sticky_low, int e, bool neg, gs_dtype out)
{
    const gs_exact_fmt f = gs_exact_fmt_of(out);
    const uint64_t inf = (((uint64_t)1 << (f.sign_bit - f.p + 1)) - 1) << (f.p - 1);
    const uint64_t s = neg ? (uint64_t)1 << f.sign_bit : 0;
    if (e > f.bias)
        return s | inf;
    const int q = (e > f.emin ? e : f.emin) - f.p + 1; /* the result's quantum, 2^q */
    const int qi = q - e + 63;                        /* its bit in top: 64 - p at least */
    uint64_t mant;
    int round;
    bool sticky;
    if (qi > 64) { /* |V| < 2^(q-1): half a quantum */
        mant = 0;
        round = 0;
        sticky = true;
    } else {
        mant = qi == 64 ? 0 : top >> qi;
        round = (int)(top >> (qi - 1) & 1u);
        sticky = sticky_low || (qi >= 2 && (top & ((1ull << (qi - 1)) - 1u)) != 0);
    }
    return gs_exact_round_finish(mant, round, sticky, e, f, s);
}

/* v's value and flags rounded once to out (gs_exact_round_bits' rules: NaN, then the
 * infinities, then the value to nearest-even, +-inf beyond the range, a zero -0.0 only when
 * nonempty with no sign bit clear); the bits in the low bits of the result. */
template <int W> GS_FX_FN uint64_t fx_round(const Fx<W> &v, int a, gs_dtype out)
{
    uint64_t bits;
    if (gs_exact_round_special(v.flags & kFxNan, v.flags & kFxPosInf, v.flags & kFxNegInf, out, &bits))
        return bits;
    const bool neg = v.w[W - 1] >> 31;
    /* the magnitude m; its top word h; the 64 bits from its leading one down, and whether
     * any bit lies below those */
    uint32_t m[W];
    uint32_t c = 1;
#pragma unroll(FxUnroll<W>::value)
    for (int i = 0; i < W; i++) {
        const uint64_t t = neg ? (uint64_t)(uint32_t)~v.w[i] + c : v.w[i];
        m[i] = (uint32_t)t;
        c = neg ? (uint32_t)(t >> 32) : 0u;
    }
    int h = -1;
#pragma unroll(FxUnroll<W>::value)
    for (int i = 0; i < W; i++)
        h = m[i] ? i : h;
    if (h < 0)
        return gs_exact_round_zero((v.flags & kFxNonempty) ? 1 : 0, (v.flags & kFxSignClear) ? 1 : 0, out);
    uint32_t m0 = 0, m1 = 0, m2 = 0;
    bool below = false; /* a word under h - 2 is nonzero */
#pragma unroll(FxUnroll<W>::value)
    for (int i = 0; i < W; i++) {
        m0 = i == h ? m[i] : m0;
        m1 = i == h - 1 ? m[i] : m1;
        m2 = i == h - 2 ? m[i] : m2;
        below = below || (i < h - 2 && m[i] != 0);
    }
    const int lz = fx_clz32(m0);
    /* bits [b - 63, b] of m, b = 32 h + 31 - lz its leading one */
    const uint64_t top = ((uint64_t)m0 << 32 | m1) << lz | (lz ? (uint64_t)m2 >> (32 - lz) : 0u);
    const bool sticky_low = below || (lz && (m2 << lz) != 0) || (!lz && m2 != 0);
    return fx_round_top(top, sticky_low, 32 * h + 31 - lz + a, neg, out);
}

template <> GS_FX_FN Fx<4> fx_add<4>(const Fx<4> &a, const Fx<4> &b)
{
    Fx<4> r;
    fx_put128(r, fx_get128(a) + fx_get128(b));
    r.flags = a.flags | b.flags;
    return r;
}
/*
 * W = 4: the magnitude's 64 bits from its leading one down (those below it folded into a
 * sticky bit), then, for a result in out's normal range, the rounding at the fixed position
 * 64 - p of those bits, branch-free: what fx_round_top does there, without its cases.
 * NaN, infinities, zero and subnormal results take fx_round_top's way.
 */
template <> GS_FX_FN uint64_t fx_round<4>(const Fx<4> &v, int a, gs_dtype out)
{
    const fx_u128 x = fx_get128(v);
    const bool neg = (uint64_t)(x >> 127) != 0;
    const fx_u128 m = neg ? (fx_u128)0 - x : x;
    const uint64_t hi = (uint64_t)(m >> 64), lo = (uint64_t)m;
    const int lzh = fx_clz64(hi), lzl = lo ? fx_clz64(lo) : 0;
    const uint64_t top = hi ? (lzh ? hi << lzh | lo >> (64 - lzh) : hi) : lo << lzl;
    const bool sticky_low = hi && (lo << lzh) != 0;
    const int e = (hi ? 127 - lzh : 63 - lzl) + a; /* 2^e <= |V| < 2^(e+1) */
    const gs_exact_fmt f = gs_exact_fmt_of(out);
    const bool special = (v.flags & (kFxNan | kFxPosInf | kFxNegInf)) != 0;
    if (!special && (hi | lo) && e >= f.emin) {
        const uint64_t inf = (((uint64_t)1 << (f.sign_bit - f.p + 1)) - 1) << (f.p - 1);
        const uint64_t sign = neg ? (uint64_t)1 << f.sign_bit : 0;
        const uint64_t rest = top << f.p; /* the bits under the significand, the rounding bit first */
        const uint64_t bits = gs_exact_round_finish(top >> (64 - f.p), (int)(rest >> 63),
                                                    (rest << 1) != 0 || sticky_low, e, f, sign);
        return e > f.bias ? sign | inf : bits;
    }
    uint64_t bits;
    if (gs_exact_round_special(v.flags & kFxNan, v.flags & kFxPosInf, v.flags & kFxNegInf, out, &bits))
        return bits;
    if (!(hi | lo))
        return gs_exact_round_zero((v.flags & kFxNonempty) ? 1 : 0, (v.flags & kFxSignClear) ? 1 : 0, out);
    return fx_round_top(top, sticky_low, e, neg, out);
}

/* Bits [pos, pos + 32) of the two's complement number d[0 .. nd) (sign-extended above,
 * zero below bit 0); pos may be negative. */
GS_FX_FN uint32_t fx_digits_bits32(const uint32_t *d, int nd, int pos)
{
    const uint32_t ext = (d[nd - 1] >> 31) ? 0xffffffffu : 0u;
    const int wi = pos >= 0 ? pos >> 5 : -((31 - pos) >> 5), sh = pos & 31;
    const uint32_t lo = wi < 0 ? 0u : wi < nd ? d[wi] : ext;
    const uint32_t hi = wi + 1 < 0 ? 0u : wi + 1 < nd ? d[wi + 1] : ext;
    return sh ? (lo >> sh) | (hi << (32 - sh)) : lo;
}

} // namespace gs
