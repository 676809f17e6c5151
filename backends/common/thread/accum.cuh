/* Folding elements into a thread's accumulator (Accum<Op>), with the ARGMIN/ARGMAX
 * specialisations that keep index order for free. Generic: no Policy. */
#pragma once

#include <stdint.h>
#include <string.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops.cuh"

namespace gs {

/* Accum<Op>::add(acc, x, i) is combine(acc, lift(x, i)); add_vec folds a vector of
 * consecutive elements. Requires: every element already in `acc` has a lower index (the
 * loads visit each accumulator in increasing index order). For ARGMIN/ARGMAX that makes
 * ties free (the accumulator wins) and lets a vector enter as its best element alone. */
template <typename Op> struct Accum {
    static __device__ __forceinline__ typename Op::Acc add(typename Op::Acc a, typename Op::In x, int64_t i)
    {
        return Op::combine(a, Op::lift(x, i));
    }
    template <int kPer>
    static __device__ __forceinline__ typename Op::Acc add_vec(typename Op::Acc a, const typename Op::In (&v)[kPer],
                                                               uint64_t first)
    {
#pragma unroll
        for (int k = 0; k < kPer; k++)
            a = add(a, v[k], (int64_t)(first + k));
        return a;
    }
};

/* VecBest<T, kMax>::best(v, m): m = the vector's largest (kMax) or smallest element;
 * returns whether it may hold a NaN (then m is meaningless and the caller scans exactly).
 * same(x, m): x == m, for a vector without NaNs; signed zeros are equal, as in the op.
 * On compute capability 8.0+ float32 and the 16-bit floats use the NaN-propagating
 * min/max, so a NaN anywhere makes m NaN. */
template <typename T, bool kMax> struct VecBest {
    typedef typename Wide<T>::type M;
    template <int kPer> static __device__ __forceinline__ bool best(const T (&v)[kPer], M &m)
    {
        M w = widen(v[0]);
        bool nan = is_nan(w);
#pragma unroll
        for (int k = 1; k < kPer; k++) {
            const M x = widen(v[k]);
            w = kMax ? vmax(w, x) : vmin(w, x);
            nan |= is_nan(x);
        }
        m = w;
        return nan;
    }
    static __device__ __forceinline__ bool same(T x, M m) { return widen(x) == m; }
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <bool kMax> struct VecBest<float, kMax> {
    typedef float M;
    static __device__ __forceinline__ float pick(float a, float b)
    {
        return kMax ? NanMinMax<float>::max(a, b) : NanMinMax<float>::min(a, b);
    }
    template <int kPer> static __device__ __forceinline__ bool best(const float (&v)[kPer], float &m)
    {
        m = v[0];
#pragma unroll
        for (int k = 1; k < kPer; k++)
            m = pick(m, v[k]);
        return m != m;
    }
    static __device__ __forceinline__ bool same(float x, float m) { return x == m; }
};

/* __half and __nv_bfloat16: packed pairs, then the last pair's two halves. */
template <typename H, typename H2, bool kMax> struct VecBestHalf {
    typedef H M;
    static __device__ __forceinline__ H2 pick2(H2 a, H2 b) { return kMax ? __hmax2_nan(a, b) : __hmin2_nan(a, b); }
    static __device__ __forceinline__ H pick(H a, H b) { return kMax ? __hmax_nan(a, b) : __hmin_nan(a, b); }
    template <int kPer> static __device__ __forceinline__ bool best(const H (&v)[kPer], H &m)
    {
        static_assert(kPer % 2 == 0, "16-bit vectors hold pairs");
        H2 p;
        memcpy(&p, &v[0], sizeof p);
#pragma unroll
        for (int k = 2; k < kPer; k += 2) {
            H2 q;
            memcpy(&q, &v[k], sizeof q);
            p = pick2(p, q);
        }
        H half[2];
        memcpy(half, &p, sizeof p);
        m = pick(half[0], half[1]);
        return __hisnan(m);
    }
    static __device__ __forceinline__ bool same(H x, H m) { return __heq(x, m); }
};
template <bool kMax> struct VecBest<__half, kMax> : VecBestHalf<__half, __half2, kMax> {};
template <bool kMax> struct VecBest<__nv_bfloat16, kMax> : VecBestHalf<__nv_bfloat16, __nv_bfloat162, kMax> {};
#endif

template <typename T, typename Out, bool kMax> struct AccumArg {
    typedef OpArgBase<T, Out, kMax> Base;
    typedef typename Base::V V;
    /* Whether x, later than best, replaces it: best is a number and x a NaN or better. */
    static __device__ __forceinline__ bool better(V best, V x)
    {
        return !is_nan(best) && (is_nan(x) || (kMax ? best < x : x < best));
    }
    static __device__ __forceinline__ typename Base::Acc merge(typename Base::Acc a, V x, int64_t i)
    {
        if (a.i < 0 || better(a.v, x)) {
            a.v = x;
            a.i = i;
        }
        return a;
    }
    static __device__ __forceinline__ typename Base::Acc add(typename Base::Acc a, T x, int64_t i)
    {
        return merge(a, widen(x), i);
    }
    /* One vector without a branch per element (bench/HISTORY.md, v6): its best m
     * (VecBest), the position of m's first occurrence, then one merge. The vector's best
     * alone can decide, since the vector comes after all of acc and before all folded
     * later. A vector that may hold a NaN takes the exact scan, element by element. */
    template <int kPer>
    static __device__ __forceinline__ typename Base::Acc add_vec(typename Base::Acc a, const T (&v)[kPer],
                                                                 uint64_t first)
    {
        typename VecBest<T, kMax>::M m;
        if (VecBest<T, kMax>::template best<kPer>(v, m)) {
#pragma unroll
            for (int k = 0; k < kPer; k++)
                a = merge(a, widen(v[k]), (int64_t)(first + (uint64_t)k));
            return a;
        }
        int pos = kPer - 1;
#pragma unroll
        for (int k = kPer - 2; k >= 0; k--)
            pos = VecBest<T, kMax>::same(v[k], m) ? k : pos;
        const V mv = widen(m); /* not a NaN */
        /* Selects, not a branch: whether the vector wins differs between lanes. */
        const bool take = a.i < 0 || (!is_nan(a.v) && (kMax ? a.v < mv : mv < a.v));
        const int64_t idx = (int64_t)(first + (uint64_t)pos);
        a.v = take ? mv : a.v;
        a.i = take ? idx : a.i;
        return a;
    }
};

template <typename T, typename Out> struct Accum<OpArgMin<T, Out> > : AccumArg<T, Out, false> {};
template <typename T, typename Out> struct Accum<OpArgMax<T, Out> > : AccumArg<T, Out, true> {};

} // namespace gs
