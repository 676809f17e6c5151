/* One value per thread of the grid combined into one result by docs/design.md's
 * last-block protocol: the block's reduction, the partial, the ticket and guard
 * (Policy::last_arrival), and the last block's fold of the partials in block order. */
#pragma once

#include "gridsync_device.cuh"
#include "workspace.h"

namespace gs {

/* Combines one value per thread of the grid (acc) into *out: the block's reduction, then
 * docs/design.md's protocol, the last block combining the partials. */
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
        /* One block: no other block to wait for, the counter stays 0. */
        if (tid == 0)
            *out = Op::result(block);
        return;
    }

    /* docs/design.md's protocol. (1) publish the partial, from thread 0. */
    if (tid == 0)
        partials[blockIdx.x] = block;
    /* (2) release, (3) ticket, (4) guard and (5) acquire, per backend: thread 0's ticket
     * is an acquire-release atomic (gs_ticket_acq_rel), so the partial is visible
     * device-wide before the ticket that announces it, and the loads below, ordered after
     * the ticket by the guard's barrier, see every partial the earlier tickets announced;
     * volatile loads, because a cached (L1) load could return a stale line. Both guards
     * contain a __syncthreads, which also separates the two uses of `scratch`. */
    const bool last = Policy::last_arrival(counter, gridDim.x);
    if (last) {
        /* (6) combine in block-index order: thread t folds partials t, t + B, ... in
         * increasing order, then the block combines threads in a fixed tree, so the
         * result is the same whichever block finished last. */
        /* All of a thread's loads are issued before the first combine (at most
         * GS_MAX_BLOCKS / kBlock of them), so the last block waits for one round trip to
         * memory instead of one per partial. */
        const int kMaxPer = (GS_MAX_BLOCKS + Policy::kBlock - 1) / Policy::kBlock;
        Acc v[kMaxPer];
#pragma unroll
        for (int k = 0; k < kMaxPer; k++) {
            const unsigned int b = threadIdx.x + (unsigned int)k * Policy::kBlock;
            v[k] = b < gridDim.x ? gs_load_volatile(&partials[b]) : Op::identity();
        }
        /* (only the loaded ones: a small grid leaves most threads one partial or none) */
        Acc a = v[0];
#pragma unroll
        for (int k = 1; k < kMaxPer; k++)
            if (threadIdx.x + (unsigned int)k * Policy::kBlock < gridDim.x)
                a = Op::combine(a, v[k]);
        a = Policy::template block_reduce<Op>(a, scratch);
        if (tid == 0) {
            /* (7) the result, then the counter back to 0 for the next launch on this
             * stream's workspace: no memset, and a captured graph replays correctly. */
            *out = Op::result(a);
            gs_reset_counter(counter);
        }
    }
}

} // namespace gs
