/*
 * float32's fixed point (backends/common/exact_anchor.cuh) on the CPU: the header's own
 * code, compiled by the host's C++ compiler with stand-ins for the CUDA intrinsics it uses
 * (IEEE double additions rounded to nearest, bit moves) and for what it takes from the
 * other exact headers (TwoSum; the spill terms, the long accumulator and the slow path all
 * add to an exact host accumulator, hostref's, so anything the fixed point hands on is
 * counted exactly). One thread's elements go through it as exact_kernel sends them: a
 * head of scalars, trips of four 16-byte vectors (exact_anchor_trip, then each vector),
 * a tail of scalars, then exact_anchor_end; the accumulator then holds the elements' sum
 * minus itself, which must be exactly zero. The data makes every path run: ordinary,
 * over 60 and 100 binades, the whole exponent range, one sign (the window raised as hi
 * grows, lo folded into hi), magnitudes rising and falling over 200 binades (the window
 * moved up and down), tiny ones, zeros, subnormals, the largest floats, infinities.
 * Prints one line per case; exit status 1 if any is not exact.
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
static inline float __uint_as_float(uint32_t u) { return bits_as<float>(u); }
static inline uint32_t __float_as_uint(float f) { return bits_as<uint32_t>(f); }
static inline uint32_t max(uint32_t a, uint32_t b) { return a > b ? a : b; }
struct uint4 {
    uint32_t x, y, z, w;
};

namespace gs {
/* the block's long accumulator: here an exact host sum, and counts */
struct ExactShared {
    hostref_exact *h;
    long nan, inf, spills, flushes;
};
static inline void two_sum(double a, double b, double &s, double &e)
{
    s = __dadd_rn(a, b);
    const double bb = __dsub_rn(s, a);
    e = __dadd_rn(__dsub_rn(a, __dsub_rn(s, bb)), __dsub_rn(b, bb));
}
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

#include "exact_anchor.cuh" /* the copy beside the stand-ins (tests/unit/meson.build) */

using namespace gs;

static uint64_t rng = 20261125;
static double unit() { return (double)(hostref_rand(&rng) >> 11) * 0x1p-53; } /* [0, 1) */
static int below(int m) { return (int)(hostref_rand(&rng) % (uint64_t)m); }

static const char *const kinds[] = {"uniform",    "spread 60",      "spread 100",   "whole range", "one sign",
                                    "one sign, 2^100", "rising",     "falling",      "tiny, rising", "zeros, subnormals",
                                    "largest floats",  "negative",   "infinities"};
static const int kKinds = sizeof kinds / sizeof kinds[0];

/* Element i of n of the kind k. */
static float element(int k, long i, long n)
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
    default: return unit() < 0.001 ? (unit() < 0.5 ? INFINITY : -INFINITY) : (float)u;
    }
}

int main(int argc, char **argv)
{
    const long n0 = argc > 1 ? atol(argv[1]) : 500000;
    int failures = 0, cases = 0;
    for (int k = 0; k < kKinds; k++)
        for (long n = n0; n > 10; n /= 9) {
            hostref_exact diff;
            hostref_exact_init(&diff);
            ExactShared acc = {&diff, 0, 0, 0, 0};
            double spill[2] = {0.0, 0.0}; /* unused: the stand-in exact_spill adds to diff */
            const ExactSpill<double> sp = {spill, 1};
            ExactAnchor s = exact_anchor_init();
            uint32_t sign_and = ~0u;
            bool sign_clear = false;
            long i = 0, infs = 0;
            auto take = [&](long j) {
                const float x = element(k, j, n);
                if (isinf(x))
                    infs++;
                else
                    hostref_exact_add(&diff, -(double)x);
                return x;
            };
            for (; i < 3; i++) /* the head */
                exact_anchor_scalar(take(i), acc, sp, sign_clear);
            while (i + 4 <= n - 3) {
                uint4 raw[4];
                int count = 0;
                for (; count < 4 && i + 4 <= n - 3; count++, i += 4) {
                    float x[4];
                    for (int e = 0; e < 4; e++)
                        x[e] = take(i + e);
                    memcpy(&raw[count], x, 16);
                }
                exact_anchor_trip(s, acc, sp);
                for (int u = 0; u < count; u++)
                    exact_anchor_vec<4>(s, raw, u, count, acc, sp, sign_and, sign_clear);
            }
            for (; i < n; i++) /* the tail */
                exact_anchor_scalar(take(i), acc, sp, sign_clear);
            double e[2];
            exact_anchor_end(s, sign_clear, e);
            hostref_exact_add(&diff, e[0]);
            hostref_exact_add(&diff, e[1]);
            const uint64_t d = hostref_exact_round(&diff, GS_FLOAT64);
            const bool ok = (d << 1) == 0 && acc.inf == infs && acc.nan == 0;
            failures += !ok;
            cases++;
            printf("%-18s n %7ld: %s (window top %u, %ld spill calls, %ld flushes, %ld infinities)\n", kinds[k], n,
                   ok ? "exact" : "NOT EXACT", exact_anchor_top(s), acc.spills, acc.flushes, acc.inf);
        }
    printf("%d of %d cases not exact\n", failures, cases);
    return failures != 0;
}
