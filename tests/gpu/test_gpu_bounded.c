/*
 * gpu suite: every input finishes in bounded time (docs/semantics.md section 11, "Bad
 * offsets"; docs/design.md, "Bounded work").
 *
 * adversarial: gs_segmented_reduce over offsets that are not sorted (random int64, random
 *   in [0, n], descending, all 0, all n, 0 and n alternating, INT64_MIN/INT64_MAX and
 *   random huge values, duplicated sorted runs, sorted then garbage) for 1 .. 2^20
 *   segments over up to 2^26 elements and several dtype x op. Each call must finish (a
 *   watchdog fails the test after GS_TEST_WATCHDOG seconds, default 20), and a valid call
 *   on the same stream right after must be exact (the workspace heals itself). Each
 *   case's time is printed beside a valid call of the same n, num_segments, dtype and op
 *   (uniform segments), median of 3; not asserted (timed assertions do not belong here).
 * graph: the same in a captured graph, replayed with bad and then good offsets.
 * fuzz: random layouts, perturbed and garbage offsets for GS_TEST_FUZZ_SECONDS (default 3;
 *   quick 1), every call watched, every 4th followed by an exact valid call, every 8th with
 *   its offsets rewritten from another stream while it runs (a caller's race: any result,
 *   but no crash or hang).
 * entry: arguments of the other entry points that could make the GPU or the host wait
 *   without end get a status: n near 2^64 with a small allocation, a stream of another
 *   CUDA context, a stream of a destroyed CUDA context, the default context of a destroyed
 *   CUDA context, a freed queue.
 *
 * GS_TEST_QUICK=1 (the default `meson test`): n up to 2^22 and one repeat; the full run
 * (suite gpu-full) goes to 2^26 elements and 2^20 segments. Exits 77 without a driver or
 * device.
 */
#define _POSIX_C_SOURCE 200809L
#include "gridsync.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_check.h"

static int g_failures, g_checks, g_quick;
static unsigned long long g_rng;
static unsigned g_watchdog = 20;

static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

/* ---- the watchdog: a call that does not come back within the limit fails the test ---- */

static const char *volatile g_watching = "";

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: watchdog: a call did not finish in time: ";
    ssize_t w = write(2, msg, sizeof msg - 1);
    w += write(2, g_watching, strlen(g_watching));
    w += write(2, "\n", 1);
    (void)w;
    _exit(1);
}

/* Synchronises s under the watchdog; returns the milliseconds between events a and b. */
static float watched_sync(cushim_stream s, cushim_event a, cushim_event b, const char *what)
{
    g_watching = what;
    alarm(g_watchdog);
    CHECK_CU(cushim_stream_sync(s));
    alarm(0);
    float ms = 0;
    if (a)
        CHECK_CU(cushim_event_elapsed_ms(&ms, a, b));
    return ms;
}

/* ---- buffers shared by every part ---------------------------------------------------- */

typedef struct bufs {
    cushim_ptr in, off, out;
    int32_t *h_in;      /* the input's host copy (random bits) */
    int64_t *h_off;     /* offsets, host side */
    int64_t *h_out;     /* results, host side */
    size_t max_bytes, max_seg;
    cushim_stream s;
    cushim_event e0, e1;
} bufs;

typedef enum { P_RANDOM, P_IN_RANGE, P_DESCENDING, P_ZEROS, P_ALL_N, P_ALTERNATE, P_HUGE, P_DUP_RUNS,
               P_THEN_GARBAGE, P_COUNT } pattern;
static const char *const pattern_name[P_COUNT] = {"random-int64", "random-in-range", "descending", "all-0",
                                                  "all-n", "0-n-alternating", "huge+-", "duplicated-runs",
                                                  "sorted-then-garbage"};

/* Offsets to the device, landed before the next launch on b->s: a copy from pageable
 * memory may return before its DMA is done, and b->s does not wait for the legacy stream. */
