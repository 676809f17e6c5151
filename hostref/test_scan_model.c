/*
 * unit suite: hostref_scan, the model of gs_scan's association order (scan.c).
 *
 *  - every supported (dtype, op, output) triple (76 of them; the others refused), several
 *    geometries, n = 0, 1, 2, 31, 33 and tile boundaries +-1 over several tiles, inclusive
 *    and exclusive, on fresh random data:
 *      integers and float MIN/MAX (exact in any order): bit for bit a sequential scan;
 *      float SUM/PROD: every output within Higham's bound of the exact prefix (hostref_check,
 *      hostref_rigorous), so within twice that bound of a sequential scan, which is within
 *      it too;
 *      all: the first m outputs of a scan of n > m elements are those of a scan of m
 *      (padding changes no bit) and an input and output at odd addresses change no bit;
 *  - hand-worked cases where the Kogge-Stone and in-thread orders show (1 + 2^p rounds away);
 *  - float16/bfloat16: each output is the float32 output rounded once;
 *  - identities of the exclusive scan, signed zeros, inf and NaN, in place, refusals.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dtype.h"
#include "hostref.h"

static int failures, checks;

static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    checks++;
    if (ok)
        return;
    failures++;
    va_start(ap, fmt);
    fputs("FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

typedef struct triple {
    gs_dtype in, out;
    gs_op op;
} triple;

/* threads, items, tiles per group */
static const unsigned geometry[][3] = {{32, 1, 1}, {32, 3, 2}, {64, 2, 3}, {96, 1, 1}, {128, 4, 2}, {256, 7, 32}};
enum { GEOMETRIES = sizeof geometry / sizeof geometry[0], MOST = 4 * 256 * 7 * 8 + 8 /* bytes: 4 tiles */ };

static int float_arith(const triple *c)
{
    return gs_dtype_is_float(c->in) && (c->op == GS_OP_SUM || c->op == GS_OP_PROD);
}

/* Random elements: integers of all bits (PROD: mostly odd, so products stay nonzero);
 * float SUM magnitudes from 2^-4 to 2^4 with some -0.0; PROD factors near 1; MIN/MAX
 * either numbers with zeros of both signs, infinities and a rare NaN of either sign, or
 * (every other call) only +-0.0 and numbers beyond them, so that the extreme is a tie of
 * zeros and which operand an op keeps shows. */
static void fill(const triple *c, void *data, uint64_t n, uint64_t *state)
{
    static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN};
    const int zeros = (int)(hostref_rand(state) & 1), sign = c->op == GS_OP_MIN ? 1 : -1;
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t r = hostref_rand(state);
        const double u = hostref_rand_unit(state);
        if (!gs_dtype_is_float(c->in))
            hostref_store_bits(c->in, data, i, c->op == GS_OP_PROD && r % 4 ? r | 1 : r);
        else if (c->op == GS_OP_SUM)
            hostref_store(c->in, data, i, r % 32 ? ldexp(u, (int)(r % 9) - 4) : -0.0);
        else if (c->op == GS_OP_PROD)
            hostref_store(c->in, data, i, 1 + u / 16);
        else if (zeros)
            hostref_store(c->in, data, i, r % 4 < 2 ? special[r % 4] : sign * (double)(r % 4));
        else
            hostref_store(c->in, data, i, r % 128 < 4 ? special[r % 128] : r % 512 < 6 ? special[r % 512] : 100 * u);
    }
}

/* hostref_reduce of element i alone. */
static void one(hostref_ref *r, const triple *c, const void *data, uint64_t i)
{
    hostref_reduce(r, c->in, c->op, c->out, (const char *)data + i * gs_dtype_size(c->in), 1);
}

/* A sequential scan of an op exact in any order (integers, float MIN/MAX), through
 * hostref_merge. */
static void sequential(const triple *c, int exclusive, const void *data, uint64_t n, void *out)
{
    hostref_ref run, x;
    hostref_reduce(&run, c->in, c->op, c->out, NULL, 0);
    for (uint64_t i = 0; i < n; i++) {
        one(&x, c, data, i);
        if (!exclusive)
            hostref_merge(&run, &x);
        if (gs_dtype_is_float(c->out))
            hostref_store(c->out, out, i, run.value);
        else
            hostref_store_bits(c->out, out, i, run.bits);
        if (exclusive)
            hostref_merge(&run, &x);
    }
}

