/*
 * float32's and float64's per-thread exact sums (exact/thread_anchor.cuh): fixed point in two
 * doubles on a grid anchored to the data, four additions per element and no tests while a
 * thread's elements stay in a window of binades (float32 70, float64 44).
 *
 * hb = C + hi, C = 1.5 * 2^(c + 52). While |hi| < 2^(c + 51), hb lies in [2^(c + 52),
 * 2^(c + 53)), whose doubles are the multiples of 2^c, so for x with |x| far below 2^(c + 51):
 *     t = fl(hb + x) = hb + q,  q = x rounded to a multiple of 2^c,
 *     q = fl(t - hb) and r = fl(x - q) are exact (|r| <= 2^(c-1), a part of x's bits),
 * and lo += r is exact while every r is a multiple of 2^L and |lo| <= 2^(L + 53): hi + lo
 * holds x exactly (Rump, Ogita and Oishi's extraction with a constant anchor, as in Demmel
 * and Nguyen's reproducible summation).
 *
 * The window, with ftop its highest exponent field and m elements a trip:
 * - float32 (m = 16): |x| < 2^(ftop - 126) = 2^(c + 45), c = ftop - 171, L = c - 48. Fields
 *   f in [ftop - 69, ftop] have ulp(x) = 2^(f - 150) >= 2^L. A trip moves hi by less than
 *   2^(c + 49) + 2^(c + 3), lo by at most 2^(c + 3); so if each trip starts (exact_anchor_trip)
 *   with hi within 2^(c + 50) (hb's top two significand bits 01 or 10) and |lo| < 2^(c + 4),
 *   neither leaves its range before the next check.
 * - float64 (m = 8): |x| < 2^(ftop - 1022) = 2^(c + 46), c = ftop - 1068, L = c - 50. Fields
 *   f in [ftop - 43, ftop] have ulp(x) = 2^(f - 1075) >= 2^L. A trip moves hi by less than
 *   2^(c + 49) + 2^(c + 2), lo by at most 2^(c + 2); checked likewise, with |lo| < 2^(c + 2).
 *   ftop >= 44 keeps L >= -1074, a double's grid; elements from 2^960 take the slow path.
 * A failed check adds lo into hi, and raises the window 8 fields if hi is still too large.
 * Elements outside the window move it or are spilled (exact_anchor_out). Tested on the host
 * by tests/unit/test_exact_anchor.cpp.
 */
#pragma once

#include "acc.cuh"
#include "ops.cuh"
#include "spill.cuh"

