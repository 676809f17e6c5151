/* cuda_sm20: the last-block guard with __syncthreads_or (compute capability 2.0+), and the
 * later generations' features where they help: warp shuffles for the block reduction and
 * read-only-path loads for the input. */
#include "gridsync_device.cuh"
#include "reduce.cuh"

namespace {

/* GS_REDUX: compute capability 8.0+, where PolicySm20::warp_reduce reduces the
 * ARGMIN/ARGMAX keys (ops.cuh) with REDUX: two of them replace five rounds of two
 * shuffles and a 64-bit max; ARGMAX ran 4 .. 8 % faster at 2^12 .. 2^23 on an H100
 * (bench/NOTES.md, v7). Older architectures' compilations must not see that code at all:
 * __reduce_max_sync is not declared there, and a discarded if-constexpr branch is still
 * compiled. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#  define GS_REDUX 1
#endif

struct PolicySm20 {
    static const int kBlock = GS_BACKEND_BLOCK;
    static const int kUnroll = GS_BACKEND_ITEMS;
    static const int kWarps = kBlock / 32;
    /* No minimum of resident blocks in the kernels' launch bounds: ptxas's own register
     * choice (cuda_sm11_compat explains why it sets one). */
    static const int kMinBlocks = 0;
    /* the backend's name in timeline.cuh's reports: cuda_sm<kTimelineSm> */
    static const int kTimelineSm = 20;
    /* The segmented kernels (kernels.cuh) at 4 blocks of 256 (64 registers), but
     * ARGMIN/ARGMAX as ptxas chooses (at 4 blocks int8's spilled 62 bytes). Left to itself,
     * ptxas gave float32's kernels 66 .. 72 registers and the multiprocessor 3 blocks; with
     * the bound the benchmark's float32 layouts ran 9 .. 12 % faster on an H100. Since a
     * chunk's span is kept in shared memory (segmented.cuh) the other types gain from it
     * too: int32 SUM 6 %, float64's exact sum 14 %; int64 SUM lost 5 .. 8 %
     * (bench/HISTORY.md). */
    static const int kSegMinBlocks = 4;
    static const int kSegMinBlocksArg = 0;

    /* One slot per warp; written by lane 0 of each warp, read by warp 0 after the barrier. */
    template <typename Acc> struct Scratch {
        Acc warp[kWarps];
    };

    static __device__ __forceinline__ uint4 load16(const uint4 *p) { return __ldg(p); }

    /* A shuffle of any 4- or 8-byte-multiple value (an index/value pair too), word by word:
     * from lane + arg, or (kFrom) from lane arg. */
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
    /* A value and its index member by member: no shuffle for the padding after a 4-byte
     * value. */
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
            /* the maximum 64-bit key: the high words' maximum, then the low words' among
             * the lanes that hold it */
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

    /* The block's values combined, the result in thread 0 (a fixed tree: each warp's
     * shuffles, then warp 0's over the warps' values). Warp 0 reads s until it returns, so
     * the caller puts a barrier before s is written again. */
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

