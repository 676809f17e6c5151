/*
 * test_gpu_scan_stress's mixed and entry parts (test_gpu_scan_stress.c says what each checks).
 */
#define _GNU_SOURCE
#include <signal.h>

#include "exact_ref.h"
#include "scan_stress.h"

/* ---- mixed: one stream, scans between the other entry points ------------------------------ */

void test_mixed(gs_context *ctx)
{
    enum { K = 6, NSC = 4 };
    const uint64_t n = 200003;
    const scan_case sc[NSC] = {{GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, 0}, {GS_UINT8, GS_OP_BIT_XOR, GS_UINT8, 1},
                               {GS_INT64, GS_OP_MIN, GS_INT64, 0}, {GS_FLOAT16, GS_OP_SUM, GS_FLOAT32, 1}};
    void *h[NSC], *model[NSC], *host = scan_xmalloc(n * 8);
    cushim_ptr din[NSC], dint, doff, dsc, dsmall;
    for (int k = 0; k < NSC; k++) {
        h[k] = scan_xmalloc(n * 8);
        model[k] = scan_xmalloc(n * 8);
        scan_fill(h[k], n, sc[k].t, sc[k].op, &g_rng);
        TCHECK(scan_model(&sc[k], h[k], n, model[k]) == GS_SUCCESS, "hostref_scan");
        CHECK_CU(cushim_alloc(&din[k], n * 8));
        CHECK_CU(cushim_h2d(din[k], h[k], n * gs_dtype_size(sc[k].t)));
    }
    int32_t *hi = scan_xmalloc(n * 4);
    scan_fill(hi, n, GS_INT32, GS_OP_SUM, &g_rng);
    const int64_t off[5] = {0, 17, 4096 * 3 + 1, 100000, (int64_t)n};
    CHECK_CU(cushim_alloc(&dint, n * 4));
    CHECK_CU(cushim_h2d(dint, hi, n * 4));
    CHECK_CU(cushim_alloc(&doff, sizeof off));
    CHECK_CU(cushim_h2d(doff, off, sizeof off));
    CHECK_CU(cushim_alloc(&dsc, (size_t)2 * K * n * 8));
    CHECK_CU(cushim_alloc(&dsmall, (size_t)K * 64));
    CHECK_CU(cushim_ctx_sync());
    cushim_stream s;
    CHECK_CU(cushim_stream_create(&s));
    uint64_t m[K];
    const gs_reduce_options exact = {.struct_size = sizeof exact, .out_dtype = GS_OUT_DEFAULT, .flags = GS_REDUCE_EXACT};
    for (int r = 0; r < K; r++) { /* queued back to back: nothing waits between the calls */
        m[r] = n - (uint64_t)r * 4099;
        void *small = (void *)(uintptr_t)(dsmall + (cushim_ptr)r * 64);
        CHECK_GS(scan_call(ctx, &sc[r % NSC], (const void *)(uintptr_t)din[r % NSC], m[r],
                           (void *)(uintptr_t)(dsc + (cushim_ptr)(2 * r) * n * 8), s));
        CHECK_GS(gs_reduce(ctx, (const void *)(uintptr_t)dint, m[r], GS_INT32, GS_OP_SUM, small, s));
        CHECK_GS(gs_segmented_reduce(ctx, (const void *)(uintptr_t)dint, n, GS_INT32, GS_OP_SUM,
                                     (const int64_t *)(uintptr_t)doff, 4, (char *)small + 8, s, 0));
        CHECK_GS(gs_reduce_ex(ctx, (const void *)(uintptr_t)din[0], m[r], GS_FLOAT32, GS_OP_SUM, (char *)small + 24, s,
                              &exact));
        CHECK_GS(scan_call(ctx, &sc[(r + 1) % NSC], (const void *)(uintptr_t)din[(r + 1) % NSC], m[r],
                           (void *)(uintptr_t)(dsc + (cushim_ptr)(2 * r + 1) * n * 8), s));
    }
    CHECK_CU(cushim_stream_sync(s));
    for (int r = 0; r < K; r++) {
        for (int k = 0; k < 2; k++)
            check_result(&sc[(r + k) % NSC], dsc + (cushim_ptr)(2 * r + k) * n * 8, m[r], model[(r + k) % NSC], host,
                         "between other entry points");
        uint32_t small[7], sum = 0, seg[4] = {0};
        CHECK_CU(cushim_d2h(small, dsmall + (cushim_ptr)r * 64, sizeof small));
        for (uint64_t i = 0; i < n; i++) {
            sum += i < m[r] ? (uint32_t)hi[i] : 0;
            seg[(i >= 17) + (i >= 4096 * 3 + 1) + (i >= 100000)] += (uint32_t)hi[i];
        }
        CHECK(small[0] == sum, "gs_reduce between scans: 0x%08x, want 0x%08x", small[0], sum);
        CHECK(!memcmp(&small[2], seg, sizeof seg), "gs_segmented_reduce between scans: a wrong segment sum");
        const uint64_t want = hostref_exact_sum(GS_FLOAT32, h[0], m[r], GS_FLOAT32);
        CHECK(small[6] == (uint32_t)want, "exact sum between scans: 0x%08x, want 0x%08x", small[6], (uint32_t)want);
    }
    CHECK_CU(cushim_stream_destroy(s));
    for (int k = 0; k < NSC; k++) {
        CHECK_CU(cushim_free(din[k]));
        free(h[k]), free(model[k]);
    }
    CHECK_CU(cushim_free(dint));
    CHECK_CU(cushim_free(doff));
    CHECK_CU(cushim_free(dsc));
    CHECK_CU(cushim_free(dsmall));
    free(hi), free(host);
}

