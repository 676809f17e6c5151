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
 * Every 1.1 struct is written out whole below; the members 1.0 had mean what
 * gridsync_backend_v1.h says. The consumer test suite checks every offset against
 * gridsync_backend.h (tests/consumer/frozen_backend_check.c). docs/ABI-policy.md has the rules.
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

/* 1.0's host table, unchanged. */
typedef struct gs_backend_host_v1_1 {
    uint32_t struct_size;
    uint32_t abi_version;
    void (*log)(int level, const char *fmt, ...);
    void (*set_error)(const char *fmt, ...);
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
    CUresult (*cuGetProcAddress)(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult *symbolStatus);
} gs_backend_host_v1_1;

/* 1.0's device, unchanged. */
typedef struct gs_backend_device_v1_1 {
    uint32_t struct_size;
    CUdevice device;
    CUcontext context;
    int32_t cc_major;
    int32_t cc_minor;
    int32_t multiprocessor_count;
    int32_t max_threads_per_multiprocessor;
} gs_backend_device_v1_1;

/* 1.0's reduce args, unchanged. */
typedef struct gs_backend_reduce_args_v1_1 {
    uint32_t struct_size;
    gs_dtype dtype;
    gs_op op;
    gs_dtype out_dtype;
    CUdeviceptr in;
    uint64_t n;
    CUdeviceptr out;
    CUstream stream;
    CUdeviceptr workspace;
    uint64_t workspace_bytes;
} gs_backend_reduce_args_v1_1;

/* New in 1.1: one segmented reduction (gridsync_backend.h says what the core has validated
 * and what it has not). */
typedef struct gs_backend_segmented_args_v1_1 {
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
} gs_backend_segmented_args_v1_1;

/* 1.0's ops, then segmented_reduce. */
typedef struct gs_backend_ops_v1_1 {
    uint32_t struct_size;
    uint32_t abi_version;
    const char *name;
    gs_status (*open)(const gs_backend_device_v1_1 *device, gs_backend_instance **instance);
    void (*close)(gs_backend_instance *instance);
    gs_status (*query_reduce)(const gs_backend_instance *instance, gs_dtype dtype, gs_op op, gs_dtype out_dtype);
    uint64_t (*workspace_size)(const gs_backend_instance *instance);
    gs_status (*reduce)(gs_backend_instance *instance, const gs_backend_reduce_args_v1_1 *args);
    /* ---- ABI 1.1 ---- */
    /* Optional. Queues a segmented reduction (one launch) on args->stream; never
     * synchronizes the host. Absent (NULL, or not covered by struct_size): the core
     * answers gs_segmented_reduce with GS_ERROR_UNSUPPORTED. */
    gs_status (*segmented_reduce)(gs_backend_instance *instance, const gs_backend_segmented_args_v1_1 *args);
} gs_backend_ops_v1_1;

typedef gs_status (*gs_backend_entry_v1_1_fn)(uint32_t core_abi_version, const gs_backend_host_v1_1 *host,
                                              const gs_backend_ops_v1_1 **ops);

#ifdef __cplusplus
}
#endif

#endif /* GRIDSYNC_BACKEND_V1_1_H */
