/* The CUDA driver, loaded with dlopen on first use. gridsync has no link-time dependency
 * on libcuda or libcudart: without a driver the library still loads and reports
 * GS_ERROR_NO_DRIVER. */
#ifndef GS_CORE_DRIVER_H
#define GS_CORE_DRIVER_H

#include <cuda.h>
#include <cudaTypedefs.h>

#include "gridsync.h"

/*
 * Every driver entry point the core uses, with the CUDA version whose ABI we call: the
 * prototype is cudaTypedefs.h's PFN_<name>_v<version>, and cuGetProcAddress is asked for
 * exactly that version, so a newer cuda.h that remaps a name (cuCtxCreate_v4, ...) never
 * changes what we call. NULL stream means the legacy default stream (no _ptsz flag).
 */
#define GS_DRIVER_FUNCTIONS(X)                              \
    X(cuInit, 2000)                                         \
    X(cuGetErrorName, 6000)                                 \
    X(cuGetErrorString, 6000)                               \
    X(cuDeviceGetCount, 2000)                               \
    X(cuDeviceGet, 2000)                                    \
    X(cuDeviceGetName, 2000)                                \
    X(cuDeviceGetAttribute, 2000)                           \
    X(cuDevicePrimaryCtxRetain, 7000)                       \
    X(cuDevicePrimaryCtxRelease, 11000)                     \
    X(cuCtxGetCurrent, 4000)                                \
    X(cuCtxGetDevice, 2000)                                 \
    X(cuCtxGetId, 12000)                                    \
    X(cuCtxPushCurrent, 4000)                               \
    X(cuCtxPopCurrent, 4000)                                \
    X(cuMemAlloc, 3020)                                     \
    X(cuMemFree, 3020)                                      \
    X(cuMemsetD8Async, 3020)                                \
    X(cuMemcpyDtoH, 3020)                                   \
    X(cuPointerGetAttributes, 7000)                         \
    X(cuStreamCreate, 2000)                                 \
    X(cuStreamDestroy, 4000)                                \
    X(cuStreamSynchronize, 2000)                            \
    X(cuStreamGetId, 12000)                                 \
    X(cuStreamGetCtx, 9020)                                 \
    X(cuStreamIsCapturing, 10000)                           \
    X(cuStreamGetCaptureInfo, 11030)                        \
    X(cuUserObjectCreate, 11030)                            \
    X(cuUserObjectRelease, 11030)                           \
    X(cuGraphRetainUserObject, 11030)                       \
    X(cuThreadExchangeStreamCaptureMode, 10010)             \
    X(cuModuleLoadData, 2000)                               \
    X(cuModuleUnload, 2000)                                 \
    X(cuModuleGetFunction, 2000)                            \
    X(cuFuncGetAttribute, 2020)                             \
    X(cuFuncSetAttribute, 9000)                             \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050)    \
    X(cuLaunchKernel, 4000)

typedef struct gs_driver {
#define GS_DRIVER_MEMBER(name, version) PFN_##name##_v##version name;
    GS_DRIVER_FUNCTIONS(GS_DRIVER_MEMBER)
#undef GS_DRIVER_MEMBER
    PFN_cuGetProcAddress_v12000 cuGetProcAddress;
    int version; /* cuDriverGetVersion */
} gs_driver;

/* Loads and initialises the driver once per process (cuInit(0)); later calls return the
 * remembered outcome. On failure sets the thread's error message and returns NULL. */
const gs_driver *gs_driver_get(gs_status *status);

/* The driver version (cuDriverGetVersion), 0 when there is no usable driver library. Also
 * known when cuInit failed. */
int gs_driver_version_loaded(void);

/* Turns a failed driver call into a gridsync status with a message that names the call
 * and the CUDA error ("cuMemAlloc(65536 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY ..."). */
gs_status gs_cuda_error(const gs_driver *drv, CUresult rc, const char *what, ...)
    __attribute__((format(printf, 3, 4)));

#endif
