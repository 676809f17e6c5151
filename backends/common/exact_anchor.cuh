/*
 * float32's exact sums per thread (exact.cuh's ExactThread<float>): fixed point in two
 * doubles on a grid anchored to the data, four float64 additions per element and no tests
 * of them, whatever the data's exponents as long as a thread's elements stay inside a
 * window of 70 binades. Written once for both backends.
 *
 * hb = C + hi, C = 1.5 * 2^(c + 52). While |hi| < 2^(c + 51), hb lies in [2^(c+52),
 * 2^(c+53)), where the doubles are the multiples of 2^c, so for an element x (|x| far
 * below 2^(c + 51)):
 *     t = fl(hb + x) = hb + q,  q = x rounded to a multiple of 2^c,
 *     q = fl(t - hb) and r = fl(x - q) are exact (|r| <= 2^(c-1), a part of x's bits),
 * and lo += r is exact while every r is a multiple of 2^L and |lo| < 2^(L + 53). So the
 * element is in hi + lo exactly: the extraction of Rump, Ogita and Oishi with a constant
 * anchor, as in reproducible summation's bins (Demmel and Nguyen), nothing dropped.
 *
 * The window: with ftop the highest exponent field allowed (|x| < 2^(ftop - 126) =
 * 2^(c + 45)), c = ftop - 171 and L = c - 48. Then
 * - an element with field f in [ftop - 69, ftop] has ulp(x) = 2^(f - 150) >= 2^L;
 * - a trip of at most 16 elements (kU x 4) moves hi by less than 2^(c + 49) + 2^(c + 3)
 *   and lo by at most 2^(c + 3); so checked at each trip's start (exact_anchor_trip), hi
 *   within 2^(c + 50) (hb's top two significand bits 01 or 10) and |lo| < 2^(c + 4) =
 *   2^(L + 52), neither can leave its range before the next check. A failed check adds lo
 *   into hi, and raises the window by 8 fields if hi is still too large (data of one sign:
 *   once in about 32 times the largest element's worth).
 * The first window is fixed, |x| in [2^-67, 2^3). A vector above it raises it to 3 fields
 * above the trip's largest element; raising keeps hi and lo, re-expressed on the coarser
 * grid, and spills only lo's bits below it (exact_anchor_raise). A vector below it with
 * the rest of its trip moves it down there (hi and lo spilled). An element below it (or
 * subnormal) goes to the spill terms (two TwoSums); a vector with a NaN or an infinity
 * takes the slow path. The windows' moves and checks are tested on the host too (the
 * code compiled with stand-ins for the CUDA intrinsics, against hostref's exact sum).
 *
 * Against the expansion with a plain-addition try it replaces (float32 in one double): 4
 * float64 additions per element instead of 3 additions and 2 compares on ordinary data,
 * and instead of about 16 on data over 60 binades (most vectors then had a residual:
 * TwoSums, then two more per residual in the spill call).
 */
#pragma once

#include "exact_acc.cuh"
#include "exact_ops.cuh"
#include "exact_spill.cuh"

