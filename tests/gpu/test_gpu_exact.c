/*
 * gpu suite: exact sums (GS_REDUCE_EXACT, GS_REDUCE_EXACT_ACCUMULATOR; docs/semantics.md
 * §12), bitwise against hostref's exact sum on fresh random data (the seed is printed;
 * GS_TEST_SEED=<n> replays a run). Exits 77 only without a driver or a device.
 *
 * For float16, bfloat16, float32 and float64 into each output they offer:
 *  - data across the whole exponent range (random bits), heavy cancellation (big values
 *    and their negatives around small survivors), subnormals, uniform [-1, 1), values near
 *    the type's largest (overflow to inf, or back into range), exact ties of the output
 *    type and one smallest step either side, signed zeros (all -0.0: -0.0), NaN and
 *    infinities; n from 0 upward, at every address mod 16 for the small sizes;
 *  - the rounded result and the accumulator (rounded with gs_exact_round) both equal to
 *    the reference; the accumulator's bits the same on several forced grid sizes
 *    (GRIDSYNC_TEST_EXACT_GRID, read when a context opens its backend) and the default
 *    grid, so the answer cannot depend on the grid;
 *  - R random shards (R up to 64): their accumulators summed as plain int64 (on the host,
 *    and on the GPU with gs_segmented_reduce's INT64 SUM over the accumulators' words)
 *    round to the one-call bits;
 *  - what exact sums do not apply to: GS_ERROR_UNSUPPORTED; unknown or both flags:
 *    GS_ERROR_INVALID_ARGUMENT; an options struct that ends before flags: the default SUM;
 *  - full mode (GS_TEST_QUICK=0): a larger size (2^24 + 7), float16 past 2^31 elements
 *    (4 GiB, when the device has the memory), 65537 elements and subnormal data at
 *    2^20 + 3; quick mode (GS_TEST_QUICK=1, the default `meson test`) has 16411 for 65537
 *    and no subnormal data at 2^20 + 3, the two cases whose host reference took most of
 *    its time (subnormal data are drawn by rejection); a seed replays a run in its mode.
 * meson runs it once per backend forced and once with the automatic choice.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtype.h"
#include "exact_ref.h"
#include "gpu_check.h"
#include "hostref.h"
#include "exact_data.h"

static int g_failures, g_checks, g_quick;

static gs_status exact_call(gs_context *ctx, cushim_ptr in, uint64_t n, gs_dtype t, gs_dtype out, uint32_t flags,
                            cushim_ptr dout)
{
    gs_reduce_options o = {.struct_size = sizeof o, .out_dtype = (int32_t)out, .flags = flags};
    return gs_reduce_ex(ctx, (const void *)(uintptr_t)in, n, t, GS_OP_SUM, (void *)(uintptr_t)dout, NULL, &o);
}

/* One rounded call and one accumulator call on device data, against want. */
static void check_one(gs_context *ctx, const char *what, cushim_ptr in, uint64_t n, gs_dtype t, gs_dtype out,
                      uint64_t want, cushim_ptr dout, gs_exact_acc *acc_out)
{
    uint64_t got = 0;
    CHECK_CU(cushim_memset8(dout, 0xa5, sizeof(gs_exact_acc))); /* poisoned: an unwritten result fails */
    CHECK_GS(exact_call(ctx, in, n, t, out, GS_REDUCE_EXACT, dout));
    CHECK_CU(cushim_d2h(&got, dout, gs_dtype_size(out)));
    got &= gs_dtype_size(out) == 8 ? ~0ull : (1ull << (8 * gs_dtype_size(out))) - 1;
    char g[64], w[64];
    hostref_exact_format(out, got, g, sizeof g);
    hostref_exact_format(out, want, w, sizeof w);
    CHECK(hostref_exact_same(out, got, want), "%s: %s -> %s, n %" PRIu64 ": got %s, want %s", what,
          gs_dtype_name(t), gs_dtype_name(out), n, g, w);

    gs_exact_acc acc;
    CHECK_CU(cushim_memset8(dout, 0xa5, sizeof acc));
    CHECK_GS(exact_call(ctx, in, n, t, out, GS_REDUCE_EXACT_ACCUMULATOR, dout));
    CHECK_CU(cushim_d2h(&acc, dout, sizeof acc));
    uint64_t r = 0;
    CHECK_GS(gs_exact_round(&acc, out, &r));
    hostref_exact_format(out, r, g, sizeof g);
    CHECK(hostref_exact_same(out, r, want) && acc.count == (int64_t)n, "%s: accumulator of %s, n %" PRIu64
          " (count %" PRId64 ") rounds to %s, want %s", what, gs_dtype_name(t), n, acc.count, g, w);
    if (acc_out)
        *acc_out = acc;
}

