/*
 * gpu suite, two GPUs: exact sums and exact scans (docs/multi-gpu.md) sharded over GPUs 0
 * and 1 must give the bits of one call over all the data on GPU 0. One gs_context and one
 * stream per GPU; accumulators move between the GPUs with cudaMemcpyPeerAsync, ordered by
 * their streams and an event, with no host wait between the GPUs' work. CUDA runtime and
 * gridsync only (hostref writes the 16-bit floats on the host). Exits 77 with fewer than two
 * CUDA devices.
 *
 *  - sums: shards cut anywhere in [0, n] (empty ones too, 2 to 4 of them, alternating
 *    between the GPUs), each one's gs_reduce_ex(GS_REDUCE_EXACT_ACCUMULATOR) on its GPU,
 *    peer-copied to GPU 0, combined on the host (gs_exact_combine), rounded on GPU 0 by
 *    gs_exact_round_device: the bits of gs_reduce_ex(GS_REDUCE_EXACT) over all the data, for
 *    each float type and its wider output.
 *  - scans: shard j scanned (GS_SCAN_EXACT, inclusive and exclusive, every output type) on
 *    its GPU with carry_in = the accumulators of shards 0 .. j-1 (carry_in_count = j), taken
 *    from gs_reduce_ex or from the earlier scans' `total`: the concatenated results are the
 *    bits of one exact gs_scan over all the data. Each scan's total equals gs_reduce_ex's
 *    accumulator of its shard (nan, pos_inf, neg_inf compared as "> 0").
 * Data: normal values; values times 2^uniform over a wide range with negated copies
 * (cancellation); normal values with +inf, +inf and -inf, or a NaN. Sizes up to 2^18 + 3
 * with GS_TEST_QUICK=1, 2^24 + 5 otherwise. Fresh data each run: GS_TEST_SEED=<n> replays it.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include "checks.h"
#include "dtype.h"
#include "hostref.h"

static int g_failures, g_checks, g_quick;
static uint64_t g_rng;

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "FATAL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

enum { KMAX = 4, TRIALS = 4, NKINDS = 3 };
static const gs_dtype kIn[4] = {GS_FLOAT16, GS_BFLOAT16, GS_FLOAT32, GS_FLOAT64};
static const char *const kKind[NKINDS] = {"normal", "wide-cancel", "special"};

/* One GPU's part: the whole input (each shard is read where it lies), results at the
 * shards' offsets, and slot i of accs/tots for shard i's accumulator. */
typedef struct gpu {
    int dev;
    gs_context *ctx;
    cudaStream_t s;
    cudaEvent_t ev[KMAX];
    unsigned char *in, *out, *res;
    gs_exact_acc *accs, *tots;
} gpu;
static gpu G[2];
static unsigned char *g_ref;         /* GPU 0: the one-GPU results */
static unsigned char *h_in, *h_ref, *h_got;
static gs_exact_acc *h_acc;          /* pinned: 2 * KMAX accumulators */

/* The shards: [cut[i], cut[i+1]) on GPU on[i]. */
typedef struct plan {
    int k, on[KMAX];
    uint64_t cut[KMAX + 1];
} plan;

static uint64_t rnd(void) { return hostref_rand(&g_rng); }
static double unit(void) { return (double)(rnd() >> 11) * 0x1p-53; }
static double gauss(void) { return sqrt(-2.0 * log(1.0 - unit())) * cos(6.283185307179586 * unit()); }

/* The n elements of t and kind into h_in, then onto both GPUs. */
static void load(gs_dtype t, int kind, uint64_t n)
{
    const int lo = t == GS_FLOAT16 ? -8 : t == GS_FLOAT64 ? -300 : -60;
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        fprintf(stderr, "FATAL: out of host memory\n");
        exit(1);
    }
    for (uint64_t i = 0; i < n; i++)
        v[i] = kind == 1 ? ldexp(gauss(), lo + (int)(rnd() % (uint64_t)(-2 * lo + 1))) : gauss();
    if (kind == 1) { /* a third cancels another third exactly, anywhere */
        for (uint64_t i = 0; i < n / 3; i++)
            v[i] = -v[n / 3 + i];
        for (uint64_t i = n; i > 1; i--) {
            const uint64_t j = rnd() % i;
            const double x = v[i - 1];
            v[i - 1] = v[j], v[j] = x;
        }
    }
    if (kind == 2 && n) {
        const int what = (int)(rnd() % 3);
        v[rnd() % n] = what == 2 ? NAN : INFINITY;
        if (what == 1)
            v[rnd() % n] = -INFINITY; /* NaN from there on, unless it took the +inf's place */
    }
    for (uint64_t i = 0; i < n; i++)
        hostref_store(t, h_in, i, v[i]);
    free(v);
    for (int g = 0; g < 2; g++)
        CK(cudaMemcpy(G[g].in, h_in, n * gs_dtype_size(t), cudaMemcpyHostToDevice));
}

