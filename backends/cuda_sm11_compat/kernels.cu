/* cuda_sm11_compat: the last-block guard with a __shared__ flag and __syncthreads
 * (compute capability 1.1+), and only what the oldest generation had: no warp shuffles or
 * votes, no __syncthreads_or, no read-only-path loads. Block reductions and votes go through
 * shared memory, a barrier per level. */
#include "gridsync_device.cuh"
#include "block/fan_tree.cuh"
#include "block/group.cuh"
#include "thread/ops.cuh"
#include "tuning.h"

namespace {

struct PolicySm11Compat {
    static const int kBlock = GS_BACKEND_BLOCK; /* tuning.h */
    static const int kUnroll = GS_BACKEND_ITEMS;

    /* block/checked.cuh's shared-memory algorithms */
    static const bool kWarpShuffles = false;

    /* One slot per thread; a barrier separates the tree's levels. */
    template <typename Acc> struct Scratch {
        Acc v[kBlock];
    };

    static __device__ __forceinline__ uint4 load16(const uint4 *p) { return *p; }

    /* block/fan_tree.cuh's tree, with fewer barriers than a binary one; result in thread 0 */
    template <typename Op>
    static __device__ __forceinline__ typename Op::Acc block_reduce(typename Op::Acc v,
                                                                    Scratch<typename Op::Acc> &s)
    {
        typedef typename Op::Acc V;
        s.v[threadIdx.x] = v;
        return gs::fan_tree<kBlock>(v, s.v, [](V a, V b) { return Op::combine(a, b); },
                                    [&](unsigned int t, V a, bool last) {
                                        if (!last)
                                            s.v[t] = a;
                                    });
    }

    /* Segmented reduction: groups of 32 threads each reduce a medium segment, all at once
     * (block/group.cuh). */
    static const int kGroup = 32;
    static const bool kGroupAlone = false; /* group_reduce's barriers are block-wide */
    template <typename Op>
    static __device__ __forceinline__ typename Op::Acc group_reduce(typename Op::Acc v, Scratch<typename Op::Acc> &s)
    {
        return gs::group_reduce_shared<PolicySm11Compat, Op>(v, s.v);
    }

    /* The block's votes: every thread's flags f (bits 0, 1) stored, then counted 16 threads
     * at a time into part (bit 0's in the low half, bit 1's in the high). Ends with the
     * barrier publishing part; the caller's last barrier frees the arrays for the next vote. */
    struct Votes {
        unsigned char flag[kBlock];
        unsigned int part[kBlock / 16];
    };
    static __device__ __forceinline__ void count16(Votes &v, unsigned int f)
    {
        const unsigned int t = threadIdx.x;
        v.flag[t] = (unsigned char)f;
        __syncthreads();
        if (t < kBlock / 16) {
            unsigned int c = 0;
#pragma unroll
            for (int k = 0; k < 16; k++) {
                const unsigned int g = v.flag[t * 16 + k];
                c += (g & 1u) | (g >> 1) << 16;
            }
            v.part[t] = c;
        }
        __syncthreads();
    }

    /* In how many threads p holds. */
    static __device__ __forceinline__ unsigned int block_count(bool p)
    {
        __shared__ Votes v;
        count16(v, p ? 1u : 0u);
        unsigned int total = 0;
#pragma unroll
        for (int k = 0; k < kBlock / 16; k++)
            total += v.part[k];
        __syncthreads();
        return total;
    }

    /* The threads where p holds, in thread order, into list[0, count) (count returned);
     * any_q: whether q holds in any thread. A thread's place is p's counts before its 16 plus
     * p's flags before it within them. The last barrier publishes list and frees the arrays. */
    static __device__ __forceinline__ unsigned int block_compact(bool p, bool q, unsigned short *list, bool &any_q)
    {
        __shared__ Votes v;
        const unsigned int t = threadIdx.x, first = t - t % 16;
        count16(v, (p ? 1u : 0u) | (q ? 2u : 0u));
        unsigned int before = 0, total = 0;
#pragma unroll
        for (int k = 0; k < kBlock / 16; k++) {
            total += v.part[k];
            before += (unsigned int)k < t / 16 ? v.part[k] : 0u;
        }
#pragma unroll
        for (unsigned int k = 0; k < 16; k++)
            before += first + k < t ? v.flag[first + k] & 1u : 0u;
        if (p)
            list[before & 0xffffu] = (unsigned short)t;
        any_q = (total >> 16) != 0;
        __syncthreads();
        return total & 0xffffu;
    }

    /* The seed's 1.1 guard: thread 0 writes its ticket's verdict to shared memory and the
     * barrier publishes it to the block. The ticket releases thread 0's partial and acquires
     * the others' (gs_ticket_acq_rel: __threadfence on both sides before compute capability
     * 7.0, the 1.1 era's only tool). */
    static __device__ __forceinline__ bool last_arrival(unsigned int *counter, unsigned int expected)
    {
        return gs_last_arrival_acqrel_sm11(counter, expected);
    }
};

} // namespace

#define GS_POLICY PolicySm11Compat
#include "dispatch/kernels.cuh"
