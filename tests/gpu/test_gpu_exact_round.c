/*
 * gpu suite: gs_exact_round_device (docs/semantics.md §12) against gs_exact_round on the
 * host, bit for bit, for every output type. Exits 77 only without a driver or a device.
 *
 * The accumulators: gs_reduce_ex(GS_REDUCE_EXACT_ACCUMULATOR) over random data of every
 * float type and every kind of exact_data.h, and hand-made ones that the kernels never
 * write but an application may (an all-reduce of them, its own arithmetic): NaN counts,
 * +inf, -inf and both, values that overflow float16 or every type, -0.0 (count > 0,
 * sign_clear == 0) and +0.0, cancelling and un-normalised limbs, negative counts, random
 * words. Each is rounded on a stream, at offsets of acc and out, with counts around a
 * block's 256 and a grid-stride's worth; then inside a captured CUDA graph (the recipe
 * reduce -> round on one stream, first calls of a fresh context) replayed on new data, with
 * no host wait inside it.
 * GS_TEST_SEED=<n> replays a run.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtype.h"
#include "gpu_check.h"
#include "graph_api.h"
#include "exact_data.h"

static int g_failures, g_checks;

enum { NMAX = 3000 };
static const gs_dtype kOut[4] = {GS_FLOAT16, GS_BFLOAT16, GS_FLOAT32, GS_FLOAT64};

#define CHECK_DRV(call)                                                                            \
    do {                                                                                           \
        CUresult rc_ = (call);                                                                     \
        if (rc_ != CUDA_SUCCESS) {                                                                 \
            fprintf(stderr, "FATAL %s:%d: %s: CUresult %d\n", __FILE__, __LINE__, #call, (int)rc_); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The low `size` bytes of result i in `out` (host byte order). */
static uint64_t result_at(const unsigned char *out, uint64_t i, size_t size)
{
    uint64_t v = 0;
    memcpy(&v, out + i * size, size);
    return v;
}

/* out[0 .. count) (device results read back into `got`) against gs_exact_round of each. */
static void compare(const char *what, const gs_exact_acc *acc, uint64_t count, gs_dtype t, const unsigned char *got)
{
    const size_t size = gs_dtype_size(t);
    int shown = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t want = 0;
        CHECK_GS(gs_exact_round(&acc[i], t, &want));
        const uint64_t g = result_at(got, i, size);
        g_checks++;
        if (g != want && shown++ < 5)
            FAIL("%s: accumulator %" PRIu64 " into %s: device 0x%" PRIx64 ", host 0x%" PRIx64 " (count %" PRId64
                 ", nan %" PRId64 ", +inf %" PRId64 ", -inf %" PRId64 ", sign_clear %" PRId64 ")",
                 what, i, gs_dtype_name(t), g, want, acc[i].count, acc[i].nan, acc[i].pos_inf, acc[i].neg_inf,
                 acc[i].sign_clear);
        else if (g != want)
            g_failures++;
    }
}

