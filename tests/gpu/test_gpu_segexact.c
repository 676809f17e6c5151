/*
 * gpu suite: exact segmented sums (gs_segmented_reduce with GS_SEGMENTED_EXACT;
 * docs/semantics.md §12), every segment bitwise against hostref's exact sum of it, on
 * fresh random data (the seed is printed; GS_TEST_SEED=<n> replays a run). Exits 77 only
 * without a driver or a device.
 *
 * For float16, bfloat16, float32 and float64, each of exact_data.h's ten kinds of data
 * (filled segment by segment, so each segment has its own ties, cancellations, zeros and
 * specials) in five layouts that reach every path of the kernel: tiny segments (one
 * thread each, empty ones included), medium ones (a group each), long ones (the block),
 * one giant segment among tiny ones (pieces in many chunks, combined by the last), and
 * lengths from a power law; at a random address mod 16. Data whose exponents spread wider
 * than a double holds, and NaN or infinities, make segments lose exactness, so the long
 * accumulator's paths (a round's lost segments, a lost crossing segment) are checked too.
 * Then: bad offsets with the flag (no crash, no hang, the next call right), the refusals
 * (other ops and dtypes: GS_ERROR_UNSUPPORTED), and in full mode a lost segment of more
 * than 2^27 elements (the long accumulator's carry passes).
 * Sizes: full mode (GS_TEST_QUICK=0) sums about 10^6 elements per layout and 2^23 with the
 * giant segment; quick mode (the default `meson test`) the same kinds, layouts and checks
 * on about 30000 and 2^17 (the giant segment still in dozens of chunks), since the host
 * reference of the larger inputs took most of its time. A seed replays a run in its mode.
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

static const char *kLayout[] = {"tiny", "medium", "long", "giant", "power-law"};
enum { NLAYOUTS = 5 };

/* Segment lengths for layout into offs[0 .. S], about n elements in all; returns S. */
static uint64_t make_offsets(int layout, uint64_t n, int64_t *offs, uint64_t max_segments)
{
    uint64_t S = 0, at = 0;
    offs[0] = 0;
    if (layout == 3) { /* tiny ones, one giant of about n / 2, tiny ones */
        const uint64_t giant = n / 2 + rnd() % (n / 4);
        while (at < n && S + 1 < max_segments) {
            const uint64_t len = S == 40 ? giant : rnd() % 9;
            at = at + len > n ? n : at + len;
            offs[++S] = (int64_t)at;
        }
        return S;
    }
    while (at < n && S + 1 < max_segments) {
        uint64_t len;
        switch (layout) {
        case 0: len = rnd() % 17; break;
        case 1: len = 17 + rnd() % 1500; break;
        case 2: len = 1500 + rnd() % 40000; break;
        default: len = (uint64_t)ldexp(1.0, (int)(rnd() % 17)) + rnd() % 8; break;
        }
        at = at + len > n ? n : at + len;
        offs[++S] = (int64_t)at;
    }
    return S;
}

static uint64_t bits_at(const unsigned char *p, uint64_t i, uint64_t size)
{
    uint64_t b = 0;
    memcpy(&b, p + i * size, size);
    return b;
}

