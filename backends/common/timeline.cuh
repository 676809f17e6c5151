/*
 * A timeline of the float sums' launches, for developers: compiled in only with
 * -DGS_TIMELINE (NVCC_APPEND_FLAGS=-DGS_TIMELINE when building the backends; without it
 * every hook below is empty and the kernels' SASS is unchanged). Each block's thread 0
 * stamps the GPU's global timer (%globaltimer, ns; 32 ns steps on an H100) at five points:
 *     0 start (the kernel's first statements),
 *     1 its own elements done, 2 the block's fold done, 3 the ticket taken,
 *     4 (the last block) the partials' fold done, 5 (the last block) the result written;
 * and the last block of launches GS_TIMELINE_FROM .. +7 of each kernel (of those that end
 * the common way: not one-block launches, not an exact sum's slow way) prints one line:
 * the latest block's time at points 1 .. 3 and the mean of each block's phases, then the
 * last block's six stamps, all from the first block's start. `python3 bench/timeline.py
 * LOG` puts the medians side by side. The exact sums' kernels print "TL", gs_reduce's
 * float SUM kernels (float32, float64, float16, bfloat16 into their own type) "TD"; the
 * other kernels have no hooks. Made for n up to 2^20, where a launch is a few
 * microseconds and the question is which phase the exact sums lengthen (bench/NOTES.md).
 * The stamps themselves, a store each, and the printing block's report cost the kernels
 * a little; compare the two kinds of kernel with each other, not with the benchmark's
 * times. Written once for both backends.
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernel_list.h" /* GS_MAX_BLOCKS */

#ifdef GS_TIMELINE
#  include <cstdio>
#  ifndef GS_TIMELINE_FROM
#    define GS_TIMELINE_FROM 1500
#  endif
#endif

namespace gs {

/* Which float sums have the hooks: 0 .. 3 for float32, float64, float16, bfloat16. */
template <typename T> struct TimelineId {
    static const int value = -1;
};
template <> struct TimelineId<float> {
    static const int value = 0;
};
template <> struct TimelineId<double> {
    static const int value = 1;
};
template <> struct TimelineId<__half> {
    static const int value = 2;
};
template <> struct TimelineId<__nv_bfloat16> {
    static const int value = 3;
};

#ifdef GS_TIMELINE
__device__ unsigned long long gs_timeline[GS_MAX_BLOCKS][6];
__device__ unsigned int gs_timeline_launch[8];

/* Point k of this block, from thread 0. */
__device__ __forceinline__ void timeline_stamp(int k)
{
    if (threadIdx.x == 0) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        gs_timeline[blockIdx.x][k] = t;
    }
}

/* The last block, at its end: point 5, and the report of launches GS_TIMELINE_FROM .. +7
 * of this kernel (kExact: an exact sum's, else gs_reduce's) over T, naming the backend by
 * Policy::kTimelineSm. */
template <typename Policy, bool kExact, typename T> __device__ __noinline__ void timeline_report()
{
    timeline_stamp(5);
    if (threadIdx.x != 0)
        return;
    const int id = TimelineId<T>::value;
    const unsigned int c = atomicAdd(&gs_timeline_launch[(kExact ? 4 : 0) + id], 1u);
    if (c < GS_TIMELINE_FROM || c >= GS_TIMELINE_FROM + 8)
        return;
    unsigned long long t0 = ~0ull, end[4] = {0, 0, 0, 0}, sum[4] = {0, 0, 0, 0};
    for (unsigned int b = 0; b < gridDim.x; b++)
        t0 = min(t0, gs_timeline[b][0]);
    for (unsigned int b = 0; b < gridDim.x; b++) {
        const unsigned long long *r = gs_timeline[b];
        end[0] = max(end[0], r[0] - t0);
        if (b == blockIdx.x)
            continue;
        for (int k = 1; k < 4; k++) {
            end[k] = max(end[k], r[k] - t0);
            sum[k] += r[k] - r[k - 1];
        }
    }
    const unsigned long long *L = gs_timeline[blockIdx.x];
    const unsigned long long others = gridDim.x > 1 ? gridDim.x - 1 : 1;
    printf("%s %s cuda_sm%d%s grid %u: start spread %llu | others: elements end %llu fold end %llu ticket end %llu "
           "(mean durations elements %llu fold %llu ticket %llu) | last: start %llu elements %llu fold %llu "
           "ticket %llu partials-fold %llu end %llu\n",
           kExact ? "TL" : "TD", id == 0 ? "f32" : id == 1 ? "f64" : id == 2 ? "f16" : "bf16", Policy::kTimelineSm,
           Policy::kTimelineSm == 11 ? "_compat" : "", gridDim.x, end[0],
           end[1], end[2], end[3], sum[1] / others, sum[2] / others, sum[3] / others, L[0] - t0, L[1] - t0, L[2] - t0,
           L[3] - t0, L[4] - t0, L[5] - t0);
}
#else
__device__ __forceinline__ void timeline_stamp(int) {}
template <typename Policy, bool kExact, typename T> __device__ __forceinline__ void timeline_report() {}
#endif

} // namespace gs
