/*
 * unit suite: the host side of exact sums (core/exact.c: gs_exact_round, gs_exact_combine,
 * over internal/exact_format.h) against hostref's exact sum, a different big integer.
 *
 * Accumulators' limbs are built here a third way: each element's integer significand added,
 * with its sign, to the limbs it covers, and nothing carried, so the limbs are far from
 * normalised (negative, above 2^32) and rounding must cope. Fresh random data each run
 * (the seed is printed; GS_TEST_SEED replays it): the whole float64 exponent range,
 * heavy cancellation, values near ties of every type, subnormals, NaN/inf, signed zeros.
 * Shards: an input split into R (up to 64) random pieces, whose accumulators are summed
 * as plain int64 arrays or with gs_exact_combine, rounds to the bits of the whole.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exact_format.h"
#include "exact_ref.h"
#include "gridsync.h"
#include "hostref.h"

static int failures, checks;
static uint64_t rng;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        checks++;                                                         \
        if (!(cond)) {                                                    \
            failures++;                                                   \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);         \
            fprintf(stderr, __VA_ARGS__);                                 \
            fputc('\n', stderr);                                          \
        }                                                                 \
    } while (0)

static const gs_dtype outs[4] = {GS_FLOAT64, GS_FLOAT32, GS_FLOAT16, GS_BFLOAT16};

/* A finite x added to acc's limbs without any carry: signed 32-bit pieces of its
 * significand. */
static void limbs_add(gs_exact_acc *a, double x)
{
    if (!isfinite(x) || x == 0)
        return;
    int e;
    uint64_t m = (uint64_t)ldexp(frexp(fabs(x), &e), 53);
    int lsb = e - 53;
    while (lsb < -1074) {
        m >>= 1;
        lsb++;
    }
    const int bit = lsb - GS_EXACT_LOW_EXPONENT;
    const unsigned __int128 v = (unsigned __int128)m << (bit % 32);
    for (int k = 0; k < 3; k++) {
        const int64_t piece = (int64_t)(uint32_t)(v >> (32 * k));
        a->limb[bit / 32 + k] += x < 0 ? -piece : piece;
    }
}

/* The accumulator of xs[0, n): limbs as above, counts as hostref's exact sum keeps them
 * (*ref gets that sum). */
static void acc_of(const double *xs, int n, gs_exact_acc *a, hostref_exact *ref)
{
    memset(a, 0, sizeof *a);
    hostref_exact_init(ref);
    for (int i = 0; i < n; i++) {
        limbs_add(a, xs[i]);
        hostref_exact_add(ref, xs[i]);
    }
    a->count = (int64_t)ref->count;
    a->nan = (int64_t)ref->nan;
    a->pos_inf = (int64_t)ref->pos_inf;
    a->neg_inf = (int64_t)ref->neg_inf;
    a->sign_clear = ref->sign_clear;
}

static double rand_double(int lo, int hi)
{
    const int e = lo + (int)(hostref_rand(&rng) % (uint64_t)(hi - lo + 1));
    const double x = ldexp((double)(hostref_rand(&rng) >> 11 | 1ull << 52), e - 52);
    return hostref_rand(&rng) & 1 ? -x : x;
}

/* n elements of one of several kinds. */
static void draw(double *xs, int n, int kind)
{
    for (int i = 0; i < n; i++) {
        switch (kind) {
        case 0: xs[i] = rand_double(-1074, 1023); break;                  /* the whole range */
        case 1: xs[i] = i % 2 ? -xs[i - 1] : rand_double(-10, 1000); break; /* cancellation */
        case 2: xs[i] = rand_double(-1074, -1000); break;                 /* subnormals */
        case 3: xs[i] = (float)rand_double(-149, 127); break;             /* float32 values */
        case 4: xs[i] = rand_double(1010, 1023); break;                   /* overflow or cancelling */
        default: xs[i] = hostref_rand_unit(&rng); break;
        }
    }
    if (kind == 1 && n > 2)
        xs[n - 1] = rand_double(-1074, 0); /* one small survivor */
    if (kind == 5 && n > 0) { /* specials */
        const double sp[] = {INFINITY, -INFINITY, NAN, -0.0, 0.0};
        xs[hostref_rand(&rng) % (uint64_t)n] = sp[hostref_rand(&rng) % 5];
    }
}

