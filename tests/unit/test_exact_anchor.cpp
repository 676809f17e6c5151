/*
 * float32's and float64's fixed point (backends/common/exact/anchor.cuh) on the CPU: the
 * header's own code, compiled by the host's C++ compiler with stand-ins for the CUDA
 * intrinsics it uses (IEEE double additions rounded to nearest, bit moves) and for what it
 * takes from the other exact headers (TwoSum; the spill terms, the long accumulator and
 * the slow path all add to an exact host accumulator, hostref's, so anything the fixed
 * point hands on is counted exactly; float64's low expansion is added in at the end). One
 * thread's elements go through it as exact_kernel sends them: a head of scalars, trips of
 * four 16-byte vectors (exact_anchor_trip, then each vector), float64's last vectors one
 * by one (exact_anchor_one), a tail of scalars, then exact_anchor_end; the accumulator
 * then holds the elements' sum minus itself, which must be exactly zero. The data makes every path run: ordinary, over 60 and 100 binades, the
 * whole exponent range, one sign (the window raised as hi grows, lo folded into hi; for
 * float64 also near 2^955, the raises' upper end; over 60 binades, raises that leave lo's bits
 * below the new grid, float64's into low), magnitudes rising and falling (the
 * window moved up and down), tiny ones (float64: the lowest window), zeros, subnormals,
 * the largest values, infinities. Prints one line per case; exit status 1 if any is not
 * exact.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "exact_ref.h"
#include "hostref.h"
}

#define __device__
#define __forceinline__ inline
#define __noinline__
/* volatile: each operation rounded to double on its own, never contracted */
static inline double __dadd_rn(double a, double b) { volatile double r = a + b; return r; }
static inline double __dsub_rn(double a, double b) { volatile double r = a - b; return r; }
template <typename To, typename From> static inline To bits_as(From f)
{
    static_assert(sizeof(To) == sizeof(From), "same size");
    To t;
    memcpy(&t, &f, sizeof t);
    return t;
}
static inline double __hiloint2double(int hi, int lo)
{
    return bits_as<double>(((uint64_t)(uint32_t)hi << 32) | (uint32_t)lo);
}
static inline int __double2hiint(double d) { return (int)(uint32_t)(bits_as<uint64_t>(d) >> 32); }
static inline long long __double_as_longlong(double d) { return bits_as<long long>(d); }
static inline float __uint_as_float(uint32_t u) { return bits_as<float>(u); }
static inline uint32_t __float_as_uint(float f) { return bits_as<uint32_t>(f); }
static inline uint32_t max(uint32_t a, uint32_t b) { return a > b ? a : b; }
struct uint4 {
    uint32_t x, y, z, w;
};
static inline uint4 make_uint4(uint32_t x, uint32_t y, uint32_t z, uint32_t w) { return uint4{x, y, z, w}; }

namespace gs {
/* the block's long accumulator: here an exact host sum, and counts */
struct ExactShared {
    hostref_exact *h;
    long nan, inf, spills, flushes;
};
static inline void two_sum_knuth(double a, double b, double &s, double &e)
{
    s = __dadd_rn(a, b);
    const double bb = __dsub_rn(s, a);
    e = __dadd_rn(__dsub_rn(a, __dsub_rn(s, bb)), __dsub_rn(b, bb));
}
static inline void two_sum(double a, double b, double &s, double &e) { two_sum_knuth(a, b, s, e); }
template <typename F> struct ExactSpill {
    F *s;
    int stride;
};
template <typename F, int kPer> struct ExactResiduals {
    F r[kPer];
};
template <bool kMark, typename F, int kPer> void exact_spill(ExactShared &acc, ExactSpill<F>, ExactResiduals<F, kPer> r)
{
    acc.spills++;
    for (int j = 0; j < kPer; j++)
        hostref_exact_add(acc.h, r.r[j]);
}
static inline void exact_flush(ExactShared &acc, double v)
{
    acc.flushes++;
    hostref_exact_add(acc.h, v);
}
template <typename T> void exact_slow(T x, ExactShared &acc, bool &sign_clear)
{
    const double v = x;
    sign_clear |= !signbit(v);
    if (v != v)
        acc.nan++;
    else if (v - v != 0.0)
        acc.inf++;
    else
        exact_flush(acc, v);
}
} // namespace gs

