/*
 * gridsync backend plugin ABI 1.2, frozen: as gridsync 0.3.0 released it
 * (GS_BACKEND_ABI_VERSION 0x00010002, entry point gridsync_backend_entry_v1), under names
 * that carry the version: the structs of gridsync_backend.h with a _v1_2 suffix. 1.2 is 1.1
 * (gridsync_backend_v1_1.h) with exact sums (GS_REDUCE_EXACT, GS_SEGMENTED_EXACT,
 * docs/semantics.md §12): a `flags` member appended to the reduce args and to the segmented
 * args, and an optional query_reduce_flags appended to the ops. Every 1.2 struct is written
 * out whole below; their layouts and names never change (docs/ABI-policy.md). The members
 * 1.0 and 1.1 had mean what gridsync_backend_v1.h and gridsync_backend_v1_1.h say.
 *
 * A core reads flags' support from query_reduce_flags only: a 1.1 backend (whose args
 * end before `flags`) never sees an exact request, it gets GS_ERROR_UNSUPPORTED from
 * the core. It can be included together with gridsync_backend.h and the other frozen
 * headers. Like them, it needs cuda.h (CUDA 12.0 or newer).
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

/* What the core gives a backend (1.0's, unchanged): driver entry points resolved once by
 * the core, with the ABI each prototype names, and services. Valid until the backend is
 * unloaded. */
typedef struct gs_backend_host_v1_2 {
    uint32_t struct_size;
    uint32_t abi_version; /* the core's GS_BACKEND_ABI_VERSION */
    /* Trace to stderr when GRIDSYNC_DEBUG is set (GS_LOG_DEBUG) or always (GS_LOG_ERROR). */
    void (*log)(int level, const char *fmt, ...);
    /* Sets the caller's thread-local detail message (what gs_last_error_message returns). */
    void (*set_error)(const char *fmt, ...);
    /* The CUDA driver API; the handles are the driver's. */
    CUresult (*cuGetErrorName)(CUresult error, const char **str);
    CUresult (*cuDeviceGetAttribute)(int *pi, CUdevice_attribute attrib, CUdevice dev);
    CUresult (*cuModuleLoadData)(CUmodule *module, const void *image);
    CUresult (*cuModuleUnload)(CUmodule hmod);
    CUresult (*cuModuleGetFunction)(CUfunction *hfunc, CUmodule hmod, const char *name);
    CUresult (*cuFuncGetAttribute)(int *pi, CUfunction_attribute attrib, CUfunction hfunc);
    CUresult (*cuFuncSetAttribute)(CUfunction hfunc, CUfunction_attribute attrib, int value);
    CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *numBlocks, CUfunction func, int blockSize,
                                                            size_t dynamicSMemSize);
    CUresult (*cuLaunchKernel)(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                               unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                               unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra);
    /* Any other driver entry point: cuGetProcAddress(symbol, pfn, cudaVersion, 0, NULL). */
    CUresult (*cuGetProcAddress)(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult *symbolStatus);
} gs_backend_host_v1_2;

/* The device a backend instance is opened for (1.0's, unchanged). Its CUDA context is
 * current on the calling thread during every call into the backend. */
typedef struct gs_backend_device_v1_2 {
    uint32_t struct_size;
    CUdevice device;
    CUcontext context;
    int32_t cc_major;
    int32_t cc_minor;
    int32_t multiprocessor_count;
    int32_t max_threads_per_multiprocessor;
} gs_backend_device_v1_2;

/* One reduction: 1.0's args, then flags. */
typedef struct gs_backend_reduce_args_v1_2 {
    uint32_t struct_size;
    gs_dtype dtype;
    gs_op op;
    gs_dtype out_dtype; /* resolved by the core: never GS_OUT_DEFAULT */
    CUdeviceptr in;
    uint64_t n;
    CUdeviceptr out;
    CUstream stream;
    /* At least workspace_size bytes, 256-byte aligned, zero-filled when first handed out;
     * from then on the backend keeps it as its kernels need it between launches. Launches
     * on one workspace are ordered (one stream), so a counter in it needs no atomics
     * across launches. */
    CUdeviceptr workspace;
    uint64_t workspace_bytes;
    /* ---- ABI 1.2 ---- */
    /* 0, or one of GS_BACKEND_REDUCE_EXACT*, only ever when query_reduce_flags accepted
     * (dtype, op, out_dtype, flags). */
    uint32_t flags;
} gs_backend_reduce_args_v1_2;

