/*
 * work_queue: gridsync's global work queue against static assignment, on work items of
 * very different cost.
 *
 * Item i costs iterations(i) steps of a 64-bit LCG in every thread of the block that takes
 * it, where iterations(i) = scale x a Pareto (alpha 1.1) draw capped at cap: most items are
 * cheap, a few are up to `cap` times dearer. Both kernels run a persistent grid (as many
 * blocks as fit on the device at once) and compute the same number: the wrapping 64-bit
 * sum of every thread's final LCG state over all items.
 *
 *   static   block b takes items b, b + gridDim.x, b + 2 gridDim.x, ... up front: the block
 *            that drew the dear items finishes long after the others;
 *   queue    blocks take the next item when done with the last (gs_queue_fetch), so they
 *            all finish at about the same time.
 *
 * Both end the same way: each block publishes its partial sum, and the last block to
 * finish (the last-block guard, gs_last_block_sm20) adds the partials up in block order
 * and writes the result -- one launch, no second kernel. The queue comes from
 * gs_queue_create, is zero-filled once, and is used by every launch after that without a
 * reset: the last block to call gs_queue_finish returns it to zero. gs_queue_reset is for
 * a launch that did not finish (shown once, where such a recovery would go).
 *
 * The result of every launch is checked against a host reference (LCG jump-ahead, so the
 * host need not redo the work). Times are CUDA events around each launch, median of --runs
 * after one untimed warm-up run of each.
 *
 *   work_queue [--items N] [--scale S] [--cap C] [--runs R] [--quick]
 *              defaults: 16384 items, scale 256, cap 256, 9 runs; --quick: 4096 items,
 *              scale 64, 3 runs (what the gpu suite runs)
 *
 * Exit status: 0 results right, 1 a result wrong or a CUDA error, 77 no CUDA device.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gridsync.h"
#include "gridsync_device.cuh"

static_assert(GS_QUEUE_BYTES == GS_WORK_QUEUE_BYTES, "host and device headers disagree on the queue's size");

#ifndef GS_EXAMPLE_BACKEND_DIR
#  define GS_EXAMPLE_BACKEND_DIR ""
#endif

#define CK(call)                                                                                          \
    do {                                                                                                  \
        cudaError_t e_ = (call);                                                                          \
        if (e_ != cudaSuccess) {                                                                          \
            fprintf(stderr, "work_queue: %s: %s (%s)\n", #call, cudaGetErrorName(e_), cudaGetErrorString(e_)); \
            exit(1);                                                                                      \
        }                                                                                                 \
    } while (0)

#define CK_GS(call)                                                                                      \
    do {                                                                                                 \
        gs_status st_ = (call);                                                                          \
        if (st_ != GS_SUCCESS) {                                                                         \
            fprintf(stderr, "work_queue: %s: %s: %s\n", #call, gs_status_string(st_), gs_last_error_message()); \
            exit(1);                                                                                     \
        }                                                                                                \
    } while (0)

/* Threads per block (-DWQ_THREADS=512 to try another size). */
#ifndef WQ_THREADS
#  define WQ_THREADS 256
#endif
constexpr unsigned int kThreads = WQ_THREADS;
constexpr unsigned long long kLcgMul = 6364136223846793005ull, kLcgAdd = 1442695040888963407ull;

static __host__ __device__ __forceinline__ unsigned long long mix(unsigned long long z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The cost of item i in LCG steps: scale x Pareto(alpha 1.1), capped at cap x scale.
 * Computed once on the host and handed to the kernels as a table, so the host reference
 * and the device agree on it to the last bit. */
static unsigned int iterations(unsigned long long i, unsigned int scale, unsigned int cap)
{
    const double u = (double)(mix(i) >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
    const double x = std::min(pow(1.0 - u, -1.0 / 1.1), (double)cap);
    return (unsigned int)(x * scale);
}

/* The work of one item, for the thread `t` of the block: its LCG's final state. */
static __device__ __forceinline__ unsigned long long item_work(unsigned long long item, unsigned int t,
                                                               unsigned int steps)
{
    unsigned long long x = mix(item * kThreads + t);
    for (unsigned int k = 0; k < steps; k++)
        x = x * kLcgMul + kLcgAdd;
    return x;
}

/* Block-wide sum, in thread 0. */
static __device__ unsigned long long block_sum(unsigned long long v)
{
    __shared__ unsigned long long red[kThreads];
    __syncthreads(); /* a previous call's readers are done with red */
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned int w = kThreads / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            red[threadIdx.x] += red[threadIdx.x + w];
        __syncthreads();
    }
    return red[0];
}

/* The end of both kernels: publish the block's partial; the last block adds them up in
 * block order, writes *out and re-arms the counter for the next launch. */
static __device__ void combine(unsigned long long mine, unsigned long long *partials, unsigned int *counter,
                               unsigned long long *out)
{
    const unsigned long long block_total = block_sum(mine);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = block_total;
        gs_publish(); /* release: the partial before the ticket */
    }
    if (gs_last_block_sm20(counter)) {
        gs_acquire(); /* acquire: every other block's partial is visible now */
        unsigned long long acc = 0;
        for (unsigned int b = threadIdx.x; b < gridDim.x; b += kThreads)
            acc += gs_load_volatile(&partials[b]);
        const unsigned long long total = block_sum(acc);
        if (threadIdx.x == 0) {
            *out = total;
            gs_reset_counter(counter);
        }
    }
}