static void put_offsets(bufs *b, const int64_t *o, uint64_t S)
{
    CHECK_CU(cushim_h2d(b->off, o, (S + 1) * 8));
    CHECK_CU(cushim_ctx_sync());
}

static void valid_offsets(int64_t *o, uint64_t S, uint64_t n)
{
    for (uint64_t j = 0; j <= S; j++)
        o[j] = (int64_t)((unsigned __int128)n * j / S);
}

static void bad_offsets(pattern p, int64_t *o, uint64_t S, uint64_t n)
{
    const uint64_t run = 1 + rnd() % 64;
    for (uint64_t j = 0; j <= S; j++) {
        switch (p) {
        case P_RANDOM: o[j] = (int64_t)rnd(); break;
        case P_IN_RANGE: o[j] = (int64_t)(rnd() % (n + 1)); break;
        case P_DESCENDING: o[j] = (int64_t)(n - (uint64_t)((unsigned __int128)n * j / S)); break;
        case P_ZEROS: o[j] = 0; break;
        case P_ALL_N: o[j] = (int64_t)n; break;
        case P_ALTERNATE: o[j] = j % 2 ? (int64_t)n : 0; break;
        case P_HUGE: o[j] = j % 3 == 0 ? INT64_MAX : j % 3 == 1 ? INT64_MIN : (int64_t)(rnd() | (1ull << 62)) * (rnd() % 2 ? 1 : -1); break;
        case P_DUP_RUNS: { /* sorted runs, each written twice: the offsets go back at every repeat */
            const uint64_t r = j / run, pos = (r / 2) * run + j % run;
            o[j] = (int64_t)((unsigned __int128)n * (pos < S ? pos : S) / S);
            break;
        }
        case P_THEN_GARBAGE:
            o[j] = j < S / 2 ? (int64_t)((unsigned __int128)n * j / S) : (int64_t)(rnd() % (2 * n + 2)) - 1;
            break;
        default: o[j] = 0;
        }
    }
}

/* A valid int32 SUM (wrapping) or ARGMAX over the input's first n32 words, random layout,
 * checked exactly: the workspace a bad call used must serve the next call. */
static void check_followup(bufs *b, uint64_t n32, int argmax, const char *after)
{
    uint64_t S = 1 + rnd() % (b->max_seg < 5000 ? b->max_seg : 5000);
    int64_t *o = b->h_off;
    o[0] = (int64_t)(rnd() % (n32 / 4 + 1));
    for (uint64_t j = 1; j <= S; j++) {
        const uint64_t room = n32 - (uint64_t)o[j - 1];
        const uint64_t len = room ? rnd() % (rnd() % 4 ? 64 : 3 * n32 / S + 1) : 0;
        o[j] = o[j - 1] + (int64_t)(len < room ? len : room);
    }
    put_offsets(b, o, S);
    CHECK_GS(gs_segmented_reduce(NULL, (const void *)(uintptr_t)b->in, n32, GS_INT32,
                                 argmax ? GS_OP_ARGMAX : GS_OP_SUM, (const int64_t *)(uintptr_t)b->off, S,
                                 (void *)(uintptr_t)b->out, b->s, 0));
    watched_sync(b->s, NULL, NULL, "a valid call after bad offsets");
    CHECK_CU(cushim_d2h(b->h_out, b->out, S * (argmax ? 8 : 4)));
    const int32_t *got32 = (const int32_t *)b->h_out;
    for (uint64_t j = 0; j < S; j++) {
        int64_t want = argmax ? -1 : 0, got = argmax ? b->h_out[j] : got32[j];
        uint32_t sum = 0;
        for (int64_t i = o[j]; i < o[j + 1]; i++) {
            sum += (uint32_t)b->h_in[i];
            if (argmax && (want < 0 || b->h_in[i] > b->h_in[o[j] + want]))
                want = i - o[j];
        }
        if (!argmax)
            want = (int32_t)sum;
        g_checks++;
        if (got != want) {
            FAIL("after %s: valid int32 %s, segment %llu of %llu [%lld, %lld): %lld, want %lld", after,
                 argmax ? "ARGMAX" : "SUM", (unsigned long long)j, (unsigned long long)S, (long long)o[j],
                 (long long)o[j + 1], (long long)got, (long long)want);
            return;
        }
    }
}

