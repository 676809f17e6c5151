/*
 * The timed runs of the launch-policy programs (tune.cu, placement.cu): the median time
 * per launch of 7 runs of 20 back-to-back launches (after one run to warm up), from CUDA
 * events around each run. With `queued`, each run starts behind a kernel that spins for
 * 200 us (the GPU's global timer), so the host has queued all 20 launches before the
 * first starts and the events time the GPU alone, not the host's launch rate. Include
 * after bench_common.cuh (CK, median).
 */
#pragma once

static __global__ void bench_spin(unsigned long long ns)
{
    unsigned long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (;;) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 >= ns)
            break;
    }
}

/* args(k): the kernel arguments of the k-th launch (k counts over all runs). */
template <typename Args>
static double time_launches(const void *fn, unsigned int grid, unsigned int block, cudaStream_t s, bool queued,
                            Args args)
{
    const int kRuns = 8, kCalls = 20;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<double> t;
    for (int r = 0; r < kRuns; r++) {
        if (queued) {
            bench_spin<<<1, 1, 0, s>>>(200000ull);
            CK(cudaGetLastError());
        }
        CK(cudaEventRecord(e0, s));
        for (int k = 0; k < kCalls; k++)
            CK(cudaLaunchKernel(fn, grid, block, args(r * kCalls + k), 0, s));
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r > 0) /* the first run warms up */
            t.push_back(ms * 1000.0 / kCalls);
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return median(t);
}
