/* A backend's extern "C" kernels, instantiated from dispatch/kernel_list.h; included by
 * backends/<name>/kernels.cu after it defines the type GS_POLICY.
 *
 * Exactly one module macro is defined; each module is a fatbin of its own (backends/meson.build,
 * loaded by modules.c): GS_BUILD_REDUCE (gs_reduce over float32, loaded when the backend is
 * opened), GS_BUILD_REDUCE_FLOAT and GS_BUILD_REDUCE_INT (the other float and the integer
 * types), GS_BUILD_SEGMENTED, GS_BUILD_EXACT, GS_BUILD_SCAN_FLOAT and GS_BUILD_SCAN_INT (gs_scan
 * by input type), GS_BUILD_SCAN_EXACT (GS_SCAN_EXACT), each loaded at its first call. */
#pragma once

#if defined(GS_BUILD_REDUCE) + defined(GS_BUILD_REDUCE_FLOAT) + defined(GS_BUILD_REDUCE_INT) +                     \
        defined(GS_BUILD_SEGMENTED) + defined(GS_BUILD_EXACT) + defined(GS_BUILD_SCAN_FLOAT) +                     \
        defined(GS_BUILD_SCAN_INT) + defined(GS_BUILD_SCAN_EXACT) !=                                              \
    1
#  error "define one of GS_BUILD_REDUCE, _REDUCE_FLOAT, _REDUCE_INT, _SEGMENTED, _EXACT, _SCAN_FLOAT, _SCAN_INT, _SCAN_EXACT"
#endif
#include "agent/reduce.cuh"
#include "dispatch/kernel_list.h"
#include "tuning.h"
#include "workspace.h"
#ifdef GS_BUILD_EXACT
#  include "agent/exact_round.cuh"
#  include "agent/seg_exact.cuh"
#endif
#ifdef GS_BUILD_SEGMENTED
#  include "agent/segmented.cuh"
#endif
#if defined(GS_BUILD_SCAN_FLOAT) || defined(GS_BUILD_SCAN_INT)
#  include "agent/scan.cuh"
#endif
#ifdef GS_BUILD_SCAN_EXACT
#  include "agent/scan_exact.cuh"
#endif

#define GS_TYPE_i8 int8_t
#define GS_TYPE_u8 uint8_t
#define GS_TYPE_i32 int32_t
#define GS_TYPE_u32 uint32_t
#define GS_TYPE_i64 int64_t
#define GS_TYPE_u64 uint64_t
#define GS_TYPE_f32 float
#define GS_TYPE_f64 double
#define GS_TYPE_f16 __half
#define GS_TYPE_bf16 __nv_bfloat16

#define GS_OP_sum gs::OpSum
#define GS_OP_prod gs::OpProd
#define GS_OP_min gs::OpMin
#define GS_OP_max gs::OpMax
#define GS_OP_argmin gs::OpArgMin
#define GS_OP_argmax gs::OpArgMax
#define GS_OP_and gs::OpAnd
#define GS_OP_or gs::OpOr
#define GS_OP_xor gs::OpXor

/* Threads one multiprocessor of the compiled architecture holds (the CUDA programming guide's
 * table): a launch bound beyond it is ignored with a warning. The host pass ignores bounds. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#  define GS_ARCH_SM_THREADS 1024 /* 7.5 */
#elif defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 800 || __CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000 || \
                                 __CUDA_ARCH__ == 1030)
#  define GS_ARCH_SM_THREADS 2048
#elif defined(__CUDA_ARCH__)
#  define GS_ARCH_SM_THREADS 1536 /* 8.6 .. 8.9, 11.0, 12.x */
#else
#  define GS_ARCH_SM_THREADS 2048
#endif

/* Minimum resident blocks per multiprocessor for op's gs_reduce kernel (__launch_bounds__; 0
 * leaves it to ptxas): GS_REDUCE_MIN_BLOCKS, at most what fits, for SUM and PROD; none for the
 * others, whose keys and NaN rules need more registers than such a bound leaves. */
template <typename Op> struct GsBounded { static const bool value = false; };
template <typename T, typename Out> struct GsBounded<gs::OpSum<T, Out> > { static const bool value = true; };
template <typename T, typename Out> struct GsBounded<gs::OpProd<T, Out> > { static const bool value = true; };
template <typename Op> struct GsMinBlocks {
    static const int kFit = GS_ARCH_SM_THREADS / GS_POLICY::kBlock;
    static const int kWant = GsBounded<Op>::value ? GS_REDUCE_MIN_BLOCKS : 0;
    static const int value = kWant < kFit ? kWant : kFit;
};