/* ---- entry: a status in bounded time -------------------------------------------------------- */

static const char *volatile g_watching = "";

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: watchdog: did not finish in 20 s: ";
    ssize_t w = write(2, msg, sizeof msg - 1);
    w += write(2, g_watching, strlen(g_watching));
    w += write(2, "\n", 1);
    (void)w;
    _exit(1);
}

/* A call's status against want, the call and the stream's synchronisation after it each
 * under the watchdog. */
#define EXPECT(call, want, s, what)                                                                \
    do {                                                                                           \
        g_watching = what;                                                                         \
        alarm(20);                                                                                 \
        const gs_status st_ = (call);                                                              \
        CHECK_CU(cushim_stream_sync(s));                                                           \
        alarm(0);                                                                                  \
        CHECK(st_ == (want), "%s: %s (%s), want %s", what, gs_status_string(st_), gs_last_error_message(), \
              gs_status_string(want));                                                             \
    } while (0)

void test_entry(gs_context *ctx)
{
    cushim_ptr din, dout;
    CHECK_CU(cushim_alloc(&din, 4096));
    CHECK_CU(cushim_alloc(&dout, 4096));
    CHECK_CU(cushim_memset8(din, 1, 4096));
    CHECK_CU(cushim_memset8(dout, 0xA5, 4096));
    CHECK_CU(cushim_ctx_sync());
    cushim_stream s;
    CHECK_CU(cushim_stream_create(&s));
    const void *in = (const void *)(uintptr_t)din;
    void *out = (void *)(uintptr_t)dout;
    const scan_case i32 = {GS_INT32, GS_OP_SUM, GS_INT32, 0}, f32 = {GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, 0},
                    f64x = {GS_FLOAT64, GS_OP_SUM, GS_FLOAT64, 1}, wide = {GS_INT32, GS_OP_SUM, GS_INT64, 0},
                    u8 = {GS_UINT8, GS_OP_BIT_XOR, GS_UINT8, 0};
    EXPECT(scan_call(NULL, &i32, in, UINT64_MAX, out, s), GS_ERROR_INVALID_ARGUMENT, s, "n = 2^64 - 1");
    EXPECT(scan_call(ctx, &f32, in, (1ull << 62) + 1, out, s), GS_ERROR_INVALID_ARGUMENT, s,
           "n = 2^62 + 1 (n x 4 wraps to 4 bytes)");
    EXPECT(scan_call(ctx, &f64x, in, (1ull << 61) + 1, out, s), GS_ERROR_INVALID_ARGUMENT, s,
           "n = 2^61 + 1, exclusive (n x 8 wraps)");
    EXPECT(scan_call(ctx, &u8, in, 1ull << 40, out, s), GS_ERROR_INVALID_ARGUMENT, s, "n = 2^40 over 4 KiB");
    EXPECT(scan_call(ctx, &i32, in, 1025, out, s), GS_ERROR_INVALID_ARGUMENT, s, "n one past in's allocation");
    EXPECT(scan_call(ctx, &wide, in, 513, out, s), GS_ERROR_INVALID_ARGUMENT, s,
           "a wider out one past its allocation");
    unsigned char b[4096];
    CHECK_CU(cushim_d2h(b, dout, sizeof b));
    int untouched = 1;
    for (size_t i = 0; i < sizeof b; i++)
        untouched &= b[i] == 0xA5;
    CHECK(untouched, "a refused scan wrote its output");

    /* A stream of another CUDA context: refused with an explicit context; served by the
     * default context of that CUDA context while it is current. */
    typedef int (*ctx_create_fn)(void **, unsigned int, int);
    typedef int (*ctx_fn)(void *);
    typedef int (*stream_create_fn)(void **, unsigned int);
    ctx_create_fn ctx_create = (ctx_create_fn)cushim_driver_symbol("cuCtxCreate_v2");
    ctx_fn ctx_destroy = (ctx_fn)cushim_driver_symbol("cuCtxDestroy_v2");
    ctx_fn ctx_set = (ctx_fn)cushim_driver_symbol("cuCtxSetCurrent");
    stream_create_fn stream_create = (stream_create_fn)cushim_driver_symbol("cuStreamCreate");
    void *other = NULL, *os = NULL;
    if (!ctx_create || !ctx_destroy || !ctx_set || !stream_create || ctx_create(&other, 0, 0) != 0 ||
        stream_create(&os, 1) != 0) {
        FAIL("entry: cannot make a second CUDA context");
    } else {
        EXPECT(scan_call(ctx, &i32, in, 1000, out, (gs_stream)os), GS_ERROR_INVALID_CONTEXT, (cushim_stream)os,
               "a stream of another CUDA context");
        cushim_ptr d2;
        CHECK_CU(cushim_alloc(&d2, 8192));
        CHECK_CU(cushim_memset8(d2, 1, 4096));
        CHECK_CU(cushim_ctx_sync());
        EXPECT(scan_call(NULL, &i32, (const void *)(uintptr_t)d2, 1000, (void *)(uintptr_t)(d2 + 4096), (gs_stream)os),
               GS_SUCCESS, (cushim_stream)os, "default context of a second CUDA context");
        int32_t got[1000];
        CHECK_CU(cushim_d2h(got, d2 + 4096, sizeof got));
        int ok = 1;
        for (int i = 0; i < 1000; i++)
            ok &= got[i] == (int32_t)((uint32_t)(i + 1) * 0x01010101u);
        CHECK(ok, "gs_scan on a second CUDA context: wrong results");
        ctx_destroy(other);
        ctx_set(NULL);
        CHECK_CU(cushim_init(0));
    }
    /* the stream's workspace is unharmed: a good call after the refused ones */
    EXPECT(scan_call(ctx, &i32, in, 1024, out, s), GS_SUCCESS, s, "a good call after the refused ones");
    int32_t got[1024];
    CHECK_CU(cushim_d2h(got, dout, sizeof got));
    int ok = 1;
    for (int i = 0; i < 1024; i++)
        ok &= got[i] == (int32_t)((uint32_t)(i + 1) * 0x01010101u);
    CHECK(ok && ++g_equal, "a good call after the refused ones: wrong results");
    CHECK_CU(cushim_stream_destroy(s));
    CHECK_CU(cushim_free(din));
    CHECK_CU(cushim_free(dout));
}

void scan_stress_watchdog(void)
{
    signal(SIGALRM, on_alarm);
}
