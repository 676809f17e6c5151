/*
 * The reductions' element types and operations, for both backends: what an element is
 * computed in and rounded back to (Wide, Narrow, Arith, Bounds), each op as identity, lift,
 * combine and result over its accumulator (OpSum .. OpXor), and the ARGMIN/ARGMAX keys.
 * Nothing here knows the grid, the Policy or the protocol.
 */
#pragma once

#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gs {

/* ---- element types -------------------------------------------------------------------
 * Wide<T>: the type an element is computed in. float16/bfloat16 widen to float, 8-bit
 * integers to 32 bits; the conversion is exact. Arith<W>: the type sums and products run
 * in; signed integers use the unsigned type of the same width, so overflow wraps (two's
 * complement) instead of being undefined. narrow<Out>: the one rounding at the end. */

template <typename T> struct Wide { typedef T type; };
template <> struct Wide<__half> { typedef float type; };
template <> struct Wide<__nv_bfloat16> { typedef float type; };
template <> struct Wide<int8_t> { typedef int32_t type; };
template <> struct Wide<uint8_t> { typedef uint32_t type; };

template <typename T> __device__ __forceinline__ typename Wide<T>::type widen(T x) { return (typename Wide<T>::type)x; }
template <> __device__ __forceinline__ float widen<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float widen<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename Out, typename A> struct Narrow {
    static __device__ __forceinline__ Out from(A a) { return (Out)a; }
};
template <typename A> struct Narrow<__half, A> {
    static __device__ __forceinline__ __half from(A a) { return __float2half_rn((float)a); }
};
template <typename A> struct Narrow<__nv_bfloat16, A> {
    static __device__ __forceinline__ __nv_bfloat16 from(A a) { return __float2bfloat16_rn((float)a); }
};

template <typename W> struct Arith { typedef W type; };
template <> struct Arith<int32_t> { typedef uint32_t type; };
template <> struct Arith<int64_t> { typedef uint64_t type; };

/* (is_nan, OpArgBase::combine and the ARGMIN/ARGMAX keys are also host functions, for
 * tests/unit/test_argkey.cu.) */
template <typename W> __host__ __device__ __forceinline__ bool is_nan(W) { return false; }
template <> __host__ __device__ __forceinline__ bool is_nan<float>(float x) { return x != x; }
template <> __host__ __device__ __forceinline__ bool is_nan<double>(double x) { return x != x; }

/* min/max of two numbers; NaNs are the callers' business. */
template <typename W> __device__ __forceinline__ W vmax(W a, W b) { return a < b ? b : a; }
template <typename W> __device__ __forceinline__ W vmin(W a, W b) { return b < a ? b : a; }
template <> __device__ __forceinline__ float vmax<float>(float a, float b) { return fmaxf(a, b); }
template <> __device__ __forceinline__ float vmin<float>(float a, float b) { return fminf(a, b); }
template <> __device__ __forceinline__ double vmax<double>(double a, double b) { return fmax(a, b); }
template <> __device__ __forceinline__ double vmin<double>(double a, double b) { return fmin(a, b); }

/* The extremes of T, in Wide<T>: the identities of MIN and MAX (infinities for floats). */
template <typename T> struct Bounds;
#define GS_INT_BOUNDS(T, lo, hi)                                                          \
    template <> struct Bounds<T> {                                                        \
        static __device__ __forceinline__ Wide<T>::type lowest() { return (Wide<T>::type)(lo); }  \
        static __device__ __forceinline__ Wide<T>::type highest() { return (Wide<T>::type)(hi); } \
    };
GS_INT_BOUNDS(int8_t, INT8_MIN, INT8_MAX)
GS_INT_BOUNDS(uint8_t, 0, UINT8_MAX)
GS_INT_BOUNDS(int32_t, INT32_MIN, INT32_MAX)
GS_INT_BOUNDS(uint32_t, 0, UINT32_MAX)
GS_INT_BOUNDS(int64_t, INT64_MIN, INT64_MAX)
GS_INT_BOUNDS(uint64_t, 0, UINT64_MAX)
#undef GS_INT_BOUNDS
template <> struct Bounds<float> {
    static __device__ __forceinline__ float highest() { return __int_as_float(0x7f800000); }
    static __device__ __forceinline__ float lowest() { return -highest(); }
};
template <> struct Bounds<double> {
    static __device__ __forceinline__ double highest() { return __longlong_as_double(0x7ff0000000000000ll); }
    static __device__ __forceinline__ double lowest() { return -highest(); }
};
template <> struct Bounds<__half> : Bounds<float> {};
template <> struct Bounds<__nv_bfloat16> : Bounds<float> {};