namespace gs {

/* A thread's fixed point: hb (biased hi), lo, the bias C; the window as a range of v = w
 * << 1 (the element's bits without the sign; zero is in any window): v - vlo <= vwid;
 * lo_max, the largest exponent field |lo| may have at a trip's start. */
struct ExactAnchor {
    double hb, lo, C;
    uint32_t vlo, vwid, lo_max;
};

/* The window for top ftop (c = ftop - 171; at most 254 + 64, a float32's fields end at
 * 254: beyond, only the grid moves), hi and lo zero. */
__device__ __forceinline__ void exact_anchor_at(ExactAnchor &s, uint32_t ftop)
{
    const uint32_t fhi = ftop < 254 ? ftop : 254;
    const uint32_t flo = ftop > 70 ? ftop - 69 : 1;
    /* C = 1.5 * 2^(c + 52): exponent field c + 52 + 1023 = ftop + 904 */
    s.C = __hiloint2double((int)(((ftop + 904) << 20) | 0x80000u), 0);
    s.hb = s.C;
    s.lo = 0.0;
    s.vlo = flo << 24;
    s.vwid = flo <= fhi ? ((fhi - flo + 1) << 24) - 1 : 0;
    s.lo_max = ftop + 855; /* |lo| < 2^(c + 4): exponent field at most c + 3 + 1023 */
}

/* The window's top field, from C's exponent field (ftop + 904). */
__device__ __forceinline__ uint32_t exact_anchor_top(const ExactAnchor &s)
{
    return ((uint32_t)__double2hiint(s.C) >> 20) - 904;
}

/* The first window, fixed: |x| in [2^-67, 2^3), ordinary data's (a window from the first
 * trip's largest element put its computation before every addition: float32's sums of up
 * to 2^20 elements took 0.2 .. 0.45 us more per call on an H100). Other data moves it at
 * its first trip (exact_anchor_out). Constants only. */
__device__ __forceinline__ ExactAnchor exact_anchor_init()
{
    ExactAnchor s;
    exact_anchor_at(s, 129);
    return s;
}

/* hi and lo (hi = hb - C exactly) into the spill terms; they start again at zero. */
__device__ __forceinline__ void exact_anchor_spill(ExactAnchor &s, ExactShared &acc, ExactSpill<double> sp)
{
    const double hi = __dsub_rn(s.hb, s.C);
    if (hi != 0.0 || s.lo != 0.0)
        exact_spill<false, double, 2>(acc, sp, ExactResiduals<double, 2>{{hi, s.lo}});
    s.hb = s.C;
    s.lo = 0.0;
}

/* x (in the window) into hb and lo: four additions, all exact. */
__device__ __forceinline__ void exact_anchor_add(ExactAnchor &s, double x)
{
    const double t = __dadd_rn(s.hb, x);
    const double r = __dsub_rn(x, __dsub_rn(t, s.hb));
    s.hb = t;
    s.lo = __dadd_rn(s.lo, r);
}

/* y split at 2^L (B = 1.5 * 2^(L + 52), |y| < 2^(L + 51)): the multiple of 2^L nearest to
 * it, returned, and the rest, in rest. Both exact. */
__device__ __forceinline__ double exact_anchor_split(double y, double B, double &rest)
{
    const double h = __dsub_rn(__dadd_rn(B, y), B);
    rest = __dsub_rn(y, h);
    return h;
}

/* The window raised to top ftop (at least 2 fields above the current top), hi and lo
 * kept: hi onto the coarser grid 2^c' (its remainder and lo split at lo's new grid 2^L',
 * L' = c' - 48), only the bits below 2^L' spilled. Spilling hi and lo whole put a large
 * value among the spill terms, which hold the elements below the window; those then went
 * to the long accumulator, a flush each (data over 100 binades, 2^28 elements: 7.7 times
 * the default's time). */
__device__ __forceinline__ void exact_anchor_raise(ExactAnchor &s, uint32_t ftop, ExactShared &acc,
                                                   ExactSpill<double> sp)
{
    const double hi = __dsub_rn(s.hb, s.C), lo = s.lo;
    exact_anchor_at(s, ftop);
    const double t = __dadd_rn(s.hb, hi); /* hi rounded to 2^c', exact as in exact_anchor_add */
    const double rem = __dsub_rn(hi, __dsub_rn(t, s.hb));
    s.hb = t;
    /* B = 1.5 * 2^(L' + 52): exponent field c' - 48 + 52 + 1023 = ftop + 856 */
    const double B = __hiloint2double((int)(((ftop + 856) << 20) | 0x80000u), 0);
    double rem_lo, lo_lo;
    s.lo = __dadd_rn(exact_anchor_split(rem, B, rem_lo), exact_anchor_split(lo, B, lo_lo));
    if (rem_lo != 0.0 || lo_lo != 0.0)
        exact_spill<false, double, 2>(acc, sp, ExactResiduals<double, 2>{{rem_lo, lo_lo}});
}

/* At a trip's start, when hi or lo could leave its range in the trip: lo added into hi
 * (exact: |lo| < 2^(c + 5), and hi had room for it), then, if hi is still too large, the
 * window raised by 8 fields. */
__device__ __forceinline__ void exact_anchor_trip(ExactAnchor &s, ExactShared &acc, ExactSpill<double> sp)
{
    const uint32_t l = ((uint32_t)__double2hiint(s.lo) >> 20) & 0x7ffu;
    if (l > s.lo_max) {
        const double x = s.lo;
        s.lo = 0.0;
        exact_anchor_add(s, x);
    }
    const uint32_t h = (uint32_t)__double2hiint(s.hb);
    if (!(((h >> 18) + 1) & 2)) {
        const uint32_t top = exact_anchor_top(s);
        if (top + 8 <= 318)
            exact_anchor_raise(s, top + 8, acc, sp);
        else /* no float32 sum of fewer than 2^31 elements gets here */
            exact_anchor_spill(s, acc, sp);
    }
}

/* Whether word w (one float32) is in the window: zero, or its field inside. */
__device__ __forceinline__ bool exact_anchor_in(const ExactAnchor &s, uint32_t w)
{
    const uint32_t v = w << 1;
    return (v - s.vlo <= s.vwid) | (v == 0);
}

/* A vector that is not all in the window (rare): NaNs and infinities to the slow path
 * with the rest of their vector (exact_slow, as the other types' guard does); else the
 * window moved, to 3 fields above the trip's largest element (one vector's was too low
 * for data over 60 binades: 1.7 % of its vectors then fell outside, against 0.2 %, in a
 * simulation), if an element is above it or the whole trip below it; then the elements
 * inside it added, and those below it (or subnormal) spilled. */
template <int kU>
__device__ __forceinline__ void exact_anchor_out(ExactAnchor &s, const uint4 (&raw)[kU], int count,
                                                 const uint32_t (&w)[4], ExactShared &acc, ExactSpill<double> sp,
                                                 bool &sign_clear)
{
    uint32_t vm = 0;
#pragma unroll
    for (int k = 0; k < 4; k++)
        vm = max(vm, w[k] << 1);
    if (vm >= 0xff000000u) { /* a NaN or an infinity */
#pragma unroll
        for (int k = 0; k < 4; k++)
            exact_slow<float>(__uint_as_float(w[k]), acc, sign_clear);
        return;
    }
    const bool above = vm > s.vlo + s.vwid;
    if (above || vm < s.vlo) {
        /* the trip's largest finite element (here, not at the trip's start, where the
         * additions waited for it: 0.2 .. 0.5 us more per call up to 2^20 on an H100) */
        uint32_t vtrip = 0;
#pragma unroll
        for (int u = 0; u < kU; u++) {
            const uint32_t x[4] = {raw[u].x, raw[u].y, raw[u].z, raw[u].w};
#pragma unroll
            for (int k = 0; k < 4; k++)
                if (u < count && (x[k] << 1) < 0xff000000u)
                    vtrip = max(vtrip, x[k] << 1);
        }
        const uint32_t ftop = (max(vm, vtrip) >> 24) + 3;
        if (above) { /* hi and lo kept on the coarser grid */
            exact_anchor_raise(s, ftop, acc, sp);
        } else if (vtrip < s.vlo) { /* the whole trip below */
            exact_anchor_spill(s, acc, sp);
            exact_anchor_at(s, ftop);
        }
    }
    ExactResiduals<double, 4> r;
    bool any = false;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const double x = (double)__uint_as_float(w[k]);
        const bool in = exact_anchor_in(s, w[k]);
        exact_anchor_add(s, in ? x : 0.0);
        r.r[k] = in ? 0.0 : x;
        any |= !in;
    }
    if (any)
        exact_spill<false, double, 4>(acc, sp, r);
}

