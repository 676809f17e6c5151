/*
 * unit suite: hostref_scan_exact (scan_exact.c), the oracle of gs_scan with GS_SCAN_EXACT.
 *
 *   test_scan_exact            hand-made cases worked out by hand (one rounding where float
 *                              accumulation differs, ties, signed zeros, NaN, infinities,
 *                              overflow and back, carry-ins built limb by limb, wider
 *                              outputs, rejected arguments); random scans against a naive
 *                              reference that re-sums every prefix from scratch; every
 *                              `total` against one built from hostref_exact's own words
 *   test_scan_exact --large N  one float32 scan of N elements, timed
 * Every result is compared bit for bit, and each mismatch is printed.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtype.h"
#include "exact_format.h"
#include "exact_ref.h"
#include "hostref.h"

static int failures, checks;

static const char *name_of(gs_dtype t)
{
    return t == GS_FLOAT64 ? "f64" : t == GS_FLOAT32 ? "f32" : t == GS_FLOAT16 ? "f16" : "bf16";
}

static void fail_bits(const char *what, gs_dtype out, uint64_t i, uint64_t got, uint64_t want)
{
    char g[64], w[64];
    hostref_exact_format(out, got, g, sizeof g);
    hostref_exact_format(out, want, w, sizeof w);
    fprintf(stderr, "FAIL %s (%s) out[%" PRIu64 "]: got %s, want %s\n", what, name_of(out), i, g, w);
    failures++;
}

/* Bits [pos, pos + len) of the 2240-bit two's complement number d (len <= 64; bits below 0
 * are zero, bits above the top are its sign). */
static uint64_t bits_of(const uint64_t *d, int pos, int len)
{
    uint64_t r = 0;
    const uint64_t ext = d[HOSTREF_EXACT_WORDS - 1] >> 63 ? 1 : 0;
    for (int k = 0; k < len; k++) {
        const int b = pos + k;
        const uint64_t bit = b < 0 ? 0 : b >= 64 * HOSTREF_EXACT_WORDS ? ext : d[b / 64] >> (b % 64) & 1;
        r |= bit << k;
    }
    return r;
}

/* The normalised accumulator of a's elements, from hostref_exact's pos - neg: digit j of
 * the limbs is bits [32 j - 14, 32 j + 18) of the difference (its grid starts 14 bits
 * higher, at 2^-1074); limb 67 the rest, signed. */
static void total_from_ref(const hostref_exact *a, uint64_t n, gs_exact_acc *t)
{
    uint64_t d[HOSTREF_EXACT_WORDS], borrow = 0;
    for (int w = 0; w < HOSTREF_EXACT_WORDS; w++) {
        const unsigned __int128 x = (unsigned __int128)a->pos[w] - a->neg[w] - borrow;
        d[w] = (uint64_t)x;
        borrow = (uint64_t)(x >> 64) & 1u;
    }
    memset(t, 0, sizeof *t);
    const int shift = -1074 - GS_EXACT_LOW_EXPONENT;
    for (int j = 0; j < GS_EXACT_LIMBS - 1; j++)
        t->limb[j] = (int64_t)bits_of(d, 32 * j - shift, 32);
    t->limb[GS_EXACT_LIMBS - 1] = (int64_t)bits_of(d, 32 * (GS_EXACT_LIMBS - 1) - shift, 64);
    t->count = (int64_t)n;
    t->nan = a->nan > 0;
    t->pos_inf = a->pos_inf > 0;
    t->neg_inf = a->neg_inf > 0;
    t->sign_clear = a->sign_clear != 0;
}