#define GS_DEFINE_KERNEL(dt, op, o)                                                                    \
    typedef GS_OP_##op<GS_TYPE_##dt, GS_TYPE_##o> gs_op_##dt##_##op##_##o;                             \
    extern "C" __global__ void __launch_bounds__(GS_POLICY::kBlock,                                    \
                                                 GsMinBlocks<gs_op_##dt##_##op##_##o>::value)          \
        gs_reduce_##dt##_##op##_##o(const GS_TYPE_##dt *__restrict__ in, uint64_t n,                   \
                                    GS_TYPE_##o *__restrict__ out, unsigned char *workspace)           \
    {                                                                                                  \
        typedef gs_op_##dt##_##op##_##o Op;                                                            \
        static_assert(sizeof(typename Op::Acc) <= GS_MAX_PARTIAL_BYTES, "partial slot too small");     \
        gs::reduce_kernel<GS_POLICY, Op>(in, n, (typename Op::OutT *)out, workspace);                  \
    }

/* The gs_reduce kernels of this module; kernel_list.h's GS_REDUCE_MODULE_<dtype> says which. */
#if defined(GS_BUILD_REDUCE) || defined(GS_BUILD_REDUCE_FLOAT) || defined(GS_BUILD_REDUCE_INT)
#  define GS_REDUCE_IN_F32(dt, op, o)
#  define GS_REDUCE_IN_FLOATS(dt, op, o)
#  define GS_REDUCE_IN_INTEGERS(dt, op, o)
#  if defined(GS_BUILD_REDUCE)
#    undef GS_REDUCE_IN_F32
#    define GS_REDUCE_IN_F32(dt, op, o) GS_DEFINE_KERNEL(dt, op, o)
#  elif defined(GS_BUILD_REDUCE_FLOAT)
#    undef GS_REDUCE_IN_FLOATS
#    define GS_REDUCE_IN_FLOATS(dt, op, o) GS_DEFINE_KERNEL(dt, op, o)
#  else
#    undef GS_REDUCE_IN_INTEGERS
#    define GS_REDUCE_IN_INTEGERS(dt, op, o) GS_DEFINE_KERNEL(dt, op, o)
#  endif
#  define GS_REDUCE_PICK2(module, dt, op, o) GS_REDUCE_IN_##module(dt, op, o)
#  define GS_REDUCE_PICK1(module, dt, op, o) GS_REDUCE_PICK2(module, dt, op, o)
#  define GS_REDUCE_PICK(dt, op, o) GS_REDUCE_PICK1(GS_REDUCE_MODULE_##dt, dt, op, o)
GS_KERNELS(GS_REDUCE_PICK)
#endif

/* The segmented kernels' minimum resident blocks, at most what fits: GS_SEG_MIN_BLOCKS_ARG
 * for ARGMIN/ARGMAX, GS_SEG_MIN_BLOCKS for the rest (the exact sums too). */
template <typename Op> struct GsSegMinBlocks {
    static const int kFit = GS_ARCH_SM_THREADS / GS_POLICY::kBlock;
    static const int kWant = gs::IsArg<Op>::value ? GS_SEG_MIN_BLOCKS_ARG : GS_SEG_MIN_BLOCKS;
    static const int value = kWant < kFit ? kWant : kFit;
};

#define GS_DEFINE_SEG_KERNEL(dt, op, o)                                                                \
    extern "C" __global__ void __launch_bounds__(GS_POLICY::kBlock,                                    \
                                                 GsSegMinBlocks<GS_OP_##op<GS_TYPE_##dt, GS_TYPE_##o> >::value) \
        gs_segreduce_##dt##_##op##_##o(const GS_TYPE_##dt *__restrict__ in, uint64_t n,                \
                                       const int64_t *__restrict__ offsets, uint64_t num_segments,     \
                                       GS_TYPE_##o *__restrict__ out, unsigned char *workspace,        \
                                       uint64_t chunk, uint32_t nchunks)                               \
    {                                                                                                  \
        typedef GS_OP_##op<GS_TYPE_##dt, GS_TYPE_##o> Op;                                              \
        static_assert(gs::SegSlot<typename Op::Acc>::kBytes ==                                         \
                          GS_SEG_SLOT_BYTES(gs::IsArg<Op>::value),                             \
                      "slot size rule differs from the host's");                                       \
        gs::segmented_kernel<GS_POLICY, Op>(in, n, offsets, num_segments, (typename Op::OutT *)out,    \
                                            workspace, chunk, nchunks);                                \
    }

#ifdef GS_BUILD_SEGMENTED
GS_SEG_KERNELS(GS_DEFINE_SEG_KERNEL)
#endif

#ifdef GS_BUILD_EXACT
/* The exact sums' kernels, one per input type; mode 0 writes the rounded sum to out_dtype,
 * 1 the gs_exact_acc. */
template <typename T> struct GsExactMinBlocks {
    static const int kFit = GS_ARCH_SM_THREADS / GS_POLICY::kBlock;
    static const int value = GS_EXACT_MIN_BLOCKS < kFit ? GS_EXACT_MIN_BLOCKS : kFit;
};
#define GS_DEFINE_EXACT_KERNEL(dt)                                                                     \
    extern "C" __global__ void __launch_bounds__(GS_POLICY::kBlock, GsExactMinBlocks<GS_TYPE_##dt>::value) \
        gs_exact_##dt(const GS_TYPE_##dt *__restrict__ in, uint64_t n, void *__restrict__ out,         \
                      unsigned char *workspace, int out_dtype, unsigned int mode)                      \
    {                                                                                                  \
        gs::exact_kernel<GS_POLICY, GS_TYPE_##dt>(in, n, out, workspace, out_dtype, mode);             \
    }

GS_EXACT_KERNELS(GS_DEFINE_EXACT_KERNEL)

/* The exact segmented sums: the segmented reduction with OpCheckedSum (agent/seg_exact.cuh). */
#define GS_DEFINE_SEGEXACT_KERNEL(dt)                                                                  \
    extern "C" __global__ void __launch_bounds__(GS_POLICY::kBlock,                                    \
                                                 GsSegMinBlocks<gs::OpCheckedSum<GS_TYPE_##dt> >::value) \
        gs_segexact_##dt(const GS_TYPE_##dt *__restrict__ in, uint64_t n,                              \
                         const int64_t *__restrict__ offsets, uint64_t num_segments,                   \
                         GS_TYPE_##dt *__restrict__ out, unsigned char *workspace, uint64_t chunk,     \
                         uint32_t nchunks)                                                             \
    {                                                                                                  \
        typedef gs::OpCheckedSum<GS_TYPE_##dt> Op;                                                       \
        static_assert(gs::SegSlot<typename Op::Acc>::kBytes ==                                         \
                          GS_SEG_SLOT_BYTES(sizeof(GS_TYPE_##dt) == 8),                                \
                      "slot size rule differs from the host's");                                       \
        gs::segmented_kernel<GS_POLICY, Op, gs::SegExactWrite<GS_POLICY, GS_TYPE_##dt> >(              \
            in, n, offsets, num_segments, out, workspace, chunk, nchunks);                             \
    }

GS_SEGEXACT_KERNELS(GS_DEFINE_SEGEXACT_KERNEL)

/* gs_exact_round_device's kernel (agent/exact_round.cuh): count accumulators rounded to
 * out_dtype, GS_EXACT_ROUND_PER_BLOCK a block of GS_POLICY::kBlock. */
extern "C" __global__ void __launch_bounds__(GS_POLICY::kBlock)
    GS_EXACT_ROUND_KERNEL(const gs_exact_acc *__restrict__ acc, uint64_t count, void *__restrict__ out, int out_dtype)
{
    gs::exact_round_kernel<GS_POLICY::kBlock>(acc, count, out, out_dtype);
}
#endif

#if defined(GS_BUILD_SCAN_FLOAT) || defined(GS_BUILD_SCAN_INT)
/* gs_scan's kernels (agent/scan.cuh) of this module; kernel_list.h's GS_SCAN_MODULE_<dtype>
 * says which. Blocks of GS_SCAN_THREADS, part of the scan's order; flags as the backend
 * args' (GS_BACKEND_SCAN_EXCLUSIVE). */
/* The scan kernels' minimum resident blocks, at most what fits: by the carried value's size. */
template <typename Op> struct GsScanMinBlocks {
    static const int kFit = GS_ARCH_SM_THREADS / (int)GS_SCAN_THREADS;
    static const int kWant = sizeof(typename Op::Acc) == 4 ? GS_SCAN_MIN_BLOCKS_NARROW : GS_SCAN_MIN_BLOCKS_WIDE;
    static const int value = kWant < kFit ? kWant : kFit;
};
#  define GS_DEFINE_SCAN_KERNEL(dt, op, o)                                                             \
    extern "C" __global__ void __launch_bounds__(GS_SCAN_THREADS,                                      \
                                                 GsScanMinBlocks<GS_OP_##op<GS_TYPE_##dt, GS_TYPE_##o> >::value) \
        gs_scan_##dt##_##op##_##o(const GS_TYPE_##dt *in, uint64_t n, GS_TYPE_##o *out,                 \
                                  unsigned char *workspace, unsigned int flags)                        \
    {                                                                                                  \
        typedef GS_OP_##op<GS_TYPE_##dt, GS_TYPE_##o> Op;                                              \
        static_assert(sizeof(typename Op::Acc) == GS_SCAN_VALUE_BYTES(sizeof(GS_TYPE_##o)),            \
                      "the host sizes the ring by GS_SCAN_VALUE_BYTES");                               \
        gs::scan_kernel<GS_POLICY, Op>(in, n, (typename Op::OutT *)out, workspace, flags);             \
    }
#  define GS_SCAN_IN_SCAN_FLOAT(dt, op, o)
#  define GS_SCAN_IN_SCAN_INT(dt, op, o)
#  if defined(GS_BUILD_SCAN_FLOAT)
#    undef GS_SCAN_IN_SCAN_FLOAT
#    define GS_SCAN_IN_SCAN_FLOAT(dt, op, o) GS_DEFINE_SCAN_KERNEL(dt, op, o)
#  else
#    undef GS_SCAN_IN_SCAN_INT
#    define GS_SCAN_IN_SCAN_INT(dt, op, o) GS_DEFINE_SCAN_KERNEL(dt, op, o)
#  endif
#  define GS_SCAN_PICK2(module, dt, op, o) GS_SCAN_IN_##module(dt, op, o)
#  define GS_SCAN_PICK1(module, dt, op, o) GS_SCAN_PICK2(module, dt, op, o)
#  define GS_SCAN_PICK(dt, op, o) GS_SCAN_PICK1(GS_SCAN_MODULE_##dt, dt, op, o)
GS_SCAN_KERNELS(GS_SCAN_PICK)
#endif
#ifdef GS_BUILD_SCAN_EXACT
/* The exact scans (agent/scan_exact.cuh): the range pass per input type, then the scan per
 * (input, output) pair and width; the host queues the range, then one scan per width. */
#  define GS_DEFINE_SCAN_EXACT_RANGE(dt)                                                                \
    extern "C" __global__ void __launch_bounds__(GS_POLICY::kBlock)                                    \
        gs_scan_exact_range_##dt(const GS_TYPE_##dt *__restrict__ in, uint64_t n,                      \
                                 const gs_exact_acc *__restrict__ carry, uint64_t ncarry,              \
                                 unsigned char *workspace)                                             \
    {                                                                                                  \
        gs::exact_scan_range_kernel<GS_POLICY, GS_TYPE_##dt>(in, n, carry, ncarry, workspace);         \
    }
GS_EXACT_KERNELS(GS_DEFINE_SCAN_EXACT_RANGE)
/* The exact scans' minimum resident blocks, at most what fits: the 4-word kernels' alone. */
template <int W> struct GsScanExactMinBlocks {
    static const int kFit = GS_ARCH_SM_THREADS / (int)GS_SCAN_THREADS;
    static const int kWant = W == GS_EXACT_SCAN_NARROW ? GS_SCAN_EXACT_MIN_BLOCKS_NARROW : 0;
    static const int value = kWant < kFit ? kWant : kFit;
};
#  define GS_DEFINE_SCAN_EXACT_W(dt, o, w)                                                              \
    extern "C" __global__ void __launch_bounds__(                                                      \
        (w) == GS_EXACT_SCAN_WIDE ? GS_EXACT_SCAN_WIDE_THREADS : GS_SCAN_THREADS,                      \
        GsScanExactMinBlocks<w>::value)                                                                \
        gs_scan_exact_##dt##_##o##_w##w(const GS_TYPE_##dt *in, uint64_t n, GS_TYPE_##o *out,           \
                                        unsigned char *workspace, unsigned int flags,                  \
                                        gs_exact_acc *total)                                           \
    {                                                                                                  \
        static_assert(sizeof(gs::Fx<w>) == GS_EXACT_SCAN_VALUE_BYTES(w), "the host sizes the ring");    \
        gs::exact_scan_kernel<GS_POLICY, GS_TYPE_##dt, GS_TYPE_##o, w>(in, n, out, workspace, flags,     \
                                                                      total);                          \
    }
#  define GS_DEFINE_SCAN_EXACT_4(dt, o) GS_DEFINE_SCAN_EXACT_W(dt, o, 4)
#  define GS_DEFINE_SCAN_EXACT_10(dt, o) GS_DEFINE_SCAN_EXACT_W(dt, o, 10)
#  define GS_DEFINE_SCAN_EXACT_72(dt, o) GS_DEFINE_SCAN_EXACT_W(dt, o, 72)
#  define GS_DEFINE_SCAN_EXACT_WIDTH(w) GS_EXACT_OUTPUTS(GS_DEFINE_SCAN_EXACT_##w)
GS_SCAN_EXACT_WIDTHS(GS_DEFINE_SCAN_EXACT_WIDTH)
static_assert(GS_EXACT_SCAN_NARROW == 4 && GS_EXACT_SCAN_MID == 10 && GS_EXACT_SCAN_WIDE == 72,
              "kernel_list.h's GS_SCAN_EXACT_WIDTHS are workspace.h's widths");
#endif
