/*
 * What a thread's expansion cannot hold (agent/exact.cuh, exact/anchor.cuh): its two spill terms
 * in shared memory, then the block's long accumulator; and the slow path of an element
 * that is not finite or too large for the expansion. Written once for both backends.
 */
#pragma once

#include "acc.cuh"
#include "ops.cuh"

namespace gs {

/* A thread's two spill terms, in shared memory (exact_kernel's spill[2][kBlock]; s[0] and
 * s[stride]): the residuals that a vector's expansion could not hold go through them, two
 * more TwoSums, before the long accumulator; float32's fixed point (exact/anchor.cuh) puts
 * there what its window cannot hold. Data whose exponents spread wide leaves a residual on
 * most elements of an expansion: float64s in [-1, 1) scaled by 2^-j, j up to 60, ran 8
 * times slower than the default at 2^24 without them, 1.9 times with them (and float32,
 * before its fixed point, 44 times slower over 2^-84 .. 2^60). They cost no registers in
 * the main loop. */
template <typename F> struct ExactSpill {
    F *s;
    int stride;
};

/* A vector's residuals (r, by value: kPer of them, some zero) into the spill terms, what
 * they cannot hold flushed; kMark: the block is no longer fast (ExactIn's kSpillFast).
 * One call per vector that has a residual, the spill terms loaded and stored once: a call
 * per residual ran once per element in a warp whose lanes had residuals at different
 * elements, each waiting for the last one's store. Not inlined, as exact_flush: inlined
 * into every element's path, it pushed float64's kernel past its register bound. */
template <typename F, int kPer> struct ExactResiduals {
    F r[kPer];
};
template <bool kMark, typename F, int kPer>
__device__ __noinline__ void exact_spill(ExactShared &acc, ExactSpill<F> sp, ExactResiduals<F, kPer> r)
{
    if (kMark)
        acc.dirty = 1;
    F e[2] = {sp.s[0], sp.s[sp.stride]};
#pragma unroll
    for (int j = 0; j < kPer; j++)
        exact_add<F, 2>(e, r.r[j], acc);
    sp.s[0] = e[0];
    sp.s[sp.stride] = e[1];
}

/* One element on the slow path: counted if it is not finite, else flushed on its own. */
template <typename T> __device__ __forceinline__ void exact_slow(T x, ExactShared &acc, bool &sign_clear)
{
    const double v = (double)widen(x);
    const unsigned long long b = (unsigned long long)__double_as_longlong(v);
    sign_clear |= !(b >> 63);
    if (v != v) {
        acc.dirty = 1;
        exact_shared_add(&acc.nan, 1u, false);
    } else if (v - v != 0.0) { /* an infinity */
        acc.dirty = 1;
        exact_shared_add(b >> 63 ? &acc.neg_inf : &acc.pos_inf, 1u, false);
    } else {
        exact_flush(acc, v);
    }
}

} // namespace gs
