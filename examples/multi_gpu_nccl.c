/*
 * multi_gpu_nccl: a sum over several GPUs that is the same bits for any number of GPUs and
 * any sharding (docs/multi-gpu.md).
 *
 * One thread per GPU. Each thread:
 *   1. computes the exact accumulator of its shard: gs_reduce_ex with
 *      GS_REDUCE_EXACT_ACCUMULATOR writes a gs_exact_acc (GS_EXACT_ACC_WORDS int64 words);
 *   2. all-reduces the accumulators: ncclAllReduce(..., GS_EXACT_ACC_WORDS, ncclInt64,
 *      ncclSum, ...). An integer sum is associative, so ring, tree or any rank count gives
 *      the same words;
 *   3. rounds the total once on the device (gs_exact_round_device): the correctly rounded
 *      sum of all the data.
 * All three are queued on the rank's one stream: the host waits only to read the result.
 * The program checks, bitwise, that every rank got the same result, for several random
 * shardings of the same data, and that it equals a one-GPU exact sum over all the data.
 * It also shows the usual recipe (a local float gs_reduce, then an all-reduce of one float),
 * whose bits depend on the sharding.
 *
 *   multi_gpu_nccl [--gpus G] [--log2 L] [--dtype f32|f64] [--trials T] [--seed S]
 *   multi_gpu_nccl --bench [--gpus G] [--log2 L] [--dtype f32|f64] [--unit]
 *
 * The data spread over 40 binades (the exact sums' slower paths), or with --unit uniform in
 * (-1, 1), where an exact sum costs about a microsecond more than the default one.
 * --log2: 2^L elements per GPU (default 20; --bench sweeps 20 .. L, default 26).
 * --bench: per-call time of the exact recipe against the usual one on every GPU, median of
 *   repeats (CUDA events on each GPU's stream, the slowest rank's time), no check of the
 *   usual recipe's bits; then each part of the recipes timed alone, the same way.
 * Exits 0 when every check passed, 1 on a failure, 77 without a CUDA device.
 *
 * NVLink multicast (NVLS) is switched off for this process (NCCL_NVLS_ENABLE=0), as the
 * machines it was written on require.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "gridsync.h"
#include "multi_gpu_common.h"

#define MAX_GPUS 64

typedef struct rank_state {
    int rank, gpus;
    ncclComm_t comm;
    cudaStream_t stream;
    gs_context *ctx;
    gs_dtype dtype;
    void *d_in;          /* the shard, room for `cap` elements */
    size_t cap;
    gs_exact_acc *d_acc; /* the accumulator, all-reduced in place */
    void *d_exact;       /* the exact recipe's result, rounded from d_acc on the device */
    void *d_plain;       /* the usual recipe's one float */
    /* per task */
    const unsigned char *h_shard;
    size_t len;
    uint64_t exact_bits, host_bits, plain_bits; /* host_bits: d_acc rounded by gs_exact_round */
    double exact_us, plain_us;
    double part_us[4]; /* the exact recipe's accumulator, all-reduce and rounding; the usual sum */
    int reps;
} rank_state;

typedef enum task { T_ROUND, T_BENCH, T_QUIT } task;

static pthread_barrier_t g_start, g_done;
static volatile task g_task;

static gs_reduce_options exact_opts(void)
{
    gs_reduce_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.out_dtype = GS_OUT_DEFAULT;
    o.flags = GS_REDUCE_EXACT_ACCUMULATOR;
    return o;
}

/* The exact recipe on one rank, queued on its stream with no host wait: local
 * accumulator, all-reduce of its int64 words, rounding on the device. */
static void queue_exact(rank_state *r)
{
    const gs_reduce_options o = exact_opts();
    GK(gs_reduce_ex(r->ctx, r->d_in, r->len, r->dtype, GS_OP_SUM, r->d_acc, (gs_stream)r->stream, &o));
    NK(ncclAllReduce(r->d_acc, r->d_acc, GS_EXACT_ACC_WORDS, ncclInt64, ncclSum, r->comm, r->stream));
    GK(gs_exact_round_device(r->ctx, r->d_acc, 1, r->dtype, r->d_exact, (gs_stream)r->stream));
}

