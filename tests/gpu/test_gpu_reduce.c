/*
 * gpu suite: gs_reduce against a host reference on fresh random data.
 *
 * Exits 77 (skipped) only when there is no CUDA driver or no device; any other failure
 * is a failure. The backend is whatever GRIDSYNC_BACKEND says (meson runs this once per
 * backend and once with none). The seed is printed; GS_TEST_SEED=<n> replays a run.
 *
 * What it checks, per dtype x op the issue requires:
 *  - sizes 0 (identity), 1, 2, 31..33, 255..257, 1000, 4097, 65537, 2^20+3, 2^24+7, 2^26+1,
 *    at input offsets of 0..3 elements from an allocation (the misaligned head and tail);
 *  - floats twice: integer-valued data, whose sums are exact, so a dropped or doubled
 *    element is caught at any n; and mixed sign and magnitude, within n*eps*sum|x|;
 *  - MIN/MAX exactly, and NaN propagation;
 *  - the output is poisoned before every launch, so an unwritten result fails;
 *  - many launches queued back to back on one stream (the counter must reset itself);
 *  - the same reduction on the legacy, per-thread and two created streams, explicit and
 *    default (NULL) context;
 *  - a float SUM repeated 100 times gives identical bits.
 */
#define _GNU_SOURCE
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cudashim.h"
#include "gridsync.h"

static unsigned long long g_rng;
static int g_failures, g_checks;
/* GS_TEST_QUICK=1: small sizes and few repeats, for runs under compute-sanitizer. */
static int g_quick;

