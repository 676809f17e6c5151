/*
 * multi_gpu_scan: a prefix sum over several GPUs that is the same bits for any number of
 * GPUs and any sharding, those of one exact scan over all the data (docs/multi-gpu.md,
 * "Scans across GPUs").
 *
 * Rank r holds shard r. Each rank:
 *   1. computes the exact accumulator of its shard: gs_reduce_ex with
 *      GS_REDUCE_EXACT_ACCUMULATOR (one extra read of the shard);
 *   2. all-gathers the accumulators: ncclAllGather of GS_EXACT_ACC_WORDS int64 words per
 *      rank, so every rank holds everyone's;
 *   3. scans its shard with gs_scan(GS_SCAN_EXACT), carry_in = the gathered accumulators of
 *      ranks 0 .. r-1 (carry_in_count = r): the scan starts from the exact sum of
 *      everything before the shard, and each result is rounded once.
 * All three are queued on the rank's one stream, with no host wait. Here one host thread
 * drives every GPU, so the all-gathers of all ranks go in one ncclGroupStart/End, between
 * the ranks' accumulators and their scans (a process per GPU queues the three in a row).
 * For random shardings (empty shards included), inclusive and exclusive, the program checks
 * that the concatenated results equal, bitwise, one exact gs_scan over all the data on GPU 0.
 *
 *   multi_gpu_scan [--gpus G] [--log2 L] [--dtype f32|f64] [--trials T] [--seed S]
 *
 * --log2: 2^L elements per GPU on average (default 20). Exits 0 when every check passed, 1
 * on a failure, 77 without a CUDA device. NVLink multicast (NVLS) is switched off for this
 * process (NCCL_NVLS_ENABLE=0), as multi_gpu_nccl does.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
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
    int rank;
    ncclComm_t comm;
    cudaStream_t stream;
    gs_context *ctx;
    void *d_in, *d_out;        /* the shard and its results, room for `cap` elements */
    gs_exact_acc *d_acc;       /* this shard's accumulator */
    gs_exact_acc *d_gathered;  /* every rank's, in rank order */
    size_t len;
} rank_state;

static gs_scan_options scan_opts(uint32_t flags, const gs_exact_acc *carry_in, uint64_t carry_in_count)
{
    gs_scan_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.out_dtype = GS_OUT_DEFAULT;
    o.flags = GS_SCAN_EXACT | flags;
    o.carry_in = carry_in;
    o.carry_in_count = carry_in_count;
    return o;
}

/* The recipe for every rank, queued on each rank's stream with no host wait. */
static void queue_scan(rank_state *st, int gpus, gs_dtype t, uint32_t flags)
{
    gs_reduce_options ro;
    memset(&ro, 0, sizeof ro);
    ro.struct_size = sizeof ro;
    ro.out_dtype = GS_OUT_DEFAULT;
    ro.flags = GS_REDUCE_EXACT_ACCUMULATOR;
    for (int i = 0; i < gpus; i++) {
        rank_state *r = &st[i];
        CK(cudaSetDevice(r->rank));
        GK(gs_reduce_ex(r->ctx, r->d_in, r->len, t, GS_OP_SUM, r->d_acc, (gs_stream)r->stream, &ro));
    }
    NK(ncclGroupStart());
    for (int i = 0; i < gpus; i++)
        NK(ncclAllGather(st[i].d_acc, st[i].d_gathered, GS_EXACT_ACC_WORDS, ncclInt64, st[i].comm, st[i].stream));
    NK(ncclGroupEnd());
    for (int i = 0; i < gpus; i++) {
        rank_state *r = &st[i];
        const gs_scan_options o = scan_opts(flags, r->rank ? r->d_gathered : NULL, (uint64_t)r->rank);
        CK(cudaSetDevice(r->rank));
        GK(gs_scan(r->ctx, r->d_in, r->len, t, GS_OP_SUM, r->d_out, (gs_stream)r->stream, &o));
    }
}

