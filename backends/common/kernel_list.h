/* The kernels every backend provides, one X(dtype, op) per (gs_dtype, gs_op) pair. Read by
 * the device code (to instantiate gs_reduce_<dtype>_<op>) and by the host code (to look
 * them up and to answer query_reduce), so the two never disagree. */
#ifndef GS_KERNEL_LIST_H
#define GS_KERNEL_LIST_H

#define GS_KERNELS_FOR_TYPE(X, t) X(t, sum) X(t, min) X(t, max)

#define GS_KERNELS(X)              \
    GS_KERNELS_FOR_TYPE(X, i32)    \
    GS_KERNELS_FOR_TYPE(X, f32)    \
    GS_KERNELS_FOR_TYPE(X, f64)

/* Workspace layout (bytes): the ticket counter at 0, the per-block partials from
 * GS_PARTIALS_OFFSET, room for GS_MAX_BLOCKS partials of up to 16 bytes. */
#define GS_PARTIALS_OFFSET 256
#define GS_MAX_PARTIAL_BYTES 16
#define GS_MAX_BLOCKS 2048
#define GS_WORKSPACE_BYTES (GS_PARTIALS_OFFSET + GS_MAX_BLOCKS * GS_MAX_PARTIAL_BYTES)

#endif