namespace gs {

/* The window's constants, derived as in the header from the format (bias kBias, kMant fraction
 * bits), the trip (2^kLog2Trip elements) and |lo| < 2^(c + kLoBits) at a trip's start; 1023
 * and 52 are the double's. */
template <int kBias, int kMant, int kLog2Trip, int kLoBits> struct AnchorWindow {
    /* |x| < 2^(c + kHead), so a trip moves hi by less than 2^(c + 49) */
    static const int kHead = 49 - kLog2Trip;
    /* c = ftop - kCOff, as |x| < 2^(ftop - (kBias - 1)) */
    static const int kCOff = kBias - 1 + kHead;
    /* C = 1.5 * 2^(c + 52): its field */
    static const int kC = 1023 + 52 - kCOff;
    /* the field of lo's largest value at a trip's start, 2^(c + kLoBits - 1) */
    static const int kLoMax = kLoBits - 1 + 1023 - kCOff;
    /* raise's split constant B = 1.5 * 2^(L + 52), L = c + kLoBits + 1 - 53 lo's grid */
    static const int kB = kLoMax + 1;
    /* the fields whose ulp 2^(f - kBias - kMant) is at least 2^L */
    static const uint32_t kWin = kHead - kLoBits + 52 - kMant;
    /* the lowest top whose L is a double's (L >= -1074), at least 1 */
    static const int kLowest = kCOff - kLoBits - 1 + 53 - 1074;
    static const uint32_t kTopMin = kLowest > 1 ? kLowest : 1;
};

/* Per type: kPer elements a vector, kTrip a trip at most; v = hi(w, k) << 1 has its field at
 * bit kShift; kFieldTop, a window's highest field; kTopMax, kTopInit: the highest and first
 * top; kSlow: the slow path's least v; kMark: a spill makes the block slow. */
template <typename T> struct AnchorFmt;
template <> struct AnchorFmt<float> : AnchorWindow<127, 23, 4, 4> {
    static const int kPer = 4, kShift = 24, kTrip = 16;
    static const uint32_t kFieldTop = 254, kTopMax = 318, kTopInit = 129;
    static const uint32_t kSlow = 0xff000000u; /* a NaN or an infinity */
    static const bool kMark = false, kLow = false;
    static __device__ __forceinline__ uint32_t hi(const uint32_t (&w)[4], int k) { return w[k]; }
    /* whether element k (v its hi word << 1) is zero */
    static __device__ __forceinline__ bool zero(const uint32_t (&)[4], int, uint32_t v) { return v == 0; }
    static __device__ __forceinline__ float elem(const uint32_t (&w)[4], int k) { return __uint_as_float(w[k]); }
};
template <> struct AnchorFmt<double> : AnchorWindow<1023, 52, 3, 2> {
    static const int kPer = 2, kShift = 21, kTrip = 8;
    static const uint32_t kFieldTop = 1982, kTopMax = 2039, kTopInit = 1026;
    static const uint32_t kSlow = 0xf7e00000u; /* field 1983 (|x| >= 2^960) and up */
    static const bool kMark = true, kLow = true;
    static __device__ __forceinline__ uint32_t hi(const uint32_t (&w)[4], int k) { return w[2 * k + 1]; }
    static __device__ __forceinline__ bool zero(const uint32_t (&w)[4], int k, uint32_t v)
    {
        return (v | w[2 * k]) == 0;
    }
    static __device__ __forceinline__ double elem(const uint32_t (&w)[4], int k)
    {
        return __hiloint2double((int)w[2 * k + 1], (int)w[2 * k]);
    }
};
static_assert(AnchorFmt<float>::kTrip == 1 << 4 && AnchorFmt<double>::kTrip == 1 << 3, "the trips of the windows");
static_assert(AnchorFmt<float>::kSlow == (AnchorFmt<float>::kFieldTop + 1) << AnchorFmt<float>::kShift &&
                  AnchorFmt<double>::kSlow == (AnchorFmt<double>::kFieldTop + 1) << AnchorFmt<double>::kShift,
              "the slow path starts one field above the window's highest");
static_assert(AnchorFmt<float>::kTopMax + AnchorFmt<float>::kC <= 2046 &&
                  AnchorFmt<double>::kTopMax + AnchorFmt<double>::kC <= 2046,
              "C stays a normal double");
static_assert(AnchorFmt<float>::kTopInit - 126 == 3 && AnchorFmt<double>::kTopInit - 1022 == 4,
              "the first windows' tops, 2^3 and 2^4");

/* A thread's fixed point: hb = C + hi, lo, C; the window, v - vlo <= vwid (zero is in any);
 * lo_max, |lo|'s highest field at a trip's start; low (kLow), an expansion of the elements
 * below the window, sparing each a spill call. */
struct ExactAnchor {
    double hb, lo, C;
    uint32_t vlo, vwid, lo_max;
    double low[2];
};

/* The window for top ftop (beyond kFieldTop only the grid moves), hi and lo zero. */
template <typename T> __device__ __forceinline__ void exact_anchor_at(ExactAnchor &s, uint32_t ftop)
{
    typedef AnchorFmt<T> A;
    if (A::kTopMin > 1 && ftop < A::kTopMin)
        ftop = A::kTopMin;
    const uint32_t fhi = ftop < A::kFieldTop ? ftop : A::kFieldTop;
    const uint32_t flo = ftop > A::kWin ? ftop - (A::kWin - 1) : 1;
    /* C = 1.5 * 2^(c + 52) */
    s.C = __hiloint2double((int)(((uint32_t)((int)ftop + A::kC) << 20) | 0x80000u), 0);
    s.hb = s.C;
    s.lo = 0.0;
    /* an empty window (float64's, above kFieldTop + 43): no v is odd */
    const bool empty = A::kTopMax - (A::kWin - 1) > A::kFieldTop && flo > fhi;
    s.vlo = empty ? ~0u : flo << A::kShift;
    s.vwid = empty ? 0 : ((fhi - flo + 1) << A::kShift) - 1;
    s.lo_max = (uint32_t)((int)ftop + A::kLoMax);
}

/* The window's top field, from C's. */
template <typename T> __device__ __forceinline__ uint32_t exact_anchor_top(const ExactAnchor &s)
{
    return (uint32_t)((int)((uint32_t)__double2hiint(s.C) >> 20) - AnchorFmt<T>::kC);
}

/* The first window, fixed where ordinary data lies so no addition waits for a maximum:
 * float32 |x| in [2^-67, 2^3), float64 [2^-40, 2^4). */
template <typename T> __device__ __forceinline__ ExactAnchor exact_anchor_init()
{
    ExactAnchor s;
    exact_anchor_at<T>(s, AnchorFmt<T>::kTopInit);
    s.low[0] = -0.0; /* an empty sum's zero sign (exact/ops.cuh) */
    s.low[1] = 0.0;
    return s;
}

/* hi and lo (hi = hb - C exactly) into the spill terms, then zero. */
template <typename T>
__device__ __forceinline__ void exact_anchor_spill(ExactAnchor &s, ExactShared &acc, ExactSpill<double> sp)
{
    const double hi = __dsub_rn(s.hb, s.C);
    if (hi != 0.0 || s.lo != 0.0)
        exact_spill<AnchorFmt<T>::kMark, double, 2>(acc, sp, ExactResiduals<double, 2>{{hi, s.lo}});
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

/* Residuals r into low by Knuth's TwoSum, the rest left in r; returns whether any is left. */
template <int kN> __device__ __forceinline__ bool exact_anchor_low(ExactAnchor &s, ExactResiduals<double, kN> &r)
{
    bool any = false;
#pragma unroll
    for (int k = 0; k < kN; k++) {
        double y = r.r[k];
        two_sum_knuth(s.low[0], y, s.low[0], y);
        two_sum_knuth(s.low[1], y, s.low[1], y);
        r.r[k] = y;
        any |= y != 0.0;
    }
    return any;
}

/* The window raised to top ftop (2 fields up or more): hi onto the coarser grid 2^c', its
 * remainder and lo split at lo's new grid 2^L', the bits below 2^L' spilled (float64: to
 * low first). Spilled whole, hi and lo would make each later residual a flush. */
template <typename T>
__device__ __forceinline__ void exact_anchor_raise(ExactAnchor &s, uint32_t ftop, ExactShared &acc,
                                                   ExactSpill<double> sp)
{
    const double hi = __dsub_rn(s.hb, s.C), lo = s.lo;
    exact_anchor_at<T>(s, ftop);
    const double t = __dadd_rn(s.hb, hi); /* hi rounded to 2^c', exact as in exact_anchor_add */
    const double rem = __dsub_rn(hi, __dsub_rn(t, s.hb));
    s.hb = t;
    /* B = 1.5 * 2^(L' + 52), from the top in the new C */
    const int top = (int)exact_anchor_top<T>(s);
    const double B = __hiloint2double((int)(((uint32_t)(top + AnchorFmt<T>::kB) << 20) | 0x80000u), 0);
    ExactResiduals<double, 2> r;
    s.lo = __dadd_rn(exact_anchor_split(rem, B, r.r[0]), exact_anchor_split(lo, B, r.r[1]));
    if (r.r[0] == 0.0 && r.r[1] == 0.0)
        return;
    if constexpr (AnchorFmt<T>::kLow)
        if (!exact_anchor_low(s, r))
            return;
    exact_spill<AnchorFmt<T>::kMark, double, 2>(acc, sp, r);
}

/* At a trip's start, if hi or lo could leave its range: lo added into hi (exact: |lo| <
 * 2^(c + 5), and hi had room), then the window raised 8 fields if hi is still too large. */
template <typename T>
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
        const uint32_t top = exact_anchor_top<T>(s);
        if (top + 8 <= AnchorFmt<T>::kTopMax)
            exact_anchor_raise<T>(s, top + 8, acc, sp);
        else /* no sum of fewer than 2^31 elements gets here */
            exact_anchor_spill<T>(s, acc, sp);
    }
}