__global__ void __launch_bounds__(kThreads) static_kernel(unsigned long long count, const unsigned int *steps,
                                                          unsigned long long *partials, unsigned int *counter,
                                                          unsigned long long *out)
{
    unsigned long long acc = 0;
    for (unsigned long long item = blockIdx.x; item < count; item += gridDim.x)
        acc += item_work(item, threadIdx.x, steps[item]);
    combine(acc, partials, counter, out);
}

__global__ void __launch_bounds__(kThreads) queue_kernel(gs_work_queue *queue, unsigned long long count,
                                                         const unsigned int *steps, unsigned long long *partials,
                                                         unsigned int *counter, unsigned long long *out)
{
    unsigned long long acc = 0;
    for (long long item; (item = gs_queue_fetch(queue, count)) >= 0;) {
        acc += item_work((unsigned long long)item, threadIdx.x, steps[item]);
        __syncthreads(); /* the queue's contract: a barrier between two fetches */
    }
    gs_queue_finish(queue); /* every block once: the last one returns the queue to zero */
    combine(acc, partials, counter, out);
}

/* ---- host ------------------------------------------------------------------------------- */

/* (A, C) with x_n = A x_0 + C after n LCG steps (jump-ahead by squaring). */
static void lcg_jump(unsigned long long n, unsigned long long *A, unsigned long long *C)
{
    unsigned long long a = kLcgMul, c = kLcgAdd, acc_a = 1, acc_c = 0;
    while (n) {
        if (n & 1) {
            acc_a *= a;
            acc_c = acc_c * a + c;
        }
        c = (a + 1) * c;
        a *= a;
        n >>= 1;
    }
    *A = acc_a;
    *C = acc_c;
}

static unsigned long long reference(const std::vector<unsigned int> &steps)
{
    unsigned long long total = 0;
    for (unsigned long long i = 0; i < steps.size(); i++) {
        unsigned long long A, C;
        lcg_jump(steps[i], &A, &C);
        for (unsigned int t = 0; t < kThreads; t++)
            total += A * mix(i * kThreads + t) + C;
    }
    return total;
}

static double median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

static unsigned long long arg_num(int argc, char **argv, int &i)
{
    if (i + 1 >= argc) {
        fprintf(stderr, "work_queue: %s needs a number\n", argv[i]);
        exit(2);
    }
    return strtoull(argv[++i], nullptr, 0);
}

