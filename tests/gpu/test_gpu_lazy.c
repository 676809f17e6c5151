/*
 * gpu suite: the kernel families a backend loads at their first call (backends/common/
 * modules.h): the integer types' gs_reduce module, the segmented reduction's and the
 * exact sums' modules, and every kernel, are loaded by the call that first needs them.
 * Checked on fresh contexts, so each case meets a family not loaded yet:
 *
 * first-call: a first gs_segmented_reduce, exact gs_reduce_ex, gs_reduce of a float type
 *   and of an integer type (whose module is loaded then; host time to the end of the
 *   stream's work) against the second; printed, median over 5 contexts;
 * threads: 8 threads meet both families' first call at once, each on its own stream;
 * capture: both families' first call inside a stream capture in global mode (the
 *   strictest), replayed from the graph.
 * Every result is checked against a host reference on fresh random data (the seed is
 * printed; GS_TEST_SEED=<n> replays it). Exits 77 only when there is no driver or device.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GS_CHECK_LOCK() pthread_mutex_lock(&g_lock)
#define GS_CHECK_UNLOCK() pthread_mutex_unlock(&g_lock)
#include "gpu_check.h"
#include "graph_api.h"

static int g_failures, g_checks;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

#define N ((size_t)1 << 20)
#define NSEG 1000
static int32_t g_ints[N];
static float g_floats[N];
static int64_t g_offsets[NSEG + 1];
static int32_t g_seg_want[NSEG];
static float g_exact_want;
static int32_t g_max_want; /* the int32 MAX of g_ints */
static cushim_ptr g_dints, g_dfloats, g_doffsets;

static gpu_graph_api drv;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Integers for the segmented sums (they wrap: exact in uint32) and the int32 MAX, small
 * whole floats for the exact sum (their sum is an integer below 2^53, which (float) rounds
 * correctly). */
static void make_input(uint64_t *seed)
{
    int64_t total = 0;
    for (size_t i = 0; i < N; i++) {
        g_ints[i] = (int32_t)gpu_test_rnd(seed);
        const int64_t v = (int64_t)(gpu_test_rnd(seed) % 2000001) - 1000000;
        g_floats[i] = (float)v;
        total += v;
        g_max_want = i == 0 || g_ints[i] > g_max_want ? g_ints[i] : g_max_want;
    }
    g_exact_want = (float)total;
    g_offsets[0] = 0;
    for (int j = 1; j < NSEG; j++)
        g_offsets[j] = (int64_t)(gpu_test_rnd(seed) % (N + 1));
    g_offsets[NSEG] = N;
    for (int j = 1; j < NSEG; j++) /* insertion sort of 1000 */
        for (int k = j; k > 1 && g_offsets[k] < g_offsets[k - 1]; k--) {
            int64_t t = g_offsets[k];
            g_offsets[k] = g_offsets[k - 1];
            g_offsets[k - 1] = t;
        }
    for (int j = 0; j < NSEG; j++) {
        uint32_t s = 0;
        for (int64_t i = g_offsets[j]; i < g_offsets[j + 1]; i++)
            s += (uint32_t)g_ints[i];
        g_seg_want[j] = (int32_t)s;
    }
    CHECK_CU(cushim_alloc(&g_dints, sizeof g_ints));
    CHECK_CU(cushim_alloc(&g_dfloats, sizeof g_floats));
    CHECK_CU(cushim_alloc(&g_doffsets, sizeof g_offsets));
    CHECK_CU(cushim_h2d(g_dints, g_ints, sizeof g_ints));
    CHECK_CU(cushim_h2d(g_dfloats, g_floats, sizeof g_floats));
    CHECK_CU(cushim_h2d(g_doffsets, g_offsets, sizeof g_offsets));
    CHECK_CU(cushim_ctx_sync());
}

static gs_status segmented(gs_context *ctx, cushim_ptr out, cushim_stream s)
{
    return gs_segmented_reduce(ctx, (const void *)(uintptr_t)g_dints, N, GS_INT32, GS_OP_SUM,
                               (const int64_t *)(uintptr_t)g_doffsets, NSEG, (void *)(uintptr_t)out, s, 0);
}

static gs_status exact(gs_context *ctx, cushim_ptr out, cushim_stream s)
{
    gs_reduce_options o = {.struct_size = sizeof o, .out_dtype = GS_OUT_DEFAULT, .flags = GS_REDUCE_EXACT};
    return gs_reduce_ex(ctx, (const void *)(uintptr_t)g_dfloats, N, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out, s,
                        &o);
}

