#include "gridsync.h"

#include "driver.h"
#include "error.h"

GS_API uint32_t gs_version(void)
{
    return GS_VERSION;
}

GS_API const char *gs_version_string(void)
{
    return GS_VERSION_STRING;
}

GS_API gs_status gs_driver_version(int *version)
{
    gs_clear_error();
    if (!version)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_driver_version: version is NULL");
    gs_status st;
    gs_driver_get(&st);
    /* A driver library without a device still has a version. */
    *version = gs_driver_version_loaded();
    if (*version <= 0)
        return st;
    gs_clear_error(); /* a driver without a usable device still answers this */
    return GS_SUCCESS;
}

GS_API gs_status gs_device_count(int *count)
{
    gs_clear_error();
    if (!count)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_device_count: count is NULL");
    *count = 0;
    gs_status st;
    const gs_driver *drv = gs_driver_get(&st);
    if (!drv) {
        if (st != GS_ERROR_NO_DEVICE)
            return st;
        gs_clear_error(); /* no device is an answer here, not a failure */
        return GS_SUCCESS;
    }
    CUresult rc = drv->cuDeviceGetCount(count);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(drv, rc, "cuDeviceGetCount");
    return GS_SUCCESS;
}
