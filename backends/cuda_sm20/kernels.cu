/* cuda_sm20: the last-block guard with __syncthreads_or (compute capability 2.0+), plus the
 * later generations' features where they help: warp shuffles and votes for the block and
 * group reductions, read-only-path loads for the input, and REDUX on 8.0+. */
#include "gridsync_device.cuh"
#include "thread/ops.cuh"
#include "tuning.h"

namespace {

/* GS_REDUX: compute capability 8.0+, where warp_reduce takes the ARGMIN/ARGMAX keys'
 * maximum with REDUX (bench/HISTORY.md, v7). Older targets must not see that code:
 * __reduce_max_sync is undeclared there, and a discarded if-constexpr branch is still compiled. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#  define GS_REDUX 1
#endif

struct PolicySm20 {
    static const int kBlock = GS_BACKEND_BLOCK; /* tuning.h */
    static const int kUnroll = GS_BACKEND_ITEMS;
    static const int kWarps = kBlock / 32;
    /* block/checked.cuh's warp algorithms */
    static const bool kWarpShuffles = true;

    /* One slot per warp: lane 0 writes, warp 0 reads after the barrier. */
    template <typename Acc> struct Scratch {
        Acc warp[kWarps];
    };

    static __device__ __forceinline__ uint4 load16(const uint4 *p) { return __ldg(p); }

    /* A shuffle of any value of whole 32-bit words, word by word: from lane + arg, or
     * (kFrom) from lane arg. */
    template <bool kFrom, typename V> static __device__ __forceinline__ V shfl_words(V v, int arg)
    {
        static_assert(sizeof(V) % 4 == 0, "shuffled values are whole 32-bit words");
        unsigned int w[sizeof(V) / 4];
        memcpy(w, &v, sizeof v);
#pragma unroll
        for (int k = 0; k < (int)(sizeof(V) / 4); k++)
            w[k] = kFrom ? __shfl_sync(0xffffffffu, w[k], arg) : __shfl_down_sync(0xffffffffu, w[k], arg);
        memcpy(&v, w, sizeof v);
        return v;
    }
    template <typename V> static __device__ __forceinline__ V shfl_down(V v, int off)
    {
        return shfl_words<false>(v, off);
    }
    /* block/scan.cuh's Kogge-Stone: from lane - d, word by word (lanes below d get their own). */
    template <typename V> static __device__ __forceinline__ V shfl_up(V v, int d)
    {
        static_assert(sizeof(V) % 4 == 0, "shuffled values are whole 32-bit words");
        unsigned int w[sizeof(V) / 4];
        memcpy(w, &v, sizeof v);
#pragma unroll
        for (int k = 0; k < (int)(sizeof(V) / 4); k++)
            w[k] = __shfl_up_sync(0xffffffffu, w[k], d);
        memcpy(&v, w, sizeof v);
        return v;
    }
    /* Member by member: no shuffle for the padding after a 4-byte value. */
    template <typename V> static __device__ __forceinline__ gs::ArgAcc<V> shfl_down(gs::ArgAcc<V> a, int off)
    {
        a.v = shfl_down(a.v, off);
        a.i = shfl_down(a.i, off);
        return a;
    }

    /* The warp's lanes combined, the result in lane 0. */
    template <typename Op>
    static __device__ __forceinline__ typename Op::Acc warp_reduce(typename Op::Acc v)
    {
#ifdef GS_REDUX
        if constexpr (gs::IsArgKey<Op>::value) {
            /* the high words' maximum, then the low words' among the lanes holding it */
            const unsigned int hi = __reduce_max_sync(0xffffffffu, (unsigned int)(v >> 32));
            const unsigned int lo =
                __reduce_max_sync(0xffffffffu, (unsigned int)(v >> 32) == hi ? (unsigned int)v : 0u);
            return (uint64_t)hi << 32 | lo;
        } else
#endif
        {
            /* Lane i combines with lane i + off (left operand the lower index): a fixed tree. */
#pragma unroll
            for (int off = 16; off > 0; off >>= 1)
                v = Op::combine(v, shfl_down(v, off));
            return v;
        }
    }

    /* The block's values combined in a fixed tree, the result in thread 0. Warp 0 reads s
     * until it returns, so the caller puts a barrier before s is written again. */
    template <typename Op>
    static __device__ __forceinline__ typename Op::Acc block_reduce(typename Op::Acc v,
                                                                    Scratch<typename Op::Acc> &s)
    {
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        v = warp_reduce<Op>(v);
        if (lane == 0)
            s.warp[warp] = v;
        __syncthreads();
        if (warp == 0) {
            v = lane < kWarps ? s.warp[lane] : Op::identity();
            v = warp_reduce<Op>(v);
        }
        return v;
    }

    static __device__ __forceinline__ void warp_sync() { __syncwarp(); }
    static __device__ __forceinline__ bool warp_all(bool p) { return __all_sync(0xffffffffu, p); }

    /* Segmented reduction: a warp reduces a medium segment with shuffles, the result in
     * lane 0; no barrier, so a block's warps loop independently. */
    static const int kGroup = 32;
    template <typename Op>
    static __device__ __forceinline__ typename Op::Acc group_reduce(typename Op::Acc v, Scratch<typename Op::Acc> &)
    {
        return warp_reduce<Op>(v);
    }

    /* no barrier in group_reduce: a warp without a medium segment skips it */
    static const bool kGroupAlone = true;

    /* The threads where p holds, in thread order, into list[0, count) (count returned);
     * any_q: whether q holds in any thread. __syncthreads_or(q) publishes each warp's ballot
     * count; a thread's place is the earlier warps' counts plus its ballot's lower bits. The
     * last barrier publishes list and lets the next call reuse count[]. */
    static __device__ __forceinline__ unsigned int block_compact(bool p, bool q, unsigned short *list, bool &any_q)
    {
        __shared__ unsigned int count[kWarps];
        const unsigned int t = threadIdx.x, lane = t % 32, warp = t / 32;
        const unsigned int b = __ballot_sync(0xffffffffu, p);
        if (lane == 0)
            count[warp] = __popc(b);
        any_q = __syncthreads_or(q) != 0;
        unsigned int before = __popc(b & ((1u << lane) - 1u)), total = 0;
#pragma unroll
        for (int w = 0; w < kWarps; w++) {
            total += count[w];
            before += (unsigned int)w < warp ? count[w] : 0u;
        }
        if (p)
            list[before] = (unsigned short)t;
        __syncthreads();
        return total;
    }
    /* In how many threads p holds; a barrier. */
    static __device__ __forceinline__ unsigned int block_count(bool p) { return (unsigned int)__syncthreads_count(p); }

    /* The seed's 2.0 guard: thread 0 takes the ticket, __syncthreads_or tells every thread
     * whether it was the last one. The ticket releases thread 0's partial and acquires the
     * others' (gs_ticket_acq_rel). */
    static __device__ __forceinline__ bool last_arrival(unsigned int *counter, unsigned int expected)
    {
        return gs_last_arrival_acqrel_sm20(counter, expected);
    }
};

} // namespace

#define GS_POLICY PolicySm20
#include "dispatch/kernels.cuh"
