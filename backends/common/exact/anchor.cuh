/*
 * float32's and float64's exact sums per thread (agent/exact.cuh's ExactThread): fixed point in
 * two doubles on a grid anchored to the data, four float64 additions per element and no
 * tests of them, whatever the data's exponents as long as a thread's elements stay inside
 * a window of binades (float32 70, float64 44). Written once for both backends and both
 * types; AnchorFmt holds what differs.
 *
 * hb = C + hi, C = 1.5 * 2^(c + 52). While |hi| < 2^(c + 51), hb lies in [2^(c+52),
 * 2^(c+53)), where the doubles are the multiples of 2^c, so for an element x (|x| far
 * below 2^(c + 51)):
 *     t = fl(hb + x) = hb + q,  q = x rounded to a multiple of 2^c,
 *     q = fl(t - hb) and r = fl(x - q) are exact (|r| <= 2^(c-1), a part of x's bits),
 * and lo += r is exact while every r is a multiple of 2^L and |lo| <= 2^(L + 53). So the
 * element is in hi + lo exactly: the extraction of Rump, Ogita and Oishi with a constant
 * anchor, as in reproducible summation's bins (Demmel and Nguyen), nothing dropped.
 *
 * The window, with ftop the highest exponent field allowed and m elements a trip:
 * - float32 (m = 16, kU x 4): |x| < 2^(ftop - 126) = 2^(c + 45), c = ftop - 171, L = c -
 *   48. An element with field f in [ftop - 69, ftop] has ulp(x) = 2^(f - 150) >= 2^L. A
 *   trip moves hi by less than 2^(c + 49) + 2^(c + 3) and lo by at most 2^(c + 3); so
 *   checked at each trip's start (exact_anchor_trip), hi within 2^(c + 50) (hb's top two
 *   significand bits 01 or 10) and |lo| < 2^(c + 4), neither can leave its range before
 *   the next check.
 * - float64 (m = 8, kU x 2): |x| < 2^(ftop - 1022) = 2^(c + 46), c = ftop - 1068, L = c -
 *   50. An element with field f in [ftop - 43, ftop] has ulp(x) = 2^(f - 1075) >= 2^L. A
 *   trip moves hi by less than 2^(c + 49) + 2^(c + 2) and lo by at most 2^(c + 2); checked
 *   as float32's, with |lo| < 2^(c + 2). ftop is at least 44 (L >= -1074: lo's grid is
 *   the doubles' own below that), and elements of 2^960 or more (field 1983 up) take the
 *   slow path, as everything else in float64's exact sums does (agent/exact.cuh's guard).
 * A failed check adds lo into hi, and raises the window by 8 fields if hi is still too
 * large (data of one sign: once in about 32 times the largest element's worth).
 * The first window is fixed: float32 |x| in [2^-67, 2^3), float64 [2^-40, 2^4). A vector
 * above it raises it to 3 fields above the trip's largest element; raising keeps hi and
 * lo, re-expressed on the coarser grid, and spills only lo's bits below it (float64's into
 * low first: exact_anchor_raise). A vector below it with the rest of its trip moves it
 * down there (hi and lo spilled; float64's only while they are zero). An element below it
 * (or subnormal) goes to the spill terms (two TwoSums; float64's first to its low
 * expansion); a vector with a NaN or an infinity (float64: or a huge element) takes the
 * slow path.
 * The windows' moves and checks are tested on the host too (the code compiled with
 * stand-ins for the CUDA intrinsics, against hostref's exact sum, both types).
 *
 * Against the expansions it replaces: float32 in one double behind a plain-addition try,
 * 3 additions and 2 compares per element on ordinary data, about 16 over 60 binades (most
 * vectors then had a residual: TwoSums, then two more per residual in the spill call);
 * float64 in two doubles, two Fast2Sums per element, 6 additions and the exponent
 * ordering's integer work (about 24 instructions; here about 7).
 */
#pragma once

#include "acc.cuh"
#include "ops.cuh"
#include "spill.cuh"

