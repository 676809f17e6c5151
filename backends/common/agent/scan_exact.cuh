/*
 * gs_scan with GS_SCAN_EXACT: correctly rounded prefix sums (docs/semantics.md §13). Every
 * prefix is an exact fixed-point number (exact/fixed.cuh), so the scan is an integer scan,
 * gs_scan's kernel (agent/scan.cuh) over Fx<W> values, and each output is its prefix rounded
 * once. Integer sums do not depend on the order, so any grid gives the same bits.
 *
 * Two launches on the stream, no host wait:
 *  1. exact_scan_range: the elements' lowest and highest exponent fields, one partial per
 *     block; the last block adds the carry-in accumulators and writes the plan: the anchor
 *     a (at or below every element's and the carry-in's lowest bit), the fewest words W of
 *     kExactScanWords that hold every prefix (|prefix| <= |carry-in| + n max|x|), and the
 *     carry-in as Fx<W>.
 *  2. one scan kernel per W of kExactScanWords is queued; each reads the plan and returns at
 *     once unless the plan chose its W. The widest runs alone (one block, carries in
 *     registers): its values are too wide for the ring.
 * The plan lives in the workspace's scratch, rewritten by every launch; the range's ticket
 * is back to zero when its last block is done, the scan's ring as in agent/scan.cuh.
 */
#pragma once

#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "agent/scan.cuh"
#include "exact/fixed.cuh"
#include "gridsync.h"
#include "workspace.h"

