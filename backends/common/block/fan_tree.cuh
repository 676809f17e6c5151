/* A block fold through shared memory (no warp shuffles): per level, the first
 * m = ceil(n / kFan) threads fold slots t, t + m, ... pairwise until thread 0 holds the
 * result. A fixed order, so deterministic. */
#pragma once

namespace gs {

/* slots: one value per thread, stored by the caller; a barrier starts each level.
 * put(t, a, last) keeps a for the next level, or (last) takes the result thread 0 returns. */
template <int kBlock, typename V, typename Add, typename Put>
__device__ __forceinline__ V fan_tree(V v, V *slots, Add add, Put put)
{
    const int kFan = sizeof(V) > 8 ? 4 : 8; /* 4: fits the registers */
    const unsigned int t = threadIdx.x;
#pragma unroll
    for (unsigned int n = kBlock; n > 1; n = (n + kFan - 1) / kFan) {
        const unsigned int m = (n + kFan - 1) / kFan;
        __syncthreads();
        if (t < m) {
            V w[kFan];
#pragma unroll
            for (int k = 0; k < kFan; k++)
                if (t + k * m < n)
                    w[k] = slots[t + k * m];
#pragma unroll
            for (int h = 1; h < kFan; h *= 2)
#pragma unroll
                for (int k = 0; k + h < kFan; k += 2 * h)
                    if (t + (k + h) * m < n)
                        w[k] = add(w[k], w[k + h]);
            v = w[0];
            put(t, v, m == 1);
        }
    }
    return v;
}

} // namespace gs
