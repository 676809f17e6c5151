/*
 * gpu suite: gs_scan under concurrency, in CUDA graphs, back to back with the other entry
 * points on one stream, and with arguments that could make it wait; every result bit for
 * bit against hostref_scan (scan_common.h) on fresh random data (the seed is printed;
 * GS_TEST_SEED=<n> replays it). Exits 77 only without a driver or a device. The backend is
 * whatever GRIDSYNC_BACKEND says.
 *
 * threads: 8 threads x 4 streams (a created one, one destroyed and recreated every 50 calls
 *   with work in flight, the per-thread and the legacy default stream); threads 0-3 share an
 *   explicit context, 4-7 use the default one. Each thread scans its own inputs (int32 SUM,
 *   float32 SUM exclusive, float16 MAX into float32, uint8 XOR exclusive) into its own 16
 *   outputs, sizes 1 .. 2^20, 16 calls queued with no host synchronisation between them,
 *   each result against the thread's model (quick: 300 calls a thread, full: 2,000).
 * graphs: one gs_scan captured (global mode, on a stream gridsync has not seen: its
 *   workspace is made during the capture), int32 SUM over 2^20 + 3 elements, replayed
 *   10,000 times (quick: 1,000) with three input elements rewritten from the host before
 *   each; every replay's last element, the rewritten positions and two random ones against
 *   a Fenwick tree of the input, and the whole output against the model every 2,500 replays
 *   and at the end. Then float32 SUM exclusive captured in relaxed mode on a stream it has
 *   seen, 1,000 replays (quick: 100), each bitwise equal to a direct call on another
 *   stream, and to the model every fifth of the way. Each graph must hold one kernel node.
 * mixed: on one stream with no synchronisation, scans of four types between gs_reduce,
 *   gs_segmented_reduce and exact sums (the scan's ring shares their zero-state region),
 *   then every result checked.
 * entry: n near 2^64 or past an allocation, a stream of another CUDA context: a status, no
 *   launch, in bounded time (each call and the synchronisation after it under a watchdog).
 */
#define _GNU_SOURCE
#include <time.h>

#include "graph_api.h"
#include "scan_stress.h"

int g_failures, g_checks, g_quick;
long g_equal;
pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
uint64_t g_rng;

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void check_result(const scan_case *c, cushim_ptr dout, uint64_t n, const void *want, void *host, const char *what)
{
    char name[80], why[200] = "";
    uint64_t first = 0;
    CHECK_CU(cushim_d2h(host, dout, n * gs_dtype_size(c->out)));
    if (!scan_same(c->out, host, want, n, &first))
        scan_describe(c->out, host, want, first, why, sizeof why);
    TCHECK(!*why, "%s, n=%" PRIu64 ", %s: %s", scan_case_name(c, name, sizeof name), n, what, why);
}

/* ---- threads ------------------------------------------------------------------------------ */

enum { THREADS = 8, STREAMS = 4, SLOTS = 16, TN = 1 << 20, NCASES = 4, RECREATE_EVERY = 50 };
static const scan_case k_thread_cases[NCASES] = {{GS_INT32, GS_OP_SUM, GS_INT32, 0},
                                                  {GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, 1},
                                                  {GS_FLOAT16, GS_OP_MAX, GS_FLOAT32, 0},
                                                  {GS_UINT8, GS_OP_BIT_XOR, GS_UINT8, 1}};
static const char *const k_stream_name[STREAMS] = {"created", "recreated", "per-thread default", "legacy default"};