/* Vector u of a trip (its first count of kU vectors loaded) into s. */
template <int kU>
__device__ __forceinline__ void exact_anchor_vec(ExactAnchor &s, const uint4 (&raw)[kU], int u, int count,
                                                 ExactShared &acc, ExactSpill<double> sp, uint32_t &sign_and,
                                                 bool &sign_clear)
{
    const uint32_t w[4] = {raw[u].x, raw[u].y, raw[u].z, raw[u].w};
    bool in = true;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        in &= exact_anchor_in(s, w[k]);
        sign_and &= w[k];
    }
    if (!in) {
        exact_anchor_out<kU>(s, raw, count, w, acc, sp, sign_clear);
        return;
    }
#pragma unroll
    for (int k = 0; k < 4; k++)
        exact_anchor_add(s, (double)__uint_as_float(w[k]));
}

/* One float32 outside the vectors (the head and the tail, at most 3 each): to the spill
 * terms, or the slow path if it is not finite. */
__device__ __forceinline__ void exact_anchor_scalar(float x, ExactShared &acc, ExactSpill<double> sp, bool &sign_clear)
{
    const uint32_t w = __float_as_uint(x);
    if ((w << 1) >= 0xff000000u) {
        exact_slow<float>(x, acc, sign_clear);
        return;
    }
    sign_clear |= !(w >> 31);
    if (w << 1)
        exact_spill<false, double, 1>(acc, sp, ExactResiduals<double, 1>{{(double)x}});
}

/* The thread's sum as a two-term expansion, e[0] + e[1] (TwoSum: as a float64 thread's
 * expansion, so the block's fast path finds it in one double when it fits one), e[0] is
 * -0.0 for a zero sum of elements that all had their sign bit set (exact_ops.cuh's rule
 * of the zero's sign; sign_clear: some element had it clear). */
__device__ __forceinline__ void exact_anchor_end(const ExactAnchor &s, bool sign_clear, double (&e)[2])
{
    double hi = __dsub_rn(s.hb, s.C); /* exact, +0.0 when zero */
    if (!sign_clear)
        hi = -fabs(hi); /* every element had its sign bit set: the sum is <= 0 */
    if (s.lo == 0.0) { /* -0.0 + 0.0 would be +0.0 */
        e[0] = hi;
        e[1] = 0.0;
    } else {
        two_sum(hi, s.lo, e[0], e[1]);
    }
}

} // namespace gs
