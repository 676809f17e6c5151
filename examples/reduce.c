/*
 * reduce: gridsync from C. The program owns its GPU memory (here through the CUDA runtime,
 * as most CUDA programs do) and hands gridsync device pointers and a stream.
 *
 *   cc reduce.c $(pkg-config --cflags --libs gridsync) -I<cuda>/include -L<cuda>/lib64 -lcudart
 *
 * gridsync itself needs neither: only the cudaMalloc, cudaMemcpy and the stream here do.
 * It sums 10 M random int32 values into an int64 (gs_reduce_ex: no overflow), takes their
 * maximum (gs_reduce), sums the same number of float32 values, and checks all three
 * against the host. Each call is one kernel launch, queued on the stream like any other.
 *
 * Exit status: 0 results right, 1 a result wrong or an error, 77 no CUDA device.
 */
#include <cuda_runtime_api.h>
#include <gridsync/gridsync.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 10000003u /* not a multiple of anything: the tail is handled too */

static int cuda_ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess)
        fprintf(stderr, "reduce: %s: %s\n", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

static int gs_ok(gs_status st, const char *what)
{
    if (st != GS_SUCCESS)
        fprintf(stderr, "reduce: %s: %s: %s\n", what, gs_status_string(st), gs_last_error_message());
    return st == GS_SUCCESS;
}

int main(void)
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("reduce: no CUDA device: nothing to do\n");
        return 77;
    }

    /* Fresh random data each run (the seed is printed), never zeros. */
    unsigned seed = (unsigned)time(NULL);
    srand(seed);
    int32_t *hi = malloc(N * sizeof *hi);
    float *hf = malloc(N * sizeof *hf);
    if (!hi || !hf)
        return 1;
    int64_t want_sum = 0;
    int32_t want_max = INT32_MIN;
    double want_fsum = 0.0;
    for (uint32_t i = 0; i < N; i++) {
        hi[i] = rand() - RAND_MAX / 2;
        hf[i] = (float)rand() / (float)RAND_MAX - 0.25f;
        want_sum += hi[i];
        want_max = hi[i] > want_max ? hi[i] : want_max;
        want_fsum += hf[i];
    }

    int32_t *di = NULL, *dmax = NULL;
    float *df = NULL, *dfsum = NULL;
    int64_t *dsum = NULL;
    cudaStream_t stream = NULL;
    gs_context *ctx = NULL;
    int ok = cuda_ok(cudaMalloc((void **)&di, N * sizeof *di), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&df, N * sizeof *df), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&dsum, sizeof *dsum), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&dmax, sizeof *dmax), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&dfsum, sizeof *dfsum), "cudaMalloc") &&
             cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate") &&
             cuda_ok(cudaMemcpy(di, hi, N * sizeof *di, cudaMemcpyHostToDevice), "cudaMemcpy") &&
             cuda_ok(cudaMemcpy(df, hf, N * sizeof *df, cudaMemcpyHostToDevice), "cudaMemcpy") &&
             /* One context per device; it picks the backend for the device's generation. */
             gs_ok(gs_context_create(0, &ctx), "gs_context_create");

    if (ok) {
        /* int32 SUM into int64: gs_reduce_ex with out_dtype (gs_reduce would wrap). */
        gs_reduce_options opts = {0};
        opts.struct_size = sizeof opts;
        opts.out_dtype = GS_INT64;
        ok = gs_ok(gs_reduce_ex(ctx, di, N, GS_INT32, GS_OP_SUM, dsum, stream, &opts), "gs_reduce_ex") &&
             gs_ok(gs_reduce(ctx, di, N, GS_INT32, GS_OP_MAX, dmax, stream), "gs_reduce") &&
             gs_ok(gs_reduce(ctx, df, N, GS_FLOAT32, GS_OP_SUM, dfsum, stream), "gs_reduce");
    }
    int64_t sum = 0;
    int32_t max = 0;
    float fsum = 0.0f;
    /* The calls return once queued; the results are there after the stream's work. */
    ok = ok && cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize") &&
         cuda_ok(cudaMemcpy(&sum, dsum, sizeof sum, cudaMemcpyDeviceToHost), "cudaMemcpy") &&
         cuda_ok(cudaMemcpy(&max, dmax, sizeof max, cudaMemcpyDeviceToHost), "cudaMemcpy") &&
         cuda_ok(cudaMemcpy(&fsum, dfsum, sizeof fsum, cudaMemcpyDeviceToHost), "cudaMemcpy");

    if (ok) {
        gs_context_info info = {0};
        info.struct_size = sizeof info;
        if (gs_context_get_info(ctx, &info) == GS_SUCCESS)
            printf("reduce: gridsync %s, backend %s, seed %u\n", gs_version_string(), info.backend_name, seed);
        /* float32 accumulates in float32 in the blocks: n = 10 M values of about 0.25 sum to
         * about 2.5 M, so a relative error of 1e-5 is generous, 1e-3 would hide a lost block. */
        double rel = fabs((double)fsum - want_fsum) / fabs(want_fsum);
        printf("reduce: int32 sum (int64) %lld, want %lld\n", (long long)sum, (long long)want_sum);
        printf("reduce: int32 max %d, want %d\n", max, want_max);
        printf("reduce: float32 sum %.9g, host float64 sum %.9g (relative error %.2g)\n", fsum, want_fsum, rel);
        ok = sum == want_sum && max == want_max && rel < 1e-5;
        printf("reduce: %s\n", ok ? "right" : "WRONG");
    }

    if (ctx)
        gs_context_destroy(ctx);
    if (stream)
        cudaStreamDestroy(stream);
    cudaFree(di);
    cudaFree(df);
    cudaFree(dsum);
    cudaFree(dmax);
    cudaFree(dfsum);
    free(hi);
    free(hf);
    return ok ? 0 : 1;
}
