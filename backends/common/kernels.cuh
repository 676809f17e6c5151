/* The extern "C" kernels of a backend, gs_reduce_<dtype>_<op>_<out>, from kernel_list.h.
 * Included by backends/<name>/kernels.cu after it defines the type GS_POLICY. */
#pragma once

#include "segmented.cuh"

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

#define GS_DEFINE_KERNEL(dt, op, o)                                                                    \
    extern "C" __global__ void __launch_bounds__(GS_POLICY::kBlock)                                    \
        gs_reduce_##dt##_##op##_##o(const GS_TYPE_##dt *__restrict__ in, uint64_t n,                   \
                                    GS_TYPE_##o *__restrict__ out, unsigned char *workspace)           \
    {                                                                                                  \
        typedef GS_OP_##op<GS_TYPE_##dt, GS_TYPE_##o> Op;                                              \
        static_assert(sizeof(typename Op::Acc) <= GS_MAX_PARTIAL_BYTES, "partial slot too small");     \
        gs::reduce_kernel<GS_POLICY, Op>(in, n, (typename Op::OutT *)out, workspace);                  \
    }

GS_KERNELS(GS_DEFINE_KERNEL)

#define GS_DEFINE_SEG_KERNEL(dt, op, o)                                                                \
    extern "C" __global__ void __launch_bounds__(GS_POLICY::kBlock)                                    \
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

GS_SEG_KERNELS(GS_DEFINE_SEG_KERNEL)