/* One layout of one kind of data: every segment's bits against hostref. */
static void check_layout(gs_context *ctx, gs_dtype t, int kind, int layout, uint64_t n, cushim_ptr dbuf,
                         cushim_ptr doffs, cushim_ptr dout, unsigned char *host, int64_t *offs, unsigned char *res,
                         uint64_t max_segments)
{
    const uint64_t esize = gs_dtype_size(t), shift = rnd() % (16 / esize);
    const uint64_t S = make_offsets(layout, n, offs, max_segments);
    unsigned char *data = host + shift * esize;
    for (uint64_t j = 0; j < S; j++)
        fill(t, t, kind, data + (uint64_t)offs[j] * esize, (uint64_t)(offs[j + 1] - offs[j]));
    CHECK_CU(cushim_h2d(dbuf, host, (n + shift) * esize));
    CHECK_CU(cushim_h2d(doffs, offs, (S + 1) * sizeof(int64_t)));
    CHECK_CU(cushim_memset8(dout, 0xa5, S * esize)); /* poisoned: an unwritten result fails */
    CHECK_GS(gs_segmented_reduce(ctx, (const void *)(uintptr_t)(dbuf + shift * esize), n, t, GS_OP_SUM,
                                 (const int64_t *)(uintptr_t)doffs, S, (void *)(uintptr_t)dout, NULL,
                                 GS_SEGMENTED_EXACT));
    CHECK_CU(cushim_d2h(res, dout, S * esize));
    uint64_t bad = 0, first = 0, got = 0, want = 0;
    for (uint64_t j = 0; j < S; j++) {
        const uint64_t len = (uint64_t)(offs[j + 1] - offs[j]);
        const uint64_t w = len ? hostref_exact_sum(t, data + (uint64_t)offs[j] * esize, len, t) : 0; /* empty: +0 */
        const uint64_t g = bits_at(res, j, esize);
        if (!hostref_exact_same(t, g, w) && bad++ == 0) {
            first = j;
            got = g;
            want = w;
        }
    }
    char gb[64], wb[64];
    hostref_exact_format(t, got, gb, sizeof gb);
    hostref_exact_format(t, want, wb, sizeof wb);
    CHECK(bad == 0, "%s, %s data, %s layout: %" PRIu64 " of %" PRIu64 " segments wrong (n %" PRIu64 " at +%" PRIu64
          "); the first, segment %" PRIu64 " of %" PRId64 " elements: got %s, want %s",
          gs_dtype_name(t), kKind[kind], kLayout[layout], bad, S, n, shift, first, offs[first + 1] - offs[first], gb,
          wb);
}

/* Offsets that are not sorted, negative or past n, with the flag: the call returns, the
 * stream finishes, and the next call on the same workspace is right. */
static void bad_offsets(gs_context *ctx, cushim_ptr dbuf, cushim_ptr doffs, cushim_ptr dout, unsigned char *host,
                        int64_t *offs, unsigned char *res)
{
    const uint64_t n = 200000, S = 1000;
    for (int round = 0; round < 6; round++) {
        const gs_dtype t = kIn[round % 4];
        fill(t, t, round % 2 ? 0 : 8, host, n); /* exponents wide, or specials: lost segments */
        CHECK_CU(cushim_h2d(dbuf, host, n * gs_dtype_size(t)));
        for (uint64_t j = 0; j <= S; j++)
            offs[j] = round < 2 ? (int64_t)(rnd() % (2 * n)) - (int64_t)(n / 2) /* anything */
                                : (int64_t)((S - j) * (n / S)); /* decreasing */
        CHECK_CU(cushim_h2d(doffs, offs, (S + 1) * sizeof(int64_t)));
        CHECK_GS(gs_segmented_reduce(ctx, (const void *)(uintptr_t)dbuf, n, t, GS_OP_SUM,
                                     (const int64_t *)(uintptr_t)doffs, S, (void *)(uintptr_t)dout, NULL,
                                     GS_SEGMENTED_EXACT));
        CHECK_CU(cushim_ctx_sync());
        check_layout(ctx, t, 3, 3, 1 << 18, dbuf, doffs, dout, host, offs, res, 1 << 16);
    }
}

/* Full mode: a segment of more than 2^27 float32s whose exponents spread wide, after a short
 * one. Every piece of it is lost, so the block that combines it sums it again element by
 * element, through the long accumulator's carry passes (one per 2^27 elements flushed,
 * agent/seg_exact.cuh's exact_add_range). */
static void past_carry(gs_context *ctx)
{
    const gs_dtype t = GS_FLOAT32;
    const uint64_t n = (1ull << 27) + (1ull << 20) + rnd() % 1000;
    int64_t offs[3] = {0, 1000 + (int64_t)(rnd() % 1000), (int64_t)n};
    cushim_ptr dbuf, doffs, dout;
    CHECK_CU(cushim_alloc(&dbuf, n * 4));
    CHECK_CU(cushim_alloc(&doffs, sizeof offs));
    CHECK_CU(cushim_alloc(&dout, 8));
    unsigned char *host = malloc(n * 4);
    if (!host) {
        fprintf(stderr, "FATAL: out of host memory\n");
        exit(1);
    }
    fill(t, t, 0, host, n); /* wide */
    CHECK_CU(cushim_h2d(dbuf, host, n * 4));
    CHECK_CU(cushim_h2d(doffs, offs, sizeof offs));
    CHECK_CU(cushim_memset8(dout, 0xa5, 8));
    CHECK_GS(gs_segmented_reduce(ctx, (const void *)(uintptr_t)dbuf, n, t, GS_OP_SUM,
                                 (const int64_t *)(uintptr_t)doffs, 2, (void *)(uintptr_t)dout, NULL,
                                 GS_SEGMENTED_EXACT));
    unsigned char res[8];
    CHECK_CU(cushim_d2h(res, dout, 8));
    for (int j = 0; j < 2; j++) {
        const uint64_t want = hostref_exact_sum(t, host + (uint64_t)offs[j] * 4, (uint64_t)(offs[j + 1] - offs[j]), t);
        const uint64_t got = bits_at(res, (uint64_t)j, 4);
        char gb[64], wb[64];
        hostref_exact_format(t, got, gb, sizeof gb);
        hostref_exact_format(t, want, wb, sizeof wb);
        CHECK(hostref_exact_same(t, got, want), "past the carry: segment %d of %" PRId64 " elements: got %s, want %s", j,
              offs[j + 1] - offs[j], gb, wb);
    }
    free(host);
    cushim_free(dbuf);
    cushim_free(doffs);
    cushim_free(dout);
}