static void check_total(const char *what, const void *in, uint64_t n, gs_dtype dtype, const gs_exact_acc *got)
{
    hostref_exact a;
    hostref_exact_init(&a);
    hostref_exact_add_array(&a, dtype, in, n);
    gs_exact_acc want;
    total_from_ref(&a, n, &want);
    for (uint64_t i = 0; i < n; i++) /* a NaN's sign bit counts too (gs_reduce_ex's rule) */
        if (!signbit((double)hostref_load(dtype, in, i)))
            want.sign_clear = 1;
    checks++;
    if (memcmp(got, &want, sizeof want)) {
        failures++;
        const int64_t *g = (const int64_t *)got, *w = (const int64_t *)&want;
        for (int i = 0; i < GS_EXACT_ACC_WORDS; i++)
            if (g[i] != w[i])
                fprintf(stderr, "FAIL %s: total word %d is %" PRId64 ", want %" PRId64 "\n", what, i, g[i], w[i]);
    }
    /* and the rounding of it is the oracle's sum, in every type */
    static const gs_dtype outs[4] = {GS_FLOAT64, GS_FLOAT32, GS_FLOAT16, GS_BFLOAT16};
    for (int k = 0; k < 4; k++) {
        const uint64_t r = gs_exact_round_bits(got->limb, got->count, got->nan, got->pos_inf, got->neg_inf,
                                               got->sign_clear, outs[k]);
        checks++;
        if (r != hostref_exact_round(&a, outs[k]))
            fail_bits(what, outs[k], n, r, hostref_exact_round(&a, outs[k]));
    }
}

/* Scans xs (values of dtype) and compares each output with want[] and the total. */
static void expect(const char *what, const double *xs, int n, gs_dtype dtype, gs_dtype out, int excl,
                   const gs_exact_acc *carry, int ncarry, const uint64_t *want)
{
    unsigned char in[64 * 8], res[64 * 8];
    for (int i = 0; i < n; i++)
        hostref_store(dtype, in, (uint64_t)i, xs[i]);
    gs_exact_acc total;
    checks++;
    if (hostref_scan_exact(in, (uint64_t)n, dtype, out, excl, carry, (uint64_t)ncarry, res, &total)) {
        fprintf(stderr, "FAIL %s: returned -1\n", what);
        failures++;
        return;
    }
    for (int i = 0; i < n; i++) {
        const uint64_t got = hostref_load_bits(out, res, (uint64_t)i);
        checks++;
        if (got != want[i])
            fail_bits(what, out, (uint64_t)i, got, want[i]);
    }
    check_total(what, in, (uint64_t)n, dtype, &total);
}

#define XS(...) ((const double[]){__VA_ARGS__})
#define WANT(...) ((const uint64_t[]){__VA_ARGS__})
#define N(...) ((int)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)))
#define EXPECT(what, dtype, out, excl, carry, ncarry, want, ...) \
    expect(what, XS(__VA_ARGS__), N(__VA_ARGS__), dtype, out, excl, carry, ncarry, want)

/* An accumulator whose value is limb[i] 2^(32 i - 1088) for the limbs given as pairs. */
static gs_exact_acc acc_of(int64_t count, int64_t sign_clear, int pairs, const int64_t *iv)
{
    gs_exact_acc a;
    memset(&a, 0, sizeof a);
    for (int k = 0; k < pairs; k++)
        a.limb[iv[2 * k]] += iv[2 * k + 1];
    a.count = count;
    a.sign_clear = sign_clear;
    return a;
}
#define ACC(count, sign_clear, ...) \
    acc_of(count, sign_clear, (int)(sizeof((const int64_t[]){__VA_ARGS__}) / 16), (const int64_t[]){__VA_ARGS__})