/* s op x in a sequential float scan: rounded once in the accumulator acc. */
static long double step(gs_dtype acc, gs_op op, long double s, long double x)
{
    if (acc == GS_FLOAT64)
        return op == GS_OP_SUM ? (double)s + (double)x : (double)s * (double)x;
    return op == GS_OP_SUM ? (float)s + (float)x : (float)s * (float)x;
}

/* Float SUM/PROD: each output against the exact prefix and against a sequential scan that
 * rounds every step in the accumulator. Both orders are within hostref_bound (per_n = 1:
 * Higham's gamma_(n-1) bound, which holds for any order) of the exact value, so they are
 * within twice it of each other. Returns the largest |model - sequential| / bound. */
static double check_float(const triple *c, int exclusive, const void *data, uint64_t n, const void *got)
{
    const gs_dtype acc = hostref_accumulator(c->in, c->out);
    hostref_ref run, x;
    hostref_reduce(&run, c->in, c->op, c->out, NULL, 0);
    long double seq = c->op == GS_OP_SUM ? 0 : 1;
    double worst = 0;
    for (uint64_t i = 0; i < n; i++) {
        const long double e = hostref_load(c->in, data, i);
        one(&x, c, data, i);
        if (!exclusive) {
            hostref_merge(&run, &x);
            seq = i == 0 ? e : step(acc, c->op, seq, e);
        }
        hostref_verdict v;
        const long double m = hostref_load(c->out, got, i), bound = 2 * hostref_bound(&run, &hostref_rigorous);
        const long double diff = fabsl(m - hostref_round_to(c->out, seq));
        check(hostref_check(&run, data, (const char *)got + i * gs_dtype_size(c->out), &hostref_rigorous, &v) &&
                  diff <= bound,
              "%s %s -> %s %s n %llu out[%llu]: %s, want %s (%s); |model - sequential| %Lg, bound %Lg",
              gs_op_name(c->op), gs_dtype_name(c->in), gs_dtype_name(c->out), exclusive ? "exclusive" : "inclusive",
              (unsigned long long)n, (unsigned long long)i, v.got, v.want, v.note, diff, bound);
        if (bound > 0 && diff / bound > worst)
            worst = (double)(diff / bound);
        if (exclusive) {
            hostref_merge(&run, &x);
            seq = i == 0 ? e : step(acc, c->op, seq, e);
        }
    }
    return worst;
}

static double test_triple(const triple *c, uint64_t *state)
{
    const size_t in_size = gs_dtype_size(c->in), out_size = gs_dtype_size(c->out);
    double worst = 0;
    for (int g = 0; g < GEOMETRIES; g++) {
        const unsigned threads = geometry[g][0], items = geometry[g][1], group = geometry[g][2];
        const uint64_t t = (uint64_t)threads * items;
        const uint64_t sizes[] = {0, 1, 2, 31, 33, t - 1, t, t + 1, 2 * t - 1, 2 * t + 1, 3 * t + hostref_rand(state) % t};
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
            for (int exclusive = 0; exclusive < 2; exclusive++) {
                const uint64_t n = sizes[k], m = n ? hostref_rand(state) % n : 0;
                static unsigned char data[MOST], got[MOST], want[MOST], odd[MOST];
                fill(c, data, n, state);
                const char *what = exclusive ? "exclusive" : "inclusive";
                const int st = hostref_scan(data, n, c->in, c->op, (int32_t)c->out, exclusive, threads, items, group, got);
                check(st == GS_SUCCESS, "%s %s status %d", gs_op_name(c->op), gs_dtype_name(c->in), st);
                if (float_arith(c)) {
                    const double w = check_float(c, exclusive, data, n, got);
                    worst = w > worst ? w : worst;
                } else {
                    sequential(c, exclusive, data, n, want);
                    check(!memcmp(got, want, n * out_size), "%s %s -> %s %s n %llu geometry %ux%u: not the sequential scan",
                          gs_op_name(c->op), gs_dtype_name(c->in), gs_dtype_name(c->out), what, (unsigned long long)n,
                          threads, items);
                }
                /* the first m outputs are the scan of m elements: padding reaches no output */
                hostref_scan(data, m, c->in, c->op, (int32_t)c->out, exclusive, threads, items, group, want);
                check(!memcmp(got, want, m * out_size), "%s %s %s: the scan of the first %llu of %llu differs",
                      gs_op_name(c->op), gs_dtype_name(c->in), what, (unsigned long long)m, (unsigned long long)n);
                /* odd addresses, in and out */
                memcpy(odd + 1, data, n * in_size);
                hostref_scan(odd + 1, n, c->in, c->op, (int32_t)c->out, exclusive, threads, items, group, want + 3);
                check(!memcmp(got, want + 3, n * out_size), "%s %s %s n %llu: another alignment changes bits",
                      gs_op_name(c->op), gs_dtype_name(c->in), what, (unsigned long long)n);
            }
    }
    return worst;
}