/* The results in seg_out and exact_out against the host's. */
static void check_results(cushim_ptr seg_out, cushim_ptr exact_out, const char *label)
{
    int32_t got[NSEG];
    float e;
    CHECK_CU(cushim_d2h(got, seg_out, sizeof got));
    CHECK_CU(cushim_d2h(&e, exact_out, sizeof e));
    int bad = 0;
    for (int j = 0; j < NSEG; j++)
        if (got[j] != g_seg_want[j] && bad++ < 3)
            FAIL("%s: segment %d: got %d, want %d", label, j, got[j], g_seg_want[j]);
    CHECK(!bad, "%s: %d segments wrong", label, bad);
    CHECK(memcmp(&e, &g_exact_want, sizeof e) == 0, "%s: exact sum %.9g, want %.9g", label, e, g_exact_want);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A call's host time to the end of its stream's work. */
#define TIMED(ms, call, s)                                                                         \
    do {                                                                                           \
        const double t0_ = now_ms();                                                               \
        CHECK_GS(call);                                                                            \
        CHECK_CU(cushim_stream_sync(s));                                                           \
        (ms) = now_ms() - t0_;                                                                     \
    } while (0)

static void test_first_call(void)
{
    enum { ROUNDS = 5, KINDS = 4 };
    static const char *const names[KINDS] = {"gs_segmented_reduce", "exact gs_reduce_ex", "gs_reduce (f32 max)",
                                             "gs_reduce (i32 max)"};
    double first[KINDS][ROUNDS], second[KINDS][ROUNDS];
    cushim_ptr seg_out, exact_out, out;
    CHECK_CU(cushim_alloc(&seg_out, NSEG * 4));
    CHECK_CU(cushim_alloc(&exact_out, 8));
    CHECK_CU(cushim_alloc(&out, 8));
    for (int r = 0; r < ROUNDS; r++) {
        gs_context *ctx;
        cushim_stream s;
        CHECK_GS(gs_context_create(0, &ctx));
        CHECK_CU(cushim_stream_create(&s));
        /* the stream's workspace first, so that only the kernels' loading is timed (a float
         * type's: their module is loaded at open, the integer types' is timed below) */
        CHECK_GS(gs_reduce(ctx, (const void *)(uintptr_t)g_dfloats, N, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out, s));
        CHECK_CU(cushim_stream_sync(s));
        for (int pass = 0; pass < 2; pass++) {
            double(*t)[ROUNDS] = pass ? second : first;
            TIMED(t[0][r], segmented(ctx, seg_out, s), s);
            TIMED(t[1][r], exact(ctx, exact_out, s), s);
            TIMED(t[2][r], gs_reduce(ctx, (const void *)(uintptr_t)g_dfloats, N, GS_FLOAT32, GS_OP_MAX,
                                     (void *)(uintptr_t)out, s), s);
            TIMED(t[3][r], gs_reduce(ctx, (const void *)(uintptr_t)g_dints, N, GS_INT32, GS_OP_MAX,
                                     (void *)(uintptr_t)out, s), s);
            int32_t max_got;
            CHECK_CU(cushim_d2h(&max_got, out, sizeof max_got));
            CHECK(max_got == g_max_want, "first-call: int32 MAX %d, want %d", (int)max_got, (int)g_max_want);
            check_results(seg_out, exact_out, pass ? "first-call: second" : "first-call: first");
        }
        CHECK_CU(cushim_stream_destroy(s));
        CHECK_GS(gs_context_destroy(ctx));
    }
    for (int k = 0; k < KINDS; k++) {
        qsort(first[k], ROUNDS, sizeof(double), cmp_double);
        qsort(second[k], ROUNDS, sizeof(double), cmp_double);
        printf("first-call %-20s first %.3f ms, second %.3f ms (medians of %d fresh contexts)\n", names[k],
               first[k][ROUNDS / 2], second[k][ROUNDS / 2], ROUNDS);
    }
    CHECK_CU(cushim_free(seg_out));
    CHECK_CU(cushim_free(exact_out));
    CHECK_CU(cushim_free(out));
}

enum { THREADS = 8 };
static pthread_barrier_t g_barrier;

static void *thread_main(void *arg)
{
    gs_context *ctx = arg;
    cushim_stream s;
    cushim_ptr seg_out, exact_out;
    if (cushim_init(0) != CUSHIM_OK) { /* this thread's current CUDA context */
        fprintf(stderr, "FATAL: %s\n", cushim_error());
        exit(1);
    }
    CHECK_CU(cushim_stream_create(&s));
    CHECK_CU(cushim_alloc(&seg_out, NSEG * 4));
    CHECK_CU(cushim_alloc(&exact_out, 8));
    pthread_barrier_wait(&g_barrier);
    gs_status a = segmented(ctx, seg_out, s), b = exact(ctx, exact_out, s);
    CHECK(a == GS_SUCCESS && b == GS_SUCCESS, "threads: %s, %s (%s)", gs_status_string(a), gs_status_string(b),
          gs_last_error_message());
    CHECK_CU(cushim_stream_sync(s));
    if (a == GS_SUCCESS && b == GS_SUCCESS)
        check_results(seg_out, exact_out, "threads");
    CHECK_CU(cushim_free(seg_out));
    CHECK_CU(cushim_free(exact_out));
    CHECK_CU(cushim_stream_destroy(s));
    return NULL;
}

static void test_threads(void)
{
    gs_context *ctx;
    CHECK_GS(gs_context_create(0, &ctx));
    pthread_t t[THREADS];
    pthread_barrier_init(&g_barrier, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, thread_main, ctx) != 0) {
            fprintf(stderr, "FATAL: pthread_create\n");
            exit(1);
        }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&g_barrier);
    CHECK_GS(gs_context_destroy(ctx));
    printf("threads    %d threads met both families' first call at once\n", THREADS);
}