static void compare(const char *what, const gs_exact_acc *acc, const hostref_exact *ref)
{
    for (int k = 0; k < 4; k++) {
        uint64_t got = 0;
        CHECK(gs_exact_round(acc, outs[k], &got) == GS_SUCCESS, "%s: gs_exact_round: %s", what,
              gs_last_error_message());
        const uint64_t want = hostref_exact_round(ref, outs[k]);
        char g[64], w[64];
        hostref_exact_format(outs[k], got, g, sizeof g);
        hostref_exact_format(outs[k], want, w, sizeof w);
        CHECK(hostref_exact_same(outs[k], got, want), "%s, output %d: got %s, want %s", what, k, g, w);
    }
}

/* The kernels' last step (backends/common/exact.cuh, exact_finish) on the host: from a
 * normalised accumulator, the magnitude's digits by the parallel rule (above the lowest
 * nonzero digit complemented, that digit 2^32 - d), cut to the top four digits and a
 * sticky bit, rounded with gs_exact_round_mag; it must round as gs_exact_round does. */
static uint64_t round_like_the_kernel(const gs_exact_acc *a, gs_dtype out)
{
    uint64_t bits;
    if (gs_exact_round_special(a->nan, a->pos_inf, a->neg_inf, out, &bits))
        return bits;
    const int L = GS_EXACT_LIMBS, neg = a->limb[L - 1] < 0;
    uint32_t mag[GS_EXACT_LIMBS];
    int lo = L, hi = -1, sticky = 0;
    for (int i = 0; i < L; i++)
        if (neg && (uint32_t)a->limb[i] && lo == L)
            lo = i;
    for (int i = 0; i < L; i++) {
        const uint32_t d = (uint32_t)a->limb[i];
        mag[i] = !neg ? d : i < lo ? 0u : i == lo ? 0u - d : ~d;
        if (mag[i])
            hi = i;
    }
    if (hi < 0)
        return gs_exact_round_zero(a->count, a->sign_clear, out);
    for (int i = 0; i < hi - 3; i++)
        sticky |= mag[i] != 0;
    const int base = hi >= 3 ? hi - 3 : 0;
    uint32_t m[4] = {0, 0, 0, 0};
    for (int i = 0; base + i <= hi && i < 4; i++)
        m[i] = mag[base + i];
    m[0] |= base > 0 && sticky ? 1u : 0u;
    return gs_exact_round_mag(m, hi - base, base, neg, out);
}

static void random_cases(int rounds)
{
    enum { MAXN = 300 };
    double xs[MAXN];
    for (int r = 0; r < rounds; r++) {
        const int n = (int)(hostref_rand(&rng) % MAXN), kind = (int)(hostref_rand(&rng) % 6);
        draw(xs, n, kind);
        gs_exact_acc whole;
        hostref_exact ref;
        acc_of(xs, n, &whole, &ref);
        char what[64];
        snprintf(what, sizeof what, "round %d (kind %d, n %d), raw limbs", r, kind, n);
        compare(what, &whole, &ref);

        /* R shards: each normalised (combined into zero), then summed as int64 arrays,
         * and combined one by one with gs_exact_combine */
        const int R = 1 + (int)(hostref_rand(&rng) % 64);
        int64_t sum[GS_EXACT_ACC_WORDS] = {0};
        gs_exact_acc combined = {0};
        int at = 0;
        for (int s = 0; s < R; s++) {
            const int len = s == R - 1 ? n - at : (int)(hostref_rand(&rng) % (uint64_t)(n - at + 1));
            gs_exact_acc shard, norm = {0};
            hostref_exact shard_ref;
            acc_of(xs + at, len, &shard, &shard_ref);
            at += len;
            CHECK(gs_exact_combine(&norm, &shard) == GS_SUCCESS, "combine: %s", gs_last_error_message());
            for (int i = 0; i < GS_EXACT_LIMBS - 1; i++)
                CHECK(norm.limb[i] >= 0 && norm.limb[i] < (1ll << 32), "limb %d not normalised", i);
            const int64_t *w = (const int64_t *)&norm;
            for (int i = 0; i < GS_EXACT_ACC_WORDS; i++)
                sum[i] += w[i];
            CHECK(gs_exact_combine(&combined, &shard) == GS_SUCCESS, "combine: %s", gs_last_error_message());
        }
        gs_exact_acc summed;
        memcpy(&summed, sum, sizeof summed);
        snprintf(what, sizeof what, "round %d: %d shards summed as int64", r, R);
        compare(what, &summed, &ref);
        snprintf(what, sizeof what, "round %d: %d shards combined", r, R);
        compare(what, &combined, &ref);
        for (int k = 0; k < 4; k++) {
            uint64_t lib = 0;
            gs_exact_round(&combined, outs[k], &lib);
            const uint64_t kern = round_like_the_kernel(&combined, outs[k]);
            CHECK(kern == lib, "round %d, output %d: the kernels' rounding gives %" PRIx64 ", gs_exact_round %" PRIx64,
                  r, k, kern, lib);
        }
    }
}