typedef struct combo {
    gs_dtype dtype;
    gs_op op;
    size_t size;
} combo;
static const combo combos[] = {{GS_FLOAT64, GS_OP_ARGMIN, 8}, {GS_FLOAT16, GS_OP_ARGMAX, 2}, {GS_FLOAT32, GS_OP_SUM, 4},
                               {GS_UINT8, GS_OP_SUM, 1},      {GS_INT64, GS_OP_MAX, 8},      {GS_BFLOAT16, GS_OP_MIN, 2},
                               {GS_INT32, GS_OP_BIT_XOR, 4},  {GS_FLOAT32, GS_OP_PROD, 4}};
#define NCOMBOS (sizeof combos / sizeof combos[0])

/* One call's median time in ms over `reps` runs, each watched. */
static float timed_call(bufs *b, const combo *c, uint64_t n, uint64_t S, int reps, const char *what)
{
    float t[5];
    for (int r = 0; r < reps; r++) {
        CHECK_CU(cushim_event_record(b->e0, b->s));
        CHECK_GS(gs_segmented_reduce(NULL, (const void *)(uintptr_t)b->in, n, c->dtype, c->op,
                                     (const int64_t *)(uintptr_t)b->off, S, (void *)(uintptr_t)b->out, b->s, 0));
        CHECK_CU(cushim_event_record(b->e1, b->s));
        t[r] = watched_sync(b->s, b->e0, b->e1, what);
    }
    for (int i = 1; i < reps; i++) /* insertion sort: reps <= 5 */
        for (int k = i; k > 0 && t[k] < t[k - 1]; k--) {
            float x = t[k];
            t[k] = t[k - 1];
            t[k - 1] = x;
        }
    return t[reps / 2];
}

static void test_adversarial(bufs *b)
{
    static const uint64_t ns_full[] = {1000, (1u << 20) + 3, (1u << 24) + 1, 1u << 26};
    static const uint64_t ns_quick[] = {1000, (1u << 20) + 3, 1u << 22};
    static const uint64_t segs[] = {1, 7, 1u << 10, (1u << 16) + 1, 1u << 20};
    const uint64_t *ns = g_quick ? ns_quick : ns_full;
    const int nns = g_quick ? 3 : 4, reps = g_quick ? 1 : 3;
    double worst = 0;
    char what[160];
    int ci = (int)(rnd() % NCOMBOS);
    printf("%-20s %-6s %-6s %9s %8s %10s %10s %6s\n", "pattern", "dtype", "op", "n", "S", "bad us", "valid us",
           "ratio");
    for (int p = 0; p < P_COUNT; p++) {
        double pworst = 0;
        for (int ni = 0; ni < nns; ni++)
            for (size_t si = 0; si < sizeof segs / sizeof segs[0]; si++) {
                const combo *c = &combos[ci++ % NCOMBOS];
                const uint64_t n = ns[ni], S = segs[si];
                if (S > b->max_seg || n * c->size > b->max_bytes)
                    continue;
                snprintf(what, sizeof what, "%s offsets, n=%llu S=%llu dtype %d op %d", pattern_name[p],
                         (unsigned long long)n, (unsigned long long)S, (int)c->dtype, (int)c->op);
                valid_offsets(b->h_off, S, n);
                put_offsets(b, b->h_off, S);
                const float good = timed_call(b, c, n, S, reps, what);
                bad_offsets((pattern)p, b->h_off, S, n);
                put_offsets(b, b->h_off, S);
                const float bad = timed_call(b, c, n, S, reps, what);
                g_checks++;
                const double ratio = bad / (good > 0 ? good : 1e-3f);
                if (ratio > pworst)
                    pworst = ratio;
                if (!g_quick || S == (1u << 20) || n == ns[nns - 1])
                    printf("%-20s %-6d %-6d %9llu %8llu %10.1f %10.1f %6.2f\n", pattern_name[p], (int)c->dtype,
                           (int)c->op, (unsigned long long)n, (unsigned long long)S, bad * 1e3, good * 1e3, ratio);
                check_followup(b, n * c->size / 4 ? n * c->size / 4 : 1, (int)(S % 2), what);
            }
        printf("%-20s worst bad/valid time ratio %.2f\n", pattern_name[p], pworst);
        if (pworst > worst)
            worst = pworst;
    }
    printf("adversarial: worst bad/valid time ratio over every case %.2f\n", worst);
}