/* Every (dtype, op, output) triple hostref_scan accepts; ARGMIN/ARGMAX refused for all. */
static void test_random(void)
{
    uint64_t state = 0x5ca11ed;
    int count = 0;
    double worst = 0;
    for (int in = 0; in < GS_DTYPE_COUNT; in++)
        for (int op = 0; op < GS_OP_COUNT; op++)
            for (int out = GS_OUT_DEFAULT; out < GS_DTYPE_COUNT; out++) {
                const int st = hostref_scan(NULL, 0, (gs_dtype)in, (gs_op)op, out, 0, 32, 1, 2, NULL);
                if (op == GS_OP_ARGMIN || op == GS_OP_ARGMAX)
                    check(st == GS_ERROR_UNSUPPORTED, "%s over %s: status %d", gs_op_name((gs_op)op),
                          gs_dtype_name((gs_dtype)in), st);
                if (st != GS_SUCCESS || out == in)
                    continue;
                const triple c = {(gs_dtype)in, out == GS_OUT_DEFAULT ? (gs_dtype)in : (gs_dtype)out, (gs_op)op};
                const double w = test_triple(&c, &state);
                worst = w > worst ? w : worst;
                count++;
            }
    check(count == 76, "%d (dtype, op, output) triples accepted, want 76 (58 default, 18 wider)", count);
    printf("scan model: %d triples; float SUM/PROD: largest |model - sequential| = %.3g of the bound\n", count, worst);
}

/* Hand-worked cases, B = 2^p (p the accumulator's digits, so B + 1 rounds to B, to even),
 * zeros elsewhere.
 * Shape 0: tile 32 x 1, n = 33, x = B, 1, 1, -B. Kogge-Stone, v after d = 1: B, B+1 -> B,
 *   2, 1-B, -B, 0 ...; d = 2: B, B, B+2, 1, 2-B, 1-B, -B, 0 ...; the final I: B, B, B+2, then
 *   1 at odd lanes and 2 at even ones (a lane whose tree holds lane 1's B+1 -> B keeps 1 of
 *   the 2). AGG_0 = I_31 = 1. Inclusive out[t] = I_{t-1} + x_t: B, B, B, 2, then 1 (t even),
 *   2 (t odd); out[32] = C_1 + 0 = 1. Exclusive out[t] = I_{t-1}: +0, B, B, B+2, 1, 2, 1 ...;
 *   out[32] = C_1 = 1. (A sequential scan: B, B, B, 0, 0 ...; exact: B, B+1, B+2, 2, 2 ....)
 * Shape 1: tile 32 x 2, n = 8, x = B, 1 | 1, 1 | -B, 0 | 0, 0: A = B+1 -> B, 2, -B, 0; I_0 = B,
 *   I_1 = B+2, I_2 = B + (2-B) = 2. Inclusive: B, B, B, B, 2, 2, 2, 2 (sequential: B, B, B, B,
 *   0 ...); exclusive: +0, B, B, B, B+2, 2, 2, 2.
 * Shape 2: tile 64 x 1 (two warps), n = 257, x31 = B, x32 = 1, x33 = -B, x64 = B, x128 =
 *   x129 = 1, x192 = -B.
 *   Tile 0: W_0 = B, W_1 = 1-B (exact), WP_1 = B; I_31 = B, I_32 = B+1 -> B, I_33.. = B +
 *     (1-B) = 1 = AGG_0. Inclusive: 0 ..., out31 = B, out32 = B, out33 = 0, then I_33 + 0 = 1
 *     (sequential: 0). Exclusive: I_{t-1}: 0 ..., out32 = out33 = B, then 1.
 *   Tile 1: C_1 = 1, every I_t = B = AGG_1. out64 = 1 + B -> B, then T_t = C_1 + P_t = B.
 *     Exclusive: out64 = C_1 = 1, then B.
 *   Tile 2: C_2 = 1 + B -> B; I_0 = 1, then 2 = AGG_2. out128 = B + 1 -> B, out129 =
 *     (C_2 + P_1) + 1 = (B + 1) + 1 -> B (not B + (1 + 1)), then (B + 2) + 0. Exclusive: B,
 *     B, then B+2.
 *   Tile 3: C_3 = B + 2, I_t = -B = AGG_3. out192 = (B+2) - B = 2, then T_t = 2. Exclusive:
 *     B+2, then 2. Tile 4: C_4 = ((1 + B) + 2) - B = 2 (a right fold gives 3): out256 = 2.
 * Shape 3: tile 128 x 1 (four warps), n = 129, x31 = B, x63 = x95 = 1, x96 = -B: W = B, 1, 1,
 *   -B; scanned over the warps, d = 1: B, B+1 -> B, 2, 1-B; d = 2: B, B, B + 2, 1. So WP_3 =
 *   B + (1 + 1) = B + 2 (a sequential fold of the warps gives B), I_96.. = (B+2) - B = 2 =
 *   AGG_0; I_31..95 = B. Inclusive: 0 ..., out31 .. out95 = B, out96 = B - B = 0, then 2
 *   (sequential: 0); out128 = C_1 = 2. Exclusive: 0 ..., out32 .. out96 = B, then 2. */