/* One segmented reduction: 1.1's args, then flags. */
typedef struct gs_backend_segmented_args_v1_2 {
    uint32_t struct_size;
    gs_dtype dtype;
    gs_op op;
    gs_dtype out_dtype; /* gs_reduce's default for dtype/op */
    CUdeviceptr in;
    uint64_t n;
    CUdeviceptr offsets;
    uint64_t num_segments;
    CUdeviceptr out;
    CUstream stream;
    CUdeviceptr workspace; /* as in the reduce args: the same per-stream buffer */
    uint64_t workspace_bytes;
    /* ---- ABI 1.2 ---- */
    /* 0, or GS_BACKEND_SEGMENTED_EXACT only ever when query_reduce_flags accepted
     * (dtype, GS_OP_SUM, out_dtype, GS_BACKEND_SEGMENTED_EXACT). */
    uint32_t flags;
} gs_backend_segmented_args_v1_2;

/* The ops a backend returns: 1.1's, then query_reduce_flags. */
typedef struct gs_backend_ops_v1_2 {
    uint32_t struct_size; /* sizeof(the ops) as the backend was built */
    uint32_t abi_version; /* GS_BACKEND_ABI_VERSION the backend was built with */
    const char *name;     /* e.g. "cuda_sm20" */
    /* Required. Sets up the backend for a device: loads its code into the current context.
     * Returns GS_ERROR_NO_KERNEL_IMAGE when it has no code for the device, so the core
     * can try the next backend. */
    gs_status (*open)(const gs_backend_device_v1_2 *device, gs_backend_instance **instance);
    /* Required. Frees what open made; the context is current. */
    void (*close)(gs_backend_instance *instance);
    /* Required. GS_SUCCESS if op over dtype written as out_dtype is implemented, else
     * GS_ERROR_UNSUPPORTED. */
    gs_status (*query_reduce)(const gs_backend_instance *instance, gs_dtype dtype, gs_op op, gs_dtype out_dtype);
    /* Required. Bytes of per-stream device workspace the backend needs (<= 64 KiB). */
    uint64_t (*workspace_size)(const gs_backend_instance *instance);
    /* Required. Queues the reduction on args->stream; never synchronizes the host. */
    gs_status (*reduce)(gs_backend_instance *instance, const gs_backend_reduce_args_v1_2 *args);
    /* ---- ABI 1.1 ---- */
    /* Optional. Queues a segmented reduction (one launch) on args->stream; never
     * synchronizes the host. Absent (NULL, or not covered by struct_size): the core
     * answers gs_segmented_reduce with GS_ERROR_UNSUPPORTED. */
    gs_status (*segmented_reduce)(gs_backend_instance *instance, const gs_backend_segmented_args_v1_2 *args);
    /* ---- ABI 1.2 ---- */
    /* Optional. GS_SUCCESS if reduce() does op over dtype into out_dtype with these flags
     * (GS_BACKEND_REDUCE_EXACT*), else GS_ERROR_UNSUPPORTED. Absent (NULL, or not covered by
     * struct_size): the core sends no flags and refuses them with GS_ERROR_UNSUPPORTED. */
    gs_status (*query_reduce_flags)(const gs_backend_instance *instance, gs_dtype dtype, gs_op op,
                                    gs_dtype out_dtype, uint32_t flags);
} gs_backend_ops_v1_2;

typedef gs_status (*gs_backend_entry_v1_2_fn)(uint32_t core_abi_version, const gs_backend_host_v1_2 *host,
                                              const gs_backend_ops_v1_2 **ops);

#ifdef __cplusplus
}
#endif

#endif /* GRIDSYNC_BACKEND_V1_2_H */
