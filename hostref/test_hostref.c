/*
 * unit suite: the host reference itself, on cases whose answers are known by hand, so a
 * wrong reference cannot pass GPU results it should fail (or fail right ones).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtype.h"
#include "hostref.h"

static int g_fail, g_checks;

#define EXPECT(cond, ...)                                                     \
    do {                                                                      \
        g_checks++;                                                           \
        if (!(cond)) {                                                        \
            g_fail++;                                                         \
            fprintf(stderr, "%s:%d: FAIL: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
        }                                                                     \
    } while (0)

/* How many non-NaN 16-bit values (half or bfloat16) do not survive widening to float and
 * rounding back bit for bit. */
static int round_trip_failures(float (*to_float)(uint16_t), uint16_t (*from_float)(float))
{
    int bad = 0;
    for (uint32_t v = 0; v < 65536; v++) {
        float f = to_float((uint16_t)v);
        if (f == f && from_float(f) != v)
            bad++;
    }
    return bad;
}

static void test_half(void)
{
    static const struct { float f; uint16_t h; } exact[] = {
        {1.0f, 0x3c00}, {-2.0f, 0xc000}, {65504.0f, 0x7bff}, {0x1p-14f, 0x0400},
        {0x1p-24f, 0x0001}, {1023 * 0x1p-24f, 0x03ff}, {0.0f, 0x0000}, {-0.0f, 0x8000},
        {INFINITY, 0x7c00}, {-INFINITY, 0xfc00}, {0.333251953125f, 0x3555},
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        EXPECT(hostref_float_to_half(exact[i].f) == exact[i].h, "%a -> 0x%04x", exact[i].f,
               hostref_float_to_half(exact[i].f));
        float back = hostref_half_to_float(exact[i].h);
        EXPECT(back == exact[i].f && signbit(back) == signbit(exact[i].f), "0x%04x -> %a", exact[i].h, back);
    }
    /* round to nearest, ties to even, in normal and subnormal range and into infinity */
    EXPECT(hostref_float_to_half(1.0f + 0x1p-11f) == 0x3c00, "1 + half an ulp rounds to even (down)");
    EXPECT(hostref_float_to_half(1.0f + 3 * 0x1p-11f) == 0x3c02, "1 + 1.5 ulp rounds to even (up)");
    EXPECT(hostref_float_to_half(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01, "just above the tie rounds up");
    EXPECT(hostref_float_to_half(0x1p-25f) == 0x0000, "half the smallest subnormal: tie to 0");
    EXPECT(hostref_float_to_half(3 * 0x1p-25f) == 0x0002, "1.5 subnormal units: tie to 2");
    EXPECT(hostref_float_to_half(0x1p-26f) == 0x0000, "a quarter unit: 0");
    EXPECT(hostref_float_to_half(65519.0f) == 0x7bff, "65519 is below the tie: 65504");
    EXPECT(hostref_float_to_half(65520.0f) == 0x7c00, "65520 rounds to infinity");
    EXPECT(hostref_float_to_half(-1e30f) == 0xfc00, "-1e30 is -inf");
    EXPECT(hostref_float_to_half(2047 * 0x1p-25f) == 0x0400, "rounding out of the subnormals: 2^-14");
    uint16_t nan = hostref_float_to_half(NAN);
    EXPECT((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff) != 0, "NaN -> 0x%04x", nan);
    EXPECT(isnan(hostref_half_to_float(0x7e00)) && isnan(hostref_half_to_float(0xfd01)), "NaN halves stay NaN");
    /* every non-NaN half survives the round trip bit for bit */
    const int bad = round_trip_failures(hostref_half_to_float, hostref_float_to_half);
    EXPECT(bad == 0, "%d halves do not round-trip", bad);
}

static void test_bf16(void)
{
    EXPECT(hostref_float_to_bf16(1.0f) == 0x3f80 && hostref_bf16_to_float(0x3f80) == 1.0f, "1.0");
    EXPECT(hostref_float_to_bf16(1.0f + 0x1p-8f) == 0x3f80, "tie rounds to even (down)");
    EXPECT(hostref_float_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82, "tie rounds to even (up)");
    EXPECT(hostref_float_to_bf16(0x1p-133f) == 0x0001, "the smallest subnormal");
    EXPECT(hostref_float_to_bf16(3.4028235e38f) == 0x7f80, "FLT_MAX rounds to infinity");
    EXPECT(hostref_float_to_bf16(-INFINITY) == 0xff80, "-inf");
    uint16_t nan = hostref_float_to_bf16(NAN);
    EXPECT((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0, "NaN -> 0x%04x", nan);
    const int bad = round_trip_failures(hostref_bf16_to_float, hostref_float_to_bf16);
    EXPECT(bad == 0, "%d bfloat16 values do not round-trip", bad);
}

/* The reference of a small array, checked against a result given as a number of out. */
static int judge(gs_dtype in, gs_op op, gs_dtype out, const void *data, uint64_t n, long double got_value,
                 const hostref_tolerance *tol)
{
    hostref_ref r;
    hostref_verdict v;
    unsigned char got[8] = {0};
    hostref_reduce(&r, in, op, out, data, n);
    if (op == GS_OP_ARGMIN || op == GS_OP_ARGMAX) {
        int64_t idx = (int64_t)got_value;
        memcpy(got, &idx, 8);
    } else {
        hostref_store(out, got, 0, got_value);
    }
    return hostref_check(&r, data, got, tol ? tol : &hostref_rigorous, &v);
}

static void test_arg(void)
{
    const int32_t ties[] = {3, 7, -2, 7, -2};
    EXPECT(judge(GS_INT32, GS_OP_ARGMAX, GS_INT64, ties, 5, 1, NULL), "first maximum is index 1");
    EXPECT(!judge(GS_INT32, GS_OP_ARGMAX, GS_INT64, ties, 5, 3, NULL), "a later tie is wrong");
    EXPECT(judge(GS_INT32, GS_OP_ARGMIN, GS_INT64, ties, 5, 2, NULL), "first minimum is index 2");
    const uint64_t big[] = {1, 0xffffffffffffffffull, 5}; /* unsigned: the top bit is not a sign */
    EXPECT(judge(GS_UINT64, GS_OP_ARGMAX, GS_INT64, big, 3, 1, NULL), "u64 max");
    const float f[] = {1.0f, NAN, 5.0f, NAN, -INFINITY};
    EXPECT(judge(GS_FLOAT32, GS_OP_ARGMAX, GS_INT64, f, 5, 1, NULL), "argmax: the first NaN");
    EXPECT(judge(GS_FLOAT32, GS_OP_ARGMIN, GS_INT64, f, 5, 1, NULL), "argmin: the first NaN");
    EXPECT(judge(GS_FLOAT32, GS_OP_ARGMIN, GS_INT64, f, 1, 0, NULL), "n = 1");
    const float inf[] = {-INFINITY, INFINITY, INFINITY};
    EXPECT(judge(GS_FLOAT32, GS_OP_ARGMAX, GS_INT64, inf, 3, 1, NULL), "the first +inf");
    uint16_t h[3] = {hostref_float_to_half(2.0f), hostref_float_to_half(-0.0f), hostref_float_to_half(0.0f)};
    EXPECT(judge(GS_FLOAT16, GS_OP_ARGMIN, GS_INT64, h, 3, 1, NULL), "-0 and +0 tie: the first");
    EXPECT(judge(GS_INT8, GS_OP_ARGMAX, GS_INT64, NULL, 0, -1, NULL), "n = 0 gives -1");
}

static void test_integers(void)
{
    const int8_t i8[] = {100, 100, 27};
    EXPECT(judge(GS_INT8, GS_OP_SUM, GS_INT8, i8, 3, -29, NULL), "int8 sum wraps mod 2^8: 227 - 256");
    EXPECT(judge(GS_INT8, GS_OP_SUM, GS_INT64, i8, 3, 227, NULL), "int8 -> int64 does not wrap");
    const int8_t neg[] = {-100, -100};
    EXPECT(judge(GS_INT8, GS_OP_SUM, GS_INT64, neg, 2, -200, NULL), "int8 -> int64 sign-extends");
    const uint8_t u8[] = {200, 100};
    EXPECT(judge(GS_UINT8, GS_OP_SUM, GS_UINT8, u8, 2, 44, NULL), "uint8 wraps");
    EXPECT(judge(GS_UINT8, GS_OP_SUM, GS_UINT64, u8, 2, 300, NULL), "uint8 -> uint64");
    EXPECT(judge(GS_UINT8, GS_OP_PROD, GS_UINT8, u8, 2, (200 * 100) % 256, NULL), "uint8 product wraps");
    const int32_t i32[] = {INT32_MAX, 1};
    EXPECT(judge(GS_INT32, GS_OP_SUM, GS_INT32, i32, 2, INT32_MIN, NULL), "int32 max + 1");
    const int32_t sq[] = {65536, 65536, 3};
    EXPECT(judge(GS_INT32, GS_OP_PROD, GS_INT32, sq, 3, 0, NULL), "2^32 wraps to 0");
    EXPECT(judge(GS_INT32, GS_OP_PROD, GS_INT64, sq, 3, 3 * 4294967296.0L, NULL), "int32 -> int64 product");
    const int8_t mm[] = {-5, 3, -7, 2};
    EXPECT(judge(GS_INT8, GS_OP_MIN, GS_INT8, mm, 4, -7, NULL), "signed min");
    EXPECT(judge(GS_INT8, GS_OP_MAX, GS_INT8, mm, 4, 3, NULL), "signed max");
    EXPECT(judge(GS_UINT8, GS_OP_MAX, GS_UINT8, mm, 4, 0xfb, NULL), "the same bytes, unsigned: 251");
    const uint32_t bits[] = {0xf0f0f0f0u, 0xff00ff00u, 0x12345678u};
    EXPECT(judge(GS_UINT32, GS_OP_BIT_AND, GS_UINT32, bits, 3, 0x10005000u, NULL), "and");
    EXPECT(judge(GS_UINT32, GS_OP_BIT_OR, GS_UINT32, bits, 3, 0xfff4fff8u, NULL), "or");
    EXPECT(judge(GS_UINT32, GS_OP_BIT_XOR, GS_UINT32, bits, 3, 0x1dc45988u, NULL), "xor");
    /* identities of n == 0 */
    EXPECT(judge(GS_INT8, GS_OP_MIN, GS_INT8, NULL, 0, 127, NULL), "int8 min of nothing");
    EXPECT(judge(GS_INT8, GS_OP_MAX, GS_INT8, NULL, 0, -128, NULL), "int8 max of nothing");
    EXPECT(judge(GS_UINT8, GS_OP_MIN, GS_UINT8, NULL, 0, 255, NULL), "uint8 min of nothing");
    EXPECT(judge(GS_INT64, GS_OP_MIN, GS_INT64, NULL, 0, (long double)INT64_MAX, NULL), "int64 min of nothing");
    EXPECT(judge(GS_INT32, GS_OP_PROD, GS_INT32, NULL, 0, 1, NULL), "product of nothing");
    EXPECT(judge(GS_UINT32, GS_OP_BIT_AND, GS_UINT32, NULL, 0, 0xffffffffu, NULL), "and of nothing");
    EXPECT(!judge(GS_UINT32, GS_OP_BIT_AND, GS_UINT32, NULL, 0, 0, NULL), "and of nothing is not 0");
}

static void test_floats(void)
{
    const float small[] = {1.0f, 2.0f, 3.5f};
    EXPECT(judge(GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, small, 3, 6.5, NULL), "exact sum");
    EXPECT(!judge(GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, small, 3, 6.5 + 0x1p-21, NULL), "one ulp off an exact sum");
    EXPECT(judge(GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, NULL, 0, 0, NULL), "sum of nothing");
    EXPECT(judge(GS_FLOAT32, GS_OP_PROD, GS_FLOAT32, NULL, 0, 1, NULL), "product of nothing");
    EXPECT(judge(GS_FLOAT32, GS_OP_MIN, GS_FLOAT32, NULL, 0, INFINITY, NULL), "min of nothing");
    EXPECT(judge(GS_FLOAT16, GS_OP_MAX, GS_FLOAT32, NULL, 0, -INFINITY, NULL), "f16 -> f32 max of nothing");
    /* 1 + 2^-24 + 2^-24 in float32: any order rounds; the rigorous bound is 3 * 2^-23 * sum|x| */
    const float rnd[] = {1.0f, 0x1p-24f, 0x1p-24f};
    EXPECT(judge(GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, rnd, 3, 1.0, NULL), "rounded sum within the bound");
    EXPECT(judge(GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, rnd, 3, 1.0 + 0x1p-23, NULL), "the other rounding");
    EXPECT(!judge(GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, rnd, 3, 1.0 + 0x1p-20, NULL), "8 ulps off");
    EXPECT(judge(GS_FLOAT32, GS_OP_SUM, GS_FLOAT64, rnd, 3, 1.0 + 0x1p-23, NULL), "float64 output: exact");
    EXPECT(!judge(GS_FLOAT32, GS_OP_SUM, GS_FLOAT64, rnd, 3, 1.0, NULL), "float64 output must not round");
    /* float16: accumulated in float32, rounded once at the end */
    uint16_t h[3] = {hostref_float_to_half(1024.0f), hostref_float_to_half(0.5f), hostref_float_to_half(0.5f)};
    EXPECT(judge(GS_FLOAT16, GS_OP_SUM, GS_FLOAT16, h, 3, 1025.0, NULL), "f16 sum rounded once (1025)");
    EXPECT(!judge(GS_FLOAT16, GS_OP_SUM, GS_FLOAT16, h, 3, 1024.0, NULL), "f16 sum rounded twice (1024)");
    uint16_t big[2] = {hostref_float_to_half(60000.0f), hostref_float_to_half(60000.0f)};
    EXPECT(judge(GS_FLOAT16, GS_OP_SUM, GS_FLOAT16, big, 2, INFINITY, NULL), "f16 overflow is +inf");
    EXPECT(!judge(GS_FLOAT16, GS_OP_SUM, GS_FLOAT16, big, 2, 65504, NULL), "f16 overflow is not 65504");
    EXPECT(judge(GS_FLOAT16, GS_OP_SUM, GS_FLOAT32, big, 2, 120000, NULL), "f16 -> f32 does not overflow");
    /* NaN and infinities */
    const float nan[] = {1.0f, NAN, -3.0f};
    EXPECT(judge(GS_FLOAT32, GS_OP_MIN, GS_FLOAT32, nan, 3, NAN, NULL), "min propagates NaN");
    EXPECT(!judge(GS_FLOAT32, GS_OP_MIN, GS_FLOAT32, nan, 3, -3.0, NULL), "min must not skip NaN");
    const float infs[] = {INFINITY, 1.0f, -INFINITY};
    EXPECT(judge(GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, infs, 3, NAN, NULL), "inf + -inf is NaN");
    EXPECT(judge(GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, infs, 2, INFINITY, NULL), "inf + 1 is inf");
    EXPECT(!judge(GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, infs, 2, NAN, NULL), "inf + 1 is not NaN");
    const hostref_tolerance four = {0, 4, 1, 0};
    const double d[] = {1.0, 1e-16, -1.0};
    EXPECT(judge(GS_FLOAT64, GS_OP_SUM, GS_FLOAT64, d, 3, 0.0, &four), "4 eps sum|x| allows 0");
    EXPECT(!judge(GS_FLOAT64, GS_OP_SUM, GS_FLOAT64, d, 3, 1e-14, &four), "but not 1e-14");
    EXPECT(!judge(GS_FLOAT32, GS_OP_BIT_XOR, GS_FLOAT32, small, 3, 0, NULL), "bitwise over floats");
}

/* Merging the references of two halves gives the reference of the whole. */
static void test_merge(void)
{
    static const gs_dtype types[] = {GS_INT8, GS_UINT8, GS_INT32, GS_UINT64, GS_FLOAT32, GS_FLOAT64, GS_FLOAT16};
    uint64_t state = 42;
    unsigned char data[64 * 8];
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (int op = GS_OP_SUM; op <= GS_OP_BIT_XOR; op++) {
            const gs_dtype t = types[ti];
            if (!gs_op_defined(t, (gs_op)op))
                continue;
            for (int i = 0; i < 64; i++) /* small values with ties; exact sums and products */
                hostref_store(t, data, (uint64_t)i, (long double)(int)(hostref_rand(&state) % 5) - 2);
            const gs_dtype out = hostref_default_out(t, (gs_op)op);
            hostref_ref whole, a, b;
            hostref_reduce(&whole, t, (gs_op)op, out, data, 64);
            hostref_reduce(&a, t, (gs_op)op, out, data, 23);
            hostref_reduce(&b, t, (gs_op)op, out, data + 23 * gs_dtype_size(t), 41);
            hostref_merge(&a, &b);
            EXPECT(a.n == 64 && a.bits == whole.bits && a.index == whole.index &&
                       (a.value == whole.value || (a.value != a.value && whole.value != whole.value)),
                   "type %d op %d", (int)t, op);
        }
}

int main(void)
{
    test_half();
    test_bf16();
    test_arg();
    test_integers();
    test_floats();
    test_merge();
    printf("hostref: %d checks, %d failed\n", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
