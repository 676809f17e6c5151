/*
 * gridsync backend plugin ABI 1.2: 1.1 (gridsync_backend_v1_1.h) with exact sums
 * (GS_REDUCE_EXACT, GS_SEGMENTED_EXACT, docs/semantics.md §12): a `flags` member appended
 * to the reduce args and to the segmented args, and an optional query_reduce_flags
 * appended to the ops. Only what 1.2 adds is written here; the rest is 1.1's member
 * lists. Frozen once released, as the older ones are
 * (docs/ABI-policy.md).
 *
 * A core reads flags' support from query_reduce_flags only: a 1.1 backend (whose args
 * end before `flags`) never sees an exact request, it gets GS_ERROR_UNSUPPORTED from
 * the core. Like the others, this header needs cuda.h (CUDA 12.0 or newer).
 */
#ifndef GRIDSYNC_BACKEND_V1_2_H
#define GRIDSYNC_BACKEND_V1_2_H

#include "gridsync_backend_v1_1.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_BACKEND_ABI_VERSION_V1_2 (((uint32_t)1 << 16) | 2u)
#define GS_BACKEND_ENTRY_V1_2_NAME GS_BACKEND_ENTRY_V1_1_NAME
/* sizeof each struct on LP64 (x86_64, aarch64) for 1.2. */
#define GS_BACKEND_HOST_V1_2_SIZE GS_BACKEND_HOST_V1_1_SIZE
#define GS_BACKEND_DEVICE_V1_2_SIZE GS_BACKEND_DEVICE_V1_1_SIZE
#define GS_BACKEND_REDUCE_ARGS_V1_2_SIZE 72
#define GS_BACKEND_OPS_V1_2_SIZE 72
#define GS_BACKEND_SEGMENTED_ARGS_V1_2_SIZE 88

#define GS_LOG_DEBUG_V1_2 GS_LOG_DEBUG_V1_1
#define GS_LOG_ERROR_V1_2 GS_LOG_ERROR_V1_1

/* The reduce args' flags: the public GS_REDUCE_EXACT* values (gridsync.h). */
#define GS_BACKEND_REDUCE_EXACT 1u             /* out: the correctly rounded sum */
#define GS_BACKEND_REDUCE_EXACT_ACCUMULATOR 2u /* out: a gs_exact_acc */
/* The segmented args' flags (GS_SEGMENTED_EXACT): each segment's correctly rounded sum.
 * query_reduce_flags answers for it too: (dtype, GS_OP_SUM, dtype, this flag). */
#define GS_BACKEND_SEGMENTED_EXACT 4u

/* 1.2 left these structs as 1.1 had them. */
#define GS_BACKEND_HOST_V1_2_MEMBERS GS_BACKEND_HOST_V1_1_MEMBERS
#define GS_BACKEND_DEVICE_V1_2_MEMBERS GS_BACKEND_DEVICE_V1_1_MEMBERS

/* 1.1's reduce args, then flags: 0, or one of GS_BACKEND_REDUCE_EXACT*, only ever when
 * query_reduce_flags accepted (dtype, op, out_dtype, flags). */
#define GS_BACKEND_REDUCE_ARGS_V1_2_MEMBERS \
    GS_BACKEND_REDUCE_ARGS_V1_1_MEMBERS     \
    /* ---- ABI 1.2 ---- */                 \
    uint32_t flags;

/* 1.1's segmented args, then flags: 0, or GS_BACKEND_SEGMENTED_EXACT only ever when
 * query_reduce_flags accepted (dtype, GS_OP_SUM, out_dtype, GS_BACKEND_SEGMENTED_EXACT). */
#define GS_BACKEND_SEGMENTED_ARGS_V1_2_MEMBERS \
    GS_BACKEND_SEGMENTED_ARGS_V1_1_MEMBERS     \
    /* ---- ABI 1.2 ---- */                    \
    uint32_t flags;

/* 1.1's ops, then query_reduce_flags. */
#define GS_BACKEND_OPS_V1_2_MEMBERS(device_t, reduce_args_t, segmented_args_t)                 \
    GS_BACKEND_OPS_V1_1_MEMBERS(device_t, reduce_args_t, segmented_args_t)                     \
    /* ---- ABI 1.2 ---- */                                                                    \
    /* Optional. GS_SUCCESS if reduce() does op over dtype into out_dtype with these flags     \
     * (GS_BACKEND_REDUCE_EXACT*), else GS_ERROR_UNSUPPORTED. Absent (NULL, or not covered by  \
     * struct_size): the core sends no flags and refuses them with GS_ERROR_UNSUPPORTED. */    \
    gs_status (*query_reduce_flags)(const gs_backend_instance *instance, gs_dtype dtype, gs_op op, \
                                    gs_dtype out_dtype, uint32_t flags);

/* The gs_backend_*_v1_2 types, from the lists above (gridsync_backend_v1_1.h has the macro). */
GS_BACKEND_DEFINE_STRUCTS(V1_2, _v1_2, gs_backend_entry_v1_2_fn);

#ifdef __cplusplus
}
#endif

#endif /* GRIDSYNC_BACKEND_V1_2_H */