/* Whether element k is in the window: zero, or its field inside. */
template <typename T>
__device__ __forceinline__ bool exact_anchor_in(const ExactAnchor &s, const uint32_t (&w)[4], int k)
{
    const uint32_t v = AnchorFmt<T>::hi(w, k) << 1;
    return (v - s.vlo <= s.vwid) | AnchorFmt<T>::zero(w, k, v);
}

/* A vector not all in the window: all to the slow path if some v >= kSlow; else the
 * window moved to 3 fields above the trip's largest if an element is above it or the trip
 * below it, the elements inside added, the rest spilled. */
template <typename T, int kU>
__device__ __forceinline__ void exact_anchor_out(ExactAnchor &s, const uint4 (&raw)[kU], int count,
                                                 const uint32_t (&w)[4], ExactShared &acc, ExactSpill<double> sp,
                                                 bool &sign_clear)
{
    typedef AnchorFmt<T> A;
    const int kPer = A::kPer;
    uint32_t vm = 0;
#pragma unroll
    for (int k = 0; k < kPer; k++)
        vm = max(vm, A::hi(w, k) << 1);
    if (vm >= A::kSlow) {
#pragma unroll
        for (int k = 0; k < kPer; k++)
            exact_slow<T>(A::elem(w, k), acc, sign_clear);
        return;
    }
    const bool above = vm > s.vlo + s.vwid;
    if (above || vm < s.vlo) {
        /* the trip's largest below kSlow, found here so no addition waits for it */
        uint32_t vtrip = 0;
#pragma unroll
        for (int u = 0; u < kU; u++) {
            const uint32_t x[4] = {raw[u].x, raw[u].y, raw[u].z, raw[u].w};
#pragma unroll
            for (int k = 0; k < kPer; k++)
                if (u < count && (A::hi(x, k) << 1) < A::kSlow)
                    vtrip = max(vtrip, A::hi(x, k) << 1);
        }
        const uint32_t ftop = (max(vm, vtrip) >> A::kShift) + 3;
        if (above) {
            exact_anchor_raise<T>(s, ftop, acc, sp);
        } else if (vtrip < s.vlo && (!A::kLow || (s.hb == s.C && s.lo == 0.0))) {
            /* the whole trip below; float64 moves only an empty window (else low takes it) */
            exact_anchor_spill<T>(s, acc, sp);
            exact_anchor_at<T>(s, ftop);
        }
    }
    ExactResiduals<double, kPer> r;
    bool any = false;
#pragma unroll
    for (int k = 0; k < kPer; k++) {
        const double x = (double)A::elem(w, k);
        const bool in = exact_anchor_in<T>(s, w, k);
        exact_anchor_add(s, in ? x : 0.0);
        r.r[k] = in ? 0.0 : x;
        any |= !in;
    }
    if (!any)
        return;
    if constexpr (A::kLow) /* into low first */
        if (!exact_anchor_low(s, r))
            return;
    exact_spill<AnchorFmt<T>::kMark, double, kPer>(acc, sp, r);
}