/* Captured once with bad offsets in the buffer, replayed with bad and then good ones. */
static void test_graph(bufs *b)
{
    typedef int (*begin_fn)(void *, int);
    typedef int (*end_fn)(void *, void **);
    typedef int (*inst_fn)(void **, void *, unsigned long long);
    typedef int (*launch_fn)(void *, void *);
    typedef int (*destroy_fn)(void *);
    begin_fn begin = (begin_fn)cushim_driver_symbol("cuStreamBeginCapture_v2");
    end_fn end = (end_fn)cushim_driver_symbol("cuStreamEndCapture");
    inst_fn inst = (inst_fn)cushim_driver_symbol("cuGraphInstantiateWithFlags");
    launch_fn launch = (launch_fn)cushim_driver_symbol("cuGraphLaunch");
    destroy_fn gdestroy = (destroy_fn)cushim_driver_symbol("cuGraphDestroy");
    destroy_fn edestroy = (destroy_fn)cushim_driver_symbol("cuGraphExecDestroy");
    if (!begin || !end || !inst || !launch || !gdestroy || !edestroy) {
        FAIL("graph: driver entry points missing");
        return;
    }
    const uint64_t n = g_quick ? (1u << 20) : (1u << 24), S = g_quick ? 4096 : (1u << 18);
    void *graph = NULL, *exec = NULL;
    if (begin(b->s, 2 /* CU_STREAM_CAPTURE_MODE_RELAXED */) != 0) {
        FAIL("graph: cuStreamBeginCapture failed");
        return;
    }
    gs_status st = gs_segmented_reduce(NULL, (const void *)(uintptr_t)b->in, n, GS_FLOAT32, GS_OP_ARGMAX,
                                       (const int64_t *)(uintptr_t)b->off, S, (void *)(uintptr_t)b->out, b->s, 0);
    int rc = end(b->s, &graph);
    if (st != GS_SUCCESS || rc != 0 || inst(&exec, graph, 0) != 0) {
        FAIL("graph: capture %s, cuStreamEndCapture %d", gs_status_string(st), rc);
        return;
    }
    for (int rep = 0; rep < (g_quick ? 8 : 64); rep++) {
        bad_offsets((pattern)(rep % P_COUNT), b->h_off, S, n);
        put_offsets(b, b->h_off, S);
        if (launch(exec, b->s) != 0)
            FAIL("graph: cuGraphLaunch failed");
        watched_sync(b->s, NULL, NULL, "a graph replay with bad offsets");
        g_checks++;
    }
    check_followup(b, n, 1, "graph replays with bad offsets");
    edestroy(exec);
    gdestroy(graph);
}

