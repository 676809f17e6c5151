/*
 * segmented_reduce: many reductions in one launch, from C. Segment j of the input is
 * in[offsets[j] .. offsets[j+1]) (CUB's convention); gs_segmented_reduce writes one result
 * per segment. The lengths here are as uneven as real data gets: mostly short segments,
 * some empty, a few a hundred thousand times longer. Blocks take chunks of the input from
 * a global work queue, so the long ones do not leave the rest of the GPU idle.
 *
 *   cc segmented_reduce.c $(pkg-config --cflags --libs gridsync) -I<cuda>/include -L<cuda>/lib64 -lcudart
 *
 * It takes every segment's SUM and ARGMAX (the index counts from the segment's first
 * element; -1 for an empty segment) and checks both against the host.
 *
 * Exit status: 0 results right, 1 a result wrong or an error, 77 no CUDA device.
 */
#include <cuda_runtime_api.h>
#include <gridsync/gridsync.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SEGMENTS 20000u

static int cuda_ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess)
        fprintf(stderr, "segmented_reduce: %s: %s\n", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

static int gs_ok(gs_status st, const char *what)
{
    if (st != GS_SUCCESS)
        fprintf(stderr, "segmented_reduce: %s: %s: %s\n", what, gs_status_string(st), gs_last_error_message());
    return st == GS_SUCCESS;
}

/* A segment length: 1 in 10 empty, 1 in 4000 up to about 400 K, the rest up to 100. */
static int64_t draw_length(void)
{
    int r = rand() % 4000;
    if (r == 0)
        return 100000 + rand() % 300000;
    if (r < 400)
        return 0;
    return 1 + rand() % 100;
}

int main(void)
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("segmented_reduce: no CUDA device: nothing to do\n");
        return 77;
    }

    unsigned seed = (unsigned)time(NULL);
    srand(seed);
    int64_t *offsets = malloc((SEGMENTS + 1) * sizeof *offsets);
    if (!offsets)
        return 1;
    offsets[0] = 0;
    for (uint32_t j = 0; j < SEGMENTS; j++)
        offsets[j + 1] = offsets[j] + draw_length();
    uint64_t n = (uint64_t)offsets[SEGMENTS];

    /* Small values: a segment's int32 sum cannot overflow (|value| <= 1000, length < 2^21). */
    int32_t *in = malloc(n * sizeof *in);
    int32_t *want_sum = malloc(SEGMENTS * sizeof *want_sum);
    int64_t *want_arg = malloc(SEGMENTS * sizeof *want_arg);
    int32_t *sum = malloc(SEGMENTS * sizeof *sum);
    int64_t *arg = malloc(SEGMENTS * sizeof *arg);
    if (!in || !want_sum || !want_arg || !sum || !arg)
        return 1;
    for (uint64_t i = 0; i < n; i++)
        in[i] = rand() % 2001 - 1000;
    for (uint32_t j = 0; j < SEGMENTS; j++) {
        int32_t s = 0;
        int64_t best = -1; /* the first index of the maximum, as gridsync's ARGMAX */
        for (int64_t i = offsets[j]; i < offsets[j + 1]; i++) {
            s += in[i];
            if (best < 0 || in[i] > in[offsets[j] + best])
                best = i - offsets[j];
        }
        want_sum[j] = s;
        want_arg[j] = best;
    }

    int32_t *d_in = NULL, *d_sum = NULL;
    int64_t *d_offsets = NULL, *d_arg = NULL;
    gs_context *ctx = NULL;
    int ok = cuda_ok(cudaMalloc((void **)&d_in, n * sizeof *d_in), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_offsets, (SEGMENTS + 1) * sizeof *d_offsets), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_sum, SEGMENTS * sizeof *d_sum), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_arg, SEGMENTS * sizeof *d_arg), "cudaMalloc") &&
             cuda_ok(cudaMemcpy(d_in, in, n * sizeof *d_in, cudaMemcpyHostToDevice), "cudaMemcpy") &&
             cuda_ok(cudaMemcpy(d_offsets, offsets, (SEGMENTS + 1) * sizeof *d_offsets, cudaMemcpyHostToDevice),
                     "cudaMemcpy") &&
             gs_ok(gs_context_create(0, &ctx), "gs_context_create") &&
             /* Offsets straight from the program are trusted (flags 0): checking them would
              * cost a host synchronisation (GS_SEGMENTED_CHECK_OFFSETS). The legacy default
              * stream (NULL) orders both launches after the copies. */
             gs_ok(gs_segmented_reduce(ctx, d_in, n, GS_INT32, GS_OP_SUM, d_offsets, SEGMENTS, d_sum, NULL, 0),
                   "gs_segmented_reduce SUM") &&
             gs_ok(gs_segmented_reduce(ctx, d_in, n, GS_INT32, GS_OP_ARGMAX, d_offsets, SEGMENTS, d_arg, NULL, 0),
                   "gs_segmented_reduce ARGMAX") &&
             cuda_ok(cudaMemcpy(sum, d_sum, SEGMENTS * sizeof *sum, cudaMemcpyDeviceToHost), "cudaMemcpy") &&
             cuda_ok(cudaMemcpy(arg, d_arg, SEGMENTS * sizeof *arg, cudaMemcpyDeviceToHost), "cudaMemcpy");

    if (ok) {
        uint32_t wrong = 0;
        int64_t longest = 0;
        for (uint32_t j = 0; j < SEGMENTS; j++) {
            if (sum[j] != want_sum[j] || arg[j] != want_arg[j]) {
                if (wrong++ < 5)
                    fprintf(stderr, "segmented_reduce: segment %u [%lld, %lld): sum %d argmax %lld, want %d %lld\n", j,
                            (long long)offsets[j], (long long)offsets[j + 1], sum[j], (long long)arg[j], want_sum[j],
                            (long long)want_arg[j]);
            }
            if (offsets[j + 1] - offsets[j] > longest)
                longest = offsets[j + 1] - offsets[j];
        }
        printf("segmented_reduce: %u segments of %llu int32 values (longest %lld), seed %u: %u wrong\n", SEGMENTS,
               (unsigned long long)n, (long long)longest, seed, wrong);
        ok = wrong == 0;
        printf("segmented_reduce: %s\n", ok ? "right" : "WRONG");
    }

    if (ctx)
        gs_context_destroy(ctx);
    cudaFree(d_in);
    cudaFree(d_offsets);
    cudaFree(d_sum);
    cudaFree(d_arg);
    free(offsets);
    free(in);
    free(want_sum);
    free(want_arg);
    free(sum);
    free(arg);
    return ok ? 0 : 1;
}
