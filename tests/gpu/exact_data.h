/*
 * The exact-sum gpu tests' data (test_gpu_exact.c, test_gpu_segexact.c): a random value of
 * any exponent, and ten kinds of input that reach every path of the exact kernels, from
 * hostref's generator with the program's seed g_rng. one-sign: values of one sign over 60
 * binades, whose sums grow, so that float32's and float64's windows (exact/anchor.cuh) are
 * raised over elements in their lowest binades (with a grid of one block, in every
 * thread).
 */
#ifndef GS_EXACT_DATA_H
#define GS_EXACT_DATA_H

#include <math.h>
#include <stdint.h>

#include "gridsync.h"
#include "hostref.h"

static uint64_t g_rng;

static uint64_t rnd(void)
{
    return hostref_rand(&g_rng);
}

static const gs_dtype kIn[4] = {GS_FLOAT16, GS_BFLOAT16, GS_FLOAT32, GS_FLOAT64};
static const char *kKind[] = {"wide", "cancel", "subnormal", "unit", "big",
                              "tie",  "near-tie", "zeros", "special", "one-sign"};
enum { NKINDS = 10 };

/* A random finite value of t with an exponent anywhere in t's range (bits for the 16- and
 * 32-bit types; a uniform exponent for float64), as a double. */
static double rand_value(gs_dtype t, int lo_exp, int hi_exp)
{
    if (t == GS_FLOAT64) {
        const int e = lo_exp + (int)(rnd() % (uint64_t)(hi_exp - lo_exp + 1));
        const double x = ldexp((double)(rnd() >> 11 | 1ull << 52), e - 52);
        return rnd() & 1 ? -x : x;
    }
    for (;;) {
        unsigned char b[8];
        hostref_store_bits(t, b, 0, rnd());
        const long double v = hostref_load(t, b, 0);
        if (isfinite(v)) {
            const int e = v == 0 ? lo_exp : ilogbl(v);
            if (e >= lo_exp && e <= hi_exp)
                return (double)v;
        }
    }
}

/* Fills data (n elements of t) with one kind of data; out decides where the ties are. */
static void fill(gs_dtype t, gs_dtype out, int kind, void *data, uint64_t n)
{
    const int p = hostref_digits(t), emax = t == GS_FLOAT64 ? 1023 : t == GS_FLOAT16 ? 15 : 127;
    const int emin_sub = (t == GS_FLOAT64 ? -1022 : t == GS_FLOAT16 ? -14 : -126) - p + 1;
    for (uint64_t i = 0; i < n; i++) {
        double x;
        switch (kind) {
        case 0: x = rand_value(t, emin_sub, emax); break;
        case 1: x = i % 2 ? -hostref_load(t, data, i - 1) : rand_value(t, emax / 2, emax - 4); break;
        case 2: x = rand_value(t, emin_sub, emin_sub + p); break;
        case 3: x = hostref_rand_unit(&g_rng); break;
        case 4: x = rand_value(t, emax - 2, emax); break;
        case 7: x = -0.0; break;
        case 9: x = fabs(rand_value(t, emax / 2 - 60 > emin_sub ? emax / 2 - 60 : emin_sub, emax / 2)); break;
        default: /* ties and specials: zero-sum pairs around the few values set below */
            x = i % 2 ? -hostref_load(t, data, i - 1) : rand_value(t, -8, 8);
            break;
        }
        hostref_store(t, data, i, x);
    }
    if (kind == 1 && n % 2 == 0 && n > 0) /* a small survivor of the cancellation */
        hostref_store(t, data, n - 1, rand_value(t, emin_sub, 0));
    if ((kind == 5 || kind == 6) && n >= 3) {
        /* t0 + half an ulp of t0 in out, replacing the last zero pair: t0 has t's digits
         * (so it is exact in both types, its last bit even or odd at random) and half an
         * ulp of out is a power of two t holds too */
        const int po = hostref_digits(out), pt = hostref_digits(t);
        const int e = 1 + (int)(rnd() % 6);
        const uint64_t sig = (rnd() % (1ull << (pt - 1))) | 1ull << (pt - 1);
        const double t0 = ldexp((double)sig, e - pt + 1); /* in [2^e, 2^(e+1)) */
        const uint64_t j = n - 1 - (n % 2);                /* the last pair is (j - 1, j) */
        hostref_store(t, data, j, t0);
        hostref_store(t, data, j - 1, ldexp(1, e - po));
        if (n % 2) /* the lone last element: 0, or (near-tie) the least step of t either way */
            hostref_store(t, data, n - 1, kind == 6 ? (rnd() & 1 ? 1 : -1) * ldexp(1, emin_sub) : 0.0);
    }
    if (kind == 7 && n > 1 && rnd() % 2) /* one +0.0 among the -0.0: +0.0 */
        hostref_store(t, data, rnd() % n, 0.0);
    if (kind == 8 && n > 0) {
        const double sp[] = {INFINITY, -INFINITY, NAN, -0.0};
        const int count = 1 + (int)(rnd() % 3);
        for (int k = 0; k < count; k++)
            hostref_store(t, data, rnd() % n, sp[rnd() % 4]);
    }
}

#endif