/* The hand-made accumulators, from accs[0] on; returns how many. */
static int hand_made(gs_exact_acc *accs)
{
    int k = 0;
    memset(accs, 0, 32 * sizeof *accs);
    accs[k].nan = 1, accs[k].count = 1, k++;                                   /* NaN */
    accs[k].nan = 5, accs[k].pos_inf = 2, accs[k].limb[40] = 7, k++;           /* NaN beats inf */
    accs[k].pos_inf = 3, accs[k].count = 3, accs[k].limb[34] = -9, k++;        /* +inf beats a value */
    accs[k].neg_inf = 1, accs[k].count = 1, k++;                               /* -inf */
    accs[k].pos_inf = 1, accs[k].neg_inf = 4, k++;                             /* both: NaN */
    accs[k].limb[34] = 1ll << 20, accs[k].count = 1, k++;                      /* 2^20: float16 overflows */
    accs[k].limb[34] = -(1ll << 20), accs[k].count = 1, k++;                   /* -2^20 */
    accs[k].limb[34] = 65520, accs[k].count = 2, k++;                          /* float16's rounding edge to inf */
    accs[k].limb[34] = 65519, accs[k].count = 2, k++;                          /* ... and just below it */
    accs[k].limb[GS_EXACT_LIMBS - 1] = 1ll << 30, accs[k].count = 1, k++;      /* beyond float64: inf */
    accs[k].limb[GS_EXACT_LIMBS - 1] = -(1ll << 30), accs[k].count = 1, k++;   /* -inf */
    accs[k].count = 4, accs[k].sign_clear = 0, k++;                            /* every element -0.0: -0.0 */
    accs[k].count = 4, accs[k].sign_clear = 1, k++;                            /* +0.0 */
    accs[k].count = 0, k++;                                                    /* nothing: +0.0 */
    accs[k].count = 3, accs[k].limb[10] = 1ll << 40, accs[k].limb[11] = -(1ll << 8), k++; /* cancels: -0.0 */
    accs[k].count = 3, accs[k].sign_clear = 2, accs[k].limb[10] = -(1ll << 40), accs[k].limb[11] = 1ll << 8, k++;
    accs[k].count = -5, accs[k].sign_clear = -1, k++;                          /* counts read as "> 0 or not" */
    accs[k].limb[0] = 1, accs[k].count = 1, k++;                               /* 2^-1088: below every subnormal */
    accs[k].limb[1] = 1ll << 17, accs[k].count = 1, k++;                       /* 2^-1039: a float64 subnormal */
    accs[k].limb[0] = 1ll << 13, accs[k].count = 1, k++;                       /* 2^-1075: a tie, to +0 (even) */
    accs[k].limb[0] = 1ll << 13 | 1, accs[k].count = 1, k++;                   /* ... above it: 2^-1074 */
    accs[k].limb[0] = 3ll << 13, accs[k].count = 1, k++;                       /* 3 * 2^-1075: a tie, up to 2^-1073 */
    /* 1 + half a unit in the last place of float16, bfloat16, float32, float64 (ties to 1),
     * and 1 + 1.5 units of float16's (a tie from an odd significand: up) */
    accs[k].limb[34] = 1, accs[k].limb[33] = 1ll << 21, accs[k].count = 2, k++;
    accs[k].limb[34] = 1, accs[k].limb[33] = 1ll << 24, accs[k].count = 2, k++;
    accs[k].limb[34] = 1, accs[k].limb[33] = 1ll << 8, accs[k].count = 2, k++;
    accs[k].limb[34] = 1, accs[k].limb[32] = 1ll << 11, accs[k].count = 2, k++;
    accs[k].limb[34] = 1, accs[k].limb[33] = 3ll << 21, accs[k].count = 2, k++;
    for (int i = 0; i < GS_EXACT_LIMBS; i++) /* un-normalised: every limb -1, so carries run the whole way */
        accs[k].limb[i] = -1;
    accs[k].count = 7, k++;
    for (int i = 0; i < GS_EXACT_LIMBS; i++) /* un-normalised: alternating extremes */
        accs[k].limb[i] = i % 2 ? INT64_MAX : INT64_MIN;
    accs[k].count = 9, k++;
    for (int i = 0; i < GS_EXACT_LIMBS; i++)
        accs[k].limb[i] = INT64_MAX;
    accs[k].count = 1, k++;
    return k;
}

/* Random words: limbs of any int64 size near a random exponent, or all of them. */
static void random_acc(gs_exact_acc *a)
{
    memset(a, 0, sizeof *a);
    const int form = (int)(rnd() % 4);
    if (form == 0) {
        for (int w = 0; w < GS_EXACT_ACC_WORDS; w++)
            ((int64_t *)a)[w] = (int64_t)rnd();
        return;
    }
    const int at = (int)(rnd() % GS_EXACT_LIMBS), spread = 1 + (int)(rnd() % 4);
    for (int i = at; i < at + spread && i < GS_EXACT_LIMBS; i++)
        a->limb[i] = form == 1 ? (int64_t)rnd() : form == 2 ? (int64_t)(rnd() & 0xffffffffu) : -(int64_t)(rnd() >> 20);
    a->count = (int64_t)(rnd() % 3);
    a->sign_clear = (int64_t)(rnd() % 2);
    if (rnd() % 16 == 0)
        a->nan = 1;
    if (rnd() % 16 == 0)
        a->pos_inf = 1;
    if (rnd() % 16 == 0)
        a->neg_inf = 1;
}