/* The usual recipe: a local float sum, then an all-reduce of that one float. */
static void queue_plain(rank_state *r)
{
    GK(gs_reduce(r->ctx, r->d_in, r->len, r->dtype, GS_OP_SUM, r->d_plain, (gs_stream)r->stream));
    NK(ncclAllReduce(r->d_plain, r->d_plain, 1, r->dtype == GS_FLOAT32 ? ncclFloat32 : ncclFloat64, ncclSum,
                     r->comm, r->stream));
}

/* The recipes' parts alone, for --bench's breakdown. */
static void part_acc(rank_state *r)
{
    const gs_reduce_options o = exact_opts();
    GK(gs_reduce_ex(r->ctx, r->d_in, r->len, r->dtype, GS_OP_SUM, r->d_acc, (gs_stream)r->stream, &o));
}
static void part_allreduce(rank_state *r)
{
    NK(ncclAllReduce(r->d_acc, r->d_acc, GS_EXACT_ACC_WORDS, ncclInt64, ncclSum, r->comm, r->stream));
}
static void part_round(rank_state *r)
{
    GK(gs_exact_round_device(r->ctx, r->d_acc, 1, r->dtype, r->d_exact, (gs_stream)r->stream));
}
static void part_sum(rank_state *r)
{
    GK(gs_reduce(r->ctx, r->d_in, r->len, r->dtype, GS_OP_SUM, r->d_plain, (gs_stream)r->stream));
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over `reps` timed runs of `calls` back-to-back recipes, in microseconds per call. */
static double time_recipe(rank_state *r, void (*recipe)(rank_state *))
{
    enum { CALLS = 20 };
    double t[64];
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++)
        recipe(r); /* warm-up */
    for (int k = 0; k < r->reps; k++) {
        CK(cudaEventRecord(a, r->stream));
        for (int i = 0; i < CALLS; i++)
            recipe(r);
        CK(cudaEventRecord(b, r->stream));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t[k] = ms * 1e3 / CALLS;
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    qsort(t, (size_t)r->reps, sizeof t[0], cmp_double);
    return t[r->reps / 2];
}

static void *rank_main(void *p)
{
    rank_state *r = p;
    CK(cudaSetDevice(r->rank));
    for (;;) {
        pthread_barrier_wait(&g_start);
        if (g_task == T_QUIT)
            break;
        const size_t esize = r->dtype == GS_FLOAT32 ? 4 : 8;
        if (g_task == T_ROUND) {
            if (r->len)
                CK(cudaMemcpyAsync(r->d_in, r->h_shard, r->len * esize, cudaMemcpyHostToDevice, r->stream));
            queue_exact(r);
            queue_plain(r);
            /* The accumulator comes back too, so its host rounding can be compared. */
            gs_exact_acc acc;
            double exact = 0, plain = 0;
            CK(cudaMemcpyAsync(&exact, r->d_exact, esize, cudaMemcpyDeviceToHost, r->stream));
            CK(cudaMemcpyAsync(&acc, r->d_acc, sizeof acc, cudaMemcpyDeviceToHost, r->stream));
            CK(cudaMemcpyAsync(&plain, r->d_plain, esize, cudaMemcpyDeviceToHost, r->stream));
            CK(cudaStreamSynchronize(r->stream));
            r->exact_bits = r->host_bits = r->plain_bits = 0;
            memcpy(&r->exact_bits, &exact, esize);
            GK(gs_exact_round(&acc, r->dtype, &r->host_bits));
            memcpy(&r->plain_bits, &plain, esize);
        } else {
            r->exact_us = time_recipe(r, queue_exact);
            r->plain_us = time_recipe(r, queue_plain);
            void (*const parts[4])(rank_state *) = {part_acc, part_allreduce, part_round, part_sum};
            for (int k = 0; k < 4; k++)
                r->part_us[k] = time_recipe(r, parts[k]);
        }
        pthread_barrier_wait(&g_done);
    }
    return NULL;
}

static void run_task(task t)
{
    g_task = t;
    pthread_barrier_wait(&g_start);
    if (t != T_QUIT)
        pthread_barrier_wait(&g_done);
}

/* The correctly rounded sum of all the data by one gs_reduce on GPU 0. */
static uint64_t one_gpu_exact(gs_context *ctx, const void *h, size_t n, gs_dtype t)
{
    const size_t esize = t == GS_FLOAT32 ? 4 : 8;
    void *d_all, *d_out;
    CK(cudaSetDevice(0));
    CK(cudaMalloc(&d_all, n ? n * esize : 1));
    CK(cudaMalloc(&d_out, 8));
    CK(cudaMemcpy(d_all, h, n * esize, cudaMemcpyHostToDevice));
    gs_reduce_options o = exact_opts();
    o.flags = GS_REDUCE_EXACT;
    GK(gs_reduce_ex(ctx, d_all, n, t, GS_OP_SUM, d_out, NULL, &o));
    uint64_t bits = 0;
    CK(cudaMemcpy(&bits, d_out, esize, cudaMemcpyDeviceToHost));
    CK(cudaFree(d_all));
    CK(cudaFree(d_out));
    return bits;
}

static double as_double(uint64_t bits, gs_dtype t)
{
    if (t == GS_FLOAT32) {
        float f;
        uint32_t b = (uint32_t)bits;
        memcpy(&f, &b, 4);
        return f;
    }
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

int main(int argc, char **argv)
{
    int gpus = 0, log2n = -1, trials = 8, bench = 0;
    gs_dtype dtype = GS_FLOAT32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--bench"))
            bench = 1;
        else if (!strcmp(a, "--gpus") && v)
            gpus = atoi(argv[++i]);
        else if (!strcmp(a, "--log2") && v)
            log2n = atoi(argv[++i]);
        else if (!strcmp(a, "--trials") && v)
            trials = atoi(argv[++i]);
        else if (!strcmp(a, "--seed") && v)
            g_rng = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--unit"))
            g_unit = 1;
        else if (!strcmp(a, "--dtype") && v && (!strcmp(v, "f32") || !strcmp(v, "f64")))
            dtype = !strcmp(argv[++i], "f32") ? GS_FLOAT32 : GS_FLOAT64;
        else {
            fprintf(stderr, "usage: %s [--bench] [--gpus G] [--log2 L] [--dtype f32|f64] [--trials T] [--seed S] [--unit]\n",
                    argv[0]);
            return 2;
        }
    }
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    int visible = 0;
    if (cudaGetDeviceCount(&visible) != cudaSuccess || visible == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    if (gpus <= 0 || gpus > visible)
        gpus = visible;
    if (gpus > MAX_GPUS)
        gpus = MAX_GPUS;
    if (log2n < 0)
        log2n = bench ? 26 : 20;
    if (log2n > 30 || trials < 1 || trials > 1000) {
        fprintf(stderr, "--log2 goes up to 30, --trials from 1 to 1000\n");
        return 2;
    }
    const size_t per_gpu = (size_t)1 << log2n, esize = dtype == GS_FLOAT32 ? 4 : 8;
    const size_t total = bench ? per_gpu : per_gpu * (size_t)gpus;
    printf("multi_gpu_nccl: %d GPU%s, %s, seed 0x%llx\n", gpus, gpus == 1 ? "" : "s",
           dtype == GS_FLOAT32 ? "float32" : "float64", (unsigned long long)g_rng);

    ncclComm_t comms[MAX_GPUS];
    int devs[MAX_GPUS];
    for (int i = 0; i < gpus; i++)
        devs[i] = i;
    NK(ncclCommInitAll(comms, gpus, devs));
    rank_state st[MAX_GPUS];
    pthread_t th[MAX_GPUS];
    pthread_barrier_init(&g_start, NULL, (unsigned)gpus + 1);
    pthread_barrier_init(&g_done, NULL, (unsigned)gpus + 1);
    for (int i = 0; i < gpus; i++) {
        rank_state *r = &st[i];
        memset(r, 0, sizeof *r);
        r->rank = i;
        r->gpus = gpus;
        r->comm = comms[i];
        r->dtype = dtype;
        r->cap = bench ? per_gpu : total;
        r->reps = 9;
        CK(cudaSetDevice(i));
        CK(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
        GK(gs_context_create(i, &r->ctx));
        CK(cudaMalloc(&r->d_in, r->cap * esize));
        CK(cudaMalloc((void **)&r->d_acc, sizeof(gs_exact_acc)));
        CK(cudaMalloc(&r->d_exact, 8));
        CK(cudaMalloc(&r->d_plain, 8));
        pthread_create(&th[i], NULL, rank_main, r);
    }

    unsigned char *h = malloc(total * esize);
    if (!h) {
        fprintf(stderr, "out of host memory for %zu elements\n", total);
        return 1;
    }
    int failures = 0;
    if (!bench) {
        fill(h, total, dtype);
        const uint64_t want = one_gpu_exact(st[0].ctx, h, total, dtype);
        printf("one GPU, exact: %.17g (0x%llx), %zu elements\n", as_double(want, dtype), (unsigned long long)want,
               total);
        uint64_t plain_first = 0;
        int plain_differs = 0;
        for (int t = 0; t < trials; t++) {
            /* a random sharding: gpus - 1 cut points anywhere in [0, total], shards may be empty */
            size_t cut[MAX_GPUS + 1];
            cut[0] = 0;
            cut[gpus] = total;
            for (int i = 1; i < gpus; i++)
                cut[i] = (size_t)(rnd() % (total + 1));
            for (int i = 1; i < gpus; i++) /* insertion sort of the few cuts */
                for (int j = i; j > 1 && cut[j] < cut[j - 1]; j--) {
                    size_t x = cut[j];
                    cut[j] = cut[j - 1];
                    cut[j - 1] = x;
                }
            for (int i = 0; i < gpus; i++) {
                st[i].h_shard = h + cut[i] * esize;
                st[i].len = cut[i + 1] - cut[i];
            }
            run_task(T_ROUND);
            const int before = failures;
            for (int i = 0; i < gpus; i++)
                if (st[i].exact_bits != want || st[i].host_bits != want) {
                    printf("FAIL: sharding %d, rank %d: exact %.17g (0x%llx; rounded on the host 0x%llx), "
                           "want 0x%llx\n", t, i, as_double(st[i].exact_bits, dtype),
                           (unsigned long long)st[i].exact_bits, (unsigned long long)st[i].host_bits,
                           (unsigned long long)want);
                    failures++;
                }
            if (t == 0)
                plain_first = st[0].plain_bits;
            plain_differs |= st[0].plain_bits != plain_first;
            printf("sharding %d: exact 0x%llx on every rank%s; usual recipe %.17g\n", t,
                   (unsigned long long)st[0].exact_bits, failures > before ? " (NOT)" : "",
                   as_double(st[0].plain_bits, dtype));
        }
        printf("usual recipe (float gs_reduce, then all-reduce of one float): %s across %d shardings\n",
               plain_differs ? "bits differ" : "same bits", trials);
    } else {
        printf("%-8s %14s %14s %8s   %s\n", "n/GPU", "exact us", "usual us", "ratio",
               "alone (us): accumulator, all-reduce 76 words, rounding; float sum");
        fill(h, per_gpu, dtype); /* every GPU reduces the same values: timing only */
        for (int l = 20 < log2n ? 20 : log2n; l <= log2n; l += 2) {
            for (int i = 0; i < gpus; i++) {
                st[i].len = (size_t)1 << l;
                CK(cudaSetDevice(i));
                CK(cudaMemcpyAsync(st[i].d_in, h, st[i].len * esize, cudaMemcpyHostToDevice, st[i].stream));
            }
            run_task(T_BENCH);
            double ex = 0, pl = 0, pt[4] = {0, 0, 0, 0};
            for (int i = 0; i < gpus; i++) {
                ex = st[i].exact_us > ex ? st[i].exact_us : ex;
                pl = st[i].plain_us > pl ? st[i].plain_us : pl;
                for (int k = 0; k < 4; k++)
                    pt[k] = st[i].part_us[k] > pt[k] ? st[i].part_us[k] : pt[k];
            }
            printf("2^%-6d %14.2f %14.2f %8.3f   %.2f, %.2f, %.2f; %.2f\n", l, ex, pl, ex / pl, pt[0], pt[1], pt[2],
                   pt[3]);
        }
    }
    run_task(T_QUIT);
    for (int i = 0; i < gpus; i++) {
        pthread_join(th[i], NULL);
        CK(cudaSetDevice(i));
        CK(cudaFree(st[i].d_in));
        CK(cudaFree(st[i].d_acc));
        CK(cudaFree(st[i].d_exact));
        CK(cudaFree(st[i].d_plain));
        GK(gs_context_destroy(st[i].ctx));
        CK(cudaStreamDestroy(st[i].stream));
        ncclCommDestroy(comms[i]);
    }
    free(h);
    if (!bench)
        printf("%s\n", failures ? "FAILED" : "PASSED: every sharding gave the one-GPU exact bits on every rank");
    return failures ? 1 : 0;
}
