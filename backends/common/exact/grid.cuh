/*
 * The end of an exact sum (agent/exact.cuh): a slow block's merge, and the result of one
 * block or, through the workspace and the last block (docs/design.md's guard), of the launch.
 *
 * A block is fast when nothing went into its long accumulator and its threads' expansions add
 * up exactly in one double (OpCheckedSum; not tried for float64), else in two
 * (OpCheckedSumDd): it publishes that sum as its partial. A slow block adds its accumulator to
 * the launch's in the workspace and publishes a lost partial. The last block folds the fast
 * partials, checked; if every block was fast and the fold is exact, it rounds that once and
 * the workspace's accumulator is untouched. Otherwise it sums the launch's accumulator, adds
 * the fast partials, returns the workspace to zero and rounds (exact_finish).
 */
#pragma once

#include "block/checked.cuh"
#include "gridsync_device.cuh"
#include "workspace.h"

#include "acc.cuh"
#include "ops.cuh"
#include "traits.cuh"

namespace gs {

/* The checked block reductions' shared memory (block_reduce_checked), for one double or
 * for two, used one after the other. */
template <typename Policy> using ExactScratch = CheckedScratch2<Policy::kBlock, ExactDd>;

/* The fast path's result: the exact sum v (of n elements) rounded once to out_dtype (for
 * the narrower types through hi + lo rounded to odd, which makes the second rounding the
 * correct one); an empty input is +0.0. One thread. */
template <typename T>
__device__ __forceinline__ void exact_write_checked(ExactDd v, uint64_t n, void *out, int out_dtype)
{
    if (out_dtype == GS_FLOAT64) {
        *(double *)out = n ? OpCheckedSumDd<T>::value(v) : 0.0;
        return;
    }
    const double x = n ? OpCheckedSumDd<T>::value_odd(v) : 0.0; /* rounded once below */
    if (out_dtype == GS_FLOAT32)
        *(float *)out = __double2float_rn(x);
    else if (out_dtype == GS_FLOAT16)
        *(__half *)out = __double2half(x);
    else
        *(__nv_bfloat16 *)out = __double2bfloat16(x);
}

/* The sum of the partials that are not lost (p: thread t's, the identity past the grid), by
 * checked additions in each thread, then over the block (in one double first where kOneDouble);
 * in every thread, with ok: whether it is exact. Every thread calls it; it holds barriers and
 * reads s until it returns. */
template <typename Policy, typename T, int kMax>
__device__ __forceinline__ ExactDd exact_fold_partials(const ExactDd (&p)[kMax], bool &ok, ExactScratch<Policy> &s)
{
    typedef OpCheckedSumDd<T> Chk;
    typedef OpExactTree<Chk> Tree;
    typename Tree::Acc w = Tree::of(Chk::lost(p[0]) ? Chk::identity() : p[0]);
#pragma unroll
    for (int k = 1; k < kMax; k++)
        if ((unsigned int)k * Policy::kBlock < gridDim.x)
            w = Tree::combine(w, Tree::of(Chk::lost(p[k]) ? Chk::identity() : p[k]));
    ok = w.ok != 0;
    if constexpr (ExactIn<T>::kOneDouble)
        return block_reduce_checked2<Policy, OpCheckedSum<T>, Chk>(w.v, ok, s);
    else
        return block_reduce_checked<Policy, Chk>(w.v, ok, s.dd);
}

/* Every thread's expansion e (J terms) merged in a shared-memory tree over rows row(j) of
 * kBlock slots, each merge exact (exact_add), the tree's last expansion flushed by thread 0.
 * Every thread calls it; it holds barriers and reads the rows until it returns. */
template <typename Policy, typename F, int J, typename Row>
__device__ __forceinline__ void exact_tree_merge(ExactShared &acc, F (&e)[J], Row row)
{
    const unsigned int t = threadIdx.x;
#pragma unroll
    for (int j = 0; j < J; j++)
        row(j)[t] = e[j];
#pragma unroll 1
    for (unsigned int half = Policy::kBlock / 2; half > 0; half /= 2) {
        __syncthreads();
        if (t < half) {
#pragma unroll
            for (int j = 0; j < J; j++)
                exact_add<F, J>(e, row(j)[t + half], acc);
#pragma unroll
            for (int j = 0; j < J; j++)
                row(j)[t] = e[j];
        }
    }
    if (t == 0)
#pragma unroll
        for (int j = 0; j < J; j++)
            exact_flush(acc, (double)e[j]);
}

/* A slow block: each thread's expansions and spill terms as one expansion of J terms (each
 * merge is exact in any order), merged over the block with the spill array as the tree's
 * last rows, so the spill terms cost no flushes of their own. Every thread; ends with a
 * barrier. */
template <typename Policy, typename F, int K, int kU>
__device__ __forceinline__ void exact_block_merge(ExactShared &acc, const F (&a)[kU][K], F (&spill)[2][Policy::kBlock],
                                                  F (&tree)[K][Policy::kBlock])
{
    const int J = K + 2;
    const unsigned int t = threadIdx.x;
    F e[J];
#pragma unroll
    for (int j = 0; j < J; j++)
        e[j] = j < K ? a[0][j] : spill[j - K][t];
#pragma unroll
    for (int u = 1; u < kU; u++)
#pragma unroll
        for (int k = 0; k < K; k++)
            exact_add<F, J>(e, a[u][k], acc);
    exact_tree_merge<Policy>(acc, e, [&](int j) -> F * { return j < K ? tree[j] : spill[j - K]; });
    __syncthreads();
}

/* A slow block's long accumulator into the launch's in the workspace; every thread fences
 * its own atomics before the barrier, which orders them before the ticket. */
template <typename Policy>
__device__ __noinline__ void exact_block_to_launch(ExactShared &acc, unsigned char *workspace)
{
    const unsigned int t = threadIdx.x;
    gs_exact_acc *copies = (gs_exact_acc *)(workspace + GS_EXACT_ACC_OFFSET);
    /* Each limb (< 2^61) as its low digit and its carry (< 2^29) into the next limb, so the
     * total gains less than 2^34 per block without a serial normalisation here. */
    gs_exact_acc *total = &copies[blockIdx.x % GS_EXACT_COPIES];
    unsigned long long *tl = (unsigned long long *)total->limb;
    if (t < GS_EXACT_LIMBS) {
        const long long w = (long long)acc.limb[t];
        const long long low = t < GS_EXACT_LIMBS - 1 ? w & GS_EXACT_DIGIT_MASK : w;
        const long long high = t < GS_EXACT_LIMBS - 1 ? w >> 32 : 0;
        if (low)
            atomicAdd(&tl[t], (unsigned long long)low);
        if (high)
            atomicAdd(&tl[t + 1], (unsigned long long)high);
    }
    if (t == GS_EXACT_LIMBS && acc.nan)
        atomicAdd((unsigned long long *)&total->nan, acc.nan);
    if (t == GS_EXACT_LIMBS + 1 && acc.pos_inf)
        atomicAdd((unsigned long long *)&total->pos_inf, acc.pos_inf);
    if (t == GS_EXACT_LIMBS + 2 && acc.neg_inf)
        atomicAdd((unsigned long long *)&total->neg_inf, acc.neg_inf);
    if (t == GS_EXACT_LIMBS + 3 && acc.sign_clear)
        atomicAdd((unsigned long long *)&total->sign_clear, 1ull);
    __threadfence();
    __syncthreads();
}

/* exact_finish, not inlined, so the two callers share one copy. */
__device__ __noinline__ void exact_finish_call(ExactShared &acc, uint64_t n, void *out, int out_dtype, uint32_t mode)
{
    exact_finish(acc, n, out, out_dtype, mode);
}

/* The last block's slow way, when some block was slow or the fast partials' sum is not
 * exact in two doubles (all_lost; else w is that sum). Every thread. */
template <typename Policy, typename T>
__device__ __noinline__ void exact_last_slow(ExactShared &acc, bool all_lost, ExactDd w, uint64_t n, void *out,
                                             unsigned char *workspace, int out_dtype, uint32_t mode)
{
    typedef OpCheckedSumDd<T> Chk;
    typedef typename Chk::Acc C;
    const unsigned int t = threadIdx.x;
    C *partials = (C *)(workspace + GS_PARTIALS_OFFSET);
    gs_exact_acc *copies = (gs_exact_acc *)(workspace + GS_EXACT_ACC_OFFSET);
    unsigned int *counter = (unsigned int *)workspace;
    /* The copies summed into shared memory and zeroed for the next launch (thread
     * t < GS_EXACT_ACC_WORDS owns word t of every copy). */
    const unsigned int nc = gridDim.x < GS_EXACT_COPIES ? gridDim.x : GS_EXACT_COPIES;
    if (t < GS_EXACT_ACC_WORDS) {
        /* every load issued before the first is used: one round trip to L2 */
        long long part[GS_EXACT_COPIES];
#pragma unroll
        for (unsigned int c = 0; c < GS_EXACT_COPIES; c++)
            part[c] = c < nc ? gs_load_volatile((int64_t *)&copies[c] + t) : 0;
        long long sum = 0;
#pragma unroll
        for (unsigned int c = 0; c < GS_EXACT_COPIES; c++) {
            sum += part[c];
            if (c < nc)
                ((int64_t *)&copies[c])[t] = 0;
        }
        if (t < GS_EXACT_LIMBS)
            acc.limb[t] = (unsigned long long)sum;
        else if (t == GS_EXACT_LIMBS + 1)
            acc.nan = (unsigned long long)sum;
        else if (t == GS_EXACT_LIMBS + 2)
            acc.pos_inf = (unsigned long long)sum;
        else if (t == GS_EXACT_LIMBS + 3)
            acc.neg_inf = (unsigned long long)sum;
        else if (t == GS_EXACT_LIMBS + 4)
            acc.sign_clear = sum != 0;
    }
    __syncthreads();
    /* The fast partials, with few flushes (they contend on the same limbs): their sum if
     * exact, by thread 0; else each thread's partials into a two-term expansion, merged in a
     * tree. A value is positive or +0.0 only if some element had its sign bit clear. */
    bool sign_clear = false;
    if (!all_lost) {
        if (t == 0) {
            Chk::flush(acc, w);
            sign_clear = !signbit(Chk::value(w));
        }
    } else {
        __shared__ double tree[2][Policy::kBlock];
        double e[2] = {0.0, 0.0};
#pragma unroll 1
        for (unsigned int b = t; b < gridDim.x; b += Policy::kBlock) {
            const C pb = gs_load_volatile(&partials[b]);
            if (!Chk::lost(pb)) {
                Chk::add_to(e, pb, acc);
                sign_clear |= !signbit(Chk::value(pb));
            }
        }
        exact_tree_merge<Policy>(acc, e, [&](int j) -> double * { return tree[j]; });
    }
    if (sign_clear)
        acc.sign_clear = 1;
    if (t == 0)
        gs_reset_counter(counter);
    __syncthreads();
    exact_finish_call(acc, n, out, out_dtype, mode);
}

/* The block's end, every thread: if fast, v (in thread 0) is the block's exact sum; else
 * the block's long accumulator holds it (every flush done, after a barrier). The slow ways
 * are not inlined, to spare the main loop's registers; this is, to keep calls off the fast
 * path. */
template <typename Policy, typename T>
__device__ __forceinline__ void exact_grid_finish(ExactShared &acc, bool fast, ExactDd v, uint64_t n, void *out,
                                                  unsigned char *workspace, int out_dtype, uint32_t mode,
                                                  ExactScratch<Policy> &s)
{
    typedef OpCheckedSumDd<T> Chk;
    typedef typename Chk::Acc C;
    /* the last block's partials per thread: blocks t, t + kBlock, ... below GS_MAX_BLOCKS */
    const int kMaxPartials = (GS_MAX_BLOCKS + Policy::kBlock - 1) / Policy::kBlock;
    const unsigned int t = threadIdx.x;
    if (gridDim.x == 1) { /* slow (exact_kernel writes a fast block's sum itself) */
        exact_finish_call(acc, n, out, out_dtype, mode);
        return;
    }
    C *partials = (C *)(workspace + GS_PARTIALS_OFFSET);
    if (t == 0)
        partials[blockIdx.x] = fast ? v : Chk::lost_acc();
    /* docs/design.md's guard. A fast block's only write is thread 0's partial, which its
     * acquire-release ticket orders; a slow block's atomics come from many threads, so each
     * fences its own and the barrier orders the fences before the ticket. */
    __shared__ int slow;
    if (t == 0)
        slow = 0; /* for the last block; the guard's barrier orders it before any use */
    if (!fast) {
        exact_block_to_launch<Policy>(acc, workspace);
    } else if (mode && t == 0 && acc.sign_clear) {
        /* an accumulator's sign_clear says whether any element had its sign bit clear, which
         * a fast block's partial does not tell; thread 0's ticket below orders this add */
        gs_exact_acc *copies = (gs_exact_acc *)(workspace + GS_EXACT_ACC_OFFSET);
        atomicAdd((unsigned long long *)&copies[blockIdx.x % GS_EXACT_COPIES].sign_clear, 1ull);
    }
    unsigned int *counter = (unsigned int *)workspace;
    const bool last = Policy::last_arrival(counter, gridDim.x);
    if (!last)
        return;

    /* The last block: thread t's partials (blocks t, t + kBlock, ...) loaded at once by
     * volatile loads (from L2, past any stale L1 line); the fast ones folded, slow ones noted. */
    C p[kMaxPartials];
    bool any_slow = false;
#pragma unroll
    for (int k = 0; k < kMaxPartials; k++) {
        const unsigned int b = t + (unsigned int)k * Policy::kBlock;
        p[k] = b < gridDim.x ? gs_load_volatile(&partials[b]) : Chk::identity();
        any_slow |= Chk::lost(p[k]);
    }
    if (any_slow)
        slow = 1; /* published by the fold's barriers */
    bool ok;
    const C w = exact_fold_partials<Policy, T>(p, ok, s);
    const bool all_lost = !ok; /* the same in every thread */
    if (!mode && !slow && !all_lost) { /* an accumulator is written from the limbs */
        if (t == 0) {
            exact_write_checked<T>(w, n, out, out_dtype);
            gs_reset_counter(counter);
        }
        return;
    }
    exact_last_slow<Policy, T>(acc, all_lost, w, n, out, workspace, out_dtype, mode);
}

} // namespace gs
