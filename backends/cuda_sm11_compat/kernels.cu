/* cuda_sm11_compat: the last-block guard with a __shared__ flag and __syncthreads
 * (compute capability 1.1+), and only what the oldest generation had: no warp shuffles,
 * no __syncthreads_or, no read-only-path loads. The block reduction is a shared-memory
 * tree with a barrier per level (of up to 8 values each). */
#include "gridsync_device.cuh"
#include "block/fan_tree.cuh"
#include "block/group.cuh"
#include "thread/ops.cuh"
#include "tuning.h"

namespace {

struct PolicySm11Compat {
    static const int kBlock = GS_BACKEND_BLOCK; /* tuning.h */
    static const int kUnroll = GS_BACKEND_ITEMS;

    /* no warp shuffles or votes: the block layer's shared-memory algorithms */
    static const bool kWarpShuffles = false;

    /* One slot per thread; every level of the tree is separated by __syncthreads. */
    template <typename Acc> struct Scratch {
        Acc v[kBlock];
    };

    static __device__ __forceinline__ uint4 load16(const uint4 *p) { return *p; }

    /* The shared-memory tree of block/fan_tree.cuh: 3 barriers for 256 threads, where a
     * binary tree took 9. */
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

    /* Segmented reduction: groups of 32 threads each reduce a medium segment, through
     * shared memory (block/group.cuh), all groups at once. */
    static const int kGroup = 32;
    static const bool kGroupAlone = false; /* group_reduce's barriers are block-wide */
    template <typename Op>
    static __device__ __forceinline__ typename Op::Acc group_reduce(typename Op::Acc v, Scratch<typename Op::Acc> &s)
    {
        return gs::group_reduce_shared<PolicySm11Compat, Op>(v, s.v);
    }

    /* The block's votes (block_count, block_compact): every thread's flags f (bits 0 and
     * 1) into shared memory, counted 16 threads at a time by the first threads (bit 0's
     * in part's low half, bit 1's in its high one); ends with the barrier that publishes
     * part. The caller's last barrier lets the next vote reuse the arrays. */
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

    /* In how many threads of the block p holds: the counts per 16 threads, added by every
     * thread. */
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

    /* The threads where p holds, in thread order, into list[0, count) (count returned),
     * and whether q holds in any thread: the counts per 16 threads of both, then a
     * thread's place is p's counts before its 16 and p's flags before it in its 16. The
     * last barrier publishes list and lets the next call reuse the arrays. */
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

    /* The seed's 1.1 guard: thread 0 writes its ticket's verdict to shared memory, the
     * barrier publishes it to the block. The ticket releases thread 0's partial and
     * acquires the others' (gs_ticket_acq_rel: __threadfence on both sides before compute
     * capability 7.0, the 1.1 era's only tool). */
    static __device__ __forceinline__ bool last_arrival(unsigned int *counter, unsigned int expected)
    {
        return gs_last_arrival_acqrel_sm11(counter, expected);
    }
};

} // namespace

#define GS_POLICY PolicySm11Compat
#include "dispatch/kernels.cuh"