static void hand_made(void)
{
    const double p60 = ldexp(1, -60), inf = INFINITY;
    const uint64_t F1 = 0x3f800000u, F24 = 0x4b800000u, FN = 0x7fc00000u, FI = 0x7f800000u, FMI = 0xff800000u;
    const uint64_t D1 = 0x3ff0000000000000ull, DN = 0x7ff8000000000000ull;
    /* one rounding per prefix, where float accumulation loses 2^-60 or rounds twice */
    EXPECT("1 + 2^-60 - 1", GS_FLOAT32, GS_FLOAT32, 0, NULL, 0, WANT(F1, F1, 0x21800000u), 1, p60, -1);
    EXPECT("2^24 + 1 + 1", GS_FLOAT32, GS_FLOAT32, 0, NULL, 0, WANT(F24, F24, F24 + 1), 16777216.0, 1, 1);
    EXPECT("2^24 + 1 + 1 exclusive", GS_FLOAT32, GS_FLOAT32, 1, NULL, 0, WANT(0, F24, F24), 16777216.0, 1, 1);
    EXPECT("2^24 + 1 + 2^-60", GS_FLOAT32, GS_FLOAT32, 0, NULL, 0, WANT(F24, F24, F24 + 1), 16777216.0, 1, p60);
    EXPECT("256 + 1 + 1 in bf16", GS_BFLOAT16, GS_BFLOAT16, 0, NULL, 0, WANT(0x4380, 0x4380, 0x4381), 256, 1, 1);
    EXPECT("2048 + 1 + 1 in f16", GS_FLOAT16, GS_FLOAT16, 0, NULL, 0, WANT(0x6800, 0x6800, 0x6801), 2048, 1, 1);
    /* wider outputs: no tie at all */
    EXPECT("2048 + 1 + 1 f16 -> f32", GS_FLOAT16, GS_FLOAT32, 0, NULL, 0, WANT(0x45000000u, 0x45001000u, 0x45002000u),
           2048, 1, 1);
    EXPECT("256 + 1 bf16 -> f32", GS_BFLOAT16, GS_FLOAT32, 1, NULL, 0, WANT(0, 0x43800000u), 256, 1);
    EXPECT("2^24 + 1 + 2^-28 f32 -> f64", GS_FLOAT32, GS_FLOAT64, 0, NULL, 0,
           WANT(0x4170000000000000ull, 0x4170000010000000ull, 0x4170000010000001ull), 16777216.0, 1, ldexp(1, -28));
    /* signed zeros */
    EXPECT("-0", GS_FLOAT32, GS_FLOAT32, 0, NULL, 0, WANT(0x80000000u), -0.0);
    EXPECT("-0 + 0", GS_FLOAT32, GS_FLOAT32, 0, NULL, 0, WANT(0x80000000u, 0), -0.0, 0.0);
    EXPECT("-0 -0 exclusive", GS_FLOAT64, GS_FLOAT64, 1, NULL, 0, WANT(0, 1ull << 63), -0.0, -0.0);
    EXPECT("-1 + 1 - 0", GS_FLOAT16, GS_FLOAT16, 0, NULL, 0, WANT(0xbc00, 0, 0), -1, 1, -0.0);
    EXPECT("-0 -1 + 1", GS_FLOAT16, GS_FLOAT32, 0, NULL, 0, WANT(0x80000000u, 0xbf800000u, 0), -0.0, -1, 1);
    /* NaN and infinities decide alone, from their prefix on */
    EXPECT("NaN", GS_FLOAT64, GS_FLOAT64, 0, NULL, 0, WANT(D1, DN, DN), 1, NAN, 1);
    EXPECT("NaN exclusive", GS_FLOAT64, GS_FLOAT64, 1, NULL, 0, WANT(0, D1, DN), 1, NAN, 1);
    EXPECT("+inf then -inf", GS_FLOAT32, GS_FLOAT32, 0, NULL, 0, WANT(F1, FI, FI, FN, FN), 1, inf, 1, -inf, 1);
    EXPECT("-inf", GS_FLOAT32, GS_FLOAT32, 0, NULL, 0, WANT(FMI, FMI), -inf, 5);
    EXPECT("NaN in bf16", GS_BFLOAT16, GS_BFLOAT16, 0, NULL, 0, WANT(0x7fc0), NAN);
    /* a finite prefix that overflows and comes back is exact */
    EXPECT("65504 + 65504 - 65504", GS_FLOAT16, GS_FLOAT16, 0, NULL, 0, WANT(0x7bff, 0x7c00, 0x7bff), 65504, 65504,
           -65504);
    EXPECT("65504 + 65504 - 65504 -> f32", GS_FLOAT16, GS_FLOAT32, 0, NULL, 0,
           WANT(0x477fe000u, 0x47ffe000u, 0x477fe000u), 65504, 65504, -65504);
    EXPECT("-65504 - 16 in f16: tie to -inf", GS_FLOAT16, GS_FLOAT16, 0, NULL, 0, WANT(0xfbff, 0xfc00), -65504, -16);

    /* carry-ins: 1.0 is limb[34] = 1 (2^(32 * 34 - 1088)) */
    const gs_exact_acc one = ACC(1, 1, 34, 1);
    EXPECT("carry 1, 2^-60 - 1", GS_FLOAT64, GS_FLOAT64, 0, &one, 1, WANT(D1, 0x3c30000000000000ull), p60, -1);
    EXPECT("carry 1 exclusive", GS_FLOAT32, GS_FLOAT32, 1, &one, 1, WANT(F1, F1, 0x21800000u), p60, -1);
    const gs_exact_acc odd = ACC(1, 1, 34, 2, 33, -(1ll << 32)); /* 1.0, not normalised */
    EXPECT("carry 2 - 2^32 2^-32", GS_FLOAT32, GS_FLOAT32, 0, &odd, 1, WANT(0x40000000u), 1);
    const gs_exact_acc three[3] = {ACC(1, 1, 34, 1), ACC(2, 1, 34, 2), ACC(1, 0, 33, -(1ll << 31))};
    EXPECT("carry 1 + 2 - 0.5", GS_FLOAT64, GS_FLOAT64, 1, three, 3, WANT(0x4004000000000000ull, 0x4006000000000000ull),
           0.25, 0);
    gs_exact_acc nan = one;
    nan.nan = 1;
    EXPECT("carry with a NaN", GS_FLOAT32, GS_FLOAT32, 1, &nan, 1, WANT(FN, FN), 1, 2);
    gs_exact_acc minf = ACC(1, 0), pinf = ACC(1, 1);
    minf.neg_inf = 1;
    pinf.pos_inf = 1;
    EXPECT("carry -inf", GS_FLOAT32, GS_FLOAT32, 1, &minf, 1, WANT(FMI, FMI), 1);
    EXPECT("carry +inf", GS_FLOAT64, GS_FLOAT64, 1, &pinf, 1, WANT(0x7ff0000000000000ull, DN), -INFINITY);
    EXPECT("carry -inf, element +inf", GS_FLOAT32, GS_FLOAT32, 0, &minf, 1, WANT(FMI, FN), 1, inf);
    gs_exact_acc nans[2] = {nan, one};
    nans[1].nan = -1; /* counts add as int64 before "> 0": these cancel */
    EXPECT("carry NaN counts 1 - 1", GS_FLOAT32, GS_FLOAT32, 0, nans, 2, WANT(0x40400000u), 1);
    const gs_exact_acc negzero = ACC(3, 0), empty = ACC(0, 0);
    EXPECT("carry -0 exclusive", GS_FLOAT32, GS_FLOAT32, 1, &negzero, 1, WANT(0x80000000u, 0x80000000u, 0), -0.0, 0.0, 1);
    EXPECT("carry -0 then -0", GS_FLOAT32, GS_FLOAT32, 0, &negzero, 1, WANT(0x80000000u), -0.0);
    EXPECT("empty carry exclusive", GS_FLOAT32, GS_FLOAT32, 1, &empty, 1, WANT(0, 0x80000000u), -0.0, -0.0);
    const gs_exact_acc tiny = ACC(1, 1, 0, 1 << 14);
    EXPECT("carry 2^-1074", GS_FLOAT64, GS_FLOAT64, 1, &tiny, 1, WANT(1), 1);
    const gs_exact_acc cancel[2] = {ACC(1, 1, 0, 1, 34, 1), ACC(1, 1, 0, -1)};
    EXPECT("carry bits below 2^-1074 that cancel", GS_FLOAT64, GS_FLOAT64, 1, cancel, 2, WANT(D1), 1);
    const gs_exact_acc big = ACC(1, 1, 67, 1ll << 40, 66, -1); /* about 2^1096 */
    EXPECT("carry beyond float64", GS_FLOAT64, GS_FLOAT64, 1, &big, 1, WANT(0x7ff0000000000000ull), -1e308);
    const gs_exact_acc d66 = ACC(1, 1, 66, 1); /* 2^1024: a digit beyond double's range */
    EXPECT("carry 2^1024 - 2^1023 - 2^1023", GS_FLOAT64, GS_FLOAT64, 0, &d66, 1, WANT(0x7fe0000000000000ull, 0, 1),
           -0x1p1023, -0x1p1023, 0x1p-1074);
    const gs_exact_acc back[2] = {ACC(1, 1, 67, INT64_MAX), ACC(1, 0, 67, -INT64_MAX, 34, -3)};
    EXPECT("carries of 2^1119 that cancel", GS_FLOAT16, GS_FLOAT16, 0, back, 2, WANT(0xc000), 1);

    /* what it does not take */
    unsigned char buf[16];
    gs_exact_acc t;
    const gs_exact_acc below = ACC(1, 1, 0, 1), below2 = ACC(1, 1, 0, 3 << 13, 34, 5);
    const gs_exact_acc huge[3] = {ACC(1, 1, 67, INT64_MAX), ACC(1, 1, 67, INT64_MAX), ACC(1, 1, 67, 2)};
    struct {
        const char *what;
        gs_dtype in, out;
        const gs_exact_acc *carry;
        uint64_t ncarry;
    } bad[] = {
        {"int32", GS_INT32, GS_INT32, NULL, 0},   {"f64 -> f32", GS_FLOAT64, GS_FLOAT32, NULL, 0},
        {"f16 -> f64", GS_FLOAT16, GS_FLOAT64, NULL, 0}, {"bf16 -> f16", GS_BFLOAT16, GS_FLOAT16, NULL, 0},
        {"f32 -> f16", GS_FLOAT32, GS_FLOAT16, NULL, 0}, {"carry 2^-1088", GS_FLOAT64, GS_FLOAT64, &below, 1},
        {"carry 3 2^-1075 + 5", GS_FLOAT64, GS_FLOAT64, &below2, 1}, {"carry 2^1120", GS_FLOAT64, GS_FLOAT64, huge, 3},
    };
    for (unsigned k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        memset(buf, 0, sizeof buf);
        checks++;
        if (hostref_scan_exact(buf, 1, bad[k].in, bad[k].out, 0, bad[k].carry, bad[k].ncarry, buf, &t) != -1) {
            fprintf(stderr, "FAIL %s: not rejected\n", bad[k].what);
            failures++;
        }
    }
    /* n == 0 writes the empty total and no output */
    memset(&t, 0x5a, sizeof t);
    checks++;
    if (hostref_scan_exact(NULL, 0, GS_FLOAT32, GS_FLOAT32, 1, &one, 1, NULL, &t))
        failures++, fprintf(stderr, "FAIL n = 0: returned -1\n");
    check_total("n = 0", NULL, 0, GS_FLOAT32, &t);
}

