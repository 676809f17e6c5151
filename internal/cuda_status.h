/* The one mapping from a CUDA driver error to a gs_status, shared by the core
 * (core/driver.c) and the backends (backends/common/backend.c) so that the same driver
 * failure gives the same status whichever side met it. Header-only: backends link nothing
 * of the core. */
#ifndef GS_INTERNAL_CUDA_STATUS_H
#define GS_INTERNAL_CUDA_STATUS_H

#include <cuda.h>

#include "gridsync.h"

static inline gs_status gs_status_of_cuda(CUresult rc)
{
    switch (rc) {
    case CUDA_SUCCESS:
        return GS_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return GS_ERROR_OUT_OF_MEMORY;
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_CONTEXT_ALREADY_IN_USE:
        return GS_ERROR_INVALID_CONTEXT;
    /* no code for this device: the core tries the next backend */
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_INVALID_SOURCE:
        return GS_ERROR_NO_KERNEL_IMAGE;
    default:
        return GS_ERROR_CUDA;
    }
}

#endif