/* Vector u of a trip (count of kU loaded) into s. */
template <typename T, int kU>
__device__ __forceinline__ void exact_anchor_vec(ExactAnchor &s, const uint4 (&raw)[kU], int u, int count,
                                                 ExactShared &acc, ExactSpill<double> sp, uint32_t &sign_and,
                                                 bool &sign_clear)
{
    typedef AnchorFmt<T> A;
    const uint32_t w[4] = {raw[u].x, raw[u].y, raw[u].z, raw[u].w};
    bool in = true;
#pragma unroll
    for (int k = 0; k < A::kPer; k++) {
        in &= exact_anchor_in<T>(s, w, k);
        sign_and &= A::hi(w, k);
    }
    if (!in) {
        exact_anchor_out<T, kU>(s, raw, count, w, acc, sp, sign_clear);
        return;
    }
#pragma unroll
    for (int k = 0; k < A::kPer; k++)
        exact_anchor_add(s, (double)A::elem(w, k));
}

/* One vector as a trip of its own (float64's rolled remainder). */
template <typename T>
__device__ __forceinline__ void exact_anchor_one(ExactAnchor &s, const uint4 &raw, ExactShared &acc,
                                                 ExactSpill<double> sp, uint32_t &sign_and, bool &sign_clear)
{
    const uint4 one[1] = {raw};
    exact_anchor_trip<T>(s, acc, sp);
    exact_anchor_vec<T, 1>(s, one, 0, 1, acc, sp, sign_and, sign_clear);
}

/* A head or tail element: float32's spilled (slow path if not finite); float64's, whose
 * spills make the block slow, as the vector {x, -0.0}. */
__device__ __forceinline__ void exact_anchor_scalar(ExactAnchor &, float x, ExactShared &acc, ExactSpill<double> sp,
                                                    bool &sign_clear)
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
__device__ __forceinline__ void exact_anchor_scalar(ExactAnchor &s, double x, ExactShared &acc, ExactSpill<double> sp,
                                                    bool &sign_clear)
{
    const unsigned long long b = (unsigned long long)__double_as_longlong(x);
    uint32_t sign_and = ~0u;
    exact_anchor_one<double>(s, make_uint4((uint32_t)b, (uint32_t)(b >> 32), 0u, 0x80000000u), acc, sp, sign_and,
                             sign_clear);
    sign_clear |= !(sign_and >> 31);
}

/* The thread's sum as e[0] + e[1] (TwoSum: a sum that fits a double is e[0]); a zero is -0.0
 * when no element had its sign bit clear (exact/ops.cuh). */
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
