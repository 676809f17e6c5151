/* cuda_sm11_compat: the last-block guard with a __shared__ flag and __syncthreads
 * (compute capability 1.1+), and only what the oldest generation had: no warp shuffles,
 * no __syncthreads_or, no read-only-path loads. The block reduction is a shared-memory
 * tree with a barrier per level. */
#include "gridsync_device.cuh"
#include "reduce.cuh"

namespace {

struct PolicySm11Compat {
    static const int kBlock = GS_BACKEND_BLOCK;
    static const int kUnroll = GS_BACKEND_ITEMS;

    /* One slot per thread; every level of the tree is separated by __syncthreads. */
    template <typename Acc> struct Scratch {
        Acc v[kBlock];
    };

    static __device__ __forceinline__ uint4 load16(const uint4 *p) { return *p; }

    template <typename Op>
    static __device__ __forceinline__ typename Op::Acc block_reduce(typename Op::Acc v,
                                                                    Scratch<typename Op::Acc> &s)
    {
        const unsigned int t = threadIdx.x;
        s.v[t] = v;
        __syncthreads();
#pragma unroll
        for (unsigned int off = kBlock / 2; off > 0; off >>= 1) {
            if (t < off)
                s.v[t] = Op::combine(s.v[t], s.v[t + off]);
            __syncthreads();
        }
        return s.v[0];
    }

    /* The seed's 1.1 guard: thread 0 writes its ticket's verdict to shared memory, the
     * barrier publishes it to the block. The caller's thread 0 has already fenced. */
    static __device__ __forceinline__ bool last_block(unsigned int *counter) { return gs_last_block_sm11(counter); }
};

} // namespace

#define GS_POLICY PolicySm11Compat
#include "kernels.cuh"
