/*
 * gpu suite: gs_scan with GS_SCAN_EXACT (docs/semantics.md §13) bit for bit against
 * hostref_scan_exact, the oracle built on hostref's own big integer. Exits 77 only without
 * a driver or a device.
 *
 *  matrix   every (input, output) pair, inclusive and exclusive, every kind of
 *           exact_data.h (the whole exponent range, cancellation, subnormals, ties,
 *           signed zeros, NaN and infinities, one sign over 60 binades) and normal data, at
 *           sizes around a tile and the ring; in/out misaligned by an element; in place;
 *           the elements' total accumulator each time.
 *  carry    carry-ins: one, two and three accumulators of random data (gs_reduce_ex), and
 *           hand-made ones (NaN, -0.0, beyond float64's range); n == 0 with a total.
 *  grids    the same inputs on contexts of 1, 3 and 64 blocks, both backends.
 *  graph    the exact scan captured once and replayed on new data.
 *  large    2^24 float32 (2^20 in quick mode), and float64 over its whole range (the widest
 *           width, one block): bitwise, with their time.
 * GS_TEST_SEED=<n> replays a run; GS_TEST_QUICK=1 keeps it short.
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
#include "exact_ref.h"
#include "hostref.h"

static int g_failures, g_checks, g_quick;
enum { GUARD = 16 };
static const struct {
    gs_dtype in, out;
} kPairs[7] = {{GS_FLOAT16, GS_FLOAT16}, {GS_FLOAT16, GS_FLOAT32}, {GS_BFLOAT16, GS_BFLOAT16}, {GS_BFLOAT16, GS_FLOAT32},
               {GS_FLOAT32, GS_FLOAT32}, {GS_FLOAT32, GS_FLOAT64}, {GS_FLOAT64, GS_FLOAT64}};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The buffers one case uses: input, output (with room for shifts and the guard), carry-in
 * accumulators, the total; host copies of the results. */
typedef struct bufs {
    cushim_ptr din, dout, dcarry, dtotal;
    unsigned char *in, *want, *got;
    uint64_t cap;
} bufs;

/* One exact scan of h_in (n elements of c's input type; NULL: keep din) with `carry`
 * (ncarry accumulators, also at b->dcarry), out shifted by out_off elements, in place when
 * in_place; checks out[0, n), the guard after it and the total against hostref. */
static int scan_case(gs_context *ctx, bufs *b, gs_dtype in, gs_dtype out, int exclusive, uint64_t n, unsigned in_off,
                     unsigned out_off, int in_place, const gs_exact_acc *carry, uint64_t ncarry, const char *what,
                     cushim_stream s)
{
    const size_t isz = gs_dtype_size(in), osz = gs_dtype_size(out);
    gs_exact_acc want_total, got_total;
    if (hostref_scan_exact(b->in, n, in, out, exclusive, carry, ncarry, b->want, &want_total) != 0) {
        FAIL("%s: hostref_scan_exact refused the case", what);
        return 0;
    }
    CHECK_CU(cushim_memset8(b->dout, 0xA5, (out_off + n + GUARD) * osz));
    CHECK_CU(cushim_memset8(b->dtotal, 0xA5, sizeof(gs_exact_acc)));
    cushim_ptr dst = b->dout + (cushim_ptr)out_off * osz, src = b->din + (cushim_ptr)in_off * isz;
    if (in_place)
        src = dst;
    if (n)
        CHECK_CU(cushim_h2d(src, b->in, n * isz));
    gs_scan_options o = {.struct_size = sizeof o, .out_dtype = out,
                         .flags = GS_SCAN_EXACT | (exclusive ? GS_SCAN_EXCLUSIVE : 0u)};
    o.carry_in = ncarry ? (const gs_exact_acc *)(uintptr_t)b->dcarry : NULL;
    o.carry_in_count = ncarry;
    o.total = (gs_exact_acc *)(uintptr_t)b->dtotal;
    const gs_status st = gs_scan(ctx, n ? (const void *)(uintptr_t)src : NULL, n, in, GS_OP_SUM,
                                 n ? (void *)(uintptr_t)dst : NULL, (gs_stream)s, &o);
    g_checks++;
    if (st != GS_SUCCESS) {
        FAIL("%s: gs_scan: %s (%s)", what, gs_status_string(st), gs_last_error_message());
        return 0;
    }
    CHECK_CU(cushim_stream_sync(s));
    CHECK_CU(cushim_d2h(b->got, dst, (n + GUARD) * osz));
    CHECK_CU(cushim_d2h(&got_total, b->dtotal, sizeof got_total));
    int ok = 1, shown = 0; /* FAIL counts each message */
    for (uint64_t i = 0; i < n; i++) {
        if (memcmp(b->got + i * osz, b->want + i * osz, osz) != 0) {
            ok = 0;
            if (shown++ < 3) {
                uint64_t g = 0, w = 0;
                memcpy(&g, b->got + i * osz, osz);
                memcpy(&w, b->want + i * osz, osz);
                FAIL("%s: %s -> %s n=%" PRIu64 "%s: out[%" PRIu64 "] = 0x%" PRIx64 ", want 0x%" PRIx64, what,
                     gs_dtype_name(in), gs_dtype_name(out), n, exclusive ? " exclusive" : "", i, g, w);
            }
        }
    }
    for (size_t k = n * osz; k < (n + GUARD) * osz; k++)
        if (b->got[k] != 0xA5) {
            FAIL("%s: a byte past out[%" PRIu64 ") was written", what, n);
            ok = 0;
            break;
        }
    if (memcmp(&got_total, &want_total, sizeof got_total) != 0) {
        FAIL("%s: %s n=%" PRIu64 ": the total differs (count %" PRId64 " vs %" PRId64 ")", what, gs_dtype_name(in),
             n, got_total.count, want_total.count);
        ok = 0;
    }
    return ok;
}

