/*
 * gs_exact_round_device (docs/semantics.md §12): the block's threads copy its accumulators'
 * words into shared memory together (coalesced, every load in flight at once), then one
 * thread per accumulator rounds it with gs_exact_round_bits, the code gs_exact_round runs on
 * the host (internal/exact_format.h), so a result rounded here has the host's bits. One
 * thread alone would wait for 73 loads of its own, most of the kernel's time.
 * Accumulators are independent: no workspace, no order between blocks; any grid gives the
 * same results.
 *
 * The accumulators are read with plain loads: earlier launches (an exact sum, an all-reduce)
 * wrote them, and nothing writes them during this one (the core refuses out overlapping acc).
 * A result is stored as the low 2, 4 or 8 bytes of the bits (little-endian, as the host's
 * memcpy of them).
 */
#pragma once

#include <stdint.h>

#include "dispatch/kernel_list.h"
#include "gridsync.h"
#include "../../../internal/exact_format.h"

namespace gs {

template <int kBlock>
__device__ __forceinline__ void exact_round_kernel(const gs_exact_acc *__restrict__ acc, uint64_t count,
                                                   void *__restrict__ out, int out_dtype)
{
    static_assert(kBlock >= GS_EXACT_ROUND_PER_BLOCK, "a thread per accumulator of the block's share");
    __shared__ int64_t words[GS_EXACT_ROUND_PER_BLOCK][GS_EXACT_ACC_WORDS];
    const gs_dtype t = (gs_dtype)out_dtype;
    const uint64_t stride = (uint64_t)gridDim.x * GS_EXACT_ROUND_PER_BLOCK;
    for (uint64_t first = (uint64_t)blockIdx.x * GS_EXACT_ROUND_PER_BLOCK; first < count; first += stride) {
        const uint64_t here = count - first < GS_EXACT_ROUND_PER_BLOCK ? count - first : GS_EXACT_ROUND_PER_BLOCK;
        const int64_t *src = (const int64_t *)&acc[first];
        for (unsigned int w = threadIdx.x; w < here * GS_EXACT_ACC_WORDS; w += kBlock)
            words[w / GS_EXACT_ACC_WORDS][w % GS_EXACT_ACC_WORDS] = src[w];
        __syncthreads();
        if (threadIdx.x < here) {
            const gs_exact_acc *a = (const gs_exact_acc *)words[threadIdx.x];
            const uint64_t bits =
                gs_exact_round_bits(a->limb, a->count, a->nan, a->pos_inf, a->neg_inf, a->sign_clear, t);
            const uint64_t i = first + threadIdx.x;
            if (t == GS_FLOAT64)
                ((uint64_t *)out)[i] = bits;
            else if (t == GS_FLOAT32)
                ((uint32_t *)out)[i] = (uint32_t)bits;
            else
                ((uint16_t *)out)[i] = (uint16_t)bits;
        }
        __syncthreads(); /* words is the next round's */
    }
}

} // namespace gs
