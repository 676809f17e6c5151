/*
 * gridsync backend plugin ABI 1.0, frozen.
 *
 * This is the backend ABI as gridsync 0.1.0 released it (GS_BACKEND_ABI_VERSION 0x00010000,
 * entry point gridsync_backend_entry_v1), under names that carry the version: the structs
 * of gridsync_backend.h with a _v1_0 suffix. Their layouts and names never change.
 * gridsync_backend.h is the current ABI and grows (a new minor appends members; a new major
 * gets a new entry point); this file keeps what a 1.0 backend was built against, so that
 *   - a core that has moved on can still describe, check and adapt 1.0 backends (NCCL keeps
 *     one frozen header per released plugin version for the same reason), and
 *   - a backend that wants to be built against exactly 1.0 whatever gridsync is installed
 *     can include this file instead.
 * Every released version's structs are written out whole in its own header, as here. The
 * consumer test suite checks every offset against gridsync_backend.h
 * (tests/consumer/frozen_backend_check.c). docs/ABI-policy.md has the rules.
 *
 * It can be included together with gridsync_backend.h. Like it, it needs cuda.h (CUDA 12.0
 * or newer) for the driver's handle types.
 */
#ifndef GRIDSYNC_BACKEND_V1_H
#define GRIDSYNC_BACKEND_V1_H

#include <stdarg.h>
#include <stdint.h>
#include <cuda.h>

#include "gridsync.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_BACKEND_ABI_VERSION_V1_0 (((uint32_t)1 << 16) | 0u)
#define GS_BACKEND_ENTRY_V1_0_NAME "gridsync_backend_entry_v1"
/* sizeof each struct on LP64 (x86_64, aarch64) for 1.0. */
#define GS_BACKEND_HOST_V1_0_SIZE 104
#define GS_BACKEND_DEVICE_V1_0_SIZE 32
#define GS_BACKEND_REDUCE_ARGS_V1_0_SIZE 64
#define GS_BACKEND_OPS_V1_0_SIZE 56

/* Log levels for gs_backend_host_v1_0.log. */
#define GS_LOG_DEBUG_V1_0 0 /* shown with GRIDSYNC_DEBUG=1 */
#define GS_LOG_ERROR_V1_0 1

/* What the core gives a backend: driver entry points resolved once by the core (with the
 * ABI each prototype names), and services. Valid until the backend is unloaded. */
typedef struct gs_backend_host_v1_0 {
    uint32_t struct_size;
    uint32_t abi_version; /* the core's GS_BACKEND_ABI_VERSION */
    /* Trace to stderr when GRIDSYNC_DEBUG is set (DEBUG) or always (ERROR). */
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
} gs_backend_host_v1_0;

/* The device a backend instance is opened for. Its CUDA context is current on the calling
 * thread during every call into the backend. */
typedef struct gs_backend_device_v1_0 {
    uint32_t struct_size;
    CUdevice device;
    CUcontext context;
    int32_t cc_major;
    int32_t cc_minor;
    int32_t multiprocessor_count;
    int32_t max_threads_per_multiprocessor;
} gs_backend_device_v1_0;

/* One reduction (gridsync_backend.h says what the core has validated). */
typedef struct gs_backend_reduce_args_v1_0 {
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
} gs_backend_reduce_args_v1_0;

/* The backend's own per-device state, opaque to the core (every version's). */
typedef struct gs_backend_instance gs_backend_instance;

/* The ops a backend returns. */
typedef struct gs_backend_ops_v1_0 {
    uint32_t struct_size; /* sizeof(the ops) as the backend was built */
    uint32_t abi_version; /* GS_BACKEND_ABI_VERSION the backend was built with */
    const char *name;     /* e.g. "cuda_sm20" */
    /* Required. Sets up the backend for a device: loads its code into the current context.
     * Returns GS_ERROR_NO_KERNEL_IMAGE when it has no code for the device, so the core
     * can try the next backend. */
    gs_status (*open)(const gs_backend_device_v1_0 *device, gs_backend_instance **instance);
    /* Required. Frees what open made; the context is current. */
    void (*close)(gs_backend_instance *instance);
    /* Required. GS_SUCCESS if op over dtype written as out_dtype is implemented, else
     * GS_ERROR_UNSUPPORTED. */
    gs_status (*query_reduce)(const gs_backend_instance *instance, gs_dtype dtype, gs_op op, gs_dtype out_dtype);
    /* Required. Bytes of per-stream device workspace the backend needs (<= 64 KiB). */
    uint64_t (*workspace_size)(const gs_backend_instance *instance);
    /* Required. Queues the reduction on args->stream; never synchronizes the host. */
    gs_status (*reduce)(gs_backend_instance *instance, const gs_backend_reduce_args_v1_0 *args);
} gs_backend_ops_v1_0;

typedef gs_status (*gs_backend_entry_v1_0_fn)(uint32_t core_abi_version, const gs_backend_host_v1_0 *host,
                                              const gs_backend_ops_v1_0 **ops);

#ifdef __cplusplus
}
#endif

#endif /* GRIDSYNC_BACKEND_V1_H */