/* Contexts whose backend forces the exact kernels' grid; [0] the default grid. */
enum { NGRIDS = 5 };
static const char *kGrids[NGRIDS] = {NULL, "1", "2", "7", "300"};
static gs_context *g_ctx[NGRIDS];

static void open_contexts(void)
{
    for (int g = 0; g < NGRIDS; g++) {
        if (kGrids[g])
            setenv("GRIDSYNC_TEST_EXACT_GRID", kGrids[g], 1);
        else
            unsetenv("GRIDSYNC_TEST_EXACT_GRID");
        CHECK_GS(gs_context_create(0, &g_ctx[g]));
    }
    unsetenv("GRIDSYNC_TEST_EXACT_GRID");
}

static void sweep(cushim_ptr dbuf, cushim_ptr dout, unsigned char *host, uint64_t cap)
{
    static const uint64_t sizes_full[] = {0, 1, 2, 3, 7, 31, 32, 33, 255, 257, 1000, 4097, 65537, (1 << 20) + 3,
                                          (1 << 24) + 7};
    static const uint64_t sizes_quick[] = {0, 1, 2, 3, 7, 31, 32, 33, 255, 257, 1000, 4097, 16411, (1 << 20) + 3};
    const uint64_t *sizes = g_quick ? sizes_quick : sizes_full;
    const int nsizes = g_quick ? (int)(sizeof sizes_quick / sizeof *sizes_quick)
                               : (int)(sizeof sizes_full / sizeof *sizes_full);
    for (int d = 0; d < 4; d++) {
        const gs_dtype t = kIn[d];
        const uint64_t esize = gs_dtype_size(t);
        const gs_dtype outs[2] = {t, t == GS_FLOAT64 ? t : t == GS_FLOAT32 ? GS_FLOAT64 : GS_FLOAT32};
        const int nouts = t == GS_FLOAT64 ? 1 : 2;
        for (int s = 0; s < nsizes; s++) {
            const uint64_t n = sizes[s];
            for (int kind = 0; kind < NKINDS; kind++) {
                for (int o = 0; o < nouts; o++) {
                    const gs_dtype out = outs[o];
                    if (n > (1u << 20) && ((kind > 3 && kind != 9) || o > 0 || (g_quick && kind == 2)))
                        continue; /* the large sizes: the first kinds (quick: not subnormal) and one-sign,
                                   * the default output */
                    const uint64_t shift = n <= 4097 ? rnd() % (16 / (uint64_t)esize) : 0; /* address mod 16 */
                    if ((n + shift) * esize > cap)
                        continue;
                    fill(t, out, kind, host + shift * esize, n);
                    const uint64_t want = hostref_exact_sum(t, host + shift * esize, n, out);
                    CHECK_CU(cushim_h2d(dbuf, host, (n + shift) * esize));
                    char what[96];
                    snprintf(what, sizeof what, "%s data at +%" PRIu64 " elements", kKind[kind], shift);
                    gs_exact_acc ref_acc;
                    check_one(g_ctx[0], what, dbuf + shift * esize, n, t, out, want, dout, &ref_acc);
                    /* the forced grids: the same accumulator bits (it is normalised) */
                    const int grids = n > 4097 || kind == 0 ? NGRIDS : 2;
                    for (int g = 1; g < grids; g++) {
                        gs_exact_acc acc;
                        snprintf(what, sizeof what, "%s data, grid %s", kKind[kind], kGrids[g]);
                        check_one(g_ctx[g], what, dbuf + shift * esize, n, t, out, want, dout, &acc);
                        CHECK(!memcmp(&acc, &ref_acc, sizeof acc), "%s: %s n %" PRIu64 ": the accumulator's bits "
                              "depend on the grid", what, gs_dtype_name(t), n);
                    }
                }
            }
        }
    }
}

