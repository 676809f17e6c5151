/* gs_reduce's kernel body: every thread folds its grid-stride share (block/load.cuh),
 * then the grid combines the threads' values (block/last_block.cuh). ARGMIN/ARGMAX go
 * over to 64-bit keys before the block reduction where n allows (thread/ops.cuh). */
#pragma once

#include <stdint.h>

#include "block/last_block.cuh"
#include "block/load.cuh"

namespace gs {

template <typename Policy, typename Op>
__device__ __forceinline__ void reduce_kernel(const typename Op::In *__restrict__ in, uint64_t n,
                                              typename Op::OutT *__restrict__ out, unsigned char *workspace)
{
    const uint64_t gtid = (uint64_t)blockIdx.x * Policy::kBlock + threadIdx.x;
    const uint64_t stride = (uint64_t)gridDim.x * Policy::kBlock;
    typename Op::Acc acc[Policy::kUnroll];
    accumulate_parts<Policy, Op, Policy::kUnroll>(in, n, 0, gtid, stride, acc);
    if constexpr (ArgKey<Op>::kUsable) {
        typedef ArgKey<Op> K;
        if (n <= K::kMaxN) {
            /* ARGMIN/ARGMAX: the rest on keys (the thread's own accumulators too) */
            typename K::Op::Acc k = K::key(acc[0]);
#pragma unroll
            for (int u = 1; u < Policy::kUnroll; u++)
                k = K::Op::combine(k, K::key(acc[u]));
            grid_combine<Policy, typename K::Op>(k, out, workspace);
            return;
        }
    }
    grid_combine<Policy, Op>(combine_parts<Op, Policy::kUnroll>(acc), out, workspace);
}


} // namespace gs
