/* float32's and float64's per-thread strategy (exact/thread.cuh): the anchored fixed point
 * of exact/anchor.cuh, which ends as one expansion of two terms, hi + lo (float64: and its
 * low expansion, a second row). */
#pragma once

#include <stdint.h>

#include "acc.cuh"
#include "anchor.cuh"
#include "spill.cuh"
#include "traits.cuh"

namespace gs {

template <typename T, int kU> struct ExactAnchorThread {
    typedef double F;
    static const int K = 2, kRows = AnchorFmt<T>::kLow ? 2 : 1;
    static_assert(kU * AnchorFmt<T>::kPer <= AnchorFmt<T>::kTrip, "exact/anchor.cuh's bounds: elements a trip");
    static_assert(AnchorFmt<T>::kMark == !ExactIn<T>::kSpillFast, "the spill terms' rule, the same");
    ExactAnchor s;
    F a[kRows][2];
    __device__ __forceinline__ ExactAnchorThread() : s(exact_anchor_init<T>()) {}
    __device__ __forceinline__ void trip(ExactShared &acc, ExactSpill<F> sp) { exact_anchor_trip<T>(s, acc, sp); }
    __device__ __forceinline__ void vec(const uint4 (&raw)[kU], int u, int count, ExactShared &acc, ExactSpill<F> sp,
                                        uint32_t &sign_and, bool &sign_clear)
    {
        exact_anchor_vec<T, kU>(s, raw, u, count, acc, sp, sign_and, sign_clear);
    }
    __device__ __forceinline__ void one(const uint4 &raw, ExactShared &acc, ExactSpill<F> sp, uint32_t &sign_and,
                                        bool &sign_clear)
    {
        exact_anchor_one<T>(s, raw, acc, sp, sign_and, sign_clear);
    }
    __device__ __forceinline__ void scalar(T x, ExactShared &acc, ExactSpill<F> sp, bool &sign_clear)
    {
        exact_anchor_scalar(s, x, acc, sp, sign_clear);
    }
    /* hi + lo as one expansion, and (kLow) low as the other */
    __device__ __forceinline__ F (&end(bool sign_clear))[kRows][2]
    {
        exact_anchor_end(s, sign_clear, a[0]);
        if constexpr (kRows > 1) {
            a[1][0] = s.low[0];
            a[1][1] = s.low[1];
        }
        return a;
    }
};

} // namespace gs