static void refusals(gs_context *ctx, cushim_ptr dbuf, cushim_ptr doffs, cushim_ptr dout)
{
    const void *in = (const void *)(uintptr_t)dbuf;
    const int64_t *o = (const int64_t *)(uintptr_t)doffs;
    void *out = (void *)(uintptr_t)dout;
    CHECK(gs_segmented_reduce(ctx, in, 10, GS_FLOAT32, GS_OP_MAX, o, 1, out, NULL, GS_SEGMENTED_EXACT) ==
              GS_ERROR_UNSUPPORTED, "exact MAX");
    CHECK(gs_segmented_reduce(ctx, in, 10, GS_INT64, GS_OP_SUM, o, 1, out, NULL, GS_SEGMENTED_EXACT) ==
              GS_ERROR_UNSUPPORTED, "exact int64");
    CHECK(gs_segmented_reduce(ctx, in, 10, GS_FLOAT32, GS_OP_SUM, o, 1, out, NULL, 8) == GS_ERROR_INVALID_ARGUMENT,
          "flag 8");
}

int main(void)
{
    const char *q = getenv("GS_TEST_QUICK"), *seed = getenv("GS_TEST_SEED");
    g_quick = q && *q == '1';
    g_rng = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)clock();
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("seed %" PRIu64 " (GS_TEST_SEED replays it), %s mode\n", g_rng, g_quick ? "quick" : "full");
    gpu_test_init();
    gs_context *ctx;
    CHECK_GS(gs_context_create(0, &ctx));
    gs_context_info info = {.struct_size = sizeof info};
    CHECK_GS(gs_context_get_info(ctx, &info));
    printf("device %s, backend %s\n", info.device_name, info.backend_name);

    const uint64_t nmax = g_quick ? (1 << 17) : (1 << 23);
    const uint64_t nbuf = nmax > (1 << 18) ? nmax : (1 << 18), smax = nbuf + 1; /* bad_offsets' 2^18 too */
    cushim_ptr dbuf, doffs, dout;
    CHECK_CU(cushim_alloc(&dbuf, nbuf * 8 + 16));
    CHECK_CU(cushim_alloc(&doffs, (smax + 1) * sizeof(int64_t)));
    CHECK_CU(cushim_alloc(&dout, smax * 8));
    unsigned char *host = malloc(nbuf * 8 + 16), *res = malloc(smax * 8);
    int64_t *offs = malloc((smax + 1) * sizeof(int64_t));
    if (!host || !res || !offs) {
        fprintf(stderr, "FATAL: out of host memory\n");
        return 1;
    }
    for (int d = 0; d < 4; d++)
        for (int kind = 0; kind < NKINDS; kind++)
            for (int layout = 0; layout < NLAYOUTS; layout++) {
                const uint64_t n = layout == 3 ? nmax - rnd() % 1000 : (g_quick ? 30000 : 1000000) + rnd() % 1000;
                check_layout(ctx, kIn[d], kind, layout, n, dbuf, doffs, dout, host, offs, res, smax);
            }
    printf("layouts: %d checks, %d failures\n", g_checks, g_failures);
    bad_offsets(ctx, dbuf, doffs, dout, host, offs, res);
    refusals(ctx, dbuf, doffs, dout);
    if (!g_quick)
        past_carry(ctx);
    CHECK_GS(gs_context_destroy(ctx));
    free(host);
    free(res);
    free(offs);
    cushim_free(dbuf);
    cushim_free(doffs);
    cushim_free(dout);
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
