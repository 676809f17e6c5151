/* Every backend's kernels, one X(dtype, op, out) per triple, named gs_reduce_<dtype>_<op>_<out>.
 * The device code instantiates this list and the host code looks kernels up in it, so the two
 * agree. The default output is the input type, i64 for ARGMIN/ARGMAX. */
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
    /* gs_reduce_ex's wider outputs: integers into 64 bits (as torch.sum), floats wider */     \
    X(i8, sum, i64) X(i8, prod, i64) X(u8, sum, u64) X(u8, prod, u64)                          \
    X(i32, sum, i64) X(i32, prod, i64) X(u32, sum, u64) X(u32, prod, u64)                      \
    X(f32, sum, f64) X(f32, prod, f64)                                                         \
    X(f16, sum, f32) X(f16, prod, f32) X(f16, min, f32) X(f16, max, f32)                       \
    X(bf16, sum, f32) X(bf16, prod, f32) X(bf16, min, f32) X(bf16, max, f32)

/* gs_reduce's module per input type (backends/meson.build): F32 is loaded when a backend is
 * opened, FLOATS and INTEGERS at their first call. */
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

/* gs_segreduce_<dtype>_<op>_<out>: default outputs (ARGMIN/ARGMAX: index in the segment). */
#define GS_SEG_KERNELS(X) GS_KERNELS_DEFAULT(X)

/* gs_scan_<dtype>_<op>_<out> (agent/scan.cuh): SUM, PROD, MIN, MAX for every type, the bitwise
 * ops for integers, and gs_reduce_ex's wider outputs. */
#define GS_SCAN_ARITH(X, t) X(t, sum, t) X(t, prod, t) X(t, min, t) X(t, max, t)
#define GS_SCAN_INT(X, t) GS_SCAN_ARITH(X, t) X(t, and, t) X(t, or, t) X(t, xor, t)
#define GS_SCAN_KERNELS(X)                                                                     \
    GS_SCAN_INT(X, i8) GS_SCAN_INT(X, u8) GS_SCAN_INT(X, i32) GS_SCAN_INT(X, u32)              \
    GS_SCAN_INT(X, i64) GS_SCAN_INT(X, u64)                                                    \
    X(i8, sum, i64) X(i8, prod, i64) X(u8, sum, u64) X(u8, prod, u64)                          \
    X(i32, sum, i64) X(i32, prod, i64) X(u32, sum, u64) X(u32, prod, u64)                      \
    GS_SCAN_ARITH(X, f32) GS_SCAN_ARITH(X, f64) GS_SCAN_ARITH(X, f16) GS_SCAN_ARITH(X, bf16)   \
    X(f32, sum, f64) X(f32, prod, f64)                                                         \
    X(f16, sum, f32) X(f16, prod, f32) X(f16, min, f32) X(f16, max, f32)                       \
    X(bf16, sum, f32) X(bf16, prod, f32) X(bf16, min, f32) X(bf16, max, f32)
/* gs_scan's two modules, by input type */
#define GS_SCAN_MODULE_i8 SCAN_INT
#define GS_SCAN_MODULE_u8 SCAN_INT
#define GS_SCAN_MODULE_i32 SCAN_INT
#define GS_SCAN_MODULE_u32 SCAN_INT
#define GS_SCAN_MODULE_i64 SCAN_INT
#define GS_SCAN_MODULE_u64 SCAN_INT
#define GS_SCAN_MODULE_f32 SCAN_FLOAT
#define GS_SCAN_MODULE_f64 SCAN_FLOAT
#define GS_SCAN_MODULE_f16 SCAN_FLOAT
#define GS_SCAN_MODULE_bf16 SCAN_FLOAT

/* gs_exact_<dtype> (agent/exact.cuh), the output type an argument; GS_EXACT_OUTPUTS: the
 * (input, output) pairs. gs_segexact_<dtype> (agent/seg_exact.cuh): each segment's sum rounded
 * to dtype, built with the exact sums. */
#define GS_EXACT_KERNELS(X) X(f16) X(bf16) X(f32) X(f64)
#define GS_SEGEXACT_KERNELS(X) X(f16) X(bf16) X(f32) X(f64)
/* gs_exact_round_device's kernel, the exact family's last entry (agent/exact_round.cuh). */
#define GS_EXACT_ROUND_KERNEL gs_exact_round_acc
/* ... which rounds this many accumulators per block and round of its grid-stride loop */
#define GS_EXACT_ROUND_PER_BLOCK 8
#define GS_EXACT_OUTPUTS(X) X(f16, f16) X(f16, f32) X(bf16, bf16) X(bf16, f32) X(f32, f32) X(f32, f64) X(f64, f64)
/* gs_scan with GS_SCAN_EXACT (agent/scan_exact.cuh), module scan_exact: first
 * gs_scan_exact_range_<dtype> per GS_EXACT_KERNELS, then gs_scan_exact_<dtype>_<out>_w<W> per
 * GS_EXACT_OUTPUTS for each width W of GS_SCAN_EXACT_WIDTHS, in that order. */
#define GS_SCAN_EXACT_WIDTHS(X) X(4) X(10) X(72)

/* The host launches at least n / GS_EXACT_BLOCK_ELEMENTS exact-sum blocks, so a block's shared
 * limbs stay below 2^61 (agent/exact.cuh). */
#define GS_EXACT_BLOCK_ELEMENTS (1ull << 28)

#endif