/* ---- operations ----------------------------------------------------------------------
 * Each op over input type T with output type Out has an accumulator type Acc, an
 * identity, lift (element and its index -> Acc), combine, and result (Acc -> Out).
 * combine must give the same answer for any grouping of the same sequence: the kernel
 * groups by thread, then by block, in a fixed way, so results are run-to-run
 * deterministic (floats included). */

template <typename T, typename Out> struct OpSum {
    typedef T In;
    typedef Out OutT;
    typedef typename Arith<typename Wide<Out>::type>::type Acc;
    static __device__ __forceinline__ Acc identity() { return Acc(0); }
    static __device__ __forceinline__ Acc lift(T x, int64_t) { return Acc(widen(x)); }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return a + b; }
    static __device__ __forceinline__ Out result(Acc a) { return Narrow<Out, Acc>::from(a); }
};

template <typename T, typename Out> struct OpProd : OpSum<T, Out> {
    typedef typename OpSum<T, Out>::Acc Acc;
    static __device__ __forceinline__ Acc identity() { return Acc(1); }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return a * b; }
};

/* min/max that propagate NaN: if either side is NaN the result is NaN (which NaN is not
 * specified, docs/semantics.md §3). float32, also the 16-bit floats' accumulator, uses the
 * NaN-propagating min/max instruction of compute capability 8.0+. */
template <typename W> struct NanMinMax {
    static __device__ __forceinline__ W min(W a, W b) { return is_nan(a) ? a : (is_nan(b) || b < a) ? b : a; }
    static __device__ __forceinline__ W max(W a, W b) { return is_nan(a) ? a : (is_nan(b) || a < b) ? b : a; }
};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <> struct NanMinMax<float> {
    static __device__ __forceinline__ float min(float a, float b)
    {
        float r;
        asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
        return r;
    }
    static __device__ __forceinline__ float max(float a, float b)
    {
        float r;
        asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
        return r;
    }
};
#endif

template <typename T, typename Out> struct OpMin {
    typedef T In;
    typedef Out OutT;
    typedef typename Wide<T>::type Acc;
    static __device__ __forceinline__ Acc identity() { return Bounds<T>::highest(); }
    static __device__ __forceinline__ Acc lift(T x, int64_t) { return widen(x); }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return NanMinMax<Acc>::min(a, b); }
    static __device__ __forceinline__ Out result(Acc a) { return Narrow<Out, Acc>::from(a); }
};

template <typename T, typename Out> struct OpMax : OpMin<T, Out> {
    typedef typename OpMin<T, Out>::Acc Acc;
    static __device__ __forceinline__ Acc identity() { return Bounds<T>::lowest(); }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return NanMinMax<Acc>::max(a, b); }
};

/* ARGMIN/ARGMAX: the int64 index of the first minimum (maximum); a NaN beats every
 * number, and among equals (or NaNs) the lower index wins, so the answer does not depend
 * on the order of combination. Index -1 marks "no element yet" (and is the result for
 * n == 0). */
template <typename V> struct ArgAcc {
    V v;
    int64_t i;
};

template <typename T, typename Out, bool kMax> struct OpArgBase {
    typedef T In;
    typedef int64_t OutT;
    typedef typename Wide<T>::type V;
    typedef ArgAcc<V> Acc;
    static __device__ __forceinline__ Acc identity()
    {
        Acc a;
        a.v = V(0);
        a.i = -1;
        return a;
    }
    static __device__ __forceinline__ Acc lift(T x, int64_t i)
    {
        Acc a;
        a.v = widen(x);
        a.i = i;
        return a;
    }
    /* One predicate and two selects, no early returns: the warp reductions shuffle between
     * calls, and branches here make the compiler wrap the shuffles in divergence fall-backs. */
    static __host__ __device__ __forceinline__ Acc combine(Acc a, Acc b)
    {
        const bool an = is_nan(a.v), bn = is_nan(b.v);
        const bool b_better = kMax ? a.v < b.v : b.v < a.v;
        const bool a_better = kMax ? b.v < a.v : a.v < b.v;
        /* a and b both hold an element: the NaN, else the better value, else (equal
         * values or two NaNs) the lower index */
        const bool b_wins = an != bn ? bn : (!an && b_better) || (!(!an && a_better) && b.i < a.i);
        const bool take_b = a.i < 0 || (b.i >= 0 && b_wins);
        Acc r;
        r.v = take_b ? b.v : a.v;
        r.i = take_b ? b.i : a.i;
        return r;
    }
    static __device__ __forceinline__ int64_t result(Acc a) { return a.i; }
};
template <typename T, typename Out> struct OpArgMin : OpArgBase<T, Out, false> {};
template <typename T, typename Out> struct OpArgMax : OpArgBase<T, Out, true> {};
template <typename Op> struct IsArg { static const bool value = false; };
template <typename T, typename Out> struct IsArg<OpArgMin<T, Out> > { static const bool value = true; };
template <typename T, typename Out> struct IsArg<OpArgMax<T, Out> > { static const bool value = true; };