/* R shards' accumulators, summed as int64 on the host and on the GPU, round as one call. */
static void shards(cushim_ptr dbuf, unsigned char *host, uint64_t cap)
{
    enum { W = GS_EXACT_ACC_WORDS, RMAX = 64 };
    static gs_exact_acc accs[RMAX];
    static int64_t words[W * RMAX], offsets[W + 1], sums[W];
    cushim_ptr dacc, dwords, doffs, dsums;
    CHECK_CU(cushim_alloc(&dacc, sizeof accs));
    CHECK_CU(cushim_alloc(&dwords, sizeof words));
    CHECK_CU(cushim_alloc(&doffs, sizeof offsets));
    CHECK_CU(cushim_alloc(&dsums, sizeof sums));
    for (int round = 0; round < (g_quick ? 8 : 40); round++) {
        const gs_dtype t = kIn[rnd() % 4];
        const gs_dtype out = t == GS_FLOAT32 && rnd() % 2 ? GS_FLOAT64 : t;
        const uint64_t esize = gs_dtype_size(t), n = 1 + rnd() % (g_quick ? 200000 : 3000000);
        const int kind = (int)(rnd() % NKINDS), R = 1 + (int)(rnd() % RMAX);
        if (n * esize > cap)
            continue;
        fill(t, out, kind, host, n);
        const uint64_t want = hostref_exact_sum(t, host, n, out);
        CHECK_CU(cushim_h2d(dbuf, host, n * esize));
        /* cut points: R - 1 random ones, sorted (empty shards allowed) */
        uint64_t cut[RMAX + 1];
        cut[0] = 0;
        cut[R] = n;
        for (int r = 1; r < R; r++) {
            uint64_t c = rnd() % (n + 1);
            int j = r;
            while (j > 1 && cut[j - 1] > c) {
                cut[j] = cut[j - 1];
                j--;
            }
            cut[j] = c;
        }
        for (int r = 0; r < R; r++)
            CHECK_GS(exact_call(g_ctx[1 + r % (NGRIDS - 1)], dbuf + cut[r] * esize, cut[r + 1] - cut[r], t, out,
                                GS_REDUCE_EXACT_ACCUMULATOR, dacc + (cushim_ptr)r * sizeof(gs_exact_acc)));
        CHECK_CU(cushim_d2h(accs, dacc, (size_t)R * sizeof(gs_exact_acc)));
        /* host: a plain int64 sum of the words */
        int64_t host_sum[W] = {0};
        for (int r = 0; r < R; r++)
            for (int w = 0; w < W; w++)
                host_sum[w] += ((const int64_t *)&accs[r])[w];
        uint64_t got = 0;
        CHECK_GS(gs_exact_round((const gs_exact_acc *)host_sum, out, &got));
        char g[64], wt[64];
        hostref_exact_format(out, got, g, sizeof g);
        hostref_exact_format(out, want, wt, sizeof wt);
        CHECK(hostref_exact_same(out, got, want), "%d shards of %s %s data (n %" PRIu64 "), int64 sum on the host: "
              "got %s, want %s", R, gs_dtype_name(t), kKind[kind], n, g, wt);
        /* device: word w of every accumulator is segment w; INT64 SUM per segment */
        for (int w = 0; w < W; w++) {
            for (int r = 0; r < R; r++)
                words[w * R + r] = ((const int64_t *)&accs[r])[w];
            offsets[w] = (int64_t)w * R;
        }
        offsets[W] = (int64_t)W * R;
        CHECK_CU(cushim_h2d(dwords, words, (size_t)W * R * sizeof(int64_t)));
        CHECK_CU(cushim_h2d(doffs, offsets, sizeof offsets));
        CHECK_GS(gs_segmented_reduce(g_ctx[0], (const void *)(uintptr_t)dwords, (uint64_t)W * R, GS_INT64, GS_OP_SUM,
                                     (const int64_t *)(uintptr_t)doffs, W, (void *)(uintptr_t)dsums, NULL, 0));
        CHECK_CU(cushim_d2h(sums, dsums, sizeof sums));
        got = 0;
        CHECK_GS(gs_exact_round((const gs_exact_acc *)sums, out, &got));
        hostref_exact_format(out, got, g, sizeof g);
        CHECK(hostref_exact_same(out, got, want) && !memcmp(sums, host_sum, sizeof sums),
              "%d shards of %s %s data, int64 sum on the GPU: got %s, want %s", R, gs_dtype_name(t), kKind[kind], g,
              wt);
    }
    cushim_free(dacc);
    cushim_free(dwords);
    cushim_free(doffs);
    cushim_free(dsums);
}