#include "anchor.cuh" /* the copy beside the stand-ins (tests/unit/meson.build) */

using namespace gs;

static uint64_t rng = 20261125;
static double unit() { return (double)(hostref_rand(&rng) >> 11) * 0x1p-53; } /* [0, 1) */
static int below(int m) { return (int)(hostref_rand(&rng) % (uint64_t)m); }

static const char *const kinds[] = {"uniform",         "spread 60", "spread 100", "whole range",  "one sign",
                                    "one sign, 2^100", "rising",    "falling",    "tiny, rising", "zeros, subnormals",
                                    "largest values",  "negative",  "infinities", "one sign, high",
                                    "one sign, 60 binades"};
static const int kKinds = sizeof kinds / sizeof kinds[0];

/* Element i of n of the kind k, as a T: float32's ranges, float64's wider where the kind
 * is about the exponent range's ends; float64's with its own significands. */
template <typename T> static T element(int k, long i, long n);
template <> float element<float>(int k, long i, long n)
{
    const double u = 2 * unit() - 1;
    switch (k) {
    case 0: return (float)u;
    case 1: return (float)ldexp(u, -below(61));
    case 2: return (float)ldexp(u, -below(101));
    case 3: {
        uint32_t b;
        do
            b = (uint32_t)hostref_rand(&rng);
        while (((b >> 23) & 255) == 255);
        return __uint_as_float(b);
    }
    case 4: return (float)unit();
    case 5: return (float)ldexp(unit(), 100);
    case 6: return (float)ldexp(u, (int)(i * 200 / n) - 100);
    case 7: return (float)ldexp(u, 100 - (int)(i * 200 / n));
    case 8: return (float)ldexp(unit(), (int)(i * 60 / n) - 130 + below(3));
    case 9: {
        const double r = unit();
        return r < 0.1 ? 0.0f
               : r < 0.15 ? -0.0f
               : r < 0.2  ? __uint_as_float((uint32_t)hostref_rand(&rng) & 0x807fffffu)
                          : (float)ldexp(u, below(40) - 20);
    }
    case 10: return (float)ldexp(1.0 + unit(), 127 - below(4));
    case 11: return (float)-ldexp(unit(), -below(80));
    case 12: return unit() < 0.001 ? (unit() < 0.5 ? INFINITY : -INFINITY) : (float)u;
    case 13: return (float)ldexp(unit(), 120);
    default: return (float)ldexp(unit(), 20 - below(61));
    }
}
template <> double element<double>(int k, long i, long n)
{
    const double u = 2 * unit() - 1; /* [-1, 1), 53-bit significands near 1 */
    switch (k) {
    case 0: return u;
    case 1: return ldexp(u, -below(61));
    case 2: return ldexp(u, -below(101));
    case 3: {
        uint64_t b;
        do
            b = hostref_rand(&rng);
        while (((b >> 52) & 2047) == 2047);
        return bits_as<double>(b);
    }
    case 4: return unit();
    case 5: return ldexp(unit(), 100);
    case 6: return ldexp(u, (int)(i * 2000 / n) - 1000);
    case 7: return ldexp(u, 1000 - (int)(i * 2000 / n));
    case 8: return ldexp(unit(), (int)(i * 60 / n) - 1070 + below(3));
    case 9: {
        const double r = unit();
        return r < 0.1 ? 0.0
               : r < 0.15 ? -0.0
               : r < 0.2  ? bits_as<double>(hostref_rand(&rng) & 0x800fffffffffffffull)
                          : ldexp(u, below(40) - 20);
    }
    case 10: return ldexp(1.0 + unit(), 1023 - below(4));
    case 11: return -ldexp(unit(), -below(80));
    case 12: return unit() < 0.001 ? (unit() < 0.5 ? INFINITY : -INFINITY) : u;
    case 13: return ldexp(unit(), 955 + below(5)); /* at and beyond the window's top */
    /* sums that grow, raising the window by 8 over elements in its lowest binades, whose
     * bits below the new grid go to low (float64) */
    default: return ldexp(unit(), 20 - below(61));
    }
}