static void test_fuzz(bufs *b)
{
    const char *env = getenv("GS_TEST_FUZZ_SECONDS");
    const double seconds = env ? atof(env) : g_quick ? 1.0 : 3.0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int calls = 0, racing = 0;
    char what[160];
    typedef int (*memset_fn)(cushim_ptr, unsigned char, size_t, cushim_stream);
    memset_fn memset_async = (memset_fn)cushim_driver_symbol("cuMemsetD8Async");
    cushim_stream side;
    CHECK_CU(cushim_stream_create(&side));
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 > seconds)
            break;
        const combo *c = &combos[rnd() % NCOMBOS];
        const uint64_t n = rnd() % ((g_quick ? (1u << 20) : (1u << 23)) + 1);
        const uint64_t S = 1 + rnd() % (rnd() % 2 ? 64 : (1u << 16));
        int64_t *o = b->h_off;
        valid_offsets(o, S, n);
        switch (rnd() % 4) {
        case 0: /* a few values moved anywhere */
            for (int k = 0; k < 1 + (int)(rnd() % 8); k++)
                o[rnd() % (S + 1)] = (int64_t)(rnd() % (2 * n + 3)) - 1;
            break;
        case 1: /* a stretch reversed */
            for (uint64_t a = rnd() % (S + 1), z = a + rnd() % (S + 1 - a); a < z; a++, z--) {
                int64_t x = o[a];
                o[a] = o[z];
                o[z] = x;
            }
            break;
        default: bad_offsets((pattern)(rnd() % P_COUNT), o, S, n);
        }
        put_offsets(b, o, S);
        snprintf(what, sizeof what, "fuzz call %d, n=%llu S=%llu", calls, (unsigned long long)n,
                 (unsigned long long)S);
        CHECK_GS(gs_segmented_reduce(NULL, (const void *)(uintptr_t)b->in, n, c->dtype, c->op,
                                     (const int64_t *)(uintptr_t)b->off, S, (void *)(uintptr_t)b->out, b->s, 0));
        if (calls % 8 == 7 && memset_async) {
            /* the offsets rewritten while the kernel may be reading them (a caller's race):
             * wrong results are allowed, a crash or a hang is not */
            static const unsigned char bytes[] = {0x00, 0xff, 0x7f, 0x80, 0x01};
            for (int k = 0; k < 5; k++)
                if (memset_async(b->off, bytes[(calls / 8 + k) % 5], (S + 1) * 8, side) != 0)
                    FAIL("fuzz: cuMemsetD8Async failed");
            watched_sync(side, NULL, NULL, "offsets rewritten under a running call");
            racing++;
        }
        watched_sync(b->s, NULL, NULL, what);
        g_checks++;
        if (++calls % 4 == 0)
            check_followup(b, 1 + rnd() % (1u << 20), calls % 8 == 0, what);
    }
    CHECK_CU(cushim_stream_destroy(side));
    printf("fuzz: %d calls in %.1f s (%d with their offsets rewritten while running), each finished\n", calls,
           seconds, racing);
}

static void expect(gs_status got, gs_status want, const char *what)
{
    g_checks++;
    if (got != want)
        FAIL("%s: %s (%s), want %s", what, gs_status_string(got), gs_last_error_message(), gs_status_string(want));
    else
        printf("entry: %-58s %s\n", what, gs_status_string(got));
}