/* ARGMIN/ARGMAX as keys. A (value, index) pair packs into an unsigned key whose maximum is
 * the pair combine() would choose: the high word orders the values (the better value
 * higher, every NaN the same word above every number, signed zeros equal), the low word is
 * ~index (the lower index higher), so equal value words fall to the lower index, as in
 * combine(). A value of 32 bits or less (computed as float, int32 or uint32) with an index
 * below 2^32 - 2 makes one uint64; a 64-bit value (double, int64, uint64) makes two words,
 * any n. The all-zero key is "no element": a float's value word is never 0, an integer's
 * only for the op's worst value, whose index word is not 0. Keys combine by a branch-free
 * max, so the block and grid reductions use them wherever n allows (bench/HISTORY.md, v7).
 * Only the index reaches the output. */
template <typename V, bool kMax> struct KeyOrder;
/* Floats: -0 made +0, then the sign-magnitude bits turned into an order (negatives
 * reversed below the positives); every NaN the largest word. */
template <typename F, typename W> __host__ __device__ __forceinline__ W float_order(F v, bool max)
{
    F z; /* v + 0: -0 becomes +0 */
#ifdef __CUDA_ARCH__
    if constexpr (sizeof(F) == 4)
        z = __fadd_rn(v, 0.0f);
    else
        z = __dadd_rn(v, 0.0);
#else
    z = v + F(0);
#endif
    W u;
    memcpy(&u, &z, sizeof u);
    const W sign = (W)1 << (8 * sizeof(W) - 1);
    const W up = u ^ ((u & sign) ? ~(W)0 : sign); /* increases with v */
    return v != v ? ~(W)0 : max ? up : ~up;
}
template <bool kMax> struct KeyOrder<float, kMax> {
    typedef uint32_t Word;
    static __host__ __device__ __forceinline__ Word ord(float v) { return float_order<float, Word>(v, kMax); }
};
template <bool kMax> struct KeyOrder<double, kMax> {
    typedef uint64_t Word;
    static __host__ __device__ __forceinline__ Word ord(double v) { return float_order<double, Word>(v, kMax); }
};
/* Integers: two's complement with the sign bit flipped orders as unsigned. */
template <typename I, typename W, bool kMax> struct KeyOrderInt {
    typedef W Word;
    static __host__ __device__ __forceinline__ Word ord(I v)
    {
        const W up = (W)v ^ ((I)-1 < 0 ? (W)1 << (8 * sizeof(W) - 1) : 0);
        return kMax ? up : ~up;
    }
};
template <bool kMax> struct KeyOrder<int32_t, kMax> : KeyOrderInt<int32_t, uint32_t, kMax> {};
template <bool kMax> struct KeyOrder<uint32_t, kMax> : KeyOrderInt<uint32_t, uint32_t, kMax> {};
template <bool kMax> struct KeyOrder<int64_t, kMax> : KeyOrderInt<int64_t, uint64_t, kMax> {};
template <bool kMax> struct KeyOrder<uint64_t, kMax> : KeyOrderInt<uint64_t, uint64_t, kMax> {};