/* k shards of n: random cuts (trial 1: one at 0 or n), alternating GPUs from a random one. */
static void make_plan(plan *p, uint64_t n, int k, int trial)
{
    p->k = k;
    p->cut[0] = 0;
    p->cut[k] = n;
    for (int i = 1; i < k; i++)
        p->cut[i] = rnd() % (n + 1);
    if (trial == 1)
        p->cut[1] = rnd() & 1 ? n : 0;
    for (int i = 1; i < k; i++)
        for (int j = i; j > 1 && p->cut[j] < p->cut[j - 1]; j--) {
            const uint64_t x = p->cut[j];
            p->cut[j] = p->cut[j - 1], p->cut[j - 1] = x;
        }
    const int first = (int)(rnd() & 1);
    for (int i = 0; i < k; i++)
        p->on[i] = (first + i) % 2;
}

static void describe(char *buf, size_t len, const plan *p)
{
    int w = snprintf(buf, len, "cuts");
    for (int i = 0; i <= p->k && w > 0 && (size_t)w < len; i++)
        w += snprintf(buf + w, len - (size_t)w, " %" PRIu64, p->cut[i]);
    if (w > 0 && (size_t)w < len)
        snprintf(buf + w, len - (size_t)w, ", first shard on GPU %d", p->on[0]);
}

/* Element `off` of a shard of `len` elements: the buffer's start when the shard is empty. */
static void *at(unsigned char *base, uint64_t off, uint64_t len, size_t size)
{
    return base + (len ? off * size : 0);
}

/* Shard i's accumulator on GPU `g`, into slot i of `dst` (on g's device). */
static void queue_acc(int g, gs_dtype t, const plan *p, int i, gs_exact_acc *dst)
{
    gs_reduce_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.out_dtype = GS_OUT_DEFAULT;
    o.flags = GS_REDUCE_EXACT_ACCUMULATOR;
    const uint64_t len = p->cut[i + 1] - p->cut[i];
    CK(cudaSetDevice(G[g].dev));
    CHECK_GS(gs_reduce_ex(G[g].ctx, at(G[g].in, p->cut[i], len, gs_dtype_size(t)), len, t, GS_OP_SUM, &dst[i],
                          (gs_stream)G[g].s, &o));
}

/* Slot i of GPU a's `src` into slot i of GPU b's `dst`: after what a's stream has queued
 * (an event), before what b's stream queues next (the copy is on b's stream). */
static void share(int a, int b, int i, const gs_exact_acc *src, gs_exact_acc *dst)
{
    CK(cudaSetDevice(G[a].dev));
    CK(cudaEventRecord(G[a].ev[i], G[a].s));
    CK(cudaSetDevice(G[b].dev));
    CK(cudaStreamWaitEvent(G[b].s, G[a].ev[i], 0));
    CK(cudaMemcpyPeerAsync(&dst[i], G[b].dev, &src[i], G[a].dev, sizeof(gs_exact_acc), G[b].s));
}

static void sync_both(void)
{
    for (int g = 0; g < 2; g++) {
        CK(cudaSetDevice(G[g].dev));
        CK(cudaStreamSynchronize(G[g].s));
    }
}

/* ---- sums ---------------------------------------------------------------------------- */