namespace gs {

static_assert(sizeof(Fx<GS_EXACT_SCAN_MID>) == GS_EXACT_SCAN_VALUE_BYTES(GS_EXACT_SCAN_MID), "the host's ring size");
struct ExactScanPlan {
    int32_t anchor;
    uint32_t words;  /* the W that runs */
    uint32_t cflags; /* the carry-in's kFx* flags */
    uint32_t pad;
    uint32_t carry[GS_EXACT_SCAN_WIDE];
};
#define GS_EXACT_SCAN_PLAN_OFFSET GS_PARTIALS_OFFSET
/* the range's per-block partials, after the plan */
#define GS_EXACT_SCAN_PARTIALS_OFFSET (GS_PARTIALS_OFFSET + 512u)
static_assert(sizeof(ExactScanPlan) <= 512, "the plan before the partials");
static_assert(GS_EXACT_SCAN_PARTIALS_OFFSET + 8u * GS_MAX_BLOCKS <= GS_ZERO_OFFSET, "the partials in the scratch");

/* What the scan needs of an input type: its bits and their format. */
template <typename T> struct ExactScanIn;
template <> struct ExactScanIn<float> {
    typedef uint32_t Bits;
    typedef FxFmt<uint32_t> Fmt;
};
template <> struct ExactScanIn<double> {
    typedef uint64_t Bits;
    typedef FxFmt<uint64_t> Fmt;
};
template <> struct ExactScanIn<__half> {
    typedef uint16_t Bits;
    typedef FxFmt<uint16_t> Fmt;
};
template <> struct ExactScanIn<__nv_bfloat16> {
    typedef uint16_t Bits;
    typedef FxBf16 Fmt;
};

/* An output type's gs_dtype, and a result's bits as that type. */
template <typename Out> struct ExactScanOut;
template <> struct ExactScanOut<float> {
    static const gs_dtype kType = GS_FLOAT32;
    static __device__ __forceinline__ float of(uint64_t b) { return __uint_as_float((uint32_t)b); }
};
template <> struct ExactScanOut<double> {
    static const gs_dtype kType = GS_FLOAT64;
    static __device__ __forceinline__ double of(uint64_t b) { return __longlong_as_double((long long)b); }
};
template <> struct ExactScanOut<__half> {
    static const gs_dtype kType = GS_FLOAT16;
    static __device__ __forceinline__ __half of(uint64_t b) { return __ushort_as_half((unsigned short)b); }
};
template <> struct ExactScanOut<__nv_bfloat16> {
    static const gs_dtype kType = GS_BFLOAT16;
    static __device__ __forceinline__ __nv_bfloat16 of(uint64_t b)
    {
        return __ushort_as_bfloat16((unsigned short)b);
    }
};

/* The scan's op: Fx<W> values added; lift and result are the edge's (they need the anchor). */
template <typename T, typename Out, int W> struct OpExactScan {
    typedef T In;
    typedef Out OutT;
    typedef Fx<W> Acc;
    static __device__ __forceinline__ Acc identity() { return fx_zero<W>(); }
    static __device__ __forceinline__ Acc combine(const Acc &a, const Acc &b) { return fx_add<W>(a, b); }
};

/* The wider widths' lift and rounding as calls: inlined at every element of a thread's
 * unrolled loops they would multiply those kernels' code and build time, for a path that
 * ordinary data does not take. */
template <int W, typename F, typename Bits> __device__ __noinline__ Fx<W> fx_lift_call(Bits b, int a)
{
    return fx_lift<W, F>(b, a);
}
template <int W> __device__ __noinline__ uint64_t fx_round_call(const Fx<W> &v, int a, gs_dtype out)
{
    return fx_round<W>(v, a, out);
}

template <typename T, typename Out, int W> struct ExactScanEdge {
    typedef typename ExactScanIn<T>::Bits Bits;
    static const bool kExact = true;
    static const bool kAlone = W == GS_EXACT_SCAN_WIDE;
    static const int kThreads = kAlone ? GS_EXACT_SCAN_WIDE_THREADS : GS_SCAN_THREADS;
    int anchor;
    Fx<W> origin; /* the carry-in */
    gs_exact_acc *out_total;
    __device__ __forceinline__ Fx<W> lift(T x) const
    {
        Bits b;
        memcpy(&b, &x, sizeof b);
        if constexpr (W > GS_EXACT_SCAN_NARROW)
            return fx_lift_call<W, typename ExactScanIn<T>::Fmt>(b, anchor);
        else
            return fx_lift<W, typename ExactScanIn<T>::Fmt>(b, anchor);
    }
    __device__ __forceinline__ Out result(const Fx<W> &v) const
    {
        if constexpr (W > GS_EXACT_SCAN_NARROW)
            return ExactScanOut<Out>::of(fx_round_call<W>(v, anchor, ExactScanOut<Out>::kType));
        else
            return ExactScanOut<Out>::of(fx_round<W>(v, anchor, ExactScanOut<Out>::kType));
    }
    /* The normalised accumulator of the elements (v: their fixed point), by the block that
     * holds the last tile: digit i is bits [32 i - 1088 - a, + 32) of v, the top limb the
     * signed rest (below 2^31 in magnitude for any sum of floats). */
    __device__ __forceinline__ void total(const Fx<W> &x, uint64_t n) const
    {
        if (!out_total)
            return;
        const int t = (int)threadIdx.x;
        for (int i = t; i < GS_EXACT_LIMBS; i += blockDim.x) {
            const int pos = 32 * i + GS_EXACT_LOW_EXPONENT - anchor;
            int64_t limb = fx_digits_bits32(x.w, W, pos);
            if (i == GS_EXACT_LIMBS - 1)
                limb = (int64_t)((uint64_t)fx_digits_bits32(x.w, W, pos + 32) << 32 | (uint64_t)limb);
            out_total->limb[i] = limb;
        }
        if (t == 0) {
            out_total->count = (int64_t)n;
            out_total->nan = (x.flags & kFxNan) ? 1 : 0;
            out_total->pos_inf = (x.flags & kFxPosInf) ? 1 : 0;
            out_total->neg_inf = (x.flags & kFxNegInf) ? 1 : 0;
            out_total->sign_clear = (x.flags & kFxSignClear) ? 1 : 0;
            out_total->reserved[0] = out_total->reserved[1] = out_total->reserved[2] = 0;
        }
    }
};

/* The range pass's per-block values: the highest exponent field of a nonzero finite
 * element, and the lowest (subnormals as field 1); max_f 0 and min_f ~0u when there is none. */
struct ExactRange {
    uint32_t max_f, min_f;
};
struct OpExactRange {
    typedef ExactRange Acc;
    static __device__ __forceinline__ Acc identity() { return ExactRange{0u, ~0u}; }
    static __device__ __forceinline__ Acc combine(Acc a, Acc b)
    {
        return ExactRange{a.max_f > b.max_f ? a.max_f : b.max_f, a.min_f < b.min_f ? a.min_f : b.min_f};
    }
};

template <typename F, typename Bits> __device__ __forceinline__ void exact_range_add(ExactRange &r, Bits b)
{
    const uint32_t f = (uint32_t)((uint64_t)b >> F::kMant) & F::kExpMax;
    const bool nonzero = ((uint64_t)b & ((1ull << F::kSignBit) - 1u)) != 0;
    if (nonzero && f != F::kExpMax) {
        r.max_f = f > r.max_f ? f : r.max_f;
        const uint32_t g = f ? f : 1u;
        r.min_f = g < r.min_f ? g : r.min_f;
    }
}

/* The plan from the elements' range and the carry-in, by the range pass's last block (every
 * thread; barriers inside). */
template <typename T>
__device__ __forceinline__ void exact_scan_plan(ExactRange r, uint64_t n, const gs_exact_acc *carry, uint64_t ncarry,
                                                ExactScanPlan *plan)
{
    typedef typename ExactScanIn<T>::Fmt F;
    /* the carry-in's sum: per limb, its low halves and its high halves apart (no int64
     * overflows below 2^29 accumulators); then one thread carries them into 70 digits */
    __shared__ long long lo[GS_EXACT_LIMBS], hi[GS_EXACT_LIMBS], cnt[5];
    __shared__ uint32_t d[GS_EXACT_LIMBS + 2];
    __shared__ int s_anchor, s_words;
    __shared__ uint32_t s_flags;
    const int t = (int)threadIdx.x;
    for (int i = t; i < GS_EXACT_LIMBS + 5; i += blockDim.x) {
        long long a = 0, b = 0;
        for (uint64_t k = 0; k < ncarry; k++) {
            const int64_t *w = (const int64_t *)&carry[k];
            const int64_t x = w[i]; /* limbs, then count, nan, pos_inf, neg_inf, sign_clear */
            if (i < GS_EXACT_LIMBS) {
                a += (long long)(x & GS_EXACT_DIGIT_MASK);
                b += (long long)(x >> 32);
            } else {
                a = (long long)((unsigned long long)a + (unsigned long long)x);
            }
        }
        if (i < GS_EXACT_LIMBS) {
            lo[i] = a;
            hi[i] = b;
        } else {
            cnt[i - GS_EXACT_LIMBS] = a;
        }
    }
    __syncthreads();
    if (t == 0) {
        long long c = 0;
        bool cz = true;          /* the carry-in's value is zero */
        int low = 0, top = -100000; /* its lowest bit; |carry-in| < 2^top */
        for (int i = 0; i < GS_EXACT_LIMBS; i++) {
            const long long x = lo[i] + c;
            d[i] = (uint32_t)x;
            c = (x >> 32) + hi[i];
        }
        d[GS_EXACT_LIMBS] = (uint32_t)c;
        d[GS_EXACT_LIMBS + 1] = (uint32_t)((unsigned long long)c >> 32);
        const uint32_t ext = (d[GS_EXACT_LIMBS + 1] >> 31) ? ~0u : 0u;
        for (int i = 0; i < GS_EXACT_LIMBS + 2; i++) {
            if (d[i] && cz)
                low = 32 * i + __ffs((int)d[i]) - 1 + GS_EXACT_LOW_EXPONENT;
            cz = cz && !d[i];
            if (d[i] != ext)
                top = 32 * (i + 1) + GS_EXACT_LOW_EXPONENT + 1; /* |carry-in| < 2^top */
        }
        if (!cz && top < GS_EXACT_LOW_EXPONENT + 1) /* a negative one within 2^-1088 of 0 */
            top = GS_EXACT_LOW_EXPONENT + 1;
        /* the anchor: the lowest bit of any element or of the carry-in */
        const bool elems = r.min_f != ~0u;
        int a = elems ? fx_lsb_of_field<F>(r.min_f) : cz ? 0 : low;
        if (elems && !cz && low < a)
            a = low;
        /* |prefix| < 2^top + n 2^(emax + 1) <= 2^(hb + 1), plus a sign bit */
        int L = 0;
        while (L < 64 && (1ull << L) < n)
            L++;
        const int eb = elems ? (int)(r.max_f ? r.max_f : 1u) - F::kBias + 1 + L : -100000;
        int hb = top > eb ? top : eb;
        if (hb < a)
            hb = a;
        const int bits = hb + 2 - a;
        const int words = (bits + 31) / 32;
        s_anchor = a;
        s_words = words <= GS_EXACT_SCAN_NARROW ? GS_EXACT_SCAN_NARROW
                  : words <= GS_EXACT_SCAN_MID  ? GS_EXACT_SCAN_MID
                                                : GS_EXACT_SCAN_WIDE;
        s_flags = (cnt[0] > 0 ? kFxNonempty : 0u) | (cnt[1] > 0 ? kFxNan : 0u) | (cnt[2] > 0 ? kFxPosInf : 0u) |
                  (cnt[3] > 0 ? kFxNegInf : 0u) | (cnt[4] > 0 ? kFxSignClear : 0u);
    }
    __syncthreads();
    /* the carry-in at the anchor: word k is bits [32 k + a + 1088, + 32) of the digits */
    for (int k = t; k < GS_EXACT_SCAN_WIDE; k += blockDim.x)
        plan->carry[k] =
            k < s_words ? fx_digits_bits32(d, GS_EXACT_LIMBS + 2, 32 * k + s_anchor - GS_EXACT_LOW_EXPONENT) : 0u;
    if (t == 0) {
        plan->anchor = s_anchor;
        plan->words = (uint32_t)s_words;
        plan->cflags = s_flags;
    }
}

/* Launch 1: the range of in[0, n) into per-block partials, then the plan by the last block. */
template <typename Policy, typename T>
__device__ __forceinline__ void exact_scan_range_kernel(const T *__restrict__ in, uint64_t n,
                                                        const gs_exact_acc *__restrict__ carry, uint64_t ncarry,
                                                        unsigned char *workspace)
{
    typedef typename ExactScanIn<T>::Bits Bits;
    typedef typename ExactScanIn<T>::Fmt F;
    const int kPer = 16 / (int)sizeof(T);
    ExactRange r = OpExactRange::identity();
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x, first = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t done = 0;
    if (((uintptr_t)in & 15u) == 0) {
        const uint4 *v = (const uint4 *)in;
        const uint64_t nv = n / kPer;
        for (uint64_t i = first; i < nv; i += stride) {
            const uint4 x = Policy::load16(v + i);
            Bits b[16 / sizeof(Bits)];
            memcpy(b, &x, sizeof x);
#pragma unroll
            for (int k = 0; k < kPer; k++)
                exact_range_add<F>(r, b[k]);
        }
        done = nv * kPer;
    }
    const Bits *s = (const Bits *)in;
    for (uint64_t i = done + first; i < n; i += stride)
        exact_range_add<F>(r, s[i]);
    __shared__ typename Policy::template Scratch<ExactRange> scratch;
    __shared__ ExactRange whole;
    r = Policy::template block_reduce<OpExactRange>(r, scratch);
    ExactRange *partials = (ExactRange *)(workspace + GS_EXACT_SCAN_PARTIALS_OFFSET);
    unsigned int *counter = (unsigned int *)(workspace + GS_TICKET_OFFSET);
    ExactScanPlan *plan = (ExactScanPlan *)(workspace + GS_EXACT_SCAN_PLAN_OFFSET);
    if (gridDim.x > 1) {
        if (threadIdx.x == 0)
            partials[blockIdx.x] = r;
        if (!Policy::last_arrival(counter, gridDim.x))
            return;
        ExactRange a = OpExactRange::identity();
        for (unsigned int b = threadIdx.x; b < gridDim.x; b += blockDim.x)
            a = OpExactRange::combine(a, gs_load_volatile(&partials[b]));
        __syncthreads(); /* scratch's earlier use is over */
        r = Policy::template block_reduce<OpExactRange>(a, scratch);
    }
    if (threadIdx.x == 0) {
        whole = r;
        if (gridDim.x > 1)
            gs_reset_counter(counter);
    }
    __syncthreads();
    exact_scan_plan<T>(whole, n, carry, ncarry, plan);
}

/* Launch 2, one per W: returns unless the plan chose W. n == 0 (a total asked for): block 0
 * writes the empty accumulator. */
template <typename Policy, typename T, typename Out, int W>
__device__ __forceinline__ void exact_scan_kernel(const T *in, uint64_t n, Out *out, unsigned char *workspace,
                                                  unsigned int flags, gs_exact_acc *total)
{
    const ExactScanPlan *plan = (const ExactScanPlan *)(workspace + GS_EXACT_SCAN_PLAN_OFFSET);
    if (plan->words != (uint32_t)W)
        return;
    ExactScanEdge<T, Out, W> edge;
    edge.anchor = plan->anchor;
#pragma unroll
    for (int i = 0; i < W; i++)
        edge.origin.w[i] = plan->carry[i];
    edge.origin.flags = plan->cflags;
    edge.out_total = total;
    if (n == 0) {
        if (blockIdx.x == 0)
            edge.total(fx_zero<W>(), 0);
        return;
    }
    scan_kernel<Policy, OpExactScan<T, Out, W>, ExactScanEdge<T, Out, W> >(in, n, out, workspace, flags, edge);
}

} // namespace gs