static void edges(void)
{
    gs_exact_acc a = {0}, b = {0};
    uint64_t out;
    /* the same value in two representations: 2^32 moved from limb 10 to limb 9 */
    a.limb[10] = 5;
    b.limb[10] = 4;
    b.limb[9] = 1ll << 32;
    uint64_t x, y;
    gs_exact_round(&a, GS_FLOAT64, &x);
    gs_exact_round(&b, GS_FLOAT64, &y);
    CHECK(x == y, "equal values round differently: %" PRIx64 " %" PRIx64, x, y);
    /* extreme limbs: everything in the top limb, or INT64_MIN low down, still rounds */
    memset(&a, 0, sizeof a);
    a.limb[GS_EXACT_LIMBS - 1] = INT64_MIN;
    a.limb[0] = INT64_MAX;
    gs_exact_round(&a, GS_FLOAT64, &out);
    CHECK(out == 0xfff0000000000000ull, "INT64_MIN top limb: got %" PRIx64 ", want -inf", out);
    memset(&a, 0, sizeof a);
    a.limb[0] = INT64_MIN; /* -2^63 2^-1088 = -2^-1025, a subnormal; -0.0 in float32 */
    gs_exact_round(&a, GS_FLOAT64, &out);
    CHECK(out == 0x8002000000000000ull, "-2^-1025: got %" PRIx64, out);
    out = 0;
    gs_exact_round(&a, GS_FLOAT32, &out);
    CHECK(out == 0x80000000u, "-2^-1025 in float32: got %" PRIx64 ", want -0.0", out);
    /* 1.0 from the exponent of the least limb: 2^1088 in limb 34 */
    memset(&a, 0, sizeof a);
    a.limb[34] = 1;
    gs_exact_round(&a, GS_FLOAT64, &out);
    CHECK(out == 0x3ff0000000000000ull, "limb 34 = 1: got %" PRIx64 ", want 1.0", out);
    /* combine that would leave int64 fails and leaves acc alone */
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.limb[3] = INT64_MAX;
    b.limb[3] = 1;
    gs_exact_acc before = a;
    CHECK(gs_exact_combine(&a, &b) == GS_ERROR_INVALID_ARGUMENT, "overflowing combine accepted");
    CHECK(!memcmp(&a, &before, sizeof a), "a failed combine changed acc");
    memset(&a, 0, sizeof a);
    a.limb[GS_EXACT_LIMBS - 1] = INT64_MAX;
    a.limb[GS_EXACT_LIMBS - 2] = INT64_MAX;
    CHECK(gs_exact_combine(&a, &b) == GS_ERROR_INVALID_ARGUMENT, "top limb overflow accepted");
    /* arguments */
    CHECK(gs_exact_round(NULL, GS_FLOAT64, &out) == GS_ERROR_INVALID_ARGUMENT, "NULL acc");
    CHECK(gs_exact_round(&a, GS_FLOAT64, NULL) == GS_ERROR_INVALID_ARGUMENT, "NULL result");
    CHECK(gs_exact_round(&a, GS_INT32, &out) == GS_ERROR_INVALID_ARGUMENT, "int32 output");
    CHECK(gs_exact_round(&a, (gs_dtype)77, &out) == GS_ERROR_INVALID_ARGUMENT, "bad dtype");
    CHECK(gs_exact_combine(NULL, &b) == GS_ERROR_INVALID_ARGUMENT, "NULL acc");
    CHECK(gs_exact_combine(&a, NULL) == GS_ERROR_INVALID_ARGUMENT, "NULL other");
    /* signed zeros through the counts */
    memset(&a, 0, sizeof a);
    a.count = 3;
    gs_exact_round(&a, GS_FLOAT32, &out);
    CHECK((uint32_t)out == 0x80000000u, "three -0.0: got %" PRIx64, out);
    a.sign_clear = 1;
    out = 0;
    gs_exact_round(&a, GS_FLOAT32, &out);
    CHECK((uint32_t)out == 0, "a +0.0 among them: got %" PRIx64, out);
}

int main(void)
{
    const char *s = getenv("GS_TEST_SEED");
    rng = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)clock() << 32;
    printf("seed %" PRIu64 " (GS_TEST_SEED replays it)\n", rng);
    edges();
    random_cases(3000);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
