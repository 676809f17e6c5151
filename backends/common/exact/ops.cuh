/*
 * A float sum kept exact in doubles, or marked lost (agent/exact.cuh's fast paths,
 * agent/seg_exact.cuh's segments): OpCheckedSum<T> is an op in thread/ops.cuh's sense whose
 * accumulator is one double for float16, bfloat16 and float32 and two (hi + lo) for float64.
 * Every addition is checked with Dekker's test (exact_checked_add: fl(s - a) == b and
 * fl(s - b) == a); an inexact one, a NaN or an infinity (x + inf fails the test, inf - inf is
 * no number), or an overflow makes the accumulator NaN, which every later addition keeps:
 * lost. One not lost holds the exact sum in any order and grouping, so rounding it once is
 * the correctly rounded sum. Accumulators start at -0.0: IEEE addition gives -0 only for
 * -0 + -0, so an exact zero is -0.0 exactly when every element was -0.0, the exact sums'
 * rule (float64's hi carries that sign, its lo only error terms).
 */
#pragma once

#include "acc.cuh"
#include "thread/ops.cuh"

namespace gs {

/* s + e == a + b exactly when s does not overflow, without ordering the operands: Knuth's
 * TwoSum (exact/anchor.cuh's low, where ordering would cost the main loop a register). */
__device__ __forceinline__ void two_sum_knuth(double a, double b, double &s, double &e)
{
    s = __dadd_rn(a, b);
    const double bb = __dsub_rn(s, a);
    e = __dadd_rn(__dsub_rn(a, __dsub_rn(s, bb)), __dsub_rn(b, bb));
}

/* s + e == a + b exactly when s does not overflow; the _rn intrinsics are never contracted
 * into FMAs or reordered. Doubles: Dekker's Fast2Sum, exact when the first operand's
 * exponent is at least the second's, so the two are first ordered by their exponent fields
 * in integers: 3 float64 additions, not TwoSum's 6, on the narrower float64 pipe. Floats:
 * Knuth's TwoSum. */
__device__ __forceinline__ void two_sum(double a, double b, double &s, double &e)
{
    const bool a_first = (__double2hiint(a) & 0x7ff00000) >= (__double2hiint(b) & 0x7ff00000);
    const double hi = a_first ? a : b, lo = a_first ? b : a;
    s = __dadd_rn(hi, lo);
    e = __dsub_rn(lo, __dsub_rn(s, hi));
}
__device__ __forceinline__ void two_sum(float a, float b, float &s, float &e)
{
    s = __fadd_rn(a, b);
    const float bb = __fsub_rn(s, a);
    e = __fadd_rn(__fsub_rn(a, __fsub_rn(s, bb)), __fsub_rn(b, bb));
}

/* float64's accumulator: the exact sum hi + lo. */
struct ExactDd {
    double hi, lo;
};

/* x into the expansion a: K TwoSums, the residual flushed. */
template <typename F, int K> __device__ __forceinline__ void exact_add(F (&a)[K], F x, ExactShared &acc)
{
#pragma unroll
    for (int k = 0; k < K; k++)
        two_sum(a[k], x, a[k], x);
    if (x != F(0))
        exact_flush(acc, (double)x);
}

/* a + b, and ok cleared unless it was exact (NaN operands included) */
__device__ __forceinline__ double exact_checked_add(double a, double b, bool &ok)
{
    const double t = __dadd_rn(a, b);
    ok &= (__dsub_rn(t, a) == b) & (__dsub_rn(t, b) == a);
    return t;
}

template <typename T> __device__ __forceinline__ T exact_round_double(double v);
template <> __device__ __forceinline__ float exact_round_double<float>(double v) { return __double2float_rn(v); }
template <> __device__ __forceinline__ __half exact_round_double<__half>(double v) { return __double2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 exact_round_double<__nv_bfloat16>(double v)
{
    return __double2bfloat16(v);
}

/* float16, bfloat16, float32: one double. */
template <typename T> struct OpCheckedSum {
    typedef T In;
    typedef T OutT;
    typedef double Acc;
    static __device__ __forceinline__ Acc identity() { return -0.0; }
    static __device__ __forceinline__ Acc lift(T x, int64_t) { return (double)widen(x); }
    static __device__ __forceinline__ Acc term(double x) { return x; }
    /* a + b, and ok cleared unless it is exact: the value does not wait for the test */
    static __device__ __forceinline__ Acc add(Acc a, Acc b, bool &ok) { return exact_checked_add(a, b, ok); }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b)
    {
        bool ok = true;
        const double t = add(a, b, ok);
        return ok ? t : lost_acc();
    }
    static __device__ __forceinline__ bool lost(Acc a) { return a != a; }
    static __device__ __forceinline__ Acc lost_acc() { return __longlong_as_double(0x7ff8000000000000ll); }
    /* the sum's value rounded to double (exact here), for its sign */
    static __device__ __forceinline__ double value(Acc a) { return a; }
    static __device__ __forceinline__ void flush(ExactShared &acc, Acc a)
    {
        if (a != 0.0)
            exact_flush(acc, a);
    }
    /* a into the two-term expansion e, exactly (exact_add) */
    static __device__ __forceinline__ void add_to(double (&e)[2], Acc a, ExactShared &acc)
    {
        exact_add<double, 2>(e, a, acc);
    }
    static __device__ __forceinline__ T result(Acc a) { return exact_round_double<T>(a); }
    /* from and to the two-double form of the partials (exact/grid.cuh): one double holds
     * hi + lo only when lo is zero */
    static __device__ __forceinline__ Acc of_dd(ExactDd p) { return p.lo == 0.0 ? p.hi : lost_acc(); }
    static __device__ __forceinline__ ExactDd to_dd(Acc a) { return ExactDd{a, 0.0}; }
};

/* Two doubles, hi + lo, for any input type: float64's segments, and every block's fast path
 * (exact/grid.cuh), as one double's 53 bits often cannot hold a float32 block's sum. */
template <typename T> struct OpCheckedSumDd {
    typedef T In;
    typedef T OutT;
    typedef ExactDd Acc;
    static __device__ __forceinline__ Acc identity() { return Acc{-0.0, 0.0}; }
    static __device__ __forceinline__ Acc lift(T x, int64_t) { return Acc{(double)widen(x), 0.0}; }
    static __device__ __forceinline__ Acc term(double x) { return Acc{x, 0.0}; }
    static __device__ __forceinline__ Acc add(Acc a, Acc b, bool &ok)
    {
        double s, e;
        two_sum(a.hi, b.hi, s, e); /* exact unless s overflows */
        ok &= __dsub_rn(s, s) == 0.0;
        double l = exact_checked_add(a.lo, b.lo, ok);
        l = exact_checked_add(l, e, ok);
        return Acc{s, l};
    }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b)
    {
        bool ok = true;
        const Acc t = add(a, b, ok);
        return ok ? t : lost_acc();
    }
    static __device__ __forceinline__ bool lost(Acc a) { return a.hi != a.hi; }
    static __device__ __forceinline__ Acc lost_acc()
    {
        const double nan = __longlong_as_double(0x7ff8000000000000ll);
        return Acc{nan, nan};
    }
    /* hi + lo rounded to double (its sign is the exact sum's; a zero keeps hi's sign) */
    static __device__ __forceinline__ double value(Acc a) { return a.hi == 0.0 && a.lo == 0.0 ? a.hi : __dadd_rn(a.hi, a.lo); }
    /* hi + lo rounded to odd (a double whose last bit is set unless it is exact): rounding
     * that once more to a type of at most 25 bits is the correct rounding of hi + lo */
    static __device__ __forceinline__ double value_odd(Acc a)
    {
        if (a.lo == 0.0)
            return a.hi;
        double s, e;
        two_sum(a.hi, a.lo, s, e);
        const long long b = __double_as_longlong(s);
        if (e != 0.0 && !(b & 1))
            return __longlong_as_double((e > 0.0) == (s > 0.0) ? b + 1 : b - 1);
        return s;
    }
    static __device__ __forceinline__ void flush(ExactShared &acc, Acc a)
    {
        if (a.hi != 0.0)
            exact_flush(acc, a.hi);
        if (a.lo != 0.0)
            exact_flush(acc, a.lo);
    }
    static __device__ __forceinline__ void add_to(double (&e)[2], Acc a, ExactShared &acc)
    {
        exact_add<double, 2>(e, a.hi, acc);
        exact_add<double, 2>(e, a.lo, acc);
    }
    static __device__ __forceinline__ Acc of_dd(ExactDd p) { return p; }
    static __device__ __forceinline__ ExactDd to_dd(Acc a) { return a; }
};
template <> struct OpCheckedSum<double> : OpCheckedSumDd<double> {
    static __device__ __forceinline__ double result(Acc a) { return value(a); }
};

