/*
 * test_gpu_scan's grids, large and huge parts (test_gpu_scan.c says what each checks).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "scan_test.h"

/* ---- grids: every forced grid on each backend, equal to the model and to each other ----- */

static const char *const k_grids[] = {NULL, "1", "2", "7", "64"}; /* NULL: the default grid */
#define NGRIDS (sizeof k_grids / sizeof *k_grids)

void test_grids(const gs_context_info *info)
{
    const char *forced = getenv("GRIDSYNC_BACKEND");
    const int both = !forced || !*forced;
    const char *const backends[2] = {both ? "cuda_sm20" : forced, "cuda_sm11_compat"};
    const int nb = both ? 2 : 1;
    gs_context *ctx[2 * NGRIDS];
    const char *label[2 * NGRIDS];
    char labels[2 * NGRIDS][64];
    int nctx = 0;
    /* the hook and the backend are read when a context opens its backend */
    for (int b = 0; b < nb; b++)
        for (size_t g = 0; g < NGRIDS; g++) {
            if (both)
                setenv("GRIDSYNC_BACKEND", backends[b], 1);
            if (k_grids[g])
                setenv("GRIDSYNC_TEST_SCAN_GRID", k_grids[g], 1);
            else
                unsetenv("GRIDSYNC_TEST_SCAN_GRID");
            CHECK_GS(gs_context_create(0, &ctx[nctx]));
            gs_context_info ci = {.struct_size = sizeof ci};
            CHECK_GS(gs_context_get_info(ctx[nctx], &ci));
            CHECK(!both || strcmp(ci.backend_name, backends[b]) == 0, "asked for %s, got %s", backends[b],
                  ci.backend_name);
            snprintf(labels[nctx], sizeof labels[nctx], "%s grid %s", ci.backend_name, k_grids[g] ? k_grids[g] : "default");
            label[nctx] = labels[nctx];
            nctx++;
        }
    unsetenv("GRIDSYNC_TEST_SCAN_GRID");
    if (both)
        unsetenv("GRIDSYNC_BACKEND");
    (void)info;

    /* float32/float64 SUM over ~5M elements (1221 and 2442 tiles: 39 and 77 groups), and a
     * case of every dtype and several wider outputs over 300007 */
    const uint64_t big = 5000011, small = 300007;
    const scan_case cases[] = {
        {GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, 0}, {GS_FLOAT64, GS_OP_SUM, GS_FLOAT64, 0},
        {GS_FLOAT64, GS_OP_SUM, GS_FLOAT64, 1}, {GS_INT8, GS_OP_SUM, GS_INT8, 0},
        {GS_UINT8, GS_OP_MAX, GS_UINT8, 1},     {GS_INT32, GS_OP_SUM, GS_INT32, 0},
        {GS_UINT32, GS_OP_BIT_XOR, GS_UINT32, 1}, {GS_INT64, GS_OP_SUM, GS_INT64, 0},
        {GS_UINT64, GS_OP_PROD, GS_UINT64, 0}, {GS_FLOAT16, GS_OP_SUM, GS_FLOAT16, 0},
        {GS_BFLOAT16, GS_OP_SUM, GS_BFLOAT16, 1}, {GS_FLOAT16, GS_OP_SUM, GS_FLOAT32, 1},
        {GS_BFLOAT16, GS_OP_MAX, GS_FLOAT32, 0}, {GS_INT8, GS_OP_SUM, GS_INT64, 0},
        {GS_UINT32, GS_OP_PROD, GS_UINT64, 1}, {GS_FLOAT32, GS_OP_PROD, GS_FLOAT64, 0},
        {GS_FLOAT64, GS_OP_PROD, GS_FLOAT64, 1}, {GS_FLOAT32, GS_OP_MIN, GS_FLOAT32, 0},
        {GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, 1}, {GS_FLOAT32, GS_OP_SUM, GS_FLOAT64, 0},
    };
    enum { NCASES = sizeof cases / sizeof *cases };
    scan_job jobs[NCASES];
    for (int k = 0; k < NCASES; k++) {
        const uint64_t n = k < 3 ? big : small;
        void *in = scan_xmalloc(n * 8);
        scan_fill(in, n, cases[k].t, cases[k].op, &g_rng);
        jobs[k] = (scan_job){cases[k], in, n, scan_xmalloc(n * 8), GS_SUCCESS};
    }
    scan_models(jobs, NCASES);

    cushim_ptr din, dout;
    CHECK_CU(cushim_alloc(&din, (2 * big + 2) * 8));
    CHECK_CU(cushim_alloc(&dout, (big + 1 + GUARD) * 8));
    cushim_stream s;
    CHECK_CU(cushim_stream_create(&s));
    unsigned char *got = scan_xmalloc((big + 1 + GUARD) * 8), *first = scan_xmalloc(big * 8);
    for (int k = 0; k < NCASES; k++) {
        const scan_case *c = &jobs[k].c;
        const uint64_t n = jobs[k].n;
        const size_t es = gs_dtype_size(c->t), os = gs_dtype_size(c->out);
        char name[80];
        if (jobs[k].st != GS_SUCCESS) {
            FAIL("%s: hostref_scan: %s", scan_case_name(c, name, sizeof name), gs_status_string(jobs[k].st));
            continue;
        }
        upload(din, jobs[k].in, n * es);
        upload(din + (n + 1) * es, jobs[k].in, n * es); /* at +1 element: the bits may not depend on it */
        int have_first = 0;
        for (int x = 0; x < nctx; x++) {
            const unsigned in_off = x % 2, out_off = x % 3 == 2;
            char what[96];
            snprintf(what, sizeof what, "%s, in at +%u, out at +%u", label[x], in_off, out_off);
            if (!check_scan(ctx[x], c, in_off ? din + (n + 1) * es : din, n, dout, out_off, NULL, jobs[k].out, got,
                            what, s))
                continue;
            if (!have_first) {
                memcpy(first, got + out_off * os, n * os);
                have_first = 1;
            } else {
                CHECK(memcmp(first, got + out_off * os, n * os) == 0 && ++g_cross, "%s: %s: other bits than the "
                      "first context's", scan_case_name(c, name, sizeof name), what);
            }
        }
        free((void *)jobs[k].in);
        free(jobs[k].out);
    }
    printf("grids: %d contexts (%s), %d cases\n", nctx, both ? "both backends x default, 1, 2, 7, 64 blocks"
                                                                  : "default, 1, 2, 7, 64 blocks", NCASES);
    free(got);
    free(first);
    CHECK_CU(cushim_stream_destroy(s));
    CHECK_CU(cushim_free(din));
    CHECK_CU(cushim_free(dout));
    for (int x = 0; x < nctx; x++)
        CHECK_GS(gs_context_destroy(ctx[x]));
}