/* One sharding: the accumulators onto GPU 0, combined, rounded there into each output. */
static void sum_round(gs_dtype t, const plan *p, const gs_dtype *outs, const uint64_t *want, int nouts,
                      const char *what)
{
    for (int i = 0; i < p->k; i++) {
        queue_acc(p->on[i], t, p, i, G[p->on[i]].accs);
        if (p->on[i] != 0)
            share(p->on[i], 0, i, G[1].accs, G[0].accs);
    }
    CK(cudaSetDevice(G[0].dev));
    CK(cudaMemcpyAsync(h_acc, G[0].accs, (size_t)p->k * sizeof *h_acc, cudaMemcpyDeviceToHost, G[0].s));
    sync_both();
    gs_exact_acc total = h_acc[0];
    for (int i = 1; i < p->k; i++)
        CHECK_GS(gs_exact_combine(&total, &h_acc[i]));
    h_acc[0] = total;
    CK(cudaMemcpyAsync(G[0].tots, h_acc, sizeof total, cudaMemcpyHostToDevice, G[0].s));
    for (int o = 0; o < nouts; o++) {
        uint64_t dev = 0, host = 0;
        CHECK_GS(gs_exact_round_device(G[0].ctx, G[0].tots, 1, outs[o], G[0].res, (gs_stream)G[0].s));
        CK(cudaMemcpyAsync(&dev, G[0].res, gs_dtype_size(outs[o]), cudaMemcpyDeviceToHost, G[0].s));
        CK(cudaStreamSynchronize(G[0].s));
        CHECK_GS(gs_exact_round(&total, outs[o], &host));
        char buf[160];
        describe(buf, sizeof buf, p);
        CHECK(dev == want[o] && host == want[o], "sums %s -> %s, %s: device 0x%" PRIx64 ", host 0x%" PRIx64
              ", one GPU 0x%" PRIx64, what, gs_dtype_name(outs[o]), buf, dev, host, want[o]);
    }
}

static void part_sums(const uint64_t *sizes, int nsizes)
{
    for (int ti = 0; ti < 4; ti++)
        for (int kind = 0; kind < NKINDS; kind++)
            for (int si = 0; si < nsizes; si++) {
                const gs_dtype t = kIn[ti], wide = t == GS_FLOAT64 ? t : t == GS_FLOAT32 ? GS_FLOAT64 : GS_FLOAT32;
                const gs_dtype outs[2] = {t, wide};
                const int nouts = wide == t ? 1 : 2;
                const uint64_t n = sizes[si];
                uint64_t want[2] = {0, 0};
                load(t, kind, n);
                CK(cudaSetDevice(G[0].dev));
                for (int o = 0; o < nouts; o++) {
                    gs_reduce_options ro;
                    memset(&ro, 0, sizeof ro);
                    ro.struct_size = sizeof ro;
                    ro.out_dtype = outs[o] == t ? GS_OUT_DEFAULT : (int32_t)outs[o];
                    ro.flags = GS_REDUCE_EXACT;
                    CHECK_GS(gs_reduce_ex(G[0].ctx, G[0].in, n, t, GS_OP_SUM, G[0].res, (gs_stream)G[0].s, &ro));
                    CK(cudaMemcpyAsync(&want[o], G[0].res, gs_dtype_size(outs[o]), cudaMemcpyDeviceToHost, G[0].s));
                    CK(cudaStreamSynchronize(G[0].s));
                }
                char what[80];
                snprintf(what, sizeof what, "%s %s n=%" PRIu64, gs_dtype_name(t), kKind[kind], n);
                for (int trial = 0; trial < TRIALS; trial++) {
                    plan p;
                    make_plan(&p, n, 2 + trial % 3, trial);
                    sum_round(t, &p, outs, want, nouts, what);
                }
            }
}

/* ---- scans --------------------------------------------------------------------------- */

static int same_acc(const gs_exact_acc *scan, const gs_exact_acc *red)
{
    return !memcmp(scan->limb, red->limb, sizeof scan->limb) && scan->count == red->count &&
           scan->sign_clear == red->sign_clear && (scan->nan > 0) == (red->nan > 0) &&
           (scan->pos_inf > 0) == (red->pos_inf > 0) && (scan->neg_inf > 0) == (red->neg_inf > 0) &&
           scan->nan <= 1 && scan->pos_inf <= 1 && scan->neg_inf <= 1;
}

/* One sharding. from_total 0: the carries are gs_reduce_ex's accumulators, all shared
 * before the scans, and each scan's total is checked against them; 1: shard j's carry-ins
 * are the earlier scans' totals, shared as each is written. */
