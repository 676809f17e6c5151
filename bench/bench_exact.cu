/*
 * gridsync-bench-exact: the default gs_reduce SUM against the correctly rounded one
 * (gs_reduce_ex with GS_REDUCE_EXACT, docs/semantics.md §12) on the same device buffers,
 * for float32, float64, float16 and bfloat16 at 2^10 .. 2^28 elements, per backend.
 *
 * Each time is the median of `repeats` measurements; one measurement is a run of
 * back-to-back calls on one stream between two events, divided by the calls (the per-call
 * cost a loop of reductions sees). Default and exact alternate, so drifts of clock and
 * temperature hit both. Where a kernel takes less than the host needs to launch a call,
 * that per-call cost is the host's launch rate, which moves between machines; so each is
 * also timed queued (launch_timer.cuh's way): the run waits behind a kernel that spins
 * until the host has launched every call, and its events time the GPU alone. Data:
 * uniform in [-1, 1), made on the device from a seed (from the clock, or --seed: some
 * times depend on the data, float32's at 2^20 by about a microsecond), or with --spread J
 * each of those times 2^-j, j uniform in 0 .. J (float16: at most 14, its range), data
 * whose exponents spread over J binades and whose sums leave residuals beyond a thread's
 * expansion (the exact sums' rare paths: ExactSpill, the long accumulator); every exact result
 * is checked bitwise against hostref's exact sum (sizes up to 2^24) or against the other
 * backend's (beyond), so a fast wrong answer cannot pass.
 *
 *   gridsync-bench-exact [--quick] [--csv FILE] [--min-log2 N] [--max-log2 N] [--seed S] [--spread J] [--lone]
 *
 * Prints a table: dtype, n, backend, default us, exact us, exact/default throughput,
 * exact - default in us, the same two times and their difference queued, and CUB's
 * deterministic sum (DeviceReduce::Sum with the gpu_to_gpu requirement) in us for float32
 * and float64 when the CUB headers have it
 * (meson -Dbench-cccl=<a CCCL source tree>; CUDA 13.0's own CUB does not): run on the same
 * buffers in the same rounds, checked to lie within n^2 u of the exact sum. --lone adds lone
 * calls, as an application makes them between kernels of its own: queued too, each call
 * after two other gridsync calls (float64's exact sum and int8's ARGMAX over 2^12 elements,
 * other kernels whose code takes the instruction caches' room) and timed on its own between
 * two events, the mean over the calls (the default, the exact sum, the difference: three
 * more columns). The back-to-back calls keep a kernel's code cached; a lone call fetches it
 * again.
 */
#include <cmath>
#include <ctime>

#include "bench_common.cuh" /* CK, GS_CK, median */
#include "launch_timer.cuh" /* bench_spin */

/* CUB's deterministic sum (cub::DeviceReduce::Sum with the gpu_to_gpu requirement, float
 * and double only), when the CUB headers have it: CCCL 3.1 and later, not CUDA 13.0's
 * (3.0). meson's bench-cccl option puts a newer CCCL's headers first. */
#if __has_include(<cuda/execution.determinism.h>)
#  include <cub/device/device_reduce.cuh>
#  include <cuda/execution.determinism.h>
#  include <cuda/execution.require.h>
#  include <cuda/stream_ref>
#  define BENCH_G2G 1
template <typename T> static void cub_g2g_sum(const void *in, void *out, uint64_t n, cudaStream_t s)
{
    const auto env = cuda::std::execution::env{cuda::stream_ref{s},
                                               cuda::execution::require(cuda::execution::determinism::gpu_to_gpu)};
    CK(cub::DeviceReduce::Sum((const T *)in, (T *)out, (int64_t)n, env));
}
#else
#  define BENCH_G2G 0
#endif
#include "exact_ref.h"
#include "hostref.h"

__device__ inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* Element i: uniform in [-1, 1) from a hash of (seed, i), times 2^-j with j from another
 * hash, uniform in 0 .. spread; rounded to the type. */