static long double by_hand(int shape, int exclusive, uint64_t i, long double b)
{
    /* shapes 2, 3: (first index, value) runs; value 3 is B, 4 is B+2 */
    static const int runs[2][2][7][2] = {
        {{{0, 0}, {31, 3}, {33, 0}, {34, 1}, {64, 3}, {130, 4}, {192, 2}},
         {{0, 0}, {32, 3}, {34, 1}, {65, 3}, {130, 4}, {193, 2}, {999, 0}}},
        {{{0, 0}, {31, 3}, {96, 0}, {97, 2}, {999, 0}}, {{0, 0}, {32, 3}, {97, 2}, {999, 0}}}};
    if (shape == 0 && exclusive)
        return i == 0 ? 0 : i < 3 ? b : i == 3 ? b + 2 : i == 32 || i % 2 == 0 ? 1 : 2;
    if (shape == 0)
        return i < 3 ? b : i == 3 ? 2 : i == 32 || i % 2 == 0 ? 1 : 2;
    if (shape == 1)
        return exclusive ? (i == 0 ? 0 : i < 4 ? b : i == 4 ? b + 2 : 2) : i < 4 ? b : 2;
    const int(*run)[2] = runs[shape - 2][exclusive];
    int k = 0;
    while (k < 6 && run[k + 1][0] > run[k][0] && (uint64_t)run[k + 1][0] <= i)
        k++;
    const int v = run[k][1];
    return v == 3 ? b : v == 4 ? b + 2 : v;
}

static void test_by_hand(void)
{
    static const triple cases[] = {{GS_FLOAT64, GS_FLOAT64, GS_OP_SUM}, {GS_FLOAT32, GS_FLOAT32, GS_OP_SUM},
                                   {GS_FLOAT32, GS_FLOAT64, GS_OP_SUM}, {GS_BFLOAT16, GS_BFLOAT16, GS_OP_SUM},
                                   {GS_BFLOAT16, GS_FLOAT32, GS_OP_SUM}};
    static const unsigned geometry_of[4][3] = {{32, 1, 33}, {32, 2, 8}, {64, 1, 257}, {128, 1, 129}}; /* threads, items, n */
    static const int nonzero[4][8][2] = {{{0, 3}, {1, 1}, {2, 1}, {3, -3}, {-1, 0}},
                                         {{0, 3}, {1, 1}, {2, 1}, {3, 1}, {4, -3}, {-1, 0}},
                                         {{31, 3}, {32, 1}, {33, -3}, {64, 3}, {128, 1}, {129, 1}, {192, -3}, {-1, 0}},
                                         {{31, 3}, {63, 1}, {95, 1}, {96, -3}, {-1, 0}}};
    unsigned char data[257 * 8], got[257 * 8];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int shape = 0; shape < 4; shape++) {
            const triple *c = &cases[k];
            const long double b = ldexpl(1, hostref_digits(hostref_accumulator(c->in, c->out)));
            const uint64_t n = geometry_of[shape][2];
            memset(data, 0, sizeof data);
            for (int j = 0; nonzero[shape][j][0] >= 0; j++) /* 3 is B, -3 is -B */
                hostref_store(c->in, data, (uint64_t)nonzero[shape][j][0],
                              nonzero[shape][j][1] == 3 ? b : nonzero[shape][j][1] == -3 ? -b : 1);
            for (int exclusive = 0; exclusive < 2; exclusive++) {
                hostref_scan(data, n, c->in, c->op, (int32_t)c->out, exclusive, geometry_of[shape][0],
                             geometry_of[shape][1], 32, got);
                for (uint64_t i = 0; i < n; i++) {
                    const long double want = hostref_round_to(c->out, by_hand(shape, exclusive, i, b)); /* bf16: B+2 -> B */
                    const long double g = hostref_load(c->out, got, i);
                    check(g == want && !signbit(g), "by hand, %s -> %s %s shape %d: out[%llu] = %La, want %La",
                          gs_dtype_name(c->in), gs_dtype_name(c->out), exclusive ? "exclusive" : "inclusive", shape,
                          (unsigned long long)i, g, want);
                }
            }
        }
}

