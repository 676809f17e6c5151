/*
 * gridsync backend plugin ABI, version 1.
 *
 * A backend is a shared module (gridsync-<name>.so, installed in the directory that
 * `pkg-config --variable=backenddir gridsync` names) that exports exactly one symbol,
 * GS_BACKEND_ENTRY_V1_NAME. The core passes in its ABI version and a table of CUDA driver
 * entry points and services; the backend returns a pointer to its (static, constant) ops.
 * Backends never link libgridsync, libcuda or libcudart.
 *
 * Versioning: GS_BACKEND_ABI_VERSION is (major << 16) | minor. A new major breaks old
 * backends (the entry symbol name changes with it); a new minor only appends members at
 * the end of the structs below, so both sides read struct_size before touching a member
 * past the first version's end. Released versions of this header are kept, frozen, as
 * gridsync_backend_v<major>_<minor>.h.
 *
 * This header needs cuda.h (CUDA 12.0 or newer) for the driver's handle types.
 */
#ifndef GRIDSYNC_BACKEND_H
#define GRIDSYNC_BACKEND_H

#include <stdarg.h>
#include <stdint.h>
#include <cuda.h>

#include "gridsync.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_BACKEND_ABI_MAJOR 1
#define GS_BACKEND_ABI_MINOR 1
#define GS_BACKEND_ABI_VERSION (((uint32_t)GS_BACKEND_ABI_MAJOR << 16) | GS_BACKEND_ABI_MINOR)
#define GS_BACKEND_ABI_VERSION_MAJOR(v) ((uint32_t)(v) >> 16)
#define GS_BACKEND_ENTRY_V1_NAME "gridsync_backend_entry_v1"

/* Log levels for gs_backend_host.log. */
#define GS_LOG_DEBUG 0 /* shown with GRIDSYNC_DEBUG=1 */
#define GS_LOG_ERROR 1

/*
 * What the core gives a backend: driver entry points resolved once by the core (with the
 * ABI each prototype names), and services. Valid until the backend is unloaded.
 */
typedef struct gs_backend_host {
    uint32_t struct_size;
    uint32_t abi_version; /* the core's GS_BACKEND_ABI_VERSION */

    /* Services. */
    /* Trace to stderr when GRIDSYNC_DEBUG is set (DEBUG) or always (ERROR). */
    void (*log)(int level, const char *fmt, ...);
    /* Sets the caller's thread-local detail message (what gs_last_error_message returns). */
    void (*set_error)(const char *fmt, ...);

    /* CUDA driver API; the handles are the driver's. */
    CUresult (*cuGetErrorName)(CUresult error, const char **str);
    CUresult (*cuDeviceGetAttribute)(int *pi, CUdevice_attribute attrib, CUdevice dev);
    CUresult (*cuModuleLoadData)(CUmodule *module, const void *image);
    CUresult (*cuModuleUnload)(CUmodule hmod);
    CUresult (*cuModuleGetFunction)(CUfunction *hfunc, CUmodule hmod, const char *name);
    CUresult (*cuFuncGetAttribute)(int *pi, CUfunction_attribute attrib, CUfunction hfunc);
    CUresult (*cuFuncSetAttribute)(CUfunction hfunc, CUfunction_attribute attrib, int value);
    CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *numBlocks, CUfunction func,
                                                            int blockSize, size_t dynamicSMemSize);
    CUresult (*cuLaunchKernel)(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                               unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                               unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                               void **kernelParams, void **extra);
    /* Any other driver entry point: cuGetProcAddress(symbol, pfn, cudaVersion, 0, NULL). */
    CUresult (*cuGetProcAddress)(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult *symbolStatus);
} gs_backend_host;

/* The device a backend instance is opened for. Its CUDA context is current on the calling
 * thread during every call into the backend. */
typedef struct gs_backend_device {
    uint32_t struct_size;
    CUdevice device;
    CUcontext context;
    int32_t cc_major;
    int32_t cc_minor;
    int32_t multiprocessor_count;
    int32_t max_threads_per_multiprocessor;
} gs_backend_device;

/* One reduction. Validated by the core: in/out non-NULL (unless n == 0 for in), aligned
 * and device-accessible, dtype/op/out_dtype in range and supported by the backend
 * (query_reduce), workspace as large as the backend's workspace_size and private to
 * `stream`. */
typedef struct gs_backend_reduce_args {
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
} gs_backend_reduce_args;

/* One segmented reduction (ABI 1.1). Validated by the core like gs_backend_reduce_args:
 * in (n elements), offsets (num_segments + 1 int64 values) and out (num_segments results
 * of out_dtype) aligned and device-accessible, num_segments >= 1, the dtype/op pair one
 * that query_reduce accepts with the default out_dtype. The offsets themselves are NOT
 * validated (they live in device memory): the backend must stay inside in[0, n),
 * out[0, num_segments) and its workspace whatever they hold, and leave the workspace
 * ready for the next launch. */
typedef struct gs_backend_segmented_args {
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
    CUdeviceptr workspace; /* as in gs_backend_reduce_args: the same per-stream buffer */
    uint64_t workspace_bytes;
} gs_backend_segmented_args;

typedef struct gs_backend_instance gs_backend_instance; /* the backend's own per-device state */

typedef struct gs_backend_ops {
    uint32_t struct_size; /* sizeof(gs_backend_ops) as the backend was built */
    uint32_t abi_version; /* GS_BACKEND_ABI_VERSION the backend was built with */
    const char *name;     /* e.g. "cuda_sm20" */

    /* Required. Sets up the backend for a device: loads its code into the current context.
     * Returns GS_ERROR_NO_KERNEL_IMAGE when it has no code for the device, so the core
     * can try the next backend. */
    gs_status (*open)(const gs_backend_device *device, gs_backend_instance **instance);
    /* Required. Frees what open made; the context is current. */
    void (*close)(gs_backend_instance *instance);
    /* Required. GS_SUCCESS if op over dtype written as out_dtype is implemented, else
     * GS_ERROR_UNSUPPORTED. */
    gs_status (*query_reduce)(const gs_backend_instance *instance, gs_dtype dtype, gs_op op, gs_dtype out_dtype);
    /* Required. Bytes of per-stream device workspace the backend needs (<= 64 KiB). */
    uint64_t (*workspace_size)(const gs_backend_instance *instance);
    /* Required. Queues the reduction on args->stream; never synchronizes the host. */
    gs_status (*reduce)(gs_backend_instance *instance, const gs_backend_reduce_args *args);

    /* ---- ABI 1.1 ---- */
    /* Optional. Queues a segmented reduction (one launch) on args->stream; never
     * synchronizes the host. Absent (NULL, or not covered by struct_size): the core
     * answers gs_segmented_reduce with GS_ERROR_UNSUPPORTED. */
    gs_status (*segmented_reduce)(gs_backend_instance *instance, const gs_backend_segmented_args *args);
} gs_backend_ops;

/*
 * The entry point every backend exports under GS_BACKEND_ENTRY_V1_NAME. The backend checks
 * GS_BACKEND_ABI_VERSION_MAJOR(core_abi_version) itself (and returns
 * GS_ERROR_BACKEND_ABI_MISMATCH when it differs), keeps `host`, and stores its ops in *ops.
 */
typedef gs_status (*gs_backend_entry_v1_fn)(uint32_t core_abi_version, const gs_backend_host *host,
                                            const gs_backend_ops **ops);

#ifdef __cplusplus
}
#endif

#endif /* GRIDSYNC_BACKEND_H */
