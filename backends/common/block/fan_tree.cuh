/* A block-wide fold through shared memory with few barriers, for generations without warp
 * shuffles: at each level the first m = ceil(n / kFan) threads fold the n values left,
 * thread t the ones at t + k m (consecutive threads, consecutive slots: no bank
 * conflicts), as a pairwise tree, until one is left, in thread 0. A fixed order, so
 * deterministic. kFan is 4 for 16-byte values, whose eight took more registers than the
 * kernels had. */
#pragma once

namespace gs {

/* The tree over slots (one per thread, stored before the call): add(a, b) combines two,
 * and a folding thread t hands its fold a to put(t, a, last), which stores it in slot t
 * for the next level or, at the last level (thread 0 alone), takes the result. The last
 * level's fold also comes back in thread 0. Starts each level with a barrier. */
template <int kBlock, typename V, typename Add, typename Put>
__device__ __forceinline__ V fan_tree(V v, V *slots, Add add, Put put)
{
    const int kFan = sizeof(V) > 8 ? 4 : 8;
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