/* Where the groups show: tiles of 32 x 1 in groups of 3, AGG = B, 1, 1, 1, 1, 0 (x0, x32,
 * x64, x96, x128 nonzero). GT_0 = (B + 1) + 1 -> B = B_1. Tile 4: C_4 = B_1 + L_4 = B + 1 ->
 * B; tile 5: C_5 = B + (1 + 1) = B + 2, where a left fold over the tiles gives B. */
static void test_groups(void)
{
    static const triple cases[] = {{GS_FLOAT64, GS_FLOAT64, GS_OP_SUM}, {GS_FLOAT32, GS_FLOAT32, GS_OP_SUM}};
    unsigned char data[192 * 8], got[192 * 8];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const triple *c = &cases[k];
        const long double b = ldexpl(1, hostref_digits(hostref_accumulator(c->in, c->out)));
        memset(data, 0, sizeof data);
        for (int t = 0; t < 5; t++)
            hostref_store(c->in, data, 32u * (unsigned)t, t ? 1 : b);
        for (int exclusive = 0; exclusive < 2; exclusive++) {
            hostref_scan(data, 192, c->in, c->op, (int32_t)c->out, exclusive, 32, 1, 3, got);
            check(hostref_load(c->out, got, 128 + (unsigned)exclusive) == b, "groups, %s %s: out[%d] is not B",
                  gs_dtype_name(c->in), exclusive ? "exclusive" : "inclusive", 128 + exclusive);
            int bad = 0;
            for (unsigned i = 160; i < 192; i++)
                bad += hostref_load(c->out, got, i) != b + 2;
            check(bad == 0, "groups, %s %s: %d of tile 5's outputs are not B + 2", gs_dtype_name(c->in),
                  exclusive ? "exclusive" : "inclusive", bad);
        }
    }
}

/* float16/bfloat16 outputs are the float32 outputs rounded once, never fed back. */
static void test_halves(void)
{
    uint64_t state = 7;
    static const gs_dtype halves[] = {GS_FLOAT16, GS_BFLOAT16};
    enum { N = 3000 };
    static unsigned char data[N * 2], h[N * 2], f[N * 4];
    for (int k = 0; k < 2; k++)
        for (int op = GS_OP_SUM; op <= GS_OP_MAX; op++)
            for (int exclusive = 0; exclusive < 2; exclusive++) {
                const triple c = {halves[k], halves[k], (gs_op)op};
                fill(&c, data, N, &state);
                hostref_scan(data, N, c.in, c.op, (int32_t)c.in, exclusive, 64, 5, 2, h);
                hostref_scan(data, N, c.in, c.op, GS_FLOAT32, exclusive, 64, 5, 2, f);
                int bad = 0;
                for (uint64_t i = 0; i < N; i++) {
                    unsigned char r[2];
                    hostref_store(c.in, r, 0, hostref_load(GS_FLOAT32, f, i));
                    bad += memcmp(r, h + 2 * i, 2) != 0;
                }
                check(bad == 0, "%s %s: %d outputs are not the float32 output rounded once", gs_op_name(c.op),
                      gs_dtype_name(c.in), bad);
            }
    /* 1, 2^-11, 2^-11: float32 1, 1 + 2^-11, 1 + 2^-10; float16 1 (a tie, to even), 1,
     * 1 + 2^-10. Rounding fed back would give 1 at the end. */
    const uint16_t x[] = {0x3c00, 0x1000, 0x1000};
    uint16_t out[3];
    hostref_scan(x, 3, GS_FLOAT16, GS_OP_SUM, GS_OUT_DEFAULT, 0, 32, 4, 2, out);
    check(out[0] == 0x3c00 && out[1] == 0x3c00 && out[2] == 0x3c01, "float16 1, 2^-11, 2^-11: %04x %04x %04x",
          out[0], out[1], out[2]);
}

