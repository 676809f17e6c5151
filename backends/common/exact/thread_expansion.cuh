/* The 16-bit types' per-thread strategy (exact/thread.cuh): every element into a short
 * expansion a[0..K) of floats by error-free additions (two_sum: a + x == s + e exactly), what
 * the last term leaves going to the spill terms; a vector is first tried with plain additions
 * into a[0], kept when all were exact (ExBLAS: Iakymchuk, Collange, Defour, Graillat). */
#pragma once

#include <stdint.h>
#include <string.h>

#include "acc.cuh"
#include "ops.cuh"
#include "spill.cuh"
#include "traits.cuh"

namespace gs {

/* The 16-bit types' guard (exact_vec, exact_scalar) on raw 32-bit words: a word w trips it
 * when ((w & kM) + kB) & kS is nonzero (exponent fields all ones, or at or above the
 * bound: adding kB carries into the field's sign position). */
template <typename T> struct ExactGuard;
template <> struct ExactGuard<__half> { /* |x| < 2^16: float never overflows */
    static const uint32_t kM = 0x7c007c00u, kB = 0x04000400u, kS = 0x80008000u;
};
template <> struct ExactGuard<__nv_bfloat16> { /* bound 2^96: biased exponent >= 0xdf */
    static const uint32_t kM = 0x7f807f80u, kB = 0x10801080u, kS = 0x80008000u;
};

template <typename T> __device__ __forceinline__ typename ExactIn<T>::F exact_widen(T x) { return widen(x); }

__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }

/* A vector's elements into a[0] by plain additions if every one is exact: true, or false
 * with a unchanged. s = fl(a + x) is exact iff fl(s - a) == x and fl(s - x) == a: if it is,
 * both differences are exact; if not, the difference taken from the operand with the larger
 * exponent is exact (Dekker's lemma, the first step of Fast2Sum) and so differs from the
 * other operand. 3 additions and 2 compares an element, not K TwoSums. */
template <typename F, int K, int kPer>
__device__ __forceinline__ bool exact_try_plain(F (&a)[K], const F (&x)[kPer])
{
    F s = a[0];
    bool exact = true;
#pragma unroll
    for (int j = 0; j < kPer; j++) {
        const F t = add_rn(s, x[j]);
        exact &= (sub_rn(t, s) == x[j]) & (sub_rn(t, x[j]) == s);
        s = t;
    }
    if (exact)
        a[0] = s;
    return exact;
}

/* A vector's elements into a, with one test of their residuals, so the elements' additions
 * can overlap. */
template <bool kMark, typename F, int K, int kPer>
__device__ __forceinline__ void exact_add_vec(F (&a)[K], const F (&x)[kPer], ExactShared &acc, ExactSpill<F> sp)
{
    ExactResiduals<F, kPer> r;
    bool any = false;
#pragma unroll
    for (int j = 0; j < kPer; j++) {
        F y = x[j];
#pragma unroll
        for (int k = 0; k < K; k++)
            two_sum(a[k], y, a[k], y);
        r.r[j] = y;
        any |= y != F(0);
    }
    if (any)
        exact_spill<kMark, F, kPer>(acc, sp, r);
}

/* A head or tail element: into the expansion when the guard lets it, else the slow path. */
template <typename T, typename F, int K>
__device__ __forceinline__ void exact_scalar(T x, F (&a)[K], ExactShared &acc, bool &sign_clear)
{
    typedef ExactGuard<T> G;
    unsigned long long b = 0;
    memcpy(&b, &x, sizeof x);
    const uint32_t w = (uint32_t)b;
    if ((((w & G::kM) + G::kB) & G::kS) != 0) {
        exact_slow<T>(x, acc, sign_clear);
        return;
    }
    sign_clear |= !((b >> (8 * sizeof x - 1)) & 1);
    exact_add<F, K>(a, (F)exact_widen<T>(x), acc);
}

/* Element k of a vector's words, by register moves (a memcpy into an array would give the
 * array a stack slot). */
template <typename T> __device__ __forceinline__ T exact_elem(const uint32_t (&w)[4], int k);
template <> __device__ __forceinline__ __half exact_elem<__half>(const uint32_t (&w)[4], int k)
{
    return __ushort_as_half((unsigned short)(w[k / 2] >> (16 * (k % 2))));
}
template <> __device__ __forceinline__ __nv_bfloat16 exact_elem<__nv_bfloat16>(const uint32_t (&w)[4], int k)
{
    return __ushort_as_bfloat16((unsigned short)(w[k / 2] >> (16 * (k % 2))));
}

/* One 16-byte vector into expansion a, or, when the guard trips, element by element. */
template <typename T, typename F, int K>
__device__ __forceinline__ void exact_vec(const uint4 &raw, F (&a)[K], ExactShared &acc, ExactSpill<F> sp, uint32_t &sign_and,
                                          bool &sign_clear)
{
    typedef ExactIn<T> In;
    typedef ExactGuard<T> G;
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
    uint32_t trip = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        trip |= (w[k] & G::kM) + G::kB;
        sign_and &= w[k];
    }
    const int kPer = 16 / sizeof(T);
    T v[kPer];
#pragma unroll
    for (int k = 0; k < kPer; k++)
        v[k] = exact_elem<T>(w, k);
    if (trip & G::kS) {
        /* unrolled, so v stays in registers */
#pragma unroll
        for (int k = 0; k < kPer; k++)
            exact_slow<T>(v[k], acc, sign_clear);
        return;
    }
    F x[kPer];
#pragma unroll
    for (int k = 0; k < kPer; k++)
        x[k] = (F)exact_widen<T>(v[k]);
    if (!exact_try_plain<F, K, kPer>(a, x))
        exact_add_vec<!In::kSpillFast, F, K, kPer>(a, x, acc, sp);
}

/* A 16-bit type's thread (exact/thread.cuh's interface): kU expansions of K terms, one per
 * vector of a trip, so their chains of additions are independent. */
template <typename T, int kU> struct ExactExpansionThread {
    typedef typename ExactIn<T>::F F;
    static const int K = ExactIn<T>::K, kRows = kU;
    F a[kU][K];
    __device__ __forceinline__ ExactExpansionThread()
    {
#pragma unroll
        for (int u = 0; u < kU; u++)
#pragma unroll
            for (int k = 0; k < K; k++)
                a[u][k] = k ? F(0) : F(-0.0); /* -0: the zero sign of OpCheckedSum */
    }
    __device__ __forceinline__ void trip(ExactShared &, ExactSpill<F>) {}
    __device__ __forceinline__ void vec(const uint4 (&raw)[kU], int u, int, ExactShared &acc, ExactSpill<F> sp,
                                        uint32_t &sign_and, bool &sign_clear)
    {
        exact_vec<T, F, K>(raw[u], a[u], acc, sp, sign_and, sign_clear);
    }
    __device__ __forceinline__ void one(const uint4 &raw, ExactShared &acc, ExactSpill<F> sp, uint32_t &sign_and,
                                        bool &sign_clear)
    {
        exact_vec<T, F, K>(raw, a[0], acc, sp, sign_and, sign_clear);
    }
    __device__ __forceinline__ void scalar(T x, ExactShared &acc, ExactSpill<F>, bool &sign_clear)
    {
        exact_scalar<T, F, K>(x, a[0], acc, sign_clear);
    }
    __device__ __forceinline__ F (&end(bool))[kU][K] { return a; }
};

} // namespace gs
