/*
 * gridsync backend plugin ABI 1.1, frozen.
 *
 * This is the backend ABI as gridsync 0.2.0 released it (GS_BACKEND_ABI_VERSION 0x00010001,
 * entry point gridsync_backend_entry_v1), under names that carry the version: the structs
 * of gridsync_backend.h with a _v1_1 suffix. 1.1 is 1.0 (gridsync_backend_v1.h) with an
 * optional segmented_reduce appended to the ops, and the struct it takes. Their layouts and
 * names never change. gridsync_backend.h is the current ABI and grows (a new minor appends
 * members; a new major gets a new entry point); this file keeps what a 1.1 backend was
 * built against, so that
 *   - a core that has moved on can still describe, check and adapt 1.1 backends (NCCL keeps
 *     one frozen header per released plugin version for the same reason), and
 *   - a backend that wants to be built against exactly 1.1 whatever gridsync is installed
 *     can include this file instead.
 * Only what 1.1 added is written here; the rest is 1.0's member lists. The consumer test
 * suite checks every offset against gridsync_backend.h (tests/consumer/frozen_backend_check.c).
 * docs/ABI-policy.md has the rules.
 *
 * It can be included together with gridsync_backend.h and gridsync_backend_v1.h. Like them,
 * it needs cuda.h (CUDA 12.0 or newer) for the driver's handle types.
 */
#ifndef GRIDSYNC_BACKEND_V1_1_H
#define GRIDSYNC_BACKEND_V1_1_H

#include "gridsync_backend_v1.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_BACKEND_ABI_VERSION_V1_1 (((uint32_t)1 << 16) | 1u)
#define GS_BACKEND_ENTRY_V1_1_NAME GS_BACKEND_ENTRY_V1_0_NAME
/* sizeof each struct on LP64 (x86_64, aarch64) for 1.1. */
#define GS_BACKEND_HOST_V1_1_SIZE 104
#define GS_BACKEND_DEVICE_V1_1_SIZE 32
#define GS_BACKEND_REDUCE_ARGS_V1_1_SIZE 64
#define GS_BACKEND_OPS_V1_1_SIZE 64
#define GS_BACKEND_SEGMENTED_ARGS_V1_1_SIZE 80

/* Log levels for gs_backend_host_v1_1.log: 1.0's. */
#define GS_LOG_DEBUG_V1_1 GS_LOG_DEBUG_V1_0
#define GS_LOG_ERROR_V1_1 GS_LOG_ERROR_V1_0

/* 1.1 left these structs as 1.0 had them. */
#define GS_BACKEND_HOST_V1_1_MEMBERS GS_BACKEND_HOST_V1_0_MEMBERS
#define GS_BACKEND_DEVICE_V1_1_MEMBERS GS_BACKEND_DEVICE_V1_0_MEMBERS
#define GS_BACKEND_REDUCE_ARGS_V1_1_MEMBERS GS_BACKEND_REDUCE_ARGS_V1_0_MEMBERS

/* New in 1.1: one segmented reduction (gridsync_backend.h says what the core has validated
 * and what it has not). */
#define GS_BACKEND_SEGMENTED_ARGS_V1_1_MEMBERS                                         \
    uint32_t struct_size;                                                              \
    gs_dtype dtype;                                                                    \
    gs_op op;                                                                          \
    gs_dtype out_dtype; /* gs_reduce's default for dtype/op */                         \
    CUdeviceptr in;                                                                    \
    uint64_t n;                                                                        \
    CUdeviceptr offsets;                                                               \
    uint64_t num_segments;                                                             \
    CUdeviceptr out;                                                                   \
    CUstream stream;                                                                   \
    CUdeviceptr workspace; /* as in the reduce args: the same per-stream buffer */     \
    uint64_t workspace_bytes;

/* 1.0's ops, then segmented_reduce. */
#define GS_BACKEND_OPS_V1_1_MEMBERS(device_t, reduce_args_t, segmented_args_t)          \
    GS_BACKEND_OPS_V1_0_MEMBERS(device_t, reduce_args_t)                                \
    /* ---- ABI 1.1 ---- */                                                             \
    /* Optional. Queues a segmented reduction (one launch) on args->stream; never       \
     * synchronizes the host. Absent (NULL, or not covered by struct_size): the core    \
     * answers gs_segmented_reduce with GS_ERROR_UNSUPPORTED. */                        \
    gs_status (*segmented_reduce)(gs_backend_instance *instance, const segmented_args_t *args);

/*
 * GS_BACKEND_DEFINE_STRUCTS(V, sfx, entry_fn) defines the types of one backend ABI version,
 * from 1.1 on, out of that version's member lists GS_BACKEND_<STRUCT>_<V>_MEMBERS:
 *   struct gs_backend_host<sfx>            (and a typedef of the same name),
 *   struct gs_backend_device<sfx>,
 *   struct gs_backend_reduce_args<sfx>,
 *   struct gs_backend_segmented_args<sfx>,
 *   struct gs_backend_ops<sfx>             (its functions take that version's structs),
 * and entry_fn, the type of the entry point that takes that version's host and ops.
 * Below, GS_BACKEND_DEFINE_STRUCTS(V1_1, _v1_1, ...) gives the gs_backend_*_v1_1 structs;
 * gridsync_backend.h passes an empty sfx for the current names. Every version keeps its own
 * struct tags (gridsync_backend_v1.h says why); the macro only writes their typedefs once.
 * 1.0 had four structs and a two-argument ops list: gridsync_backend_v1.h writes its own.
 */
#define GS_BACKEND_DEFINE_STRUCT(tag, members) typedef struct tag { members } tag;
#define GS_BACKEND_DEFINE_STRUCTS(V, sfx, entry_fn)                                               \
    GS_BACKEND_DEFINE_STRUCT(gs_backend_host##sfx, GS_BACKEND_HOST_##V##_MEMBERS)                   \
    GS_BACKEND_DEFINE_STRUCT(gs_backend_device##sfx, GS_BACKEND_DEVICE_##V##_MEMBERS)               \
    GS_BACKEND_DEFINE_STRUCT(gs_backend_reduce_args##sfx, GS_BACKEND_REDUCE_ARGS_##V##_MEMBERS)     \
    GS_BACKEND_DEFINE_STRUCT(gs_backend_segmented_args##sfx,                                      \
                             GS_BACKEND_SEGMENTED_ARGS_##V##_MEMBERS)                             \
    GS_BACKEND_DEFINE_STRUCT(gs_backend_ops##sfx,                                                 \
                             GS_BACKEND_OPS_##V##_MEMBERS(gs_backend_device##sfx,                 \
                                                          gs_backend_reduce_args##sfx,            \
                                                          gs_backend_segmented_args##sfx))        \
    typedef gs_status (*entry_fn)(uint32_t core_abi_version, const gs_backend_host##sfx *host,     \
                                  const gs_backend_ops##sfx **ops)

GS_BACKEND_DEFINE_STRUCTS(V1_1, _v1_1, gs_backend_entry_v1_1_fn);

#ifdef __cplusplus
}
#endif

#endif /* GRIDSYNC_BACKEND_V1_1_H */