/* The ops that block_reduce and the partials run on: the maximum key, and its index. */
template <typename T> struct OpArgKey {
    typedef T In;
    typedef int64_t OutT;
    typedef uint64_t Acc;
    static __host__ __device__ __forceinline__ Acc identity() { return 0; }
    static __host__ __device__ __forceinline__ Acc combine(Acc a, Acc b) { return a < b ? b : a; }
    static __host__ __device__ __forceinline__ int64_t result(Acc k)
    {
        return k ? (int64_t)(uint32_t)~(uint32_t)k : -1;
    }
};
struct Key128 {
    uint64_t hi, lo; /* value word, ~index */
};
template <typename T> struct OpArgKey128 {
    typedef T In;
    typedef int64_t OutT;
    typedef Key128 Acc;
    static __host__ __device__ __forceinline__ Acc identity() { return Key128{0, 0}; }
    static __host__ __device__ __forceinline__ Acc combine(Acc a, Acc b)
    {
        const bool take_b = a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
        Acc r;
        r.hi = take_b ? b.hi : a.hi;
        r.lo = take_b ? b.lo : a.lo;
        return r;
    }
    static __host__ __device__ __forceinline__ int64_t result(Acc k) { return k.lo ? (int64_t)~k.lo : -1; }
};
/* A chain of combines (block/group.cuh) through Fold<Op>::F: value(of(a) combined with
 * of(b), ...) is Op::combine(Op::combine(a, b), ...). F is the accumulator itself, except
 * for the exact sums, whose F carries the exactness test beside it (exact/ops.cuh). */
template <typename Op> struct Fold {
    typedef typename Op::Acc F;
    static __device__ __forceinline__ F of(typename Op::Acc a) { return a; }
    static __device__ __forceinline__ F combine(F a, F b) { return Op::combine(a, b); }
    static __device__ __forceinline__ typename Op::Acc value(F f) { return f; }
};

template <typename Op> struct IsArgKey { static const bool value = false; };
template <typename T> struct IsArgKey<OpArgKey<T> > { static const bool value = true; };

template <typename Op> struct ArgKey {
    static const bool kUsable = false;
};
template <typename T, typename Out, bool kMax, typename W = typename KeyOrder<typename Wide<T>::type, kMax>::Word>
struct ArgKeyBase;
/* 32-bit values: one word; indices up to 2^32 - 3 (n <= kMaxN), so ~index is never 0. */
template <typename T, typename Out, bool kMax> struct ArgKeyBase<T, Out, kMax, uint32_t> {
    typedef OpArgBase<T, Out, kMax> Arg;
    typedef KeyOrder<typename Arg::V, kMax> Order;
    static const bool kUsable = true;
    static const uint64_t kMaxN = 0xfffffffeull;
    typedef OpArgKey<T> Op;
    static __host__ __device__ __forceinline__ uint64_t key(typename Arg::Acc a)
    {
        return a.i < 0 ? 0 : (uint64_t)Order::ord(a.v) << 32 | (uint32_t)~(uint32_t)a.i;
    }
};
/* 64-bit values: two words, any n. */
template <typename T, typename Out, bool kMax> struct ArgKeyBase<T, Out, kMax, uint64_t> {
    typedef OpArgBase<T, Out, kMax> Arg;
    typedef KeyOrder<typename Arg::V, kMax> Order;
    static const bool kUsable = true;
    static const uint64_t kMaxN = ~0ull;
    typedef OpArgKey128<T> Op;
    static __host__ __device__ __forceinline__ Key128 key(typename Arg::Acc a)
    {
        return a.i < 0 ? Key128{0, 0} : Key128{Order::ord(a.v), ~(uint64_t)a.i};
    }
};
template <typename T, typename Out> struct ArgKey<OpArgMin<T, Out> > : ArgKeyBase<T, Out, false> {};
template <typename T, typename Out> struct ArgKey<OpArgMax<T, Out> > : ArgKeyBase<T, Out, true> {};

/* Bitwise operations, integers only, in the unsigned type of the (widened) width. */
template <typename T, typename Out> struct OpBitBase {
    typedef T In;
    typedef Out OutT;
    typedef typename Arith<typename Wide<T>::type>::type Acc;
    static __device__ __forceinline__ Acc lift(T x, int64_t) { return Acc(widen(x)); }
    static __device__ __forceinline__ Out result(Acc a) { return (Out)a; }
};
template <typename T, typename Out> struct OpAnd : OpBitBase<T, Out> {
    typedef typename OpBitBase<T, Out>::Acc Acc;
    static __device__ __forceinline__ Acc identity() { return (Acc)~(Acc)0; }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return a & b; }
};
template <typename T, typename Out> struct OpOr : OpBitBase<T, Out> {
    typedef typename OpBitBase<T, Out>::Acc Acc;
    static __device__ __forceinline__ Acc identity() { return Acc(0); }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return a | b; }
};
template <typename T, typename Out> struct OpXor : OpOr<T, Out> {
    typedef typename OpOr<T, Out>::Acc Acc;
    static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return a ^ b; }
};

} // namespace gs