static void fill_normal(gs_dtype t, void *data, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        hostref_store(t, data, i, (hostref_rand_unit(&g_rng) + hostref_rand_unit(&g_rng)) * 8.0);
}

static void test_matrix(gs_context *ctx, bufs *b, cushim_stream s)
{
    const uint64_t sizes[] = {1, 2, 33, 4095, 4097, 70001, 1500007};
    const int nsizes = g_quick ? 6 : 7; /* quick: within the suite's time budget */
    const int before = g_failures, checks = g_checks;
    for (int p = 0; p < 7; p++)
        for (int kind = -1; kind < NKINDS; kind++)
            for (int si = 0; si < nsizes; si++) {
                const uint64_t n = sizes[si];
                if (kind >= 0 && si == 6 && (kind % 3) != 0) /* the largest for a few kinds */
                    continue;
                if (kind < 0)
                    fill_normal(kPairs[p].in, b->in, n);
                else
                    fill(kPairs[p].in, kPairs[p].out, kind, b->in, n);
                const int excl = (int)(rnd() % 2), in_off = (int)(rnd() % 3), out_off = (int)(rnd() % 3);
                const int in_place = kPairs[p].in == kPairs[p].out && rnd() % 4 == 0;
                char what[64];
                snprintf(what, sizeof what, "matrix %s", kind < 0 ? "normal" : kKind[kind]);
                scan_case(ctx, b, kPairs[p].in, kPairs[p].out, excl, n, (unsigned)in_off, (unsigned)out_off, in_place,
                          NULL, 0, what, s);
            }
    printf("matrix: %d checks, %d failed\n", g_checks - checks, g_failures - before);
}