static void refusals(cushim_ptr dbuf, cushim_ptr dout)
{
    const void *in = (const void *)(uintptr_t)dbuf;
    void *out = (void *)(uintptr_t)dout;
    gs_reduce_options o = {.struct_size = sizeof o, .out_dtype = GS_OUT_DEFAULT, .flags = GS_REDUCE_EXACT};
    CHECK(gs_reduce_ex(NULL, in, 10, GS_FLOAT32, GS_OP_PROD, out, NULL, &o) == GS_ERROR_UNSUPPORTED, "exact PROD");
    CHECK(gs_reduce_ex(NULL, in, 10, GS_FLOAT32, GS_OP_MAX, out, NULL, &o) == GS_ERROR_UNSUPPORTED, "exact MAX");
    CHECK(gs_reduce_ex(NULL, in, 10, GS_INT32, GS_OP_SUM, out, NULL, &o) == GS_ERROR_UNSUPPORTED, "exact int32");
    o.out_dtype = GS_FLOAT32;
    CHECK(gs_reduce_ex(NULL, in, 10, GS_FLOAT64, GS_OP_SUM, out, NULL, &o) == GS_ERROR_UNSUPPORTED, "f64 -> f32");
    o.out_dtype = GS_OUT_DEFAULT;
    o.flags = 4;
    CHECK(gs_reduce_ex(NULL, in, 10, GS_FLOAT32, GS_OP_SUM, out, NULL, &o) == GS_ERROR_INVALID_ARGUMENT, "flag 4");
    o.flags = GS_REDUCE_EXACT | GS_REDUCE_EXACT_ACCUMULATOR;
    CHECK(gs_reduce_ex(NULL, in, 10, GS_FLOAT32, GS_OP_SUM, out, NULL, &o) == GS_ERROR_INVALID_ARGUMENT, "both");
    o.flags = GS_REDUCE_EXACT_ACCUMULATOR;
    CHECK(gs_reduce_ex(NULL, in, 10, GS_FLOAT32, GS_OP_SUM, (char *)out + 4, NULL, &o) == GS_ERROR_INVALID_ARGUMENT,
          "accumulator not 8-byte aligned");
    /* a caller built against 1.0's header: struct_size 8, whatever follows is not read */
    o.struct_size = 8;
    o.flags = 77;
    CHECK(gs_reduce_ex(NULL, in, 10, GS_FLOAT32, GS_OP_SUM, out, NULL, &o) == GS_SUCCESS, "old options: %s",
          gs_last_error_message());
    CHECK_CU(cushim_ctx_sync());
}

/* Full mode: float16 past 2^31 elements, one value repeated (its exact sum n v is a double). */
static void huge(cushim_ptr dbuf, cushim_ptr dout, uint64_t cap)
{
    const uint64_t n = (1ull << 31) + 7;
    if (n * 2 > cap) {
        printf("huge: skipped (%" PRIu64 " bytes of buffer)\n", cap);
        return;
    }
    CHECK_CU(cushim_memset8(dbuf, 0x3c, n * 2)); /* 0x3c3c: 1.05859375 */
    const double v = 1.05859375, total = v * (double)n; /* 11 + 32 bits: exact */
    for (int o = 0; o < 2; o++) {
        const gs_dtype out = o ? GS_FLOAT32 : GS_FLOAT16;
        hostref_exact r;
        hostref_exact_init(&r);
        hostref_exact_add(&r, total);
        check_one(g_ctx[0], "2^31 + 7 float16", dbuf, n, GS_FLOAT16, out, hostref_exact_round(&r, out), dout, NULL);
    }
    printf("huge: float16, 2^31 + 7 elements: %d failures so far\n", g_failures);
}

int main(void)
{
    const char *q = getenv("GS_TEST_QUICK"), *seed = getenv("GS_TEST_SEED");
    g_quick = q && *q == '1';
    g_rng = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)clock();
    setvbuf(stdout, NULL, _IOLBF, 0); /* a run cut short by a timeout still shows how far it got */
    printf("seed %" PRIu64 " (GS_TEST_SEED replays it), %s mode\n", g_rng, g_quick ? "quick" : "full");
    gpu_test_init();
    open_contexts();
    gs_context_info info = {.struct_size = sizeof info};
    CHECK_GS(gs_context_get_info(g_ctx[0], &info));
    printf("device %s, backend %s\n", info.device_name, info.backend_name);

    size_t free_b = 0, total_b = 0;
    CHECK_CU(cushim_device_memory(&free_b, &total_b));
    uint64_t cap = g_quick ? (64ull << 20) : (512ull << 20);
    const uint64_t big = ((1ull << 31) + 7) * 2 + 64;
    if (!g_quick && free_b > big + (2ull << 30))
        cap = big;
    cushim_ptr dbuf, dout;
    CHECK_CU(cushim_alloc(&dbuf, cap));
    CHECK_CU(cushim_alloc(&dout, sizeof(gs_exact_acc)));
    const uint64_t host_cap = cap < (600ull << 20) ? cap : (600ull << 20);
    unsigned char *host = malloc(host_cap);
    if (!host) {
        fprintf(stderr, "FATAL: out of host memory\n");
        return 1;
    }
    if (!g_quick) /* first: its host side is cheap */
        huge(dbuf, dout, cap);
    sweep(dbuf, dout, host, host_cap);
    printf("sweep: %d checks\n", g_checks);
    shards(dbuf, host, host_cap);
    refusals(dbuf, dout);
    free(host);
    cushim_free(dbuf);
    cushim_free(dout);
    for (int g = 0; g < NGRIDS; g++)
        gs_context_destroy(g_ctx[g]);
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
