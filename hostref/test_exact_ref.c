/*
 * unit suite: hostref's exact sum (exact_ref.c), the oracle of the exact gpu tests.
 *
 *   test_exact_ref           hand-made cases, each with its answer worked out by hand:
 *                            ties to even and one ulp either side, cancellation
 *                            (1e30 + 1 - 1e30), subnormals, overflow to inf, signed zeros,
 *                            NaN and infinities, in all four float types; merging
 *   test_exact_ref --stdin   cases from exact_cases.py (Python: math.fsum and Fraction
 *                            rounding), one per line: four expected results, n, elements
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exact_ref.h"
#include "hostref.h"

static int failures, checks;

static const char *name_of(gs_dtype t)
{
    return t == GS_FLOAT64 ? "f64" : t == GS_FLOAT32 ? "f32" : t == GS_FLOAT16 ? "f16" : "bf16";
}

static void expect(const char *what, const double *xs, int n, gs_dtype out, uint64_t want)
{
    hostref_exact a;
    hostref_exact_init(&a);
    for (int i = 0; i < n; i++)
        hostref_exact_add(&a, xs[i]);
    const uint64_t got = hostref_exact_round(&a, out);
    checks++;
    if (!hostref_exact_same(out, got, want)) {
        failures++;
        char g[64], w[64];
        hostref_exact_format(out, got, g, sizeof g);
        hostref_exact_format(out, want, w, sizeof w);
        fprintf(stderr, "FAIL %s (%s): got %s, want %s\n", what, name_of(out), g, w);
    }
}

#define EXPECT(what, out, want, ...)                                                   \
    do {                                                                               \
        const double xs_[] = {__VA_ARGS__};                                            \
        expect(what, xs_, (int)(sizeof xs_ / sizeof xs_[0]), out, want);               \
    } while (0)

static void hand_made(void)
{
    const double u = ldexp(1, -52), tiny = ldexp(1, -1074), max = 0x1.fffffffffffffp1023;
    EXPECT("1e30 + 1 - 1e30", GS_FLOAT64, 0x3ff0000000000000ull, 1e30, 1, -1e30);
    EXPECT("1e30 + 1 - 1e30 in f16", GS_FLOAT16, 0x3c00, 1e30, 1, -1e30);
    /* ties to even, and the smallest step either side of the tie */
    EXPECT("1 + u/2: tie, down to even", GS_FLOAT64, 0x3ff0000000000000ull, 1, u / 2);
    EXPECT("1 + u/2 + tiny: above the tie", GS_FLOAT64, 0x3ff0000000000001ull, 1, u / 2, tiny);
    EXPECT("1 + u/2 - tiny: below the tie", GS_FLOAT64, 0x3ff0000000000000ull, 1, u / 2, -tiny);
    EXPECT("1 + u + u/2: tie, up to even", GS_FLOAT64, 0x3ff0000000000002ull, 1, u, u / 2);
    EXPECT("-(1 + u + u/2)", GS_FLOAT64, 0xbff0000000000002ull, -1, -u, -u / 2);
    EXPECT("2^24 + 1 in f32: tie", GS_FLOAT32, 0x4b800000u, 16777216.0, 1);
    EXPECT("2^24 + 1 + 1 in f32", GS_FLOAT32, 0x4b800001u, 16777216.0, 1, 1);
    EXPECT("2^24 + 1 + 2^-60 in f32", GS_FLOAT32, 0x4b800001u, 16777216.0, 1, ldexp(1, -60));
    EXPECT("1 + 2^-11 in f16: tie", GS_FLOAT16, 0x3c00, 1, ldexp(1, -11));
    EXPECT("1 + 2^-11 + 2^-30 in f16", GS_FLOAT16, 0x3c01, 1, ldexp(1, -11), ldexp(1, -30));
    EXPECT("1 + 3 2^-11 in f16: tie up", GS_FLOAT16, 0x3c02, 1, 3 * ldexp(1, -11));
    EXPECT("1 + 2^-8 in bf16: tie", GS_BFLOAT16, 0x3f80, 1, ldexp(1, -8));
    EXPECT("1 + 2^-8 + 2^-40 in bf16", GS_BFLOAT16, 0x3f81, 1, ldexp(1, -8), ldexp(1, -40));
    /* subnormals */
    EXPECT("tiny + tiny", GS_FLOAT64, 2, tiny, tiny);
    EXPECT("3 tiny", GS_FLOAT64, 3, tiny, tiny, tiny);
    EXPECT("2^-150 in f32: tie to 0", GS_FLOAT32, 0, ldexp(1, -150));
    EXPECT("3 2^-150 in f32: tie to 2 2^-149", GS_FLOAT32, 2, 3 * ldexp(1, -150));
    EXPECT("2^-150 + 2^-200 in f32", GS_FLOAT32, 1, ldexp(1, -150), ldexp(1, -200));
    EXPECT("-2^-150 - 2^-200 in f32", GS_FLOAT32, 0x80000001u, -ldexp(1, -150), -ldexp(1, -200));
    EXPECT("2^-25 in f16: tie to 0", GS_FLOAT16, 0, ldexp(1, -25));
    EXPECT("2^-24 + 2^-25 in f16: tie to 2 2^-24", GS_FLOAT16, 2, ldexp(1, -24), ldexp(1, -25));
    EXPECT("least normal f64 from subnormals", GS_FLOAT64, 0x0010000000000000ull, 0x0.8p-1022, 0x0.8p-1022);
    EXPECT("2^-14 - 2^-24 in f16: largest subnormal", GS_FLOAT16, 0x3ff, ldexp(1, -14), -ldexp(1, -24));
    /* overflow */
    EXPECT("max + max", GS_FLOAT64, 0x7ff0000000000000ull, max, max);
    EXPECT("max + half ulp: tie, up to inf", GS_FLOAT64, 0x7ff0000000000000ull, max, ldexp(1, 970));
    EXPECT("max + half ulp - tiny", GS_FLOAT64, 0x7fefffffffffffffull, max, ldexp(1, 970), -tiny);
    EXPECT("-(max + max)", GS_FLOAT64, 0xfff0000000000000ull, -max, -max);
    EXPECT("max + max - max", GS_FLOAT64, 0x7fefffffffffffffull, max, max, -max);
    EXPECT("65504 + 16 in f16: tie, inf", GS_FLOAT16, 0x7c00, 65504, 16);
    EXPECT("65504 + 15.99 in f16", GS_FLOAT16, 0x7bff, 65504, 15.99);
    EXPECT("2^128 in f32", GS_FLOAT32, 0x7f800000u, ldexp(1, 128));
    EXPECT("2^128 - 2^103 in f32: tie to inf", GS_FLOAT32, 0x7f800000u, ldexp(1, 128), -ldexp(1, 103));
    EXPECT("2^128 - 2^103 - 2^-1000 in f32", GS_FLOAT32, 0x7f7fffffu, ldexp(1, 128), -ldexp(1, 103),
           -ldexp(1, -1000));
    /* signed zeros: -0.0 only when every element is -0.0 */
    EXPECT("-0", GS_FLOAT64, 0x8000000000000000ull, -0.0);
    EXPECT("-0 -0 in f16", GS_FLOAT16, 0x8000, -0.0, -0.0);
    EXPECT("+0 -0", GS_FLOAT32, 0, 0.0, -0.0);
    EXPECT("1 - 1", GS_FLOAT64, 0, 1, -1);
    EXPECT("-1 + 1 - 0", GS_FLOAT64, 0, -1, 1, -0.0);
    expect("no elements", NULL, 0, GS_FLOAT64, 0);
    /* NaN and infinities */
    EXPECT("inf + 1", GS_FLOAT64, 0x7ff0000000000000ull, INFINITY, 1);
    EXPECT("-inf + max + max", GS_FLOAT32, 0xff800000u, -INFINITY, max, max);
    EXPECT("inf - inf", GS_FLOAT16, 0x7e00, INFINITY, -INFINITY);
    EXPECT("NaN", GS_BFLOAT16, 0x7fc0, 1, NAN, 2);
    EXPECT("NaN + inf", GS_FLOAT64, 0x7ff8000000000000ull, INFINITY, NAN);

    /* merge: the halves of a cancelling sum */
    hostref_exact a, b;
    hostref_exact_init(&a);
    hostref_exact_init(&b);
    hostref_exact_add(&a, 1e300);
    hostref_exact_add(&a, tiny);
    hostref_exact_add(&b, -1e300);
    hostref_exact_merge(&a, &b);
    checks++;
    if (hostref_exact_round(&a, GS_FLOAT64) != 1) {
        failures++;
        fprintf(stderr, "FAIL merge: 1e300 + tiny | -1e300 is not tiny\n");
    }
}