/* Accumulators gs_reduce_ex writes, over random data of every type and kind. */
static int from_data(gs_context *ctx, gs_exact_acc *accs, cushim_ptr dacc, cushim_ptr dbuf, unsigned char *host,
                     uint64_t cap)
{
    int k = 0;
    for (int d = 0; d < 4; d++) {
        const gs_dtype t = kIn[d];
        for (int kind = 0; kind < NKINDS; kind++) {
            for (int rep = 0; rep < 3; rep++) {
                const uint64_t n = rep == 0 ? 1 : 1 + rnd() % (cap / 8);
                fill(t, t, kind, host, n);
                CHECK_CU(cushim_h2d(dbuf, host, n * gs_dtype_size(t)));
                const gs_reduce_options o = {.struct_size = sizeof o, .out_dtype = GS_OUT_DEFAULT,
                                             .flags = GS_REDUCE_EXACT_ACCUMULATOR};
                CHECK_GS(gs_reduce_ex(ctx, (const void *)(uintptr_t)dbuf, n, t, GS_OP_SUM,
                                      (void *)(uintptr_t)(dacc + (cushim_ptr)k * sizeof(gs_exact_acc)), NULL, &o));
                k++;
            }
        }
    }
    CHECK_CU(cushim_d2h(accs, dacc, (size_t)k * sizeof *accs));
    return k;
}

/* Rounds acc[first .. first + count) into out + out_shift results, on stream s, for every
 * output type, and compares; the rest of out keeps its poison. */
static void round_and_compare(gs_context *ctx, const char *what, const gs_exact_acc *accs, cushim_ptr dacc,
                              uint64_t first, uint64_t count, cushim_ptr dout, unsigned char *got, cushim_stream s)
{
    for (int o = 0; o < 4; o++) {
        const gs_dtype t = kOut[o];
        const size_t size = gs_dtype_size(t);
        const uint64_t shift = 1 + rnd() % 3;
        CHECK_CU(cushim_memset8(dout, 0xa5, (count + 4) * size));
        CHECK_GS(gs_exact_round_device(ctx, (const gs_exact_acc *)(uintptr_t)(dacc + first * sizeof(gs_exact_acc)),
                                       count, t, (void *)(uintptr_t)(dout + shift * size), (gs_stream)s));
        CHECK_CU(cushim_stream_sync(s));
        CHECK_CU(cushim_d2h(got, dout, (count + 4) * size));
        compare(what, accs + first, count, t, got + shift * size);
        int poisoned = 1;
        for (size_t b = 0; b < shift * size; b++)
            poisoned &= got[b] == 0xa5;
        for (size_t b = (shift + count) * size; b < (count + 4) * size; b++)
            poisoned &= got[b] == 0xa5;
        CHECK(poisoned, "%s into %s: a byte outside out[0 .. %" PRIu64 ") was written", what, gs_dtype_name(t),
              count);
    }
}

/* The recipe in a graph: gs_reduce_ex's accumulators of several inputs, then one rounding
 * of them all, captured once on one stream (in global mode, the strictest) and replayed on
 * new data with nothing between the two but the stream's order. ctx is fresh, so the exact
 * module is loaded and the rounding kernel looked up inside the capture. */