static void test_carry(gs_context *ctx, bufs *b, cushim_stream s)
{
    const int before = g_failures, checks = g_checks;
    gs_exact_acc acc[3];
    for (int rep = 0; rep < (g_quick ? 24 : 200); rep++) {
        const int p = (int)(rnd() % 7), ncarry = 1 + (int)(rnd() % 3);
        /* carry-ins: accumulators of random data of any float type and kind */
        for (int k = 0; k < ncarry; k++) {
            const gs_dtype t = kIn[rnd() % 4];
            const uint64_t m = rnd() % 5000;
            fill(t, t, (int)(rnd() % NKINDS), b->in, m);
            if (m)
                CHECK_CU(cushim_h2d(b->din, b->in, m * gs_dtype_size(t)));
            const gs_reduce_options ro = {.struct_size = sizeof ro, .out_dtype = GS_OUT_DEFAULT,
                                          .flags = GS_REDUCE_EXACT_ACCUMULATOR};
            CHECK_GS(gs_reduce_ex(ctx, (const void *)(uintptr_t)b->din, m, t, GS_OP_SUM,
                                  (void *)(uintptr_t)(b->dcarry + k * sizeof(gs_exact_acc)), (gs_stream)s, &ro));
        }
        CHECK_CU(cushim_stream_sync(s));
        CHECK_CU(cushim_d2h(acc, b->dcarry, ncarry * sizeof acc[0]));
        const uint64_t n = rep % 5 == 0 ? 0 : 1 + rnd() % 20000;
        if (rnd() % 2)
            fill_normal(kPairs[p].in, b->in, n);
        else
            fill(kPairs[p].in, kPairs[p].out, (int)(rnd() % NKINDS), b->in, n);
        scan_case(ctx, b, kPairs[p].in, kPairs[p].out, (int)(rnd() % 2), n, 0, 0, 0, acc, (uint64_t)ncarry,
                  "carry-in of data", s);
    }
    /* hand-made carry-ins: NaN; -0.0 (count > 0, no sign bit clear); 2^1076, beyond float64 */
    memset(acc, 0, sizeof acc);
    acc[0].nan = 1, acc[0].count = 1;
    acc[1].count = 3;
    acc[2].limb[GS_EXACT_LIMBS - 1] = 1ll << 20, acc[2].count = 1, acc[2].sign_clear = 1;
    for (int k = 0; k < 3; k++)
        for (int p = 0; p < 7; p++) {
            CHECK_CU(cushim_h2d(b->dcarry, &acc[k], sizeof acc[k]));
            fill_normal(kPairs[p].in, b->in, 1000);
            for (int excl = 0; excl < 2; excl++)
                scan_case(ctx, b, kPairs[p].in, kPairs[p].out, excl, k == 1 ? 0 : 1000, 0, 0, 0, &acc[k], 1,
                          "hand-made carry-in", s);
        }
    printf("carry: %d checks, %d failed\n", g_checks - checks, g_failures - before);
}

/* The same cases on contexts whose scans run on 1, 3 and 64 blocks, each backend. */
static void test_grids(bufs *b, cushim_stream s)
{
    const int before = g_failures, checks = g_checks;
    static const char *const grids[] = {"1", "3", "64"}, *const backends[] = {"cuda_sm20", "cuda_sm11_compat"};
    const char *forced = getenv("GRIDSYNC_BACKEND");
    for (int bk = 0; bk < 2; bk++) {
        if (forced && strcmp(forced, backends[bk]) != 0)
            continue;
        for (int g = 0; g < 3; g++) {
            setenv("GRIDSYNC_BACKEND", backends[bk], 1);
            setenv("GRIDSYNC_TEST_SCAN_GRID", grids[g], 1);
            gs_context *ctx;
            CHECK_GS(gs_context_create(0, &ctx));
            unsetenv("GRIDSYNC_TEST_SCAN_GRID");
            for (int p = 0; p < 7; p++) {
                const uint64_t n = 1 + rnd() % (g_quick ? 100000 : 300000);
                fill(kPairs[p].in, kPairs[p].out, (int)(rnd() % NKINDS), b->in, n);
                char what[64];
                snprintf(what, sizeof what, "grid %s on %s", grids[g], backends[bk]);
                scan_case(ctx, b, kPairs[p].in, kPairs[p].out, (int)(rnd() % 2), n, 0, 1, 0, NULL, 0, what, s);
            }
            CHECK_GS(gs_context_destroy(ctx));
        }
    }
    if (forced)
        setenv("GRIDSYNC_BACKEND", forced, 1);
    else
        unsetenv("GRIDSYNC_BACKEND");
    printf("grids: %d checks, %d failed\n", g_checks - checks, g_failures - before);
}