static void test_capture(void)
{
    gs_context *ctx;
    cushim_stream s;
    cushim_ptr seg_out, exact_out;
    CHECK_GS(gs_context_create(0, &ctx));
    CHECK_CU(cushim_stream_create(&s));
    CHECK_CU(cushim_alloc(&seg_out, NSEG * 4));
    CHECK_CU(cushim_alloc(&exact_out, 8));
    CUgraph g;
    CUgraphExec ge;
    if (drv.StreamBeginCapture((CUstream)s, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS) {
        fprintf(stderr, "FATAL: cuStreamBeginCapture\n");
        exit(1);
    }
    gs_status a = segmented(ctx, seg_out, s);
    char msg_a[512];
    snprintf(msg_a, sizeof msg_a, "%s", gs_last_error_message());
    gs_status b = exact(ctx, exact_out, s);
    CUresult end = drv.StreamEndCapture((CUstream)s, &g);
    CHECK(a == GS_SUCCESS && b == GS_SUCCESS && end == CUDA_SUCCESS,
          "capture (global mode): segmented %s (%s), exact %s (%s), cuStreamEndCapture %d", gs_status_string(a), msg_a,
          gs_status_string(b), gs_last_error_message(), (int)end);
    if (a == GS_SUCCESS && b == GS_SUCCESS && end == CUDA_SUCCESS) {
        if (drv.GraphInstantiateWithFlags(&ge, g, 0) != CUDA_SUCCESS) {
            FAIL("capture: cuGraphInstantiateWithFlags");
        } else {
            for (int r = 0; r < 3; r++) {
                CHECK_CU(cushim_memset8(seg_out, 0xA5, NSEG * 4));
                CHECK_CU(cushim_memset8(exact_out, 0xA5, 8));
                CHECK_CU(cushim_ctx_sync());
                CHECK(drv.GraphLaunch(ge, (CUstream)s) == CUDA_SUCCESS, "capture: cuGraphLaunch");
                CHECK_CU(cushim_stream_sync(s));
                check_results(seg_out, exact_out, "capture: replay");
            }
            drv.GraphExecDestroy(ge);
        }
        drv.GraphDestroy(g);
    }
    printf("capture    both families' first call captured in global mode: %s\n",
           a == GS_SUCCESS && b == GS_SUCCESS && end == CUDA_SUCCESS ? "ok" : "FAILED");
    CHECK_CU(cushim_free(seg_out));
    CHECK_CU(cushim_free(exact_out));
    CHECK_CU(cushim_stream_destroy(s));
    CHECK_GS(gs_context_destroy(ctx));
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    gpu_test_init();
    alarm(300);
    gpu_graph_api_load(&drv);
    const char *seed_env = getenv("GS_TEST_SEED");
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    printf("seed %" PRIu64 " (GS_TEST_SEED=%" PRIu64 " replays it)\n", seed, seed);
    make_input(&seed);
    test_capture(); /* first: the process's very first load of the two families */
    test_threads();
    test_first_call();
    CHECK_CU(cushim_free(g_dints));
    CHECK_CU(cushim_free(g_dfloats));
    CHECK_CU(cushim_free(g_doffsets));
    printf("lazy families: %d checks, %d failed\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