/* Arguments of the other entry points that could make the GPU or the host wait. */
static void test_entry(bufs *b)
{
    const void *in = (const void *)(uintptr_t)b->in;
    void *out = (void *)(uintptr_t)b->out;
    const int64_t *off = (const int64_t *)(uintptr_t)b->off;
    expect(gs_reduce(NULL, in, UINT64_MAX, GS_INT32, GS_OP_SUM, out, b->s), GS_ERROR_INVALID_ARGUMENT,
           "gs_reduce, n = 2^64 - 1");
    expect(gs_reduce(NULL, in, (1ull << 62) + 1, GS_FLOAT32, GS_OP_SUM, out, b->s), GS_ERROR_INVALID_ARGUMENT,
           "gs_reduce, n = 2^62 + 1 (n x 4 wraps to 4 bytes)");
    expect(gs_reduce(NULL, in, b->max_bytes / 4 + 1, GS_FLOAT32, GS_OP_SUM, out, b->s), GS_ERROR_INVALID_ARGUMENT,
           "gs_reduce, n one past the allocation");
    expect(gs_segmented_reduce(NULL, in, (1ull << 61) + 1, GS_FLOAT64, GS_OP_SUM, off, 4, out, b->s, 0),
           GS_ERROR_INVALID_ARGUMENT, "gs_segmented_reduce, n = 2^61 + 1 (n x 8 wraps)");
    expect(gs_segmented_reduce(NULL, in, 16, GS_FLOAT64, GS_OP_SUM, off, UINT64_MAX, out, b->s, 0),
           GS_ERROR_INVALID_ARGUMENT, "gs_segmented_reduce, num_segments = 2^64 - 1");
    expect(gs_segmented_reduce(NULL, in, 16, GS_FLOAT64, GS_OP_SUM, off, (1ull << 55), out, b->s, 0),
           GS_ERROR_INVALID_ARGUMENT, "gs_segmented_reduce, num_segments past the offsets' allocation");

    /* A stream of another CUDA context; the default context of a CUDA context destroyed
     * since (the next context may reuse its handle: it must get a fresh default context,
     * not the dead one's workspaces). */
    typedef int (*ctx_create_fn)(void **, unsigned int, int);
    typedef int (*ctx_fn)(void *);
    typedef int (*stream_create_fn)(void **, unsigned int);
    ctx_create_fn ctx_create = (ctx_create_fn)cushim_driver_symbol("cuCtxCreate_v2");
    ctx_fn ctx_destroy = (ctx_fn)cushim_driver_symbol("cuCtxDestroy_v2");
    ctx_fn ctx_set = (ctx_fn)cushim_driver_symbol("cuCtxSetCurrent");
    stream_create_fn stream_create = (stream_create_fn)cushim_driver_symbol("cuStreamCreate");
    gs_context *ctx;
    CHECK_GS(gs_context_create(0, &ctx));
    if (!ctx_create || !ctx_destroy || !ctx_set || !stream_create) {
        FAIL("entry: driver entry points missing");
        gs_context_destroy(ctx);
        return;
    }
    for (int round = 0; round < 3; round++) {
        void *other = NULL, *other_stream = NULL;
        if (ctx_create(&other, 0, 0) != 0 || stream_create(&other_stream, 1) != 0) {
            FAIL("entry: cannot make a second CUDA context");
            break;
        }
        /* `other` is current: its own default context serves it, on a stream of its own */
        cushim_ptr d2;
        CHECK_CU(cushim_alloc(&d2, 4096));
        CHECK_CU(cushim_memset8(d2, 1, 4096));
        CHECK_CU(cushim_ctx_sync());
        expect(gs_reduce(NULL, (const void *)(uintptr_t)d2, 1000, GS_INT32, GS_OP_SUM, (void *)(uintptr_t)(d2 + 4000),
                         (gs_stream)other_stream),
               GS_SUCCESS, "gs_reduce(NULL ctx) on a new CUDA context");
        int32_t sum = 0;
        watched_sync((cushim_stream)other_stream, NULL, NULL, "gs_reduce on a second CUDA context");
        CHECK_CU(cushim_d2h(&sum, d2 + 4000, 4));
        g_checks++;
        if (sum != (int32_t)(1000u * 0x01010101u))
            FAIL("entry: gs_reduce on CUDA context %d: %d, want %d", round, sum, (int32_t)(1000u * 0x01010101u));
        if (round == 0) {
            expect(gs_reduce(ctx, in, 1000, GS_INT32, GS_OP_SUM, out, (gs_stream)other_stream),
                   GS_ERROR_INVALID_CONTEXT, "gs_reduce, a stream of another CUDA context");
            expect(gs_segmented_reduce(ctx, in, 1000, GS_INT32, GS_OP_SUM, off, 1, out, (gs_stream)other_stream, 0),
                   GS_ERROR_INVALID_CONTEXT, "gs_segmented_reduce, a stream of another CUDA context");
        }
        ctx_destroy(other);
        ctx_set(NULL);
        /* no current context now: NULL means device 0's primary context (as the runtime
         * API would pick), never the destroyed one's leftovers */
        expect(gs_reduce(NULL, in, 1000, GS_INT32, GS_OP_SUM, out, NULL), GS_SUCCESS,
               "gs_reduce(NULL ctx), no current context (one destroyed)");
    }
    /* The device's own context and its streams are unaffected. */
    CHECK_CU(cushim_init(0));
    check_followup(b, 100000, 0, "destroyed CUDA contexts");

    /* A freed queue: refused, not used. */
    void *q = NULL;
    CHECK_GS(gs_queue_create(ctx, &q));
    CHECK_GS(gs_queue_destroy(ctx, q));
    expect(gs_queue_reset(ctx, q, b->s), GS_ERROR_INVALID_POINTER, "gs_queue_reset of a destroyed queue");
    expect(gs_queue_destroy(ctx, q), GS_ERROR_INVALID_POINTER, "gs_queue_destroy of a destroyed queue");
    gs_context_destroy(ctx);
}