static void test_edges(void)
{
    /* n == 0 writes nothing, even with a geometry and NULL pointers */
    double sentinel[2] = {42, 42};
    check(hostref_scan(sentinel, 0, GS_FLOAT64, GS_OP_SUM, GS_OUT_DEFAULT, 1, 32, 1, 2, sentinel + 1) == GS_SUCCESS &&
              sentinel[1] == 42,
          "n = 0 writes nothing");
    /* exclusive out[0]: the empty scan's value, +0.0 for a float SUM */
    static const struct { gs_op op; double want; } firsts[] = {
        {GS_OP_SUM, 0.0}, {GS_OP_PROD, 1.0}, {GS_OP_MIN, INFINITY}, {GS_OP_MAX, -INFINITY}};
    for (size_t k = 0; k < 4; k++) {
        const float x[2] = {-0.0f, 5};
        float y[2];
        uint16_t hy[2];
        hostref_scan(x, 2, GS_FLOAT32, firsts[k].op, GS_OUT_DEFAULT, 1, 32, 1, 2, y);
        check(y[0] == firsts[k].want && !signbit(y[0]) == !signbit(firsts[k].want), "exclusive %s: out[0] %a",
              gs_op_name(firsts[k].op), y[0]);
        const uint16_t hx[2] = {0x8000, 0x4500};
        hostref_scan(hx, 2, GS_FLOAT16, firsts[k].op, GS_OUT_DEFAULT, 1, 32, 1, 2, hy);
        check(hostref_half_to_float(hy[0]) == firsts[k].want && (hy[0] == 0x8000) == 0, "float16 exclusive %s: %04x",
              gs_op_name(firsts[k].op), hy[0]);
    }
    const int8_t i8[3] = {-1, 2, 3};
    int8_t o8[3];
    int64_t o64[3];
    hostref_scan(i8, 3, GS_INT8, GS_OP_MIN, GS_OUT_DEFAULT, 1, 32, 1, 2, o8);
    check(o8[0] == 127 && o8[1] == -1, "int8 exclusive MIN: %d %d", o8[0], o8[1]);
    hostref_scan(i8, 3, GS_INT8, GS_OP_BIT_AND, GS_OUT_DEFAULT, 1, 32, 1, 2, o8);
    check(o8[0] == -1 && o8[1] == -1 && o8[2] == 2, "int8 exclusive AND: %d %d %d", o8[0], o8[1], o8[2]);
    hostref_scan(i8, 3, GS_INT8, GS_OP_PROD, GS_INT64, 1, 32, 1, 2, o64);
    check(o64[0] == 1 && o64[1] == -1 && o64[2] == -2, "int8 -> int64 exclusive PROD");
    /* signed zeros: -0.0 alone stays -0.0 over several tiles (unlike gs_reduce's +0.0) */
    static double zeros[300];
    double zs[300];
    for (int i = 0; i < 300; i++)
        zeros[i] = -0.0;
    hostref_scan(zeros, 300, GS_FLOAT64, GS_OP_SUM, GS_OUT_DEFAULT, 0, 32, 2, 2, zs);
    check(zs[0] == 0 && signbit(zs[0]) && signbit(zs[299]), "-0.0 + -0.0 ... stays -0.0");
    /* inf and NaN */
    const float infs[4] = {1, INFINITY, -INFINITY, 2};
    float fo[4];
    hostref_scan(infs, 4, GS_FLOAT32, GS_OP_SUM, GS_OUT_DEFAULT, 0, 32, 1, 2, fo);
    check(fo[0] == 1 && fo[1] == INFINITY && isnan(fo[2]) && isnan(fo[3]), "1, inf, -inf, 2: %g %g %g %g", fo[0], fo[1],
          fo[2], fo[3]);
    const float nans[4] = {3, NAN, -INFINITY, 1};
    hostref_scan(nans, 4, GS_FLOAT32, GS_OP_MIN, GS_OUT_DEFAULT, 0, 32, 1, 2, fo);
    check(fo[0] == 3 && isnan(fo[1]) && isnan(fo[2]) && isnan(fo[3]), "MIN propagates NaN");
    /* in place equals out of place */
    double a[1000], b[1000];
    uint64_t state = 3;
    for (int i = 0; i < 1000; i++)
        a[i] = hostref_rand_unit(&state);
    hostref_scan(a, 1000, GS_FLOAT64, GS_OP_SUM, GS_OUT_DEFAULT, 1, 64, 3, 2, b);
    hostref_scan(a, 1000, GS_FLOAT64, GS_OP_SUM, GS_OUT_DEFAULT, 1, 64, 3, 2, a);
    check(!memcmp(a, b, sizeof a), "in place");
    /* refusals: {dtype, op, out_dtype, threads, items, status, group} over 4 elements of a into b */
    static const int refused[][7] = {
        {GS_FLOAT32, GS_OP_BIT_OR, GS_OUT_DEFAULT, 32, 1, GS_ERROR_UNSUPPORTED, 1},
        {GS_INT32, GS_OP_SUM, GS_FLOAT64, 32, 1, GS_ERROR_UNSUPPORTED, 1},
        {GS_INT32, GS_OP_MIN, GS_INT64, 32, 1, GS_ERROR_UNSUPPORTED, 1},
        {GS_INT32, GS_OP_SUM, 10, 32, 1, GS_ERROR_INVALID_ARGUMENT, 1},
        {10, GS_OP_SUM, GS_OUT_DEFAULT, 32, 1, GS_ERROR_INVALID_ARGUMENT, 1},
        {GS_INT32, 9, GS_OUT_DEFAULT, 32, 1, GS_ERROR_INVALID_ARGUMENT, 1},
        {GS_INT32, GS_OP_SUM, GS_OUT_DEFAULT, 0, 1, GS_ERROR_INVALID_ARGUMENT, 1},
        {GS_INT32, GS_OP_SUM, GS_OUT_DEFAULT, 48, 1, GS_ERROR_INVALID_ARGUMENT, 1},
        {GS_INT32, GS_OP_SUM, GS_OUT_DEFAULT, 2048, 1, GS_ERROR_INVALID_ARGUMENT, 1},
        {GS_INT32, GS_OP_SUM, GS_OUT_DEFAULT, 32, 0, GS_ERROR_INVALID_ARGUMENT, 1},
        {GS_INT32, GS_OP_SUM, GS_OUT_DEFAULT, 32, 1, GS_ERROR_INVALID_ARGUMENT, 0}};
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        const int *r = refused[k], st = hostref_scan(a, 4, (gs_dtype)r[0], (gs_op)r[1], r[2], 0, (unsigned)r[3],
                                                      (unsigned)r[4], r[6], b);
        check(st == r[5], "refusal %zu: status %d, want %d", k, st, r[5]);
    }
    check(hostref_scan(NULL, 4, GS_INT32, GS_OP_SUM, GS_OUT_DEFAULT, 0, 32, 1, 2, b) == GS_ERROR_INVALID_ARGUMENT, "NULL");
    check(hostref_scan(a, 4, GS_INT32, GS_OP_SUM, GS_OUT_DEFAULT, 0, 32, 1, 2, (int32_t *)a + 1) ==
              GS_ERROR_INVALID_ARGUMENT, "overlap");
    check(hostref_scan(a, 4, GS_INT32, GS_OP_SUM, GS_INT64, 0, 32, 1, 2, a) == GS_ERROR_INVALID_ARGUMENT,
          "in place into a wider type");
}

int main(void)
{
    static void (*const tests[])(void) = {test_by_hand, test_groups, test_halves, test_edges, test_random};
    for (size_t k = 0; k < sizeof tests / sizeof tests[0]; k++)
        tests[k]();
    printf("scan model: %d checks, %d failed\n", checks, failures);
    return failures != 0;
}