/* One thread's run over n elements of kind k: whether it was exact. */
template <typename T> static bool run(int k, long n)
{
    const int kPer = 16 / sizeof(T);
    hostref_exact diff;
    hostref_exact_init(&diff);
    ExactShared acc = {&diff, 0, 0, 0, 0};
    double spill[2] = {0.0, 0.0}; /* unused: the stand-in exact_spill adds to diff */
    const ExactSpill<double> sp = {spill, 1};
    ExactAnchor s = exact_anchor_init<T>();
    uint32_t sign_and = ~0u;
    bool sign_clear = false;
    long i = 0, infs = 0;
    auto take = [&](long j) {
        const T x = element<T>(k, j, n);
        if (isinf(x))
            infs++;
        else
            hostref_exact_add(&diff, -(double)x);
        return x;
    };
    const long head = kPer - 1, tail = kPer - 1;
    for (; i < head; i++)
        exact_anchor_scalar(s, take(i), acc, sp, sign_clear);
    while (i + kPer <= n - tail) {
        uint4 raw[4];
        int count = 0;
        for (; count < 4 && i + kPer <= n - tail; count++, i += kPer) {
            T x[kPer];
            for (int e = 0; e < kPer; e++)
                x[e] = take(i + e);
            memcpy(&raw[count], x, 16);
        }
        if (sizeof(T) == 8 && count < 4) { /* float64's remainder: one by one */
            for (int u = 0; u < count; u++)
                exact_anchor_one<T>(s, raw[u], acc, sp, sign_and, sign_clear);
            continue;
        }
        exact_anchor_trip<T>(s, acc, sp);
        for (int u = 0; u < count; u++)
            exact_anchor_vec<T, 4>(s, raw, u, count, acc, sp, sign_and, sign_clear);
    }
    for (; i < n; i++)
        exact_anchor_scalar(s, take(i), acc, sp, sign_clear);
    sign_clear |= !(sign_and >> 31); /* exact_kernel's step: the vectors' sign bits */
    double e[2];
    exact_anchor_end(s, sign_clear, e);
    hostref_exact_add(&diff, e[0]);
    hostref_exact_add(&diff, e[1]);
    hostref_exact_add(&diff, s.low[0]); /* float64's elements below the window */
    hostref_exact_add(&diff, s.low[1]);
    const uint64_t d = hostref_exact_round(&diff, GS_FLOAT64);
    const bool ok = (d << 1) == 0 && acc.inf == infs && acc.nan == 0;
    printf("%-7s %-18s n %7ld: %s (window top %u, %ld spill calls, %ld flushes, %ld infinities)\n",
           sizeof(T) == 4 ? "float32" : "float64", kinds[k], n, ok ? "exact" : "NOT EXACT", exact_anchor_top<T>(s),
           acc.spills, acc.flushes, acc.inf);
    return ok;
}

int main(int argc, char **argv)
{
    const long n0 = argc > 1 ? atol(argv[1]) : 500000;
    int failures = 0, cases = 0;
    for (int k = 0; k < kKinds; k++)
        for (long n = n0; n > 10; n /= 9) {
            failures += !run<float>(k, n);
            failures += !run<double>(k, n);
            cases += 2;
        }
    printf("%d of %d cases not exact\n", failures, cases);
    return failures != 0;
}