typedef struct thread_arg {
    int id;
    gs_context *ctx; /* NULL: the default context */
    uint64_t seed;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    if (cushim_init(0) != CUSHIM_OK) { /* the primary context, current on this thread */
        FAIL("thread %d: %s", a->id, cushim_error());
        return NULL;
    }
    void *h[NCASES], *model[NCASES], *host = scan_xmalloc((size_t)TN * 4);
    cushim_ptr din[NCASES], outs;
    for (int k = 0; k < NCASES; k++) {
        const scan_case *c = &k_thread_cases[k];
        h[k] = scan_xmalloc((size_t)TN * gs_dtype_size(c->t));
        model[k] = scan_xmalloc((size_t)TN * gs_dtype_size(c->out));
        scan_fill(h[k], TN, c->t, c->op, &a->seed);
        TCHECK(scan_model(c, h[k], TN, model[k]) == GS_SUCCESS, "thread %d: hostref_scan", a->id);
        CHECK_CU(cushim_alloc(&din[k], (size_t)TN * gs_dtype_size(c->t)));
        CHECK_CU(cushim_h2d(din[k], h[k], (size_t)TN * gs_dtype_size(c->t)));
    }
    CHECK_CU(cushim_alloc(&outs, (size_t)SLOTS * TN * 4));
    cushim_stream s[STREAMS];
    CHECK_CU(cushim_stream_create(&s[0]));
    CHECK_CU(cushim_stream_create(&s[1]));
    s[2] = (cushim_stream)0x2; /* CU_STREAM_PER_THREAD */
    s[3] = NULL;               /* CU_STREAM_LEGACY */
    const int calls = g_quick ? 300 : 2000;
    int which[SLOTS], kc[SLOTS];
    uint64_t n[SLOTS];
    for (int k = 0; k < calls; k++) {
        const int slot = k % SLOTS;
        if (slot == 0) { /* the outputs poisoned, the uploads and the poison landed */
            CHECK_CU(cushim_memset8(outs, 0xA5, (size_t)SLOTS * TN * 4));
            CHECK_CU(cushim_ctx_sync());
        }
        if (k && k % RECREATE_EVERY == 0) { /* destroyed with scans still queued on it */
            CHECK_CU(cushim_stream_destroy(s[1]));
            CHECK_CU(cushim_stream_create(&s[1]));
        }
        kc[slot] = (int)(gpu_test_rnd(&a->seed) % NCASES);
        n[slot] = 1 + gpu_test_rnd(&a->seed) % ((uint64_t)1 << (gpu_test_rnd(&a->seed) % 21));
        which[slot] = (int)(gpu_test_rnd(&a->seed) % STREAMS);
        gs_status st = scan_call(a->ctx, &k_thread_cases[kc[slot]], (const void *)(uintptr_t)din[kc[slot]], n[slot],
                                 (void *)(uintptr_t)(outs + (cushim_ptr)slot * TN * 4), s[which[slot]]);
        if (st != GS_SUCCESS) {
            FAIL("thread %d call %d (%s stream): %s: %s", a->id, k, k_stream_name[which[slot]], gs_status_string(st),
                 gs_last_error_message());
            break;
        }
        if (slot == SLOTS - 1 || k == calls - 1) {
            CHECK_CU(cushim_ctx_sync());
            for (int j = 0; j <= slot; j++) {
                char what[96];
                snprintf(what, sizeof what, "thread %d (%s context), %s stream", a->id,
                         a->ctx ? "explicit" : "default", k_stream_name[which[j]]);
                check_result(&k_thread_cases[kc[j]], outs + (cushim_ptr)j * TN * 4, n[j], model[kc[j]], host, what);
            }
        }
    }
    CHECK_CU(cushim_ctx_sync());
    for (int k = 0; k < NCASES; k++) {
        CHECK_CU(cushim_free(din[k]));
        free(h[k]);
        free(model[k]);
    }
    free(host);
    CHECK_CU(cushim_free(outs));
    CHECK_CU(cushim_stream_destroy(s[0]));
    CHECK_CU(cushim_stream_destroy(s[1]));
    return NULL;
}

