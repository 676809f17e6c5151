/* What a thread's sum cannot hold: its spill terms, then the long accumulator; the slow path. */
#pragma once

#include "acc.cuh"
#include "ops.cuh"

namespace gs {

/* A thread's two spill terms, s[0] and s[stride] in shared memory: two more TwoSums keep
 * residuals off the atomics, at no register cost. */
template <typename F> struct ExactSpill {
    F *s;
    int stride;
};

/* A vector's kPer residuals into the spill terms, the rest flushed; kMark: the block is no
 * longer fast. One call a vector, so a warp's lanes call together; not inlined, to spare the
 * main loop's registers. */
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

/* One element on the slow path: counted if not finite, else flushed. */
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