__device__ inline double unit_of(uint64_t seed, uint64_t i, int spread)
{
    const uint64_t z = mix64(seed + i * 0x9e3779b97f4a7c15ull);
    const double u = (double)(int64_t)z * 0x1p-63;
    return spread ? ldexp(u, -(int)(mix64(z ^ 0x5eedull) % (uint64_t)(spread + 1))) : u;
}
template <typename T> __global__ void fill(T *p, uint64_t n, uint64_t seed, int spread)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        p[i] = (T)unit_of(seed, i, spread);
}
__global__ void fill_half(unsigned short *p, uint64_t n, uint64_t seed, int spread, int bf16)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const float f = (float)unit_of(seed, i, spread);
        unsigned int b;
        memcpy(&b, &f, 4);
        /* float16: the exponent rebased, 10 bits of significand kept (|f| < 1: no overflow;
         * values below 2^-14 become 0, fine for a benchmark); bfloat16: the top half */
        const unsigned int e = (b >> 23) & 0xff;
        const unsigned short h = e < 113 ? (unsigned short)((b >> 16) & 0x8000)
                                         : (unsigned short)(((b >> 16) & 0x8000) | ((e - 112) << 10) | ((b >> 13) & 0x3ff));
        p[i] = bf16 ? (unsigned short)(b >> 16) : h;
    }
}

struct Ctx {
    const char *backend;
    gs_context *ctx;
};

static const char *tname(gs_dtype t)
{
    return t == GS_FLOAT64 ? "f64" : t == GS_FLOAT32 ? "f32" : t == GS_FLOAT16 ? "f16" : "bf16";
}

/* The whole run; a failed CUDA or gridsync call throws BenchError (CK, GS_CK), which main
 * reports as FATAL (exit status 1). */