/* ---- random scans against a naive reference ------------------------------------------- */

/* An accumulator of the one double x, laid into limbs without normalising them (and one
 * 2^32 moved between two limbs when they leave room), as gs_exact_acc allows. */
static gs_exact_acc acc_of_double(double x, uint64_t *rng)
{
    gs_exact_acc a;
    memset(&a, 0, sizeof a);
    a.count = 1;
    a.sign_clear = !signbit(x);
    if (isnan(x) || isinf(x)) {
        a.nan = isnan(x);
        a.pos_inf = x == INFINITY;
        a.neg_inf = x == -INFINITY;
        return a;
    }
    if (x != 0) {
        int e;
        uint64_t m = (uint64_t)ldexp(frexp(fabs(x), &e), 53);
        int lsb = e - 53;
        if (lsb < -1074) {
            m >>= -1074 - lsb;
            lsb = -1074;
        }
        const int b = lsb - GS_EXACT_LOW_EXPONENT, sign = x < 0 ? -1 : 1;
        a.limb[b / 32] += sign * (int64_t)((m & 0xffffffffu) << (b % 32)); /* < 2^63 */
        a.limb[b / 32 + 1] += sign * (int64_t)((m >> 32) << (b % 32));
    }
    const int j = 1 + (int)(hostref_rand(rng) % (GS_EXACT_LIMBS - 2));
    const int64_t r = (int64_t)(hostref_rand(rng) % (1u << 20)) - (1 << 19);
    if (llabs(a.limb[j]) < (1ll << 61) && llabs(a.limb[j + 1]) < (1ll << 61)) {
        a.limb[j] -= r * (1ll << 32);
        a.limb[j + 1] += r;
    }
    return a;
}

