/* Groups of Policy::kGroup threads, each reducing its own medium segment (the segmented
 * reduction), for generations without warp shuffles: all groups at once through shared
 * memory, the first 8 threads of a group folding 4 consecutive values each, then the
 * group's first thread folding those 8, in order (3 block-wide barriers, where a binary
 * tree took 7). The folds are gs::Fold's, so the exact sums keep only their additions in
 * a row, their tests beside them. Called by every thread of the block; starts with a
 * barrier, so the scratch is free. The result is in each group's first thread. */
#pragma once

#include "thread/ops.cuh"

namespace gs {

template <typename Policy, typename Op>
__device__ __forceinline__ typename Op::Acc group_reduce_shared(typename Op::Acc v, typename Op::Acc *slots)
{
    const int kGroup = Policy::kGroup, kQuad = 4;
    const unsigned int t = threadIdx.x, lane = t % kGroup;
    __syncthreads();
    slots[t] = v;
    __syncthreads();
    if (lane < kGroup / kQuad) {
        /* values lane*4 .. lane*4+3 of the group: read and written by this thread only */
        const unsigned int b = t - lane + lane * kQuad;
        typename Fold<Op>::F a = Fold<Op>::of(slots[b]);
#pragma unroll
        for (int k = 1; k < kQuad; k++)
            a = Fold<Op>::combine(a, Fold<Op>::of(slots[b + k]));
        slots[b] = Fold<Op>::value(a);
    }
    __syncthreads();
    if (lane == 0) {
        typename Fold<Op>::F a = Fold<Op>::of(slots[t]);
#pragma unroll
        for (int k = 1; k < kGroup / kQuad; k++)
            a = Fold<Op>::combine(a, Fold<Op>::of(slots[t + k * kQuad]));
        v = Fold<Op>::value(a);
    }
    return v;
}

} // namespace gs