/* ---- large: more groups than the ring of group slots -------------------------------------- */

typedef struct big_case {
    scan_case c;
    uint64_t n;
    int sequential; /* the sequential oracle (integer ops), checked against the model first */
    int full_only;
} big_case;

void test_large(gs_context *ctx)
{
    /* 8-byte outputs: 2050 tiles > 1600 of the ring's 50 slots; 4-byte: 4097 > 3168 (99) */
    const uint64_t n8 = (1u << 22) + (1u << 11) + 1, n4 = (1u << 24) + 4097, n26 = (1u << 26) + 4097;
    const big_case all[] = {
        {{GS_FLOAT64, GS_OP_SUM, GS_FLOAT64, 0}, n8, 0, 0},   {{GS_INT32, GS_OP_SUM, GS_INT64, 1}, n8, 0, 0},
        {{GS_FLOAT32, GS_OP_PROD, GS_FLOAT64, 0}, n8, 0, 0},  {{GS_UINT64, GS_OP_MAX, GS_UINT64, 1}, n8, 0, 0},
        {{GS_UINT8, GS_OP_BIT_XOR, GS_UINT8, 1}, n4, 1, 0},   {{GS_INT8, GS_OP_SUM, GS_INT8, 0}, n4, 1, 0},
        {{GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, 1}, n26, 0, 1},  {{GS_FLOAT16, GS_OP_SUM, GS_FLOAT32, 0}, n26, 0, 1},
        {{GS_BFLOAT16, GS_OP_SUM, GS_BFLOAT16, 0}, n26, 0, 1}, {{GS_INT32, GS_OP_MIN, GS_INT32, 0}, n26, 0, 1},
        {{GS_FLOAT64, GS_OP_SUM, GS_FLOAT64, 1}, n26, 0, 1},  {{GS_INT32, GS_OP_BIT_XOR, GS_INT32, 0}, n26, 1, 1},
    };
    enum { NALL = sizeof all / sizeof *all, PREFIX = 1u << 18 };
    scan_job jobs[NALL];
    size_t nj = 0;
    uint64_t maxn = 0;
    for (size_t k = 0; k < NALL; k++) {
        if (all[k].full_only && g_quick)
            continue;
        const uint64_t n = all[k].n;
        maxn = n > maxn ? n : maxn;
        void *in = scan_xmalloc(n * gs_dtype_size(all[k].c.t));
        scan_fill(in, n, all[k].c.t, all[k].c.op, &g_rng);
        /* a sequential case's job is the model of its first PREFIX elements */
        jobs[nj++] = (scan_job){all[k].c, in, all[k].sequential ? PREFIX : n,
                                scan_xmalloc(n * gs_dtype_size(all[k].c.out)), GS_SUCCESS};
    }
    const double t0 = now_s();
    scan_models(jobs, nj);
    printf("large: %zu models in %.1f s\n", nj, now_s() - t0);
    cushim_ptr din, dout;
    CHECK_CU(cushim_alloc(&din, maxn * 8));
    CHECK_CU(cushim_alloc(&dout, (maxn + 1 + GUARD) * 8));
    unsigned char *got = scan_xmalloc((maxn + 1 + GUARD) * 8);
    for (size_t j = 0, k = 0; j < nj; j++, k++) {
        while (all[k].full_only && g_quick)
            k++;
        const scan_case *c = &jobs[j].c;
        const uint64_t n = all[k].n;
        char name[80];
        if (jobs[j].st != GS_SUCCESS) {
            FAIL("%s: hostref_scan: %s", scan_case_name(c, name, sizeof name), gs_status_string(jobs[j].st));
            continue;
        }
        if (all[k].sequential) {
            void *seq = scan_xmalloc(n * gs_dtype_size(c->out));
            uint64_t first = 0;
            scan_sequential_int(c, jobs[j].in, n, seq);
            CHECK(scan_same(c->out, seq, jobs[j].out, PREFIX, &first), "%s: the sequential oracle differs from "
                  "hostref_scan at %" PRIu64, scan_case_name(c, name, sizeof name), first);
            free(jobs[j].out);
            jobs[j].out = seq;
        }
        upload(din, jobs[j].in, n * gs_dtype_size(c->t));
        check_scan(ctx, c, din, n, dout, 1, NULL, jobs[j].out, got,
                   all[k].sequential ? "large, sequential oracle" : "large", NULL);
        free((void *)jobs[j].in);
        free(jobs[j].out);
    }
    free(got);
    CHECK_CU(cushim_free(din));
    CHECK_CU(cushim_free(dout));
}