/* A value of t: random sign and significand, the exponent within `spread` of `center`;
 * now and then a zero, or the negation of an earlier element (cancellation). */
static double random_value(gs_dtype t, int center, int spread, const double *earlier, uint64_t i, uint64_t *rng)
{
    const uint64_t r = hostref_rand(rng);
    if (r % 16 == 0)
        return r & 16 ? -0.0 : 0.0;
    if (r % 16 == 1 && i > 0)
        return -earlier[hostref_rand(rng) % i];
    const int emax = t == GS_FLOAT64 ? 1023 : t == GS_FLOAT16 ? 15 : 127, low = 2 - emax - hostref_digits(t);
    int e = center + (int)(hostref_rand(rng) % (uint64_t)(2 * spread + 1)) - spread;
    e = e > emax ? emax : e < low ? low : e; /* finite, and mostly not rounded to zero */
    unsigned char b[8];
    hostref_store(t, b, 0, ldexpl((long double)hostref_rand_unit(rng), e));
    return (double)hostref_load(t, b, 0);
}

static void random_case(gs_dtype t, gs_dtype out, int excl, int with_carry, uint64_t seed)
{
    uint64_t rng = seed;
    const uint64_t n = 1 + hostref_rand(&rng) % 2000;
    const int emax = t == GS_FLOAT64 ? 1023 : t == GS_FLOAT16 ? 15 : 127;
    const int spread = 1 + (int)(hostref_rand(&rng) % (uint64_t)(hostref_rand(&rng) % 4 ? 40 : 2 * emax));
    const int center = (int)(hostref_rand(&rng) % (uint64_t)(2 * emax)) - emax + 1;
    double *xs = malloc(n * sizeof *xs);
    for (uint64_t i = 0; i < n; i++)
        xs[i] = random_value(t, center, spread, xs, i, &rng);
    if (hostref_rand(&rng) % 10 == 0) /* now and then a special value somewhere */
        xs[hostref_rand(&rng) % n] = (const double[]){NAN, INFINITY, -INFINITY}[hostref_rand(&rng) % 3];
    int nc = with_carry ? 1 + (int)(hostref_rand(&rng) % 3) : 0;
    double cx[3];
    gs_exact_acc carry[3];
    for (int k = 0; k < nc; k++) {
        cx[k] = hostref_rand(&rng) % 3 ? ldexp(hostref_rand_unit(&rng), center < 1020 ? center + 2 : 1022) : -xs[hostref_rand(&rng) % n];
        if (hostref_rand(&rng) % 40 == 0)
            cx[k] = hostref_rand(&rng) % 2 ? -0.0 : INFINITY;
        carry[k] = acc_of_double(cx[k], &rng);
    }
    const size_t isz = gs_dtype_size(t), osz = gs_dtype_size(out);
    unsigned char *in = malloc(n * isz), *res = malloc(n * osz);
    for (uint64_t i = 0; i < n; i++)
        hostref_store(t, in, i, xs[i]);
    char what[128];
    snprintf(what, sizeof what, "random %s -> %s %s%s seed %#" PRIx64 " n %" PRIu64, name_of(t), name_of(out),
             excl ? "exclusive" : "inclusive", nc ? " carry" : "", seed, n);
    gs_exact_acc total;
    checks++;
    if (hostref_scan_exact(in, n, t, out, excl, nc ? carry : NULL, (uint64_t)nc, res, &total)) {
        fprintf(stderr, "FAIL %s: returned -1\n", what);
        failures++;
    } else {
        int shown = 0;
        for (uint64_t i = 0; i < n; i++) {
            hostref_exact a; /* the prefix, summed from scratch: carry-in values, then elements */
            hostref_exact_init(&a);
            for (int k = 0; k < nc; k++)
                hostref_exact_add(&a, cx[k]);
            hostref_exact_add_array(&a, t, in, excl ? i : i + 1);
            const uint64_t want = hostref_exact_round(&a, out), got = hostref_load_bits(out, res, i);
            checks++;
            if (got != want && shown++ < 5)
                fail_bits(what, out, i, got, want);
            else if (got != want)
                failures++;
        }
        check_total(what, in, n, t, &total);
    }
    free(xs);
    free(in);
    free(res);
}

