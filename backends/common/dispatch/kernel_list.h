/* The kernels every backend provides, one X(dtype, op, out) per supported triple; the
 * kernel is named gs_reduce_<dtype>_<op>_<out>. Read by the device code (to instantiate
 * them) and by the host code (to look them up and to answer query_reduce), so the two
 * never disagree. The default output of gs_reduce is the input type, or i64 for
 * ARGMIN/ARGMAX; the rest are gs_reduce_ex's wider outputs. */
#ifndef GS_KERNEL_LIST_H
#define GS_KERNEL_LIST_H

#define GS_KERNELS_ARITH(X, t) X(t, sum, t) X(t, prod, t) X(t, min, t) X(t, max, t) X(t, argmin, i64) X(t, argmax, i64)
#define GS_KERNELS_INT(X, t) GS_KERNELS_ARITH(X, t) X(t, and, t) X(t, or, t) X(t, xor, t)

/* Every dtype x op with its default output. */
#define GS_KERNELS_DEFAULT(X)                                                                  \
    GS_KERNELS_INT(X, i8) GS_KERNELS_INT(X, u8) GS_KERNELS_INT(X, i32) GS_KERNELS_INT(X, u32)  \
    GS_KERNELS_INT(X, i64) GS_KERNELS_INT(X, u64)                                              \
    GS_KERNELS_ARITH(X, f32) GS_KERNELS_ARITH(X, f64) GS_KERNELS_ARITH(X, f16)                 \
    GS_KERNELS_ARITH(X, bf16)

#define GS_KERNELS(X)                                                                          \
    GS_KERNELS_DEFAULT(X)                                                                      \
    /* wider outputs (gs_reduce_ex): integer sums/products into 64 bits as torch.sum does, */  \
    /* float32 accumulated and written as float64, half types into float32 */                 \
    X(i8, sum, i64) X(i8, prod, i64) X(u8, sum, u64) X(u8, prod, u64)                          \
    X(i32, sum, i64) X(i32, prod, i64) X(u32, sum, u64) X(u32, prod, u64)                      \
    X(f32, sum, f64) X(f32, prod, f64)                                                         \
    X(f16, sum, f32) X(f16, prod, f32) X(f16, min, f32) X(f16, max, f32)                       \
    X(bf16, sum, f32) X(bf16, prod, f32) X(bf16, min, f32) X(bf16, max, f32)

/* gs_reduce's kernels come in three modules (backends/meson.build), by input type:
 * float32's (F32, loaded when a backend is opened), the other float types' (FLOATS) and the
 * integer types' (INTEGERS), each loaded at the first call of one of its kernels. */
#define GS_REDUCE_MODULE_i8 INTEGERS
#define GS_REDUCE_MODULE_u8 INTEGERS
#define GS_REDUCE_MODULE_i32 INTEGERS
#define GS_REDUCE_MODULE_u32 INTEGERS
#define GS_REDUCE_MODULE_i64 INTEGERS
#define GS_REDUCE_MODULE_u64 INTEGERS
#define GS_REDUCE_MODULE_f32 F32
#define GS_REDUCE_MODULE_f64 FLOATS
#define GS_REDUCE_MODULE_f16 FLOATS
#define GS_REDUCE_MODULE_bf16 FLOATS

/* The segmented reduction's kernels, gs_segreduce_<dtype>_<op>_<out>: every dtype x op,
 * default outputs (an ARGMIN/ARGMAX result is the index within its segment). */
#define GS_SEG_KERNELS(X) GS_KERNELS_DEFAULT(X)

/* The exact sums' kernels (GS_REDUCE_EXACT, agent/exact.cuh), gs_exact_<dtype>: one per input
 * type, the output type an argument; and the (input, output) pairs they round into. */
#define GS_EXACT_KERNELS(X) X(f16) X(bf16) X(f32) X(f64)
/* The exact segmented sums' kernels (GS_SEGMENTED_EXACT, agent/seg_exact.cuh),
 * gs_segexact_<dtype>: each segment's sum rounded to dtype. Built with the exact sums. */
#define GS_SEGEXACT_KERNELS(X) X(f16) X(bf16) X(f32) X(f64)
#define GS_EXACT_OUTPUTS(X) X(f16, f16) X(f16, f32) X(bf16, bf16) X(bf16, f32) X(f32, f32) X(f32, f64) X(f64, f64)
/* Elements per block at most, so a block's shared limbs stay below 2^61 (agent/exact.cuh): the
 * host launches at least n / GS_EXACT_BLOCK_ELEMENTS blocks. */
#define GS_EXACT_BLOCK_ELEMENTS (1ull << 28)

#endif