/* Cases from exact_cases.py. */
static int from_stdin(void)
{
    static const gs_dtype outs[4] = {GS_FLOAT64, GS_FLOAT32, GS_FLOAT16, GS_BFLOAT16};
    uint64_t want[4];
    unsigned long long n;
    int cases = 0;
    while (scanf("%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %llu", &want[0], &want[1], &want[2], &want[3],
                 &n) == 5) {
        double *xs = malloc((n ? n : 1) * sizeof *xs);
        for (unsigned long long i = 0; i < n; i++) {
            uint64_t b;
            if (scanf("%" SCNx64, &b) != 1) {
                fprintf(stderr, "FATAL: case %d is cut short\n", cases);
                return 1;
            }
            memcpy(&xs[i], &b, sizeof b);
        }
        for (int k = 0; k < 4; k++) {
            char what[48];
            snprintf(what, sizeof what, "python case %d (n = %llu)", cases, n);
            expect(what, xs, (int)n, outs[k], want[k]);
        }
        free(xs);
        cases++;
    }
    if (cases < 1000) {
        fprintf(stderr, "FAIL: only %d cases read\n", cases);
        return 1;
    }
    printf("%d python cases\n", cases);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--stdin")) {
        if (from_stdin())
            return 1;
    } else {
        hand_made();
    }
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