int main(int argc, char **argv)
{
    unsigned long long count = 1ull << 14;
    unsigned int scale = 256, cap = 256, runs = 9;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--items"))
            count = arg_num(argc, argv, i);
        else if (!strcmp(argv[i], "--scale"))
            scale = (unsigned)arg_num(argc, argv, i);
        else if (!strcmp(argv[i], "--cap"))
            cap = (unsigned)arg_num(argc, argv, i);
        else if (!strcmp(argv[i], "--runs"))
            runs = (unsigned)arg_num(argc, argv, i);
        else if (!strcmp(argv[i], "--quick")) {
            count = 1ull << 12;
            scale = 64;
            runs = 3;
        } else {
            fprintf(stderr, "usage: work_queue [--items N] [--scale S] [--cap C] [--runs R] [--quick]\n");
            return 2;
        }
    }
    if (runs == 0 || scale == 0 || cap == 0 || (unsigned long long)scale * cap > 1u << 30) {
        fprintf(stderr, "work_queue: --runs, --scale and --cap must be at least 1, scale x cap at most 2^30\n");
        return 2;
    }
    /* In the build tree the backends are not installed yet: look for them where they were built. */
    if (!getenv("GRIDSYNC_BACKEND_PATH") && GS_EXAMPLE_BACKEND_DIR[0])
        setenv("GRIDSYNC_BACKEND_PATH", GS_EXAMPLE_BACKEND_DIR, 0);

    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        printf("work_queue: no CUDA device (%s): nothing to run\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    CK(cudaSetDevice(0));
    CK(cudaFree(0)); /* the runtime's context is the device's primary context, which gridsync uses too */
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));

    gs_context *ctx = nullptr;
    CK_GS(gs_context_create(0, &ctx));
    void *queue = nullptr;
    CK_GS(gs_queue_create(ctx, &queue)); /* zero-filled: ready for the first launch */

    /* A persistent grid: as many blocks as are resident at once (the same for both kernels). */
    int per_sm_static = 0, per_sm_queue = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_static, static_kernel, kThreads, 0));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_queue, queue_kernel, kThreads, 0));
    const unsigned int grid = (unsigned)(std::min(per_sm_static, per_sm_queue) * prop.multiProcessorCount);

    /* The items' costs, and the imbalance static assignment is in for because of them. */
    std::vector<unsigned int> steps(count);
    std::vector<unsigned long long> load(grid, 0);
    unsigned long long total_steps = 0;
    for (unsigned long long i = 0; i < count; i++) {
        steps[i] = iterations(i, scale, cap);
        load[i % grid] += steps[i];
        total_steps += steps[i];
    }
    const unsigned long long busiest = *std::max_element(load.begin(), load.end());
    const unsigned int cheapest = count ? *std::min_element(steps.begin(), steps.end()) : 0;
    const unsigned int dearest = count ? *std::max_element(steps.begin(), steps.end()) : 0;
    const unsigned long long want = reference(steps);

    unsigned long long *partials, *out;
    unsigned int *counter, *d_steps;
    CK(cudaMalloc(&d_steps, (count ? count : 1) * sizeof *d_steps));
    CK(cudaMemcpy(d_steps, steps.data(), count * sizeof *d_steps, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&partials, grid * sizeof *partials));
    CK(cudaMalloc(&out, sizeof *out));
    CK(cudaMalloc(&counter, sizeof *counter));
    CK(cudaMemset(counter, 0, sizeof *counter)); /* the guard's counter: zero once, then self-resetting */
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaEvent_t start, stop;
    CK(cudaEventCreate(&start));
    CK(cudaEventCreate(&stop));

    printf("device: %s, %d multiprocessors; grid %u blocks x %u threads (persistent)\n", prop.name,
           prop.multiProcessorCount, grid, kThreads);
    printf("items: %llu, cost per item %u .. %u LCG steps per thread (mean %.1f); static assignment: busiest "
           "block %.2fx the mean load\n",
           count, cheapest, dearest, count ? (double)total_steps / count : 0.0,
           total_steps ? (double)busiest * grid / (double)total_steps : 0.0);

    /* Not needed for a queue fresh from gs_queue_create, nor between launches that finish:
     * this is where a program would recover after a launch that ended early. */
    CK_GS(gs_queue_reset(ctx, queue, stream));

    std::vector<float> t_static, t_queue;
    int wrong = 0;
    for (unsigned int r = 0; r <= runs; r++) { /* run 0 warms up, untimed */
        for (int which = 0; which < 2; which++) {
            CK(cudaMemsetAsync(out, 0xa5, sizeof *out, stream)); /* an unwritten result shows */
            CK(cudaEventRecord(start, stream));
            if (which == 0)
                static_kernel<<<grid, kThreads, 0, stream>>>(count, d_steps, partials, counter, out);
            else /* the same queue every time, never reset */
                queue_kernel<<<grid, kThreads, 0, stream>>>((gs_work_queue *)queue, count, d_steps, partials, counter,
                                                            out);
            CK(cudaGetLastError());
            CK(cudaEventRecord(stop, stream));
            CK(cudaStreamSynchronize(stream));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, start, stop));
            unsigned long long got = 0;
            CK(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
            if (got != want) {
                fprintf(stderr, "work_queue: %s run %u: result 0x%016llx, expected 0x%016llx\n",
                        which ? "queue" : "static", r, got, want);
                wrong++;
            }
            if (r > 0)
                (which ? t_queue : t_static).push_back(ms);
        }
    }
    gs_work_queue left;
    CK(cudaMemcpy(&left, queue, sizeof left, cudaMemcpyDeviceToHost));
    if (left.next || left.finished) {
        fprintf(stderr, "work_queue: the queue was left at next %llu, finished %u instead of zero\n", left.next,
                left.finished);
        wrong++;
    }

    const double ms_static = median(t_static), ms_queue = median(t_queue);
    printf("result 0x%016llx: %s (both kernels, %u runs each, against the host reference)\n", want,
           wrong ? "WRONG" : "right", runs + 1);
    printf("static assignment: %8.3f ms (median of %u)\n", ms_static, runs);
    printf("work queue:        %8.3f ms (median of %u; %u launches on one queue, no reset between them)\n", ms_queue,
           runs, runs + 1);
    printf("speed-up of the queue: %.2fx\n", ms_static / ms_queue);

    CK(cudaEventDestroy(start));
    CK(cudaEventDestroy(stop));
    CK(cudaStreamDestroy(stream));
    CK(cudaFree(d_steps));
    CK(cudaFree(partials));
    CK(cudaFree(out));
    CK(cudaFree(counter));
    CK_GS(gs_queue_destroy(ctx, queue));
    CK_GS(gs_context_destroy(ctx));
    return wrong ? 1 : 0;
}
