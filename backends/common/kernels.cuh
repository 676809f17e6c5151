/* The extern "C" kernels of a backend, gs_reduce_<dtype>_<op>, from kernel_list.h.
 * Included by backends/<name>/kernels.cu after it defines the type GS_POLICY. */
#pragma once

#include "reduce.cuh"

#define GS_TYPE_i32 int32_t
#define GS_TYPE_u32 uint32_t
#define GS_TYPE_i64 int64_t
#define GS_TYPE_u64 uint64_t
#define GS_TYPE_f32 float
#define GS_TYPE_f64 double

#define GS_OP_sum gs::OpSum
#define GS_OP_min gs::OpMin
#define GS_OP_max gs::OpMax

#define GS_DEFINE_KERNEL(dt, op)                                                                      \
    extern "C" __global__ void __launch_bounds__(GS_POLICY::kBlock)                                   \
        gs_reduce_##dt##_##op(const GS_TYPE_##dt *__restrict__ in, uint64_t n,                        \
                              GS_OP_##op<GS_TYPE_##dt>::Out *__restrict__ out, unsigned char *workspace) \
    {                                                                                                 \
        gs::reduce_kernel<GS_POLICY, GS_OP_##op<GS_TYPE_##dt> >(in, n, out, workspace);               \
    }

GS_KERNELS(GS_DEFINE_KERNEL)