/* Captured once (a fresh context: the module loads inside the capture), replayed on new data. */
static void test_graph(bufs *b, cushim_stream s)
{
    const int before = g_failures, checks = g_checks;
    gpu_graph_api g;
    gpu_graph_api_load(&g);
    gs_context *ctx;
    CHECK_GS(gs_context_create(0, &ctx));
    const uint64_t n = 100000;
    const gs_scan_options o = {.struct_size = sizeof o, .out_dtype = GS_FLOAT32, .flags = GS_SCAN_EXACT,
                               .total = (gs_exact_acc *)(uintptr_t)b->dtotal};
    CUgraph graph;
    CUgraphExec exec;
    CHECK_CU(g.StreamBeginCapture((CUstream)s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_GS(gs_scan(ctx, (const void *)(uintptr_t)b->din, n, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)b->dout,
                     (gs_stream)s, &o));
    CHECK_CU(g.StreamEndCapture((CUstream)s, &graph));
    CHECK_CU(g.GraphInstantiateWithFlags(&exec, graph, 0));
    gs_exact_acc want_total, got_total;
    for (int rep = 0; rep < 20; rep++) {
        fill(GS_FLOAT32, GS_FLOAT32, (int)(rnd() % NKINDS), b->in, n);
        CHECK_CU(cushim_h2d(b->din, b->in, n * 4));
        CHECK_CU(g.GraphLaunch(exec, (CUstream)s));
        CHECK_CU(cushim_stream_sync(s));
        CHECK_CU(cushim_d2h(b->got, b->dout, n * 4));
        CHECK_CU(cushim_d2h(&got_total, b->dtotal, sizeof got_total));
        hostref_scan_exact(b->in, n, GS_FLOAT32, GS_FLOAT32, 0, NULL, 0, b->want, &want_total);
        CHECK(memcmp(b->got, b->want, n * 4) == 0 && memcmp(&got_total, &want_total, sizeof got_total) == 0,
              "graph replay %d: results differ from hostref_scan_exact", rep);
    }
    CHECK_CU(g.GraphExecDestroy(exec));
    CHECK_CU(g.GraphDestroy(graph));
    CHECK_GS(gs_context_destroy(ctx));
    printf("graph: %d checks, %d failed\n", g_checks - checks, g_failures - before);
}

static void test_large(gs_context *ctx, bufs *b, cushim_stream s)
{
    const int before = g_failures, checks = g_checks;
    const uint64_t n32 = g_quick ? 1u << 20 : 1u << 24;
    fill_normal(GS_FLOAT32, b->in, n32);
    double t0 = now_s();
    scan_case(ctx, b, GS_FLOAT32, GS_FLOAT32, 0, n32, 0, 0, 0, NULL, 0, "large float32", s);
    printf("large: float32 n=%" PRIu64 " normal data checked in %.2f s\n", n32, now_s() - t0);
    const uint64_t n64 = g_quick ? 1u << 14 : 1u << 18;
    fill(GS_FLOAT64, GS_FLOAT64, 0, b->in, n64); /* the whole exponent range: the widest width */
    t0 = now_s();
    scan_case(ctx, b, GS_FLOAT64, GS_FLOAT64, 1, n64, 0, 0, 0, NULL, 0, "large float64 wide", s);
    printf("large: float64 n=%" PRIu64 " over the whole exponent range checked in %.2f s\n", n64, now_s() - t0);
    printf("large: %d checks, %d failed\n", g_checks - checks, g_failures - before);
}

int main(void)
{
    gpu_test_init();
    g_quick = getenv("GS_TEST_QUICK") && atoi(getenv("GS_TEST_QUICK"));
    const char *seed = getenv("GS_TEST_SEED");
    g_rng = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL) * 1000003u + (uint64_t)clock();
    printf("seed %" PRIu64 " (GS_TEST_SEED replays it)\n", g_rng);
    gs_context *ctx;
    CHECK_GS(gs_context_create(0, &ctx));
    gs_context_info info = {.struct_size = sizeof info};
    CHECK_GS(gs_context_get_info(ctx, &info));
    printf("device %s, backend %s\n", info.device_name, info.backend_name);
    bufs b;
    b.cap = 1u << 24;
    CHECK_CU(cushim_alloc(&b.din, (b.cap + 8) * 8));
    CHECK_CU(cushim_alloc(&b.dout, (b.cap + 8 + GUARD) * 8));
    CHECK_CU(cushim_alloc(&b.dcarry, 4 * sizeof(gs_exact_acc)));
    CHECK_CU(cushim_alloc(&b.dtotal, sizeof(gs_exact_acc)));
    b.in = malloc((b.cap + 8) * 8);
    b.want = malloc((b.cap + 8) * 8);
    b.got = malloc((b.cap + 8 + GUARD) * 8);
    if (!b.in || !b.want || !b.got) {
        fprintf(stderr, "FATAL: out of host memory\n");
        return 1;
    }
    cushim_stream s;
    CHECK_CU(cushim_stream_create(&s));
    test_matrix(ctx, &b, s);
    test_carry(ctx, &b, s);
    test_grids(&b, s);
    test_graph(&b, s);
    test_large(ctx, &b, s);
    CHECK_GS(gs_context_destroy(ctx));
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