static void graph(gs_context *ctx, cushim_ptr dbuf, unsigned char *host, cushim_stream s)
{
    enum { PARTS = 6, PART = 4096 };
    gpu_graph_api g;
    gpu_graph_api_load(&g);
    cushim_ptr dacc, dout[4];
    CHECK_CU(cushim_alloc(&dacc, PARTS * sizeof(gs_exact_acc)));
    for (int o = 0; o < 4; o++)
        CHECK_CU(cushim_alloc(&dout[o], PARTS * 8));
    const gs_reduce_options opt = {.struct_size = sizeof opt, .out_dtype = GS_OUT_DEFAULT,
                                   .flags = GS_REDUCE_EXACT_ACCUMULATOR};
    CHECK_DRV(g.StreamBeginCapture((CUstream)s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int p = 0; p < PARTS; p++)
        CHECK_GS(gs_reduce_ex(ctx, (const void *)(uintptr_t)(dbuf + (cushim_ptr)p * PART * 4), PART, GS_FLOAT32,
                              GS_OP_SUM, (void *)(uintptr_t)(dacc + (cushim_ptr)p * sizeof(gs_exact_acc)),
                              (gs_stream)s, &opt));
    for (int o = 0; o < 4; o++)
        CHECK_GS(gs_exact_round_device(ctx, (const gs_exact_acc *)(uintptr_t)dacc, PARTS, kOut[o],
                                       (void *)(uintptr_t)dout[o], (gs_stream)s));
    CUgraph graph;
    CUgraphExec exec;
    CHECK_DRV(g.StreamEndCapture((CUstream)s, &graph));
    CHECK_DRV(g.GraphInstantiateWithFlags(&exec, graph, 0));
    static gs_exact_acc accs[PARTS];
    static unsigned char got[PARTS * 8];
    for (int replay = 0; replay < 4; replay++) {
        const int kind = (int)(rnd() % NKINDS);
        fill(GS_FLOAT32, GS_FLOAT32, kind, host, (uint64_t)PARTS * PART);
        CHECK_CU(cushim_h2d(dbuf, host, (size_t)PARTS * PART * 4));
        for (int o = 0; o < 4; o++)
            CHECK_CU(cushim_memset8(dout[o], 0xa5, PARTS * 8));
        CHECK_DRV(g.GraphLaunch(exec, (CUstream)s));
        CHECK_CU(cushim_stream_sync(s));
        CHECK_CU(cushim_d2h(accs, dacc, sizeof accs));
        for (int p = 0; p < PARTS; p++)
            CHECK(accs[p].count == PART, "graph replay %d: accumulator %d counts %" PRId64, replay, p, accs[p].count);
        for (int o = 0; o < 4; o++) {
            CHECK_CU(cushim_d2h(got, dout[o], PARTS * gs_dtype_size(kOut[o])));
            char what[48];
            snprintf(what, sizeof what, "graph replay %d (%s data)", replay, kKind[kind]);
            compare(what, accs, PARTS, kOut[o], got);
        }
    }
    CHECK_DRV(g.GraphExecDestroy(exec));
    CHECK_DRV(g.GraphDestroy(graph));
    cushim_free(dacc);
    for (int o = 0; o < 4; o++)
        cushim_free(dout[o]);
}

int main(void)
{
    const char *seed = getenv("GS_TEST_SEED");
    g_rng = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)clock();
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("seed %" PRIu64 " (GS_TEST_SEED replays it)\n", g_rng);
    gpu_test_init();
    gs_context *ctx;
    CHECK_GS(gs_context_create(0, &ctx));
    gs_context_info info = {.struct_size = sizeof info};
    CHECK_GS(gs_context_get_info(ctx, &info));
    printf("device %s, backend %s\n", info.device_name, info.backend_name);

    const uint64_t cap = 6 * 4096 * 4; /* the graph's input; the data's too */
    static gs_exact_acc accs[NMAX];
    static unsigned char got[(NMAX + 4) * 8];
    unsigned char *host = malloc(cap);
    cushim_ptr dbuf, dacc, dout;
    CHECK_CU(cushim_alloc(&dbuf, cap));
    CHECK_CU(cushim_alloc(&dacc, sizeof accs));
    CHECK_CU(cushim_alloc(&dout, sizeof got));
    cushim_stream s;
    CHECK_CU(cushim_stream_create(&s));
    if (!host) {
        fprintf(stderr, "FATAL: out of host memory\n");
        return 1;
    }

    /* [0, k): gs_reduce_ex's; then the hand-made ones; the rest random words. */
    int k = from_data(ctx, accs, dacc, dbuf, host, cap);
    const int data_end = k;
    k += hand_made(accs + k);
    const int hand_end = k;
    while (k < NMAX)
        random_acc(&accs[k++]);
    CHECK_CU(cushim_h2d(dacc, accs, sizeof accs));

    round_and_compare(ctx, "gs_reduce_ex's accumulators", accs, dacc, 0, (uint64_t)data_end, dout, got, s);
    round_and_compare(ctx, "hand-made accumulators", accs, dacc, (uint64_t)data_end, (uint64_t)(hand_end - data_end),
                      dout, got, NULL);
    /* counts around a block, and every accumulator (past one grid's worth on small GPUs) */
    static const uint64_t counts[] = {1, 255, 256, 257, NMAX - 1};
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
        const uint64_t first = counts[c] == NMAX - 1 ? 1 : rnd() % (NMAX - counts[c]);
        char what[64];
        snprintf(what, sizeof what, "%" PRIu64 " accumulators from %" PRIu64, counts[c], first);
        round_and_compare(ctx, what, accs, dacc, first, counts[c], dout, got, s);
    }
    /* count == 0 queues nothing, whatever the pointers */
    CHECK(gs_exact_round_device(ctx, NULL, 0, GS_FLOAT32, NULL, (gs_stream)s) == GS_SUCCESS, "count 0: %s",
          gs_last_error_message());
    gs_context *fresh;
    CHECK_GS(gs_context_create(0, &fresh));
    graph(fresh, dbuf, host, s);
    CHECK_GS(gs_context_destroy(fresh));

    CHECK_CU(cushim_stream_destroy(s));
    cushim_free(dbuf);
    cushim_free(dacc);
    cushim_free(dout);
    free(host);
    gs_context_destroy(ctx);
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
