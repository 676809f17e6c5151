/* Groups of Policy::kGroup threads each reduce their values (segmented reduction), all at
 * once through shared memory, for generations without warp shuffles: kGroup / 4 threads fold
 * 4 consecutive slots each, then the group's first thread folds theirs, in order, with
 * gs::Fold. Every thread calls it; it starts with a barrier, and the result is in each
 * group's first thread. */
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
        /* slots b .. b + 3: this thread's alone */
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