int main(int argc, char **argv)
{
    int gpus = 0, log2n = 20, trials = 8;
    gs_dtype dtype = GS_FLOAT32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--gpus") && v)
            gpus = atoi(argv[++i]);
        else if (!strcmp(a, "--log2") && v)
            log2n = atoi(argv[++i]);
        else if (!strcmp(a, "--trials") && v)
            trials = atoi(argv[++i]);
        else if (!strcmp(a, "--seed") && v)
            g_rng = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--dtype") && v && (!strcmp(v, "f32") || !strcmp(v, "f64")))
            dtype = !strcmp(argv[++i], "f32") ? GS_FLOAT32 : GS_FLOAT64;
        else {
            fprintf(stderr, "usage: %s [--gpus G] [--log2 L] [--dtype f32|f64] [--trials T] [--seed S]\n", argv[0]);
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
    if (log2n < 0 || log2n > 28 || trials < 1 || trials > 1000) {
        fprintf(stderr, "--log2 goes from 0 to 28, --trials from 1 to 1000\n");
        return 2;
    }
    const size_t esize = dtype == GS_FLOAT32 ? 4 : 8, total = ((size_t)1 << log2n) * (size_t)gpus;
    printf("multi_gpu_scan: %d GPU%s, %s, %zu elements, seed 0x%llx\n", gpus, gpus == 1 ? "" : "s",
           dtype == GS_FLOAT32 ? "float32" : "float64", total, (unsigned long long)g_rng);

    ncclComm_t comms[MAX_GPUS];
    int devs[MAX_GPUS];
    for (int i = 0; i < gpus; i++)
        devs[i] = i;
    NK(ncclCommInitAll(comms, gpus, devs));
    static rank_state st[MAX_GPUS];
    for (int i = 0; i < gpus; i++) {
        rank_state *r = &st[i];
        r->rank = i;
        r->comm = comms[i];
        CK(cudaSetDevice(i));
        CK(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
        GK(gs_context_create(i, &r->ctx));
        CK(cudaMalloc(&r->d_in, total * esize + 16));
        CK(cudaMalloc(&r->d_out, total * esize + 16));
        CK(cudaMalloc((void **)&r->d_acc, sizeof(gs_exact_acc)));
        CK(cudaMalloc((void **)&r->d_gathered, (size_t)gpus * sizeof(gs_exact_acc)));
    }

    unsigned char *h = malloc(total * esize), *want = malloc(total * esize), *got = malloc(total * esize);
    if (!h || !want || !got) {
        fprintf(stderr, "out of host memory for %zu elements\n", total);
        return 1;
    }
    fill(h, total, dtype);
    /* GPU 0's own copy of all the data, for the one-GPU scan */
    void *d_all, *d_ref;
    CK(cudaSetDevice(0));
    CK(cudaMalloc(&d_all, total * esize));
    CK(cudaMalloc(&d_ref, total * esize));
    /* on the stream that scans it: a plain cudaMemcpy runs on the legacy stream, which a
     * non-blocking stream does not wait for */
    CK(cudaMemcpyAsync(d_all, h, total * esize, cudaMemcpyHostToDevice, st[0].stream));

    int failures = 0;
    for (int ex = 0; ex < 2; ex++) {
        const uint32_t flags = ex ? GS_SCAN_EXCLUSIVE : 0;
        const gs_scan_options o = scan_opts(flags, NULL, 0);
        CK(cudaSetDevice(0));
        GK(gs_scan(st[0].ctx, d_all, total, dtype, GS_OP_SUM, d_ref, (gs_stream)st[0].stream, &o));
        CK(cudaMemcpyAsync(want, d_ref, total * esize, cudaMemcpyDeviceToHost, st[0].stream));
        CK(cudaStreamSynchronize(st[0].stream));
        for (int t = 0; t < trials; t++) {
            /* gpus - 1 cuts anywhere in [0, total]: shards may be empty (trial 0: the first) */
            size_t cut[MAX_GPUS + 1];
            cut[0] = 0;
            cut[gpus] = total;
            for (int i = 1; i < gpus; i++)
                cut[i] = t == 0 && i == 1 ? 0 : (size_t)(rnd() % (total + 1));
            for (int i = 1; i < gpus; i++)
                for (int j = i; j > 1 && cut[j] < cut[j - 1]; j--) {
                    const size_t x = cut[j];
                    cut[j] = cut[j - 1];
                    cut[j - 1] = x;
                }
            for (int i = 0; i < gpus; i++) {
                rank_state *r = &st[i];
                r->len = cut[i + 1] - cut[i];
                CK(cudaSetDevice(i));
                if (r->len)
                    CK(cudaMemcpyAsync(r->d_in, h + cut[i] * esize, r->len * esize, cudaMemcpyHostToDevice,
                                       r->stream));
            }
            queue_scan(st, gpus, dtype, flags);
            for (int i = 0; i < gpus; i++) {
                rank_state *r = &st[i];
                CK(cudaSetDevice(i));
                if (r->len)
                    CK(cudaMemcpyAsync(got + cut[i] * esize, r->d_out, r->len * esize, cudaMemcpyDeviceToHost,
                                       r->stream));
                CK(cudaStreamSynchronize(r->stream));
            }
            size_t bad = total;
            if (memcmp(got, want, total * esize))
                for (bad = 0; bad < total && !memcmp(got + bad * esize, want + bad * esize, esize);)
                    bad++;
            printf("%s, sharding %d (cuts", ex ? "exclusive" : "inclusive", t);
            for (int i = 1; i < gpus; i++)
                printf(" %zu", cut[i]);
            if (bad == total) {
                printf("): the one-GPU exact bits\n");
                continue;
            }
            failures++;
            uint64_t g = 0, w = 0;
            memcpy(&g, got + bad * esize, esize);
            memcpy(&w, want + bad * esize, esize);
            printf("): FAIL: first difference at %zu: 0x%llx, one GPU 0x%llx\n", bad, (unsigned long long)g,
                   (unsigned long long)w);
        }
    }
    CK(cudaSetDevice(0));
    CK(cudaFree(d_all));
    CK(cudaFree(d_ref));
    for (int i = 0; i < gpus; i++) {
        rank_state *r = &st[i];
        CK(cudaSetDevice(i));
        CK(cudaFree(r->d_in));
        CK(cudaFree(r->d_out));
        CK(cudaFree(r->d_acc));
        CK(cudaFree(r->d_gathered));
        GK(gs_context_destroy(r->ctx));
        CK(cudaStreamDestroy(r->stream));
        ncclCommDestroy(comms[i]);
    }
    free(h);
    free(want);
    free(got);
    printf("%s\n", failures ? "FAILED" : "PASSED: every sharding gave the one-GPU exact scan's bits");
    return failures ? 1 : 0;
}