static void scan_round(gs_dtype t, gs_dtype ot, uint32_t flags, uint64_t n, const plan *p, int from_total,
                       const char *what)
{
    const size_t isz = gs_dtype_size(t), osz = gs_dtype_size(ot);
    gs_scan_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.out_dtype = ot == t ? GS_OUT_DEFAULT : (int32_t)ot;
    o.flags = flags;
    if (!from_total) {
        for (int i = 0; i < p->k; i++)
            queue_acc(p->on[i], t, p, i, G[p->on[i]].accs);
        for (int i = 0; i + 1 < p->k; i++)
            share(p->on[i], 1 - p->on[i], i, G[p->on[i]].accs, G[1 - p->on[i]].accs);
    }
    for (int j = 0; j < p->k; j++) {
        const int g = p->on[j];
        const uint64_t len = p->cut[j + 1] - p->cut[j];
        o.carry_in = j ? G[g].accs : NULL;
        o.carry_in_count = (uint64_t)j;
        o.total = from_total ? &G[g].accs[j] : &G[g].tots[j];
        CK(cudaSetDevice(G[g].dev));
        CHECK_GS(gs_scan(G[g].ctx, at(G[g].in, p->cut[j], len, isz), len, t, GS_OP_SUM,
                         at(G[g].out, p->cut[j], len, osz), (gs_stream)G[g].s, &o));
        if (from_total && j + 1 < p->k)
            share(g, 1 - g, j, G[g].accs, G[1 - g].accs);
    }
    for (int j = 0; j < p->k; j++) {
        const int g = p->on[j];
        const uint64_t len = p->cut[j + 1] - p->cut[j];
        CK(cudaSetDevice(G[g].dev));
        if (len)
            CK(cudaMemcpyAsync(h_got + p->cut[j] * osz, G[g].out + p->cut[j] * osz, len * osz,
                               cudaMemcpyDeviceToHost, G[g].s));
        if (!from_total) {
            CK(cudaMemcpyAsync(&h_acc[j], &G[g].tots[j], sizeof *h_acc, cudaMemcpyDeviceToHost, G[g].s));
            CK(cudaMemcpyAsync(&h_acc[KMAX + j], &G[g].accs[j], sizeof *h_acc, cudaMemcpyDeviceToHost, G[g].s));
        }
    }
    sync_both();
    char buf[160];
    describe(buf, sizeof buf, p);
    uint64_t bad = n;
    if (n && memcmp(h_got, h_ref, n * osz))
        for (bad = 0; bad < n && !memcmp(h_got + bad * osz, h_ref + bad * osz, osz);)
            bad++;
    g_checks++;
    if (bad < n) {
        uint64_t got = 0, want = 0;
        memcpy(&got, h_got + bad * osz, osz);
        memcpy(&want, h_ref + bad * osz, osz);
        FAIL("scans %s -> %s%s, carry from %s, %s: first difference at %" PRIu64 ": 0x%" PRIx64 ", one GPU 0x%" PRIx64,
             what, gs_dtype_name(ot), flags & GS_SCAN_EXCLUSIVE ? " exclusive" : "",
             from_total ? "totals" : "gs_reduce_ex", buf, bad, got, want);
    }
    for (int j = 0; !from_total && j < p->k; j++)
        CHECK(same_acc(&h_acc[j], &h_acc[KMAX + j]),
              "scans %s -> %s: shard %d's total differs from its gs_reduce_ex accumulator (counts %" PRId64 "/%" PRId64
              ", nan %" PRId64 "/%" PRId64 ", sign_clear %" PRId64 "/%" PRId64 "), %s", what, gs_dtype_name(ot), j,
              h_acc[j].count, h_acc[KMAX + j].count, h_acc[j].nan, h_acc[KMAX + j].nan, h_acc[j].sign_clear,
              h_acc[KMAX + j].sign_clear, buf);
}

static void part_scans(const uint64_t *sizes, int nsizes)
{
    for (int ti = 0; ti < 4; ti++)
        for (int kind = 0; kind < NKINDS; kind++)
            for (int si = 0; si < nsizes; si++) {
                const gs_dtype t = kIn[ti], wide = t == GS_FLOAT64 ? t : t == GS_FLOAT32 ? GS_FLOAT64 : GS_FLOAT32;
                const uint64_t n = sizes[si];
                char what[80];
                snprintf(what, sizeof what, "%s %s n=%" PRIu64, gs_dtype_name(t), kKind[kind], n);
                load(t, kind, n);
                for (int w = 0; w < (wide == t ? 1 : 2); w++)
                    for (int ex = 0; ex < 2; ex++) {
                        const gs_dtype ot = w ? wide : t;
                        gs_scan_options o;
                        memset(&o, 0, sizeof o);
                        o.struct_size = sizeof o;
                        o.out_dtype = w ? (int32_t)ot : GS_OUT_DEFAULT;
                        o.flags = GS_SCAN_EXACT | (ex ? GS_SCAN_EXCLUSIVE : 0);
                        CK(cudaSetDevice(G[0].dev));
                        CHECK_GS(gs_scan(G[0].ctx, G[0].in, n, t, GS_OP_SUM, g_ref, (gs_stream)G[0].s, &o));
                        if (n)
                            CK(cudaMemcpyAsync(h_ref, g_ref, n * gs_dtype_size(ot), cudaMemcpyDeviceToHost, G[0].s));
                        CK(cudaStreamSynchronize(G[0].s));
                        for (int trial = 0; trial < TRIALS; trial++) {
                            plan p;
                            make_plan(&p, n, 2 + trial % 3, trial);
                            scan_round(t, ot, o.flags, n, &p, 0, what);
                            make_plan(&p, n, 2 + trial % 3, trial);
                            scan_round(t, ot, o.flags, n, &p, 1, what);
                        }
                    }
            }
}