static int run(int argc, char **argv)
{
    bool quick = false;
    const char *csv_path = nullptr;
    int min_log2 = 10, max_log2 = 28, spread = 0;
    bool lone = false;
    uint64_t seed = 0x5eed0000ull + (uint64_t)time(nullptr);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
            csv_path = argv[++i];
        else if (!strcmp(argv[i], "--max-log2") && i + 1 < argc)
            max_log2 = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-log2") && i + 1 < argc)
            min_log2 = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], nullptr, 0);
        else if (!strcmp(argv[i], "--spread") && i + 1 < argc && atoi(argv[i + 1]) >= 0 && atoi(argv[i + 1]) <= 100)
            spread = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--lone"))
            lone = true;
        else {
            fprintf(stderr,
                    "usage: %s [--quick] [--csv FILE] [--min-log2 N] [--max-log2 N] [--seed S] [--spread J (0 .. 100)] [--lone]\n",
                    argv[0]);
            return 2;
        }
    }
    if (quick)
        max_log2 = std::min(max_log2, 22);
    if (min_log2 < 0 || max_log2 > 40 || min_log2 > max_log2) { /* 1 << lg defined, some size run */
        fprintf(stderr, "%s: sizes 2^%d .. 2^%d: need 0 <= --min-log2 <= --max-log2 <= 40\n", argv[0], min_log2,
                max_log2);
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    std::vector<Ctx> ctxs = {{"cuda_sm20", nullptr}, {"cuda_sm11_compat", nullptr}};
    for (auto &c : ctxs) {
        setenv("GRIDSYNC_BACKEND", c.backend, 1);
        GS_CK(gs_context_create(0, &c.ctx));
    }
    unsetenv("GRIDSYNC_BACKEND");
    char cub_version[32];
    snprintf(cub_version, sizeof cub_version, "%d.%d.%d", CUB_VERSION / 100000, CUB_VERSION / 100 % 1000,
             CUB_VERSION % 100);
    printf("device %s, seed %" PRIu64 " (--seed replays it), data: uniform in [-1, 1)", prop.name, seed);
    if (spread)
        printf(" times 2^-j, j uniform in 0 .. %d (float16: 0 .. %d)", spread, std::min(spread, 14));
    printf("\n");

    const uint64_t max_n = 1ull << max_log2;
    void *buf;
    CK(cudaMalloc(&buf, max_n * 8));
    void *out;
    CK(cudaMalloc(&out, 64));
    /* --lone: the other calls' input (zeros) and two events per call */
    void *other = nullptr;
    std::vector<cudaEvent_t> lone_ev;
    if (lone) {
        CK(cudaMalloc(&other, 1 << 15));
        CK(cudaMemset(other, 0, 1 << 15));
    }
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    FILE *csv = csv_path ? fopen(csv_path, "w") : nullptr;
    if (csv)
        fprintf(csv, "device,dtype,n,backend,default_us,exact_us,ratio,delta_us,cub_g2g_us,cub_version,"
                     "default_queued_us,exact_queued_us,delta_queued_us,default_lone_us,exact_lone_us,delta_lone_us\n");
    printf("CUB %s (gpu_to_gpu column: %s)\n", cub_version, BENCH_G2G ? "yes, float32 and float64" : "no, these CUB headers lack it");
    printf("%-5s %10s %-17s %11s %11s %8s %9s %9s %9s %9s %9s%s\n", "dtype", "n", "backend", "default us", "exact us",
           "ratio", "delta us", "def q us", "exact q", "delta q", "g2g us",
           lone ? "  def lone  exact lone delta lone" : "");
    const gs_dtype types[4] = {GS_FLOAT32, GS_FLOAT64, GS_FLOAT16, GS_BFLOAT16};
    int failures = 0;
    std::vector<unsigned char> host;
    for (gs_dtype t : types) {
        const size_t esize = t == GS_FLOAT64 ? 8 : t == GS_FLOAT32 ? 4 : 2;
        for (int lg = min_log2; lg <= max_log2; lg += 2) {
            const uint64_t n = 1ull << lg;
            if (t == GS_FLOAT32)
                fill<float><<<1024, 256, 0, stream>>>((float *)buf, n, seed + lg, spread);
            else if (t == GS_FLOAT64)
                fill<double><<<1024, 256, 0, stream>>>((double *)buf, n, seed + lg, spread);
            else
                fill_half<<<1024, 256, 0, stream>>>((unsigned short *)buf, n, seed + lg,
                                                    t == GS_BFLOAT16 ? spread : std::min(spread, 14), t == GS_BFLOAT16);
            CK(cudaStreamSynchronize(stream));
            uint64_t want = 0, first_exact = 0;
            const bool check_host = lg <= 24;
            if (check_host) {
                host.resize(n * esize);
                CK(cudaMemcpy(host.data(), buf, n * esize, cudaMemcpyDeviceToHost));
                want = hostref_exact_sum(t, host.data(), n, t);
            }
            for (size_t c = 0; c < ctxs.size(); c++) {
                gs_reduce_options exact = {};
                exact.struct_size = sizeof exact;
                exact.out_dtype = GS_OUT_DEFAULT;
                exact.flags = GS_REDUCE_EXACT;
                /* calls per measurement: about 2 ms of work, at least 3 */
                const double est_us = 5.0 + (double)(n * esize) / 2.5e6;
                const int calls = std::max(3, (int)(2000.0 / est_us));
                const int repeats = quick ? 5 : 9;
                /* CUB's gpu_to_gpu sum as a third contender, once per size (beside cuda_sm20),
                 * into its own output slot */
                const bool g2g = BENCH_G2G && c == 0 && (t == GS_FLOAT32 || t == GS_FLOAT64);
                void *cub_out = (char *)out + 32;
                std::vector<double> td, te, tc, qd, qe, ld, le;
                if (lone && lone_ev.size() < 2 * (size_t)calls) {
                    const size_t have = lone_ev.size();
                    lone_ev.resize(2 * (size_t)calls);
                    for (size_t k = have; k < lone_ev.size(); k++)
                        CK(cudaEventCreate(&lone_ev[k]));
                }
                for (int r = 0; r < repeats + 1; r++) {
                    /* v: default, exact, CUB; then default and exact queued behind a spin of
                     * 5 us per call (a launch through the API takes about 2 .. 5 here) */
                    for (int v = 0; v < (g2g ? 3 : 2) + 2; v++) {
                        const bool queued = v >= (g2g ? 3 : 2);
                        const int w = queued ? v - (g2g ? 3 : 2) : v; /* 0 default, 1 exact, 2 CUB */
                        if (queued) {
                            bench_spin<<<1, 1, 0, stream>>>(100000ull + 5000ull * (unsigned long long)calls);
                            CK(cudaGetLastError());
                        }
                        CK(cudaEventRecord(e0, stream));
                        for (int k = 0; k < calls; k++) {
                            if (w < 2)
                                GS_CK(gs_reduce_ex(ctxs[c].ctx, buf, n, t, GS_OP_SUM, out, stream, w ? &exact : nullptr));
#if BENCH_G2G
                            else if (t == GS_FLOAT32)
                                cub_g2g_sum<float>(buf, cub_out, n, stream);
                            else
                                cub_g2g_sum<double>(buf, cub_out, n, stream);
#endif
                        }
                        CK(cudaEventRecord(e1, stream));
                        CK(cudaEventSynchronize(e1));
                        float ms;
                        CK(cudaEventElapsedTime(&ms, e0, e1));
                        if (r > 0) /* the first round warms up */
                            (queued ? (w ? qe : qd) : w == 2 ? tc : w ? te : td).push_back(1000.0 * ms / calls);
                    }
                    /* lone calls, default and exact, queued behind a spin long enough for the
                     * host to launch them and the others */
                    for (int w = 0; lone && w < 2; w++) {
                        bench_spin<<<1, 1, 0, stream>>>(100000ull + 20000ull * (unsigned long long)calls);
                        CK(cudaGetLastError());
                        for (int k = 0; k < calls; k++) {
                            GS_CK(gs_reduce_ex(ctxs[c].ctx, other, 1 << 12, GS_FLOAT64, GS_OP_SUM, (char *)out + 48,
                                               stream, &exact));
                            GS_CK(gs_reduce_ex(ctxs[c].ctx, other, 1 << 12, GS_INT8, GS_OP_ARGMAX, (char *)out + 48,
                                               stream, nullptr));
                            CK(cudaEventRecord(lone_ev[2 * k], stream));
                            GS_CK(gs_reduce_ex(ctxs[c].ctx, buf, n, t, GS_OP_SUM, out, stream, w ? &exact : nullptr));
                            CK(cudaEventRecord(lone_ev[2 * k + 1], stream));
                        }
                        CK(cudaStreamSynchronize(stream));
                        double sum = 0;
                        for (int k = 0; k < calls; k++) {
                            float ms;
                            CK(cudaEventElapsedTime(&ms, lone_ev[2 * k], lone_ev[2 * k + 1]));
                            sum += ms;
                        }
                        if (r > 0)
                            (w ? le : ld).push_back(1000.0 * sum / calls);
                    }
                }
                uint64_t got = 0;
                CK(cudaMemcpy(&got, out, esize, cudaMemcpyDeviceToHost));
                if (check_host && !hostref_exact_same(t, got, want)) {
                    fprintf(stderr, "FAIL: %s exact %s n %" PRIu64 ": 0x%" PRIx64 ", want 0x%" PRIx64 "\n",
                            ctxs[c].backend, tname(t), n, got, want);
                    failures++;
                }
                if (c == 0)
                    first_exact = got;
                else if (got != first_exact) {
                    fprintf(stderr, "FAIL: backends disagree on exact %s n %" PRIu64 "\n", tname(t), n);
                    failures++;
                }
                if (g2g) { /* not correctly rounded: within n u sum|x| <= n^2 u of the exact sum */
                    double cub_sum, exact_sum;
                    if (t == GS_FLOAT32) {
                        float a, b;
                        CK(cudaMemcpy(&a, cub_out, 4, cudaMemcpyDeviceToHost));
                        memcpy(&b, &got, 4);
                        cub_sum = a, exact_sum = b;
                    } else {
                        CK(cudaMemcpy(&cub_sum, cub_out, 8, cudaMemcpyDeviceToHost));
                        memcpy(&exact_sum, &got, 8);
                    }
                    const double u = t == GS_FLOAT32 ? 0x1p-24 : 0x1p-53;
                    if (!(fabs(cub_sum - exact_sum) <= (double)n * (double)n * u)) {
                        fprintf(stderr, "FAIL: CUB gpu_to_gpu %s n %" PRIu64 ": %.17g, exact %.17g\n", tname(t), n,
                                cub_sum, exact_sum);
                        failures++;
                    }
                }
                const double d = median(td), x = median(te), qdm = median(qd), qem = median(qe);
                char g2g_us[32] = "", lone_us[64] = "", lone_csv[64] = ",,";
                if (g2g)
                    snprintf(g2g_us, sizeof g2g_us, "%.3f", median(tc));
                if (lone) {
                    const double a = median(ld), b = median(le);
                    snprintf(lone_us, sizeof lone_us, " %9.2f %11.2f %10.2f", a, b, b - a);
                    snprintf(lone_csv, sizeof lone_csv, "%.3f,%.3f,%.3f", a, b, b - a);
                }
                printf("%-5s %10" PRIu64 " %-17s %11.2f %11.2f %8.3f %9.2f %9.2f %9.2f %9.2f %9s%s\n", tname(t), n,
                       ctxs[c].backend, d, x, d / x, x - d, qdm, qem, qem - qdm, g2g ? g2g_us : "-", lone_us);
                if (csv)
                    fprintf(csv, "\"%s\",%s,%" PRIu64 ",%s,%.3f,%.3f,%.4f,%.3f,%s,%s,%.3f,%.3f,%.3f,%s\n", prop.name,
                            tname(t), n, ctxs[c].backend, d, x, d / x, x - d, g2g_us, g2g ? cub_version : "", qdm, qem,
                            qem - qdm, lone_csv);
            }
        }
    }
    if (csv)
        fclose(csv);
    for (cudaEvent_t e : lone_ev)
        CK(cudaEventDestroy(e));
    if (other)
        CK(cudaFree(other));
    for (auto &c : ctxs)
        gs_context_destroy(c.ctx);
    printf("%s\n", failures ? "FAILED" : "all exact results checked");
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    try {
        return run(argc, argv);
    } catch (const std::exception &e) {
        fprintf(stderr, "FATAL %s\n", e.what());
        return 1;
    }
}