namespace gs {

/* The window's constants, derived as the header's comment does, from the element format
 * (exponent bias kBias, kMant significand bits after the point), the trip (2^kLog2Trip
 * elements) and lo's bound at a trip's start, |lo| < 2^(c + kLoBits); a double has bias
 * 1023 and 52 such bits. All offsets are from ftop, the window's top field. */
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

/* What differs between the element types: kPer elements per 16-byte vector, kTrip a trip
 * at most (the bounds above); an element's word with the exponent field (hi) as v = hi <<
 * 1, whose field starts at bit kShift; the window's constants (AnchorWindow); the highest
 * field it takes (kFieldTop), the largest top (kTopMax: C stays a normal double) and the
 * first (kTopInit); v at or above kSlow: the slow path; kMark: whether a spill makes the
 * block slow (ExactIn's kSpillFast: float64's spill terms are as wide as the block's
 * fold); kLow: the elements below the window go into a two-term expansion of the thread's
 * (ExactAnchor's low), not straight to the spill terms. */
template <typename T> struct AnchorFmt;
template <> struct AnchorFmt<float> : AnchorWindow<127, 23, 4, 4> {
    static const int kPer = 4, kShift = 24, kTrip = 16;
    /* the first window |x| in [2^-67, 2^3) */
    static const uint32_t kFieldTop = 254, kTopMax = 318, kTopInit = 129;
    static const uint32_t kSlow = 0xff000000u; /* a NaN or an infinity */
    static const bool kMark = false, kLow = false;
    static __device__ __forceinline__ uint32_t hi(const uint32_t (&w)[4], int k) { return w[k]; }
    /* whether element k, whose hi word shifted left by one is v, is zero */
    static __device__ __forceinline__ bool zero(const uint32_t (&)[4], int, uint32_t v) { return v == 0; }
    static __device__ __forceinline__ float elem(const uint32_t (&w)[4], int k) { return __uint_as_float(w[k]); }
};
template <> struct AnchorFmt<double> : AnchorWindow<1023, 52, 3, 2> {
    static const int kPer = 2, kShift = 21, kTrip = 8;
    /* the first window |x| in [2^-40, 2^4) */
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

/* A thread's fixed point: hb (biased hi), lo, the bias C; the window as a range of v (the
 * element's exponent word shifted left by one, without the sign; zero is in any window):
 * v - vlo <= vwid; lo_max, the largest exponent field |lo| may have at a trip's start.
 * float64 (kLow): low, a two-term expansion (TwoSums) of the elements below the window,
 * whose residuals go to the spill terms: data over 60 binades has a third of its elements
 * there, and a spill call per such vector made those sums slow. float32's window is wide
 * enough without it. */
struct ExactAnchor {
    double hb, lo, C;
    uint32_t vlo, vwid, lo_max;
    double low[2];
};

/* The window for top ftop (kTopMin .. kTopMax; beyond kFieldTop only the grid moves), hi
 * and lo zero. */
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

/* The window's top field, from C's exponent field. */
template <typename T> __device__ __forceinline__ uint32_t exact_anchor_top(const ExactAnchor &s)
{
    return (uint32_t)((int)((uint32_t)__double2hiint(s.C) >> 20) - AnchorFmt<T>::kC);
}

/* The first window, fixed, ordinary data's (a window from the first trip's largest element
 * would put its computation before every addition). Other data moves it at its first trip
 * (exact_anchor_out). Constants only. */
template <typename T> __device__ __forceinline__ ExactAnchor exact_anchor_init()
{
    ExactAnchor s;
    exact_anchor_at<T>(s, AnchorFmt<T>::kTopInit);
    s.low[0] = -0.0; /* exact/ops.cuh's zero sign: the sum of no elements */
    s.low[1] = 0.0;
    return s;
}

/* hi and lo (hi = hb - C exactly) into the spill terms; they start again at zero. */
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

/* Residuals r into float64's low expansion (ExactAnchor's low: two TwoSums each, Knuth's, no
 * ordering: exact/ops.cuh), what it cannot hold left in r; whether any is left. */
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

/* The window raised to top ftop (at least 2 fields above the current top), hi and lo
 * kept: hi onto the coarser grid 2^c' (its remainder and lo split at lo's new grid 2^L'),
 * only the bits below 2^L' spilled (float64: into low first). Spilling hi and lo whole put
 * a large value among the spill terms, which hold the elements below the window; those
 * then went to the long accumulator, a flush each (float32 data over 100 binades, 2^28
 * elements: 7.7 times the default's time). A raise by 8 in exact_anchor_trip leaves such
 * bits only from elements more than about 32 binades below the window's top (data of one
 * sign over that many binades, whose sums grow); float64's spill terms make its block
 * slow (kMark), low does not. */
template <typename T>
__device__ __forceinline__ void exact_anchor_raise(ExactAnchor &s, uint32_t ftop, ExactShared &acc,
                                                   ExactSpill<double> sp)
{
    const double hi = __dsub_rn(s.hb, s.C), lo = s.lo;
    exact_anchor_at<T>(s, ftop);
    const double t = __dadd_rn(s.hb, hi); /* hi rounded to 2^c', exact as in exact_anchor_add */
    const double rem = __dsub_rn(hi, __dsub_rn(t, s.hb));
    s.hb = t;
    /* B = 1.5 * 2^(L' + 52), for the top exact_anchor_at took (its C's) */
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

/* At a trip's start, when hi or lo could leave its range in the trip: lo added into hi
 * (exact: |lo| is below 2^(c + 5), and hi had room for it), then, if hi is still too
 * large, the window raised by 8 fields. */
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

/* Whether element k of a vector's words is in the window: zero, or its field inside. */
template <typename T>
__device__ __forceinline__ bool exact_anchor_in(const ExactAnchor &s, const uint32_t (&w)[4], int k)
{
    const uint32_t v = AnchorFmt<T>::hi(w, k) << 1;
    return (v - s.vlo <= s.vwid) | AnchorFmt<T>::zero(w, k, v);
}

/* A vector that is not all in the window (rare): NaNs and infinities (float64: and huge
 * elements) to the slow path with the rest of their vector (exact_slow, as the other
 * types' guard does); else the window moved, to 3 fields above the trip's largest element
 * (one vector's largest was too low for data over 60 binades: many more vectors fell
 * outside), if an element is above it or the whole trip below it; then the elements inside it added, and those below it (or subnormal)
 * spilled (float64: into low first). */
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
        /* the trip's largest element not on the slow path (here, not at the trip's start,
         * where the additions would wait for it) */
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
        if (above) { /* hi and lo kept on the coarser grid */
            exact_anchor_raise<T>(s, ftop, acc, sp);
        } else if (vtrip < s.vlo && (!A::kLow || (s.hb == s.C && s.lo == 0.0))) {
            /* the whole trip below. float64 (kLow) moves only an empty window (data all
             * below the first one): hi and lo spilled, a large value among the spill terms,
             * would turn each later residual of low into a flush; low takes such a trip
             * instead. */
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

/* Vector u of a trip (its first count of kU vectors loaded) into s. */
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

/* One vector on its own (float64's remainder, rolled): a trip of its own. */
template <typename T>
__device__ __forceinline__ void exact_anchor_one(ExactAnchor &s, const uint4 &raw, ExactShared &acc,
                                                 ExactSpill<double> sp, uint32_t &sign_and, bool &sign_clear)
{
    const uint4 one[1] = {raw};
    exact_anchor_trip<T>(s, acc, sp);
    exact_anchor_vec<T, 1>(s, one, 0, 1, acc, sp, sign_and, sign_clear);
}

/* One element outside the vectors (the head and the tail, at most kPer - 1 each). float32:
 * to the spill terms, or the slow path if it is not finite. float64, whose spill terms
 * make the block slow: as a vector of one, x and -0.0, which adds nothing and keeps the
 * zero's sign rule (exact/ops.cuh). */
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

/* The thread's sum as a two-term expansion, e[0] + e[1] (TwoSum: as a float64 thread's
 * expansion, so the block's fast path finds it in one double when it fits one), e[0] is
 * -0.0 for a zero sum of elements that all had their sign bit set (exact/ops.cuh's rule
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