int main(void)
{
    int count = 0;
    const cudaError_t ce = cudaGetDeviceCount(&count);
    if (ce != cudaSuccess || count < 2) {
        printf("SKIP: needs two CUDA devices (%s)\n", ce != cudaSuccess ? cudaGetErrorString(ce) : count ? "one" : "none");
        return 77;
    }
    const char *q = getenv("GS_TEST_QUICK"), *seed = getenv("GS_TEST_SEED");
    g_quick = q && strcmp(q, "0") != 0;
    g_rng = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)clock();
    printf("seed %" PRIu64 " (GS_TEST_SEED replays it), %s mode\n", g_rng, g_quick ? "quick" : "full");
    /* quick: the suite's time budget; the host reference of 2^20 elements per case is most of it */
    const uint64_t sizes[] = {0, 1, 7, 1000 + rnd() % 1000, 65537, (1u << 18) + 3, (1u << 20) + 3, (1u << 24) + 5};
    const int nsizes = g_quick ? 6 : 8;
    const uint64_t cap = sizes[nsizes - 1];

    int peer = 0;
    CK(cudaDeviceCanAccessPeer(&peer, 0, 1));
    for (int g = 0; g < 2; g++) {
        gpu *d = &G[g];
        d->dev = g;
        CK(cudaSetDevice(g));
        if (peer) {
            const cudaError_t e = cudaDeviceEnablePeerAccess(1 - g, 0);
            if (e == cudaErrorPeerAccessAlreadyEnabled)
                (void)cudaGetLastError();
            else
                CK(e);
        }
        CHECK_GS(gs_context_create(g, &d->ctx));
        CK(cudaStreamCreateWithFlags(&d->s, cudaStreamNonBlocking));
        for (int i = 0; i < KMAX; i++)
            CK(cudaEventCreateWithFlags(&d->ev[i], cudaEventDisableTiming));
        CK(cudaMalloc((void **)&d->in, cap * 8 + 16));
        CK(cudaMalloc((void **)&d->out, cap * 8 + 16));
        CK(cudaMalloc((void **)&d->res, 16));
        CK(cudaMalloc((void **)&d->accs, KMAX * sizeof(gs_exact_acc)));
        CK(cudaMalloc((void **)&d->tots, KMAX * sizeof(gs_exact_acc)));
    }
    CK(cudaSetDevice(0));
    CK(cudaMalloc((void **)&g_ref, cap * 8 + 16));
    CK(cudaMallocHost((void **)&h_in, cap * 8 + 16));
    CK(cudaMallocHost((void **)&h_ref, cap * 8 + 16));
    CK(cudaMallocHost((void **)&h_got, cap * 8 + 16));
    CK(cudaMallocHost((void **)&h_acc, 2 * KMAX * sizeof *h_acc));
    printf("GPUs 0 and 1, peer access %s\n", peer ? "on" : "off (copies staged by the driver)");

    int c0 = g_checks, f0 = g_failures;
    part_sums(sizes, nsizes);
    printf("sums: %d checks, %d failed\n", g_checks - c0, g_failures - f0);
    fflush(stdout);
    c0 = g_checks, f0 = g_failures;
    part_scans(sizes, nsizes);
    printf("scans: %d checks, %d failed\n", g_checks - c0, g_failures - f0);

    for (int g = 0; g < 2; g++) {
        gpu *d = &G[g];
        CK(cudaSetDevice(g));
        CK(cudaStreamSynchronize(d->s));
        CHECK_GS(gs_context_destroy(d->ctx));
        for (int i = 0; i < KMAX; i++)
            CK(cudaEventDestroy(d->ev[i]));
        CK(cudaStreamDestroy(d->s));
        CK(cudaFree(d->in));
        CK(cudaFree(d->out));
        CK(cudaFree(d->res));
        CK(cudaFree(d->accs));
        CK(cudaFree(d->tots));
    }
    CK(cudaFree(g_ref));
    CK(cudaFreeHost(h_in));
    CK(cudaFreeHost(h_ref));
    CK(cudaFreeHost(h_got));
    CK(cudaFreeHost(h_acc));
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