/* Chk's sum for a thread's folds (agent/exact.cuh, exact/grid.cuh's partials,
 * cuda_sm11_compat's group folds) with whether every addition was exact carried beside the
 * value, not in it: Chk::combine must test before it can poison its result, which puts the
 * test between one addition and the next; here the tests run beside the additions. The value
 * means something only when ok. */
template <typename V> struct ExactFlagged {
    V v;
    unsigned int ok;
};
template <typename Chk> struct OpExactTree {
    typedef typename Chk::Acc V;
    typedef ExactFlagged<V> Acc;
    static __device__ __forceinline__ Acc identity() { return Acc{Chk::identity(), 1u}; }
    /* a value as a one-term fold: not ok when it is itself lost */
    static __device__ __forceinline__ Acc of(V v) { return Acc{v, Chk::lost(v) ? 0u : 1u}; }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b)
    {
        bool ok = (a.ok & b.ok) != 0;
        const V t = Chk::add(a.v, b.v, ok);
        return Acc{t, ok ? 1u : 0u};
    }
    static __device__ __forceinline__ bool lost(Acc a) { return !a.ok; }
};
/* A chain of the checked sums' combines (thread/ops.cuh's Fold), the flag beside the value:
 * one select at the end. */
template <typename T> struct Fold<OpCheckedSum<T> > {
    typedef OpExactTree<OpCheckedSum<T> > Tree;
    typedef typename Tree::Acc F;
    static __device__ __forceinline__ F of(typename OpCheckedSum<T>::Acc a) { return Tree::of(a); }
    static __device__ __forceinline__ F combine(F a, F b) { return Tree::combine(a, b); }
    static __device__ __forceinline__ typename OpCheckedSum<T>::Acc value(F f)
    {
        return f.ok ? f.v : OpCheckedSum<T>::lost_acc();
    }
};

/* v[0] + ... + v[N - 1] with Tree's combine, pairwise (log2 N deep, not N - 1), in v[0]. */
template <typename Tree, int N>
__device__ __forceinline__ typename Tree::Acc exact_fold_pairs(typename Tree::Acc (&v)[N])
{
#pragma unroll
    for (int h = 1; h < N; h *= 2)
#pragma unroll
        for (int k = 0; k + h < N; k += 2 * h)
            v[k] = Tree::combine(v[k], v[k + h]);
    return v[0];
}

} // namespace gs
