/* cuda_sm11_compat: the last-block guard with a __shared__ flag and __syncthreads
 * (compute capability 1.1+), and only what the oldest generation had: no warp shuffles,
 * no __syncthreads_or, no read-only-path loads. The block reduction is a shared-memory
 * tree with a barrier per level (of up to 8 values each). */
#include "gridsync_device.cuh"
#include "grid_policy.h"
#include "reduce.cuh"

namespace {

struct PolicySm11Compat {
    static const int kBlock = GS_BACKEND_BLOCK;
    static const int kUnroll = GS_BACKEND_ITEMS;

    /* SUM and PROD are compiled for as many resident blocks as the launch policy puts on
     * a multiprocessor for inputs beyond the L2 cache (6 of 256 threads: at most 40
     * registers; kernels.cuh). Left to itself, ptxas gave SUM 32 registers and reused
     * them for the loads: its float64 loop had one 16-byte load in flight per thread, and
     * ran 1 .. 2 % behind CUB and cuda_sm20 at >= 2^26 elements. With the bound (two in
     * flight) SUM ran 2 .. 6 % faster for float64 (1 .. 3 % for float32 and int32) at 2^13
     * .. 2^27 (bench/NOTES.md, v9). cuda_sm20's kernels, whose loads take the read-only
     * path, ran 0 .. 1 % slower with it and go without. */
    static const int kMinBlocks = GS_GRID_THREADS_PER_SM_DRAM / kBlock;
    /* the backend's name in timeline.cuh's reports: cuda_sm<kTimelineSm>_compat */
    static const int kTimelineSm = 11;
    /* The segmented kernels at 4 blocks of 256 (64 registers): left to itself ptxas gave the
     * merge-path kernel 72 .. 74 and the multiprocessor 3 blocks; with the bound the tiny
     * layout ran 1.17x and the uniform one 1.05x faster on an H100 (a few bytes of spills). */
    static const int kSegMinBlocks = 4;
    static const int kSegMinBlocksArg = 4; /* every op alike (kernels.cuh) */

    /* One slot per thread; every level of the tree is separated by __syncthreads. */
    template <typename Acc> struct Scratch {
        Acc v[kBlock];
    };

    static __device__ __forceinline__ uint4 load16(const uint4 *p) { return *p; }

    /* A shared-memory tree of few levels, each ended by a barrier: at every level the
     * first m = ceil(n / kFan) threads fold the n values left, thread t the ones at
     * t + k m for k < kFan (consecutive threads read consecutive slots: no bank
     * conflicts), loaded together and combined as a pairwise tree (3 combines deep for 8),
     * until one is left, in thread 0. 256 threads take 3 barriers; the binary tree
     * (offsets 128, 64, ..., 1) took 9, and left this backend 5 .. 14 % behind cuda_sm20
     * in the block reductions of ARGMIN/ARGMAX at 2^14 .. 2^23 on an H100 (bench/NOTES.md,
     * v7). kFan is 4 for 16-byte values (ARGMIN/ARGMAX of 64-bit types): eight of them
     * took 82 registers where the kernel needed 57. A fixed order, so deterministic. */
    template <typename Op>
    static __device__ __forceinline__ typename Op::Acc block_reduce(typename Op::Acc v,
                                                                    Scratch<typename Op::Acc> &s)
    {
        typedef typename Op::Acc V;
        s.v[threadIdx.x] = v;
        return fan_tree(v, s.v, [](V a, V b) { return Op::combine(a, b); }, [&](unsigned int t, V a, bool last) {
            if (!last)
                s.v[t] = a;
        });
    }
    /* block_reduce's tree over the values in slots (one per thread, stored before the
     * call): add(a, b) combines two, and a folding thread t hands its fold a to put(t, a,
     * last), which stores it in slot t for the next level, or at the last level (thread 0
     * alone) takes the result. The last level's fold also comes back in thread 0. */
    template <typename V, typename Add, typename Put>
    static __device__ __forceinline__ V fan_tree(V v, V *slots, Add add, Put put)
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

