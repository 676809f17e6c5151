/* docs/design.md's last-block protocol, steps (1)..(7): one value per grid thread into *out,
 * with Policy's block reduction and guard. */
#pragma once

#include "gridsync_device.cuh"
#include "workspace.h"

namespace gs {

template <typename Policy, typename Op>
__device__ __forceinline__ void grid_combine(typename Op::Acc acc, typename Op::OutT *__restrict__ out,
                                             unsigned char *workspace)
{
    typedef typename Op::Acc Acc;
    unsigned int *counter = (unsigned int *)workspace;
    Acc *partials = (Acc *)(workspace + GS_PARTIALS_OFFSET);
    __shared__ typename Policy::template Scratch<Acc> scratch;
    const unsigned int tid = threadIdx.x;

    Acc block = Policy::template block_reduce<Op>(acc, scratch);

    if (gridDim.x == 1) {
        /* One block: no partials; the counter stays 0. */
        if (tid == 0)
            *out = Op::result(block);
        return;
    }

    /* (1) thread 0 publishes the partial. */
    if (tid == 0)
        partials[blockIdx.x] = block;
    /* (2) release, (3) ticket, (4) guard, (5) acquire: thread 0's acq-rel ticket publishes
     * the partial before announcing it, and the loads below, after the guard's barrier, see
     * every partial announced earlier. Volatile: an L1 line could be stale. The barrier also
     * separates the two uses of `scratch`. */
    const bool last = Policy::last_arrival(counter, gridDim.x);
    if (last) {
        /* (6) thread t folds partials t, t + B, ... in order, then a fixed tree: the same
         * result whichever block came last. Loads first: one round trip, not one each. */
        const int kMaxPer = (GS_MAX_BLOCKS + Policy::kBlock - 1) / Policy::kBlock;
        Acc v[kMaxPer];
#pragma unroll
        for (int k = 0; k < kMaxPer; k++) {
            const unsigned int b = threadIdx.x + (unsigned int)k * Policy::kBlock;
            v[k] = b < gridDim.x ? gs_load_volatile(&partials[b]) : Op::identity();
        }
        Acc a = v[0];
#pragma unroll
        for (int k = 1; k < kMaxPer; k++)
            if (threadIdx.x + (unsigned int)k * Policy::kBlock < gridDim.x)
                a = Op::combine(a, v[k]);
        a = Policy::template block_reduce<Op>(a, scratch);
        if (tid == 0) {
            /* (7) result; counter back to 0: no memset, and graphs replay. */
            *out = Op::result(a);
            gs_reset_counter(counter);
        }
    }
}

} // namespace gs