    /* The exact sums' checked folds (exact_grid.cuh): the block's values added with
     * Chk::add, which clears ok when its addition is not exact; the sum comes back in
     * every thread, with ok set when every addition was (a value that came in not ok
     * enters as Chk::lost_acc(), whose additions fail). Warp 0 alone adds: each lane
     * kBlock / 32 values from shared memory, pairwise, then the lanes with shuffles,
     * each lane keeping its own tests (those of the lanes whose sums reach lane 0, lane <
     * off at each level) until a vote, so a level waits for its addition, not for the test
     * beside it. Every warp running a shuffle tree with its flag shuffled beside the value
     * (block_reduce's way, its second stage in every warp) took more instructions, which
     * the blocks' ends, up to three to a multiprocessor, wait to issue: on an H200
     * (queued, bench/HISTORY.md) the exact sums took 0.1 .. 0.5 us more per call up to
     * 2^18 elements, 0.4 .. 0.95 us more at 2^20 .. 2^22. Every thread; holds barriers;
     * reads s until it returns. */
    template <typename V> using CheckedScratch = gs::CheckedScratch<kBlock, V>;
    /* Warp 0's part: lane values w (kBlock / 32 each) added pairwise, then over the lanes;
     * the sum in lane 0, and whether it is exact, in every lane. */
    template <typename Chk, int kPer>
    static __device__ __forceinline__ typename Chk::Acc warp_sum_checked(typename Chk::Acc (&w)[kPer], bool &ok)
    {
        const unsigned int lane = threadIdx.x & 31;
        bool mine = true;
#pragma unroll
        for (int h = 1; h < kPer; h *= 2)
#pragma unroll
            for (int k = 0; k + h < kPer; k += 2 * h)
                w[k] = Chk::add(w[k], w[k + h], mine);
        typename Chk::Acc v = w[0];
        __syncwarp(); /* converged: the shuffles' fast path (no BRA.DIV detour) */
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            bool e = true;
            v = Chk::add(v, shfl_down(v, off), e);
            mine &= e | (lane >= (unsigned int)off);
        }
        ok = __all_sync(0xffffffffu, mine);
        return v;
    }
    template <typename Chk, typename V>
    static __device__ __forceinline__ V block_reduce_checked(V v, bool &ok, CheckedScratch<V> &s)
    {
        const int kPer = kBlock / 32;
        static_assert(kBlock % 32 == 0, "whole warps");
        const unsigned int t = threadIdx.x;
        s.v[t] = ok ? v : Chk::lost_acc();
        __syncthreads();
        if (t < 32) {
            V w[kPer];
#pragma unroll
            for (int k = 0; k < kPer; k++)
                w[k] = s.v[t + 32 * k];
            bool mine;
            v = warp_sum_checked<Chk>(w, mine);
            if (t == 0) {
                s.sum = v;
                s.ok = mine;
            }
        }
        return s.take(ok);
    }
    /* The same for two-double values (Chk's, ExactDd) whose sum one double (Chk1's) may
     * hold: tried in one double first (each value Chk1::of_dd), then, if that was not
     * exact, in two, by warp 0 from the values it already holds: no second pass through
     * shared memory and its barriers (float32's partials of uniform data at 2^20 need
     * two doubles). s: an ExactScratch, whose dd this uses. */
    template <typename Chk1, typename Chk, typename S>
    static __device__ __forceinline__ typename Chk::Acc block_reduce_checked2(typename Chk::Acc v, bool &ok, S &s)
    {
        const int kPer = kBlock / 32;
        const unsigned int t = threadIdx.x;
        s.dd.v[t] = ok ? v : Chk::lost_acc();
        __syncthreads();
        if (t < 32) {
            typename Chk::Acc w[kPer];
            typename Chk1::Acc x[kPer];
#pragma unroll
            for (int k = 0; k < kPer; k++) {
                w[k] = s.dd.v[t + 32 * k];
                x[k] = Chk1::of_dd(w[k]);
            }
            bool mine;
            v = Chk1::to_dd(warp_sum_checked<Chk1>(x, mine));
            if (!mine)
                v = warp_sum_checked<Chk>(w, mine);
            if (t == 0) {
                s.dd.sum = v;
                s.dd.ok = mine;
            }
        }
        return s.dd.take(ok);
    }

    /* Segmented reduction: a warp works on one medium segment, reduced with shuffles (the
     * result in lane 0); no barrier, so warps of a block may loop independently. */
    static const int kGroup = 32;
    template <typename Op>
    static __device__ __forceinline__ typename Op::Acc group_reduce(typename Op::Acc v, Scratch<typename Op::Acc> &)
    {
        return warp_reduce<Op>(v);
    }

    /* A warp's group_reduce is its own business: a warp without a medium segment skips it. */
    static const bool kGroupAlone = true;

    /* The threads where p holds, in thread order, into list[0, count) (count returned),
     * and whether q holds in any thread: each warp's ballot, its count published by the
     * barrier of __syncthreads_or(q); a thread's place is the counts of the warps before
     * it and the ballot's bits below its lane. The last barrier publishes list and lets
     * the next call reuse the counts. */
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
#include "kernels.cuh"