static void test_threads(gs_context *ctx)
{
    pthread_t t[THREADS];
    thread_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (thread_arg){.id = i, .ctx = i < THREADS / 2 ? ctx : NULL, .seed = gpu_test_rnd(&g_rng)};
        if (pthread_create(&t[i], NULL, thread_main, &args[i]) != 0) {
            fprintf(stderr, "FATAL: pthread_create\n");
            exit(1);
        }
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
}

/* ---- graphs -------------------------------------------------------------------------------- */

static gpu_graph_api g_graph;
static CUresult (*g_GraphGetNodes)(CUgraph, CUgraphNode *, size_t *);
static CUresult (*g_GraphNodeGetType)(CUgraphNode, CUgraphNodeType *);

#define CHECK_DRV(call)                                                                            \
    do {                                                                                           \
        CUresult rc_ = (call);                                                                     \
        if (rc_ != CUDA_SUCCESS) {                                                                 \
            fprintf(stderr, "FATAL %s:%d: %s: CUresult %d\n", __FILE__, __LINE__, #call, (int)rc_); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* One gs_scan captured on s in `mode`, instantiated; the graph must be one kernel node. */
static CUgraphExec capture(gs_context *ctx, const scan_case *c, cushim_ptr in, uint64_t n, cushim_ptr out,
                           cushim_stream s, CUstreamCaptureMode mode, const char *label)
{
    CUgraph g;
    CUgraphExec ge;
    CHECK_DRV(g_graph.StreamBeginCapture((CUstream)s, mode));
    gs_status st = scan_call(ctx, c, (const void *)(uintptr_t)in, n, (void *)(uintptr_t)out, s);
    CUresult end = g_graph.StreamEndCapture((CUstream)s, &g);
    if (st != GS_SUCCESS || end != CUDA_SUCCESS) {
        fprintf(stderr, "FATAL %s: capture: gs_scan %s (%s), cuStreamEndCapture %d\n", label, gs_status_string(st),
                gs_last_error_message(), (int)end);
        exit(1);
    }
    size_t count = 0;
    CUgraphNode node;
    CHECK_DRV(g_GraphGetNodes(g, NULL, &count));
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    if (count == 1) {
        CHECK_DRV(g_GraphGetNodes(g, &node, &count));
        CHECK_DRV(g_GraphNodeGetType(node, &type));
    }
    CHECK(count == 1 && type == CU_GRAPH_NODE_TYPE_KERNEL, "%s: %zu nodes (the first of type %d), want one kernel node",
          label, count, (int)type);
    CHECK_DRV(g_graph.GraphInstantiateWithFlags(&ge, g, 0));
    CHECK_DRV(g_graph.GraphDestroy(g));
    return ge;
}

/* Fenwick tree over uint32 (sums modulo 2^32): add v at i; the sum of [0, i]. */
static void fen_add(uint32_t *f, uint64_t n, uint64_t i, uint32_t v)
{
    for (i++; i <= n; i += i & (~i + 1))
        f[i] += v;
}
static uint32_t fen_sum(const uint32_t *f, uint64_t i)
{
    uint32_t s = 0;
    for (i++; i; i -= i & (~i + 1))
        s += f[i];
    return s;
}

static void test_graph_int(gs_context *ctx)
{
    const scan_case c = {GS_INT32, GS_OP_SUM, GS_INT32, 0};
    const uint64_t n = (1u << 20) + 3;
    const int replays = g_quick ? 1000 : 10000, full_every = 2500;
    int32_t *h = scan_xmalloc(n * 4), *want = scan_xmalloc(n * 4), *got = scan_xmalloc(n * 4);
    uint32_t *fen = calloc(n + 1, 4);
    scan_fill(h, n, GS_INT32, GS_OP_SUM, &g_rng);
    for (uint64_t i = 0; i < n; i++)
        fen_add(fen, n, i, (uint32_t)h[i]);
    cushim_ptr din, dout;
    CHECK_CU(cushim_alloc(&din, n * 4 + 20));
    CHECK_CU(cushim_alloc(&dout, n * 4));
    const cushim_ptr in = din + 20; /* at +5 elements */
    CHECK_CU(cushim_h2d(in, h, n * 4));
    CHECK_CU(cushim_ctx_sync());
    cushim_stream s;
    CHECK_CU(cushim_stream_create(&s));
    CUgraphExec ge = capture(ctx, &c, in, n, dout, s, CU_STREAM_CAPTURE_MODE_GLOBAL, "int32 graph");
    int bad = 0;
    for (int r = 1; r <= replays && bad < 5; r++) {
        uint64_t at[5];
        for (int k = 0; k < 3; k++) { /* a new value, never the old one: every later output moves */
            const uint64_t i = at[k] = gpu_test_rnd(&g_rng) % n;
            const int32_t v = (int32_t)((uint32_t)h[i] + 1u + (uint32_t)(gpu_test_rnd(&g_rng) % 1000));
            fen_add(fen, n, i, (uint32_t)v - (uint32_t)h[i]);
            h[i] = v;
            CHECK_CU(cushim_h2d(in + 4 * i, &v, 4));
        }
        at[3] = n - 1;
        at[4] = gpu_test_rnd(&g_rng) % n;
        CHECK_CU(cushim_ctx_sync()); /* the copies land before the graph runs on s */
        CHECK_DRV(g_graph.GraphLaunch(ge, (CUstream)s));
        CHECK_CU(cushim_stream_sync(s));
        for (int k = 0; k < 5; k++) {
            uint32_t g;
            CHECK_CU(cushim_d2h(&g, dout + 4 * at[k], 4));
            const uint32_t w = fen_sum(fen, at[k]);
            g_checks++;
            if (g != w && bad++ < 5)
                FAIL("int32 graph, replay %d: out[%" PRIu64 "] = 0x%08x, want 0x%08x", r, at[k], g, w);
        }
        if (r % full_every == 0 || r == replays) {
            TCHECK(scan_model(&c, h, n, want) == GS_SUCCESS, "hostref_scan");
            char what[48];
            snprintf(what, sizeof what, "int32 graph, replay %d", r);
            check_result(&c, dout, n, want, got, what);
        }
    }
    printf("graph int32 SUM, 2^20 + 3 elements: %d replays, %d wrong samples\n", replays, bad);
    CHECK_DRV(g_graph.GraphExecDestroy(ge));
    CHECK_CU(cushim_stream_destroy(s));
    CHECK_CU(cushim_free(din));
    CHECK_CU(cushim_free(dout));
    free(h), free(want), free(got), free(fen);
}

static void test_graph_float(gs_context *ctx)
{
    const scan_case c = {GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, 1};
    const uint64_t n = 300007;
    const int replays = g_quick ? 100 : 1000;
    float *h = scan_xmalloc(n * 4), *want = scan_xmalloc(n * 4), *a = scan_xmalloc(n * 4), *b = scan_xmalloc(n * 4);
    scan_fill(h, n, GS_FLOAT32, GS_OP_SUM, &g_rng);
    cushim_ptr din, dout, dref;
    CHECK_CU(cushim_alloc(&din, n * 4));
    CHECK_CU(cushim_alloc(&dout, n * 4));
    CHECK_CU(cushim_alloc(&dref, n * 4));
    CHECK_CU(cushim_h2d(din, h, n * 4));
    CHECK_CU(cushim_ctx_sync());
    cushim_stream s, s2;
    CHECK_CU(cushim_stream_create(&s));
    CHECK_CU(cushim_stream_create(&s2));
    CHECK_GS(scan_call(ctx, &c, (const void *)(uintptr_t)din, 1000, (void *)(uintptr_t)dout, s)); /* s seen */
    CHECK_CU(cushim_stream_sync(s));
    CUgraphExec ge = capture(ctx, &c, din, n, dout, s, CU_STREAM_CAPTURE_MODE_RELAXED, "float32 graph");
    int bad = 0;
    for (int r = 1; r <= replays && bad < 5; r++) {
        for (int k = 0; k < 3; k++) {
            const uint64_t i = gpu_test_rnd(&g_rng) % n;
            h[i] = (float)hostref_rand_unit(&g_rng);
            CHECK_CU(cushim_h2d(din + 4 * i, &h[i], 4));
        }
        CHECK_CU(cushim_ctx_sync());
        CHECK_DRV(g_graph.GraphLaunch(ge, (CUstream)s));
        CHECK_GS(scan_call(ctx, &c, (const void *)(uintptr_t)din, n, (void *)(uintptr_t)dref, s2));
        CHECK_CU(cushim_ctx_sync());
        CHECK_CU(cushim_d2h(a, dout, n * 4));
        CHECK_CU(cushim_d2h(b, dref, n * 4));
        g_checks++;
        if (memcmp(a, b, n * 4) != 0 && bad++ < 5)
            FAIL("float32 graph, replay %d: other bits than a direct call on another stream", r);
        if (r % (replays / 5) == 0) {
            TCHECK(scan_model(&c, h, n, want) == GS_SUCCESS, "hostref_scan");
            check_result(&c, dout, n, want, a, "float32 graph");
        }
    }
    printf("graph float32 SUM exclusive, 300007 elements: %d replays, %d differed from a direct call\n", replays, bad);
    CHECK_DRV(g_graph.GraphExecDestroy(ge));
    CHECK_CU(cushim_stream_destroy(s));
    CHECK_CU(cushim_stream_destroy(s2));
    CHECK_CU(cushim_free(din));
    CHECK_CU(cushim_free(dout));
    CHECK_CU(cushim_free(dref));
    free(h), free(want), free(a), free(b);
}

int main(void)
{
    gpu_test_init();
    g_quick = getenv("GS_TEST_QUICK") && atoi(getenv("GS_TEST_QUICK"));
    const char *seed_env = getenv("GS_TEST_SEED");
    g_rng = seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("seed %" PRIu64 " (GS_TEST_SEED=%" PRIu64 " replays it), %s mode\n", g_rng, g_rng, g_quick ? "quick" : "full");
    scan_stress_watchdog();
    gpu_graph_api_load(&g_graph);
    gpu_driver_symbol(&g_GraphGetNodes, "cuGraphGetNodes");
    gpu_driver_symbol(&g_GraphNodeGetType, "cuGraphNodeGetType");
    gs_context *ctx;
    CHECK_GS(gs_context_create(0, &ctx));
    gs_context_info info = {.struct_size = sizeof info};
    CHECK_GS(gs_context_get_info(ctx, &info));
    char backend[64]; /* the info's strings live as long as the context */
    snprintf(backend, sizeof backend, "%s", info.backend_name);
    printf("device %s, backend %s\n", info.device_name, backend);
    const char *only = getenv("GS_TEST_PARTS");
    struct {
        const char *name;
        void (*fn)(gs_context *);
    } parts[] = {{"threads", test_threads}, {"graph-int", test_graph_int}, {"graph-float", test_graph_float},
                 {"mixed", test_mixed}, {"entry", test_entry}};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        if (only && *only && !strstr(only, parts[i].name))
            continue;
        const int failures = g_failures, checks = g_checks;
        const long equal = g_equal;
        const double t0 = now_s();
        parts[i].fn(ctx);
        printf("%-11s %6d checks, %d failed, %ld whole results bitwise equal to hostref_scan (%.1f s)\n",
               parts[i].name, g_checks - checks, g_failures - failures, g_equal - equal, now_s() - t0);
    }
    CHECK_GS(gs_context_destroy(ctx));
    printf("backend %s: %d checks, %d failed; %ld whole results bitwise equal to hostref_scan\n", backend,
           g_checks, g_failures, g_equal);
    return g_failures ? 1 : 0;
}