static uint64_t rnd(void)
{
    /* splitmix64 */
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rnd_unit(void) /* [-1, 1) */
{
    return (double)(rnd() >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

#define FAIL(...)                                                            \
    do {                                                                     \
        g_failures++;                                                        \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                 \
        fprintf(stderr, __VA_ARGS__);                                        \
        fputc('\n', stderr);                                                 \
    } while (0)

#define CHECK_CU(call)                                                                 \
    do {                                                                               \
        if ((call) != 0) {                                                             \
            fprintf(stderr, "FATAL %s:%d: %s: %s\n", __FILE__, __LINE__, #call,        \
                    cushim_error());                                                   \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

#define CHECK_GS(call)                                                                          \
    do {                                                                                        \
        gs_status st_ = (call);                                                                 \
        if (st_ != GS_SUCCESS) {                                                                \
            fprintf(stderr, "FATAL %s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,             \
                    gs_status_string(st_), gs_last_error_message());                            \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

typedef enum { DATA_INT, DATA_MIXED } data_kind;

static size_t dsize(gs_dtype t)
{
    return t == GS_FLOAT64 ? 8 : 4;
}

static const char *dname(gs_dtype t)
{
    return t == GS_INT32 ? "i32" : t == GS_FLOAT32 ? "f32" : "f64";
}

static const char *oname(gs_op o)
{
    return o == GS_OP_SUM ? "sum" : o == GS_OP_MIN ? "min" : "max";
}

/* Fills n elements. Integers in [-1000, 1000] (SUM of 2^26 of them wraps int32: the
 * reference wraps too). Floats: DATA_INT = integers in [-8, 8] (every partial sum exact);
 * DATA_MIXED = mixed sign, magnitudes 2^-10 .. 2^10. */
static void fill(void *buf, size_t n, gs_dtype t, data_kind kind)
{
    for (size_t i = 0; i < n; i++) {
        double v = kind == DATA_INT ? (double)((int64_t)(rnd() % 17) - 8) : rnd_unit() * ldexp(1.0, (int)(rnd() % 21) - 10);
        switch (t) {
        case GS_INT32: ((int32_t *)buf)[i] = (int32_t)(rnd() % 2001) - 1000; break;
        case GS_FLOAT32: ((float *)buf)[i] = (float)v; break;
        default: ((double *)buf)[i] = v; break;
        }
    }
}

static long double get(const void *buf, size_t i, gs_dtype t)
{
    switch (t) {
    case GS_INT32: return ((const int32_t *)buf)[i];
    case GS_FLOAT32: return ((const float *)buf)[i];
    default: return ((const double *)buf)[i];
    }
}

/* Checks the device result `got` (dsize(t) bytes) of op over buf[0..n). */
static void verify(const char *what, const void *buf, size_t n, gs_dtype t, gs_op op, data_kind kind, const void *got)
{
    g_checks++;
    if (t == GS_INT32) {
        int32_t r = *(const int32_t *)got;
        uint32_t sum = 0;
        int32_t mn = INT32_MAX, mx = INT32_MIN;
        for (size_t i = 0; i < n; i++) {
            int32_t v = ((const int32_t *)buf)[i];
            sum += (uint32_t)v; /* two's complement wrap, as documented */
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
        int32_t want = op == GS_OP_SUM ? (int32_t)sum : op == GS_OP_MIN ? mn : mx;
        if (r != want)
            FAIL("%s: got %" PRId32 ", want %" PRId32, what, r, want);
        return;
    }
    long double r = t == GS_FLOAT32 ? (long double)*(const float *)got : (long double)*(const double *)got;
    if (op == GS_OP_SUM) {
        long double sum = 0, abssum = 0;
        for (size_t i = 0; i < n; i++) {
            long double v = get(buf, i, t);
            sum += v;
            abssum += fabsl(v);
        }
        long double eps = t == GS_FLOAT32 ? FLT_EPSILON : DBL_EPSILON;
        long double bound = kind == DATA_INT ? 0 : (long double)n * eps * abssum;
        if (!(fabsl(r - sum) <= bound))
            FAIL("%s: got %.17Lg, want %.17Lg (|diff| %.3Lg > bound %.3Lg)", what, r, sum, fabsl(r - sum), bound);
        return;
    }
    int has_nan = 0;
    long double best = op == GS_OP_MIN ? INFINITY : -INFINITY;
    for (size_t i = 0; i < n; i++) {
        long double v = get(buf, i, t);
        if (v != v)
            has_nan = 1;
        else if (op == GS_OP_MIN ? v < best : v > best)
            best = v;
    }
    if (has_nan ? !(r != r) : r != best)
        FAIL("%s: got %.17Lg, want %.17Lg", what, r, has_nan ? (long double)NAN : best);
}

static const gs_dtype k_types[] = {GS_INT32, GS_FLOAT32, GS_FLOAT64};
static const gs_op k_ops[] = {GS_OP_SUM, GS_OP_MIN, GS_OP_MAX};
static const size_t k_sizes[] = {0, 1, 2, 31, 32, 33, 255, 256, 257, 1000, 4097, 65537,
                                 (1u << 20) + 3, (1u << 24) + 7, (1u << 26) + 1};
#define MAX_N ((size_t)(1u << 26) + 1 + 8)
static size_t g_maxn = MAX_N; /* elements filled and copied; smaller in quick mode */
#define POISON 0xA5

/* One reduction of host data `h` (already on the device at `d`), poisoned output. */
static void run_case(gs_context *ctx, cushim_ptr d, const void *h, size_t off, size_t n, gs_dtype t, gs_op op,
                     data_kind kind, cushim_ptr dout, cushim_stream s)
{
    const size_t es = dsize(t);
    unsigned char got[8];
    CHECK_CU(cushim_memset8(dout, POISON, 8));
    CHECK_GS(gs_reduce(ctx, (const void *)(uintptr_t)(d + off * es), n, t, op, (void *)(uintptr_t)dout, s));
    CHECK_CU(cushim_stream_sync(s));
    CHECK_CU(cushim_d2h(got, dout, es));
    char what[160];
    snprintf(what, sizeof what, "%s %s n=%zu offset=%zu data=%s", dname(t), oname(op), n, off,
             kind == DATA_INT ? "int" : "mixed");
    verify(what, (const unsigned char *)h + off * es, n, t, op, kind, got);
}

static void test_matrix(gs_context *ctx, cushim_ptr d, void *h, cushim_ptr dout)
{
    for (size_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ti++) {
        gs_dtype t = k_types[ti];
        for (int kind = DATA_INT; kind <= (t == GS_INT32 ? DATA_INT : DATA_MIXED); kind++) {
            /* fresh data for each dtype and kind; windows at different offsets into it */
            fill(h, g_maxn, t, (data_kind)kind);
            CHECK_CU(cushim_h2d(d, h, g_maxn * dsize(t)));
            for (size_t si = 0; si < sizeof k_sizes / sizeof k_sizes[0]; si++) {
                size_t n = k_sizes[si];
                if (g_quick && n > 70000)
                    break;
                size_t noff = n > (1u << 20) ? 2 : 4; /* offsets 0..3; 0..1 for the largest */
                for (size_t off = 0; off < noff; off++)
                    for (size_t oi = 0; oi < sizeof k_ops / sizeof k_ops[0]; oi++)
                        run_case(ctx, d, h, off, n, t, k_ops[oi], (data_kind)kind, dout, NULL);
            }
        }
    }
}

/* NaN anywhere makes MIN/MAX NaN; infinities are ordinary values. */
static void test_nan(gs_context *ctx, cushim_ptr d, void *h, cushim_ptr dout)
{
    const size_t sizes[] = {1, 257, 65537, (1u << 20) + 3};
    for (size_t si = 0; si < (g_quick ? 3u : 4u); si++) {
        size_t n = sizes[si];
        for (int ti = 1; ti < 3; ti++) {
            gs_dtype t = k_types[ti];
            fill(h, n, t, DATA_MIXED);
            size_t pos = rnd() % n;
            if (t == GS_FLOAT32)
                ((float *)h)[pos] = NAN;
            else
                ((double *)h)[pos] = NAN;
            CHECK_CU(cushim_h2d(d, h, n * dsize(t)));
            run_case(ctx, d, h, 0, n, t, GS_OP_MIN, DATA_MIXED, dout, NULL);
            run_case(ctx, d, h, 0, n, t, GS_OP_MAX, DATA_MIXED, dout, NULL);
        }
    }
}

/* Many launches queued on one stream without a host sync in between, each into its own
 * output: every one must be right, so the last block must leave the counter at 0. */
static void test_back_to_back(gs_context *ctx, cushim_ptr d, void *h)
{
    enum { K = 64 };
    cushim_ptr outs;
    CHECK_CU(cushim_alloc(&outs, K * 8));
    CHECK_CU(cushim_memset8(outs, POISON, K * 8));
    size_t n[K];
    fill(h, g_maxn, GS_FLOAT32, DATA_INT);
    CHECK_CU(cushim_h2d(d, h, g_maxn * 4));
    for (int k = 0; k < K; k++) {
        n[k] = 1 + rnd() % (k % 2 && !g_quick ? (1u << 22) : 5000);
        CHECK_GS(gs_reduce(ctx, (const void *)(uintptr_t)(d + 4 * (size_t)k), n[k], GS_FLOAT32, GS_OP_SUM,
                           (void *)(uintptr_t)(outs + 8 * (size_t)k), NULL));
    }
    CHECK_CU(cushim_ctx_sync());
    float got[K * 2];
    CHECK_CU(cushim_d2h(got, outs, K * 8));
    for (int k = 0; k < K; k++) {
        char what[96];
        snprintf(what, sizeof what, "back-to-back #%d f32 sum n=%zu", k, n[k]);
        verify(what, (const float *)h + k, n[k], GS_FLOAT32, GS_OP_SUM, DATA_INT, &got[2 * k]);
    }
    CHECK_CU(cushim_free(outs));
}

/* The same input on several streams, explicit and default context. */
static void test_streams(gs_context *ctx, cushim_ptr d, void *h, cushim_ptr dout)
{
    cushim_stream s1, s2;
    CHECK_CU(cushim_stream_create(&s1));
    CHECK_CU(cushim_stream_create(&s2));
    const size_t n = g_quick ? 100005 : (1u << 22) + 5;
    fill(h, n, GS_INT32, DATA_INT);
    CHECK_CU(cushim_h2d(d, h, n * 4));
    cushim_stream streams[] = {NULL, (cushim_stream)0x2 /* per-thread default */, s1, s2};
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 4; i++)
            run_case(c ? NULL : ctx, d, h, 0, n, GS_INT32, GS_OP_SUM, DATA_INT, dout, streams[i]);
    CHECK_CU(cushim_stream_destroy(s1));
    CHECK_CU(cushim_stream_destroy(s2));
}

/* Two long reductions on two streams at once: a shared counter would mix them up. */
static void test_overlap(gs_context *ctx, cushim_ptr d, void *h)
{
    const size_t n = g_quick ? 200003 : (1u << 26) + 1;
    cushim_stream s[2];
    cushim_ptr outs;
    CHECK_CU(cushim_alloc(&outs, 16));
    fill(h, g_maxn, GS_FLOAT32, DATA_INT);
    CHECK_CU(cushim_h2d(d, h, g_maxn * 4));
    for (int rep = 0; rep < (g_quick ? 2 : 10); rep++) {
        CHECK_CU(cushim_memset8(outs, POISON, 16));
        for (int i = 0; i < 2; i++) {
            CHECK_CU(cushim_stream_create(&s[i]));
            CHECK_GS(gs_reduce(ctx, (const void *)(uintptr_t)(d + 4 * (size_t)(i * 3)), n, GS_FLOAT32,
                               i ? GS_OP_SUM : GS_OP_MAX, (void *)(uintptr_t)(outs + 8 * (size_t)i), s[i]));
        }
        float got[4];
        CHECK_CU(cushim_ctx_sync());
        CHECK_CU(cushim_d2h(got, outs, 16));
        verify("overlap max", h, n, GS_FLOAT32, GS_OP_MAX, DATA_INT, &got[0]);
        verify("overlap sum", (const float *)h + 3, n, GS_FLOAT32, GS_OP_SUM, DATA_INT, &got[2]);
        for (int i = 0; i < 2; i++)
            CHECK_CU(cushim_stream_destroy(s[i]));
    }
    CHECK_CU(cushim_free(outs));
}

/* Run-to-run determinism of a float SUM whose rounding depends on the combine order. */
static void test_determinism(gs_context *ctx, cushim_ptr d, void *h, cushim_ptr dout)
{
    const size_t n = g_quick ? 100003 : (1u << 24) + 7;
    for (int ti = 1; ti < 3; ti++) {
        gs_dtype t = k_types[ti];
        fill(h, n, t, DATA_MIXED);
        CHECK_CU(cushim_h2d(d, h, n * dsize(t)));
        unsigned char first[8], got[8];
        for (int rep = 0; rep < (g_quick ? 5 : 100); rep++) {
            CHECK_CU(cushim_memset8(dout, POISON, 8));
            CHECK_GS(gs_reduce(ctx, (const void *)(uintptr_t)d, n, t, GS_OP_SUM, (void *)(uintptr_t)dout, NULL));
            CHECK_CU(cushim_d2h(got, dout, dsize(t)));
            if (rep == 0) {
                memcpy(first, got, 8);
                verify("determinism first run", h, n, t, GS_OP_SUM, DATA_MIXED, got);
            } else if (memcmp(first, got, dsize(t)) != 0) {
                FAIL("%s sum n=%zu: run %d differs bitwise from run 0", dname(t), n, rep);
                break;
            }
            g_checks++;
        }
    }
}

int main(void)
{
    cushim_status cs = cushim_init(0);
    if (cs == CUSHIM_NO_DRIVER || cs == CUSHIM_NO_DEVICE) {
        printf("SKIP: %s\n", cushim_error());
        return 77;
    }
    if (cs != CUSHIM_OK) {
        fprintf(stderr, "FATAL: %s\n", cushim_error());
        return 1;
    }
    g_quick = getenv("GS_TEST_QUICK") && atoi(getenv("GS_TEST_QUICK"));
    if (g_quick)
        g_maxn = 300000;
    const char *seed_env = getenv("GS_TEST_SEED");
    g_rng = seed_env ? strtoull(seed_env, NULL, 0) : (unsigned long long)time(NULL) ^ ((unsigned long long)clock() << 32);
    printf("seed %llu (GS_TEST_SEED=%llu replays it)\n", g_rng, g_rng);

    gs_context *ctx;
    CHECK_GS(gs_context_create(0, &ctx));
    gs_context_info info = {.struct_size = sizeof info};
    CHECK_GS(gs_context_get_info(ctx, &info));
    printf("device %d: %s, compute capability %d.%d, backend %s (%s)\n", info.device, info.device_name,
           info.cc_major, info.cc_minor, info.backend_name, info.backend_path);
    const char *forced = getenv("GRIDSYNC_BACKEND");
    if (forced && *forced && forced[0] != '/' && strcmp(forced, info.backend_name) != 0)
        FAIL("GRIDSYNC_BACKEND=%s but the context runs %s", forced, info.backend_name);
    if ((!forced || !*forced) && info.cc_major >= 2 && strcmp(info.backend_name, "cuda_sm20") != 0)
        FAIL("compute capability %d.%d should pick cuda_sm20, got %s", info.cc_major, info.cc_minor,
             info.backend_name);

    /* The host buffer is filled whole each time; quick mode keeps it small. */
    void *h = malloc(MAX_N * 8);
    cushim_ptr d, dout;
    if (!h) {
        fprintf(stderr, "FATAL: out of host memory\n");
        return 1;
    }
    CHECK_CU(cushim_alloc(&d, MAX_N * 8));
    CHECK_CU(cushim_alloc(&dout, 8));

    struct {
        const char *name;
        void (*fn)(gs_context *, cushim_ptr, void *, cushim_ptr);
    } parts[] = {{"matrix", test_matrix}, {"nan", test_nan}, {"streams", test_streams},
                 {"determinism", test_determinism}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        int before = g_failures, checks = g_checks;
        parts[i].fn(ctx, d, h, dout);
        printf("%-12s %5d checks, %d failed\n", parts[i].name, g_checks - checks, g_failures - before);
    }
    int before = g_failures, checks = g_checks;
    test_back_to_back(ctx, d, h);
    printf("%-12s %5d checks, %d failed\n", "back-to-back", g_checks - checks, g_failures - before);
    before = g_failures, checks = g_checks;
    test_overlap(ctx, d, h);
    printf("%-12s %5d checks, %d failed\n", "overlap", g_checks - checks, g_failures - before);

    CHECK_CU(cushim_free(d));
    CHECK_CU(cushim_free(dout));
    CHECK_GS(gs_context_destroy(ctx));
    free(h);
    printf("backend %s: %d checks, %d failed\n", info.backend_name, g_checks, g_failures);
    return g_failures ? 1 : 0;
}
