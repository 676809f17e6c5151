/*
 * gs_exact_round_device (docs/semantics.md §12): each thread rounds whole accumulators with
 * gs_exact_round_bits, the code gs_exact_round runs on the host (internal/exact_format.h), so
 * a result rounded here has the host's bits. Accumulators are independent: no shared memory,
 * no workspace, no order between threads; any grid gives the same results.
 *
 * The accumulators are read with plain loads: earlier launches (an exact sum, an all-reduce)
 * wrote them, and nothing writes them during this one (the core refuses out overlapping acc).
 * A result is stored as the low 2, 4 or 8 bytes of the bits (little-endian, as the host's
 * memcpy of them).
 */
#pragma once

#include <stdint.h>

#include "gridsync.h"
#include "../../../internal/exact_format.h"

namespace gs {

__device__ __forceinline__ void exact_round_kernel(const gs_exact_acc *__restrict__ acc, uint64_t count,
                                                   void *__restrict__ out, int out_dtype)
{
    const gs_dtype t = (gs_dtype)out_dtype;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        const gs_exact_acc *a = &acc[i];
        const uint64_t bits =
            gs_exact_round_bits(a->limb, a->count, a->nan, a->pos_inf, a->neg_inf, a->sign_clear, t);
        if (t == GS_FLOAT64)
            ((uint64_t *)out)[i] = bits;
        else if (t == GS_FLOAT32)
            ((uint32_t *)out)[i] = (uint32_t)bits;
        else
            ((uint16_t *)out)[i] = (uint16_t)bits;
    }
}

} // namespace gs