/* ---- huge: uint8 past 2^32 elements, sampled ---------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void test_huge(gs_context *ctx)
{
    const uint64_t n = (1ull << 32) + 4097;
    size_t free_b = 0, total_b = 0;
    CHECK_CU(cushim_device_memory(&free_b, &total_b));
    if (free_b < 2 * n + (2ull << 30)) {
        printf("huge: skipped (%zu bytes free on the device, %" PRIu64 " needed)\n", free_b,
               (uint64_t)(2 * n + (2ull << 30)));
        return;
    }
    unsigned char *h = malloc(n);
    if (!h) {
        printf("huge: skipped (no %" PRIu64 " bytes of host memory)\n", n);
        return;
    }
    for (uint64_t i = 0; i < n; i += 8) {
        const uint64_t r = hostref_rand(&g_rng);
        memcpy(h + i, &r, n - i < 8 ? n - i : 8);
    }
    /* the samples: both ends, around 2^32, and 4096 anywhere */
    enum { RANDOM = 4096, WINDOW = 1024 };
    uint64_t *at = scan_xmalloc((RANDOM + 3 * WINDOW) * sizeof *at);
    size_t ns = 0;
    for (uint64_t i = 0; i < WINDOW; i++) {
        at[ns++] = i;
        at[ns++] = (1ull << 32) - WINDOW / 2 + i;
        at[ns++] = n - WINDOW + i;
    }
    for (int i = 0; i < RANDOM; i++)
        at[ns++] = hostref_rand(&g_rng) % n;
    qsort(at, ns, sizeof *at, cmp_u64);
    /* inclusive XOR and exclusive SUM at each sample, from one pass over the data */
    unsigned char *want_xor = scan_xmalloc(ns), *want_sum = scan_xmalloc(ns);
    uint8_t x = 0;
    uint64_t sum = 0, pos = 0;
    for (size_t k = 0; k < ns; k++) {
        for (; pos < at[k]; pos++) {
            x ^= h[pos];
            sum += h[pos];
        }
        want_sum[k] = (unsigned char)sum;
        want_xor[k] = x ^ h[at[k]];
    }
    cushim_ptr din, dout;
    CHECK_CU(cushim_alloc(&din, n));
    CHECK_CU(cushim_alloc(&dout, n + GUARD));
    for (uint64_t off = 0; off < n; off += 1ull << 30)
        CHECK_CU(cushim_h2d(din + off, h + off, n - off < (1ull << 30) ? n - off : 1ull << 30));
    CHECK_CU(cushim_memset8(dout, POISON, n + GUARD));
    CHECK_CU(cushim_ctx_sync());
    const scan_case cx = {GS_UINT8, GS_OP_BIT_XOR, GS_UINT8, 0}, cs = {GS_UINT8, GS_OP_SUM, GS_UINT8, 1};
    for (int pass = 0; pass < 2; pass++) {
        const scan_case *c = pass ? &cs : &cx;
        const cushim_ptr out = pass ? din : dout; /* SUM in place */
        gs_status st = scan_call(ctx, c, (const void *)(uintptr_t)din, n, (void *)(uintptr_t)out, NULL);
        CHECK(st == GS_SUCCESS, "huge %s: %s: %s", pass ? "SUM" : "XOR", gs_status_string(st), gs_last_error_message());
        if (st != GS_SUCCESS)
            continue;
        CHECK_CU(cushim_ctx_sync());
        int bad = 0;
        for (size_t k = 0; k < ns; k++) {
            unsigned char g;
            CHECK_CU(cushim_d2h(&g, out + at[k], 1));
            const unsigned char w = pass ? want_sum[k] : want_xor[k];
            g_checks++;
            if (g != w && bad++ < 5)
                FAIL("huge uint8 %s, n = 2^32 + 4097: out[%" PRIu64 "] = 0x%02x, want 0x%02x",
                     pass ? "SUM exclusive, in place" : "XOR inclusive", at[k], g, w);
        }
        if (!pass) {
            unsigned char guard[GUARD];
            CHECK_CU(cushim_d2h(guard, dout + n, GUARD));
            for (int i = 0; i < GUARD; i++)
                CHECK(guard[i] == POISON, "huge XOR wrote out[n + %d]", i);
        }
        g_equal += !bad;
        printf("huge: uint8 %s over 2^32 + 4097 elements: %zu samples, %d wrong\n",
               pass ? "SUM (exclusive, in place)" : "XOR (inclusive)", ns, bad);
    }
    CHECK_CU(cushim_free(din));
    CHECK_CU(cushim_free(dout));
    free(h);
    free(at);
    free(want_xor);
    free(want_sum);
}