static void random_cases(uint64_t seed)
{
    static const gs_dtype ins[4] = {GS_FLOAT16, GS_BFLOAT16, GS_FLOAT32, GS_FLOAT64};
    int k = 0;
    for (int i = 0; i < 4; i++)
        for (int wide = 0; wide < 2; wide++) {
            if (wide && ins[i] == GS_FLOAT64)
                continue;
            const gs_dtype out = !wide ? ins[i] : ins[i] == GS_FLOAT32 ? GS_FLOAT64 : GS_FLOAT32;
            for (int rep = 0; rep < 3; rep++)
                for (int excl = 0; excl < 2; excl++)
                    for (int carry = 0; carry < 2; carry++)
                        random_case(ins[i], out, excl, carry, hostref_mix64(seed + (uint64_t)k++));
        }
}

/* One float32 scan of n elements into float64, timed; its last prefix and total checked. */
static void large(uint64_t n)
{
    uint64_t rng = 0x5ca9ull;
    float *in = malloc(n * sizeof *in);
    double *out = malloc(n * sizeof *out);
    for (uint64_t i = 0; i < n; i++)
        in[i] = (float)ldexp(hostref_rand_unit(&rng), (int)(hostref_rand(&rng) % 60) - 30);
    gs_exact_acc total;
    const clock_t t0 = clock();
    const int rc = hostref_scan_exact(in, n, GS_FLOAT32, GS_FLOAT64, 0, NULL, 0, out, &total);
    const double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("n = %" PRIu64 ": %.2f s (%.0f ns an element)\n", n, s, 1e9 * s / (double)n);
    checks++;
    uint64_t last;
    memcpy(&last, &out[n - 1], 8);
    const uint64_t want = hostref_exact_sum(GS_FLOAT32, in, n, GS_FLOAT64);
    if (rc || last != want)
        fail_bits("large", GS_FLOAT64, n - 1, last, want);
    check_total("large", in, n, GS_FLOAT32, &total);
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "--large")) {
        large(strtoull(argv[2], NULL, 0));
    } else {
        const uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);
        printf("seed %#" PRIx64 " (test_scan_exact SEED replays it)\n", seed);
        hand_made();
        random_cases(seed);
        large(1u << 16);
    }
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