    /* The exact sums' checked folds (exact_grid.cuh): the block's values added with
     * Chk::add, which clears ok when its addition is not exact, in block_reduce's tree;
     * the sum comes back in every thread, with ok set when every addition was. A thread
     * whose tests failed, or whose value came in not ok, passes Chk::lost_acc() on
     * instead of its sum, and that value's additions fail in turn: no flag goes through
     * the tree beside the values. Thread 0 adds the last level and publishes the result
     * (every thread adding it, as the folds did before, took eight warps' issue slots
     * where one would do). Every thread; holds barriers; reads s until it returns. */
    template <typename V> using CheckedScratch = gs::CheckedScratch<kBlock, V>;
    template <typename Chk, typename V>
    static __device__ __forceinline__ V block_reduce_checked(V v, bool &ok, CheckedScratch<V> &s)
    {
        s.v[threadIdx.x] = ok ? v : Chk::lost_acc();
        bool mine = true;
        fan_tree(v, s.v, [&](V a, V b) { return Chk::add(a, b, mine); }, [&](unsigned int t, V a, bool last) {
            if (!last)
                s.v[t] = mine ? a : Chk::lost_acc();
            else {
                s.sum = a;
                s.ok = mine;
            }
        });
        return s.take(ok);
    }
    /* The same for two-double values (Chk's, ExactDd) whose sum one double (Chk1's) may
     * hold: the tree in one double first (each value Chk1::of_dd), then, if that was not
     * exact, again in two. s: an ExactScratch (its d, then its dd). */
    template <typename Chk1, typename Chk, typename S>
    static __device__ __forceinline__ typename Chk::Acc block_reduce_checked2(typename Chk::Acc v, bool &ok, S &s)
    {
        bool one = ok;
        const typename Chk1::Acc x = block_reduce_checked<Chk1>(Chk1::of_dd(v), one, s.d);
        if (one)
            return Chk1::to_dd(x);
        __syncthreads(); /* every thread's reads of s.d done */
        return block_reduce_checked<Chk>(v, ok, s.dd);
    }

    /* Segmented reduction: groups of 32 threads each reduce a medium segment. Without warp
     * shuffles (or __syncwarp) they combine through shared memory, all groups at once:
     * the first 8 threads of a group fold 4 consecutive values each, then the group's
     * first thread folds those 8, in order (3 block-wide barriers, where a tree took 7;
     * the uniform layout of the segmented benchmark runs one per 8 segments). The folds
     * are gs::Fold's (ops.cuh): for the exact sums only the additions are in a row, their
     * tests beside them (on an H100 the uniform layout's exact sum ran 18 % faster). The
     * result is in each group's thread 0. Called uniformly; starts with a barrier, so the
     * scratch is free. */
    static const int kGroup = 32;
    static const bool kGroupAlone = false; /* group_reduce's barriers are block-wide */
    template <typename Op>
    static __device__ __forceinline__ typename Op::Acc group_reduce(typename Op::Acc v, Scratch<typename Op::Acc> &s)
    {
        const int kQuad = 4;
        const unsigned int t = threadIdx.x, lane = t % kGroup;
        __syncthreads();
        s.v[t] = v;
        __syncthreads();
        if (lane < kGroup / kQuad) {
            /* values lane*4 .. lane*4+3 of the group: read and written by this thread only */
            const unsigned int b = t - lane + lane * kQuad;
            typename gs::Fold<Op>::F a = gs::Fold<Op>::of(s.v[b]);
#pragma unroll
            for (int k = 1; k < kQuad; k++)
                a = gs::Fold<Op>::combine(a, gs::Fold<Op>::of(s.v[b + k]));
            s.v[b] = gs::Fold<Op>::value(a);
        }
        __syncthreads();
        if (lane == 0) {
            typename gs::Fold<Op>::F a = gs::Fold<Op>::of(s.v[t]);
#pragma unroll
            for (int k = 1; k < kGroup / kQuad; k++)
                a = gs::Fold<Op>::combine(a, gs::Fold<Op>::of(s.v[t + k * kQuad]));
            v = gs::Fold<Op>::value(a);
        }
        return v;
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
#include "kernels.cuh"