int main(void)
{
    gpu_test_init();
    g_quick = getenv("GS_TEST_QUICK") && atoi(getenv("GS_TEST_QUICK"));
    if (getenv("GS_TEST_WATCHDOG"))
        g_watchdog = (unsigned)atoi(getenv("GS_TEST_WATCHDOG"));
    const char *seed_env = getenv("GS_TEST_SEED");
    g_rng = seed_env ? strtoull(seed_env, NULL, 0) : (unsigned long long)time(NULL) ^ ((unsigned long long)clock() << 32);
    if (!g_rng)
        g_rng = 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("seed %llu (GS_TEST_SEED=%llu replays it), %s mode, watchdog %u s per call\n", g_rng, g_rng,
           g_quick ? "quick" : "full", g_watchdog);
    signal(SIGALRM, on_alarm);

    gs_context *ctx;
    CHECK_GS(gs_context_create(0, &ctx));
    gs_context_info info = {.struct_size = sizeof info};
    CHECK_GS(gs_context_get_info(ctx, &info));
    printf("device %d: %s, backend %s\n", info.device, info.device_name, info.backend_name);
    gs_context_destroy(ctx);

    bufs b = {.max_bytes = g_quick ? (16u << 20) : (512u << 20), .max_seg = 1u << 20};
    CHECK_CU(cushim_alloc(&b.in, b.max_bytes));
    CHECK_CU(cushim_alloc(&b.off, (b.max_seg + 1) * 8));
    CHECK_CU(cushim_alloc(&b.out, b.max_seg * 8));
    b.h_in = malloc(b.max_bytes);
    b.h_off = malloc((b.max_seg + 1) * 8);
    b.h_out = malloc(b.max_seg * 8);
    if (!b.h_in || !b.h_off || !b.h_out) {
        fprintf(stderr, "FATAL: out of host memory\n");
        return 1;
    }
    for (size_t i = 0; i < b.max_bytes / 4; i++)
        b.h_in[i] = (int32_t)rnd();
    CHECK_CU(cushim_h2d(b.in, b.h_in, b.max_bytes));
    CHECK_CU(cushim_ctx_sync());
    CHECK_CU(cushim_stream_create(&b.s));
    CHECK_CU(cushim_event_create(&b.e0));
    CHECK_CU(cushim_event_create(&b.e1));

    const char *parts = getenv("GS_TEST_PARTS");
#define WANT(name) (!parts || strstr(parts, name))
    struct {
        const char *name;
        void (*fn)(bufs *);
    } part[] = {{"adversarial", test_adversarial}, {"graph", test_graph}, {"fuzz", test_fuzz}, {"entry", test_entry}};
    for (size_t i = 0; i < sizeof part / sizeof part[0]; i++) {
        if (!WANT(part[i].name))
            continue;
        const int before = g_failures, checks = g_checks;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        part[i].fn(&b);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("%-12s %5d checks, %d failed (%.1f s)\n", part[i].name, g_checks - checks, g_failures - before,
               (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    }
    CHECK_CU(cushim_stream_destroy(b.s));
    cushim_free(b.in);
    cushim_free(b.off);
    cushim_free(b.out);
    free(b.h_in);
    free(b.h_off);
    free(b.h_out);
    printf("%s: %d checks, %d failed\n", g_failures ? "FAILED" : "PASSED", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
