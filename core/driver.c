#define _GNU_SOURCE
#include "driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cuda_status.h"
#include "error.h"

#define GS_LIBCUDA "libcuda.so.1"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static gs_driver g_driver;
static gs_status g_status;  /* outcome of the one load, remembered (never retried) */
static char g_message[512]; /* its detail, replayed into each caller's thread message */

static gs_status load_failed(gs_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static gs_status load_failed(gs_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_message, sizeof g_message, fmt, ap);
    va_end(ap);
    /* Not traced here: each call that meets the failure sets it as its error, which
     * GRIDSYNC_DEBUG traces once per call. */
    return status;
}

static gs_status load_driver(void)
{
    void *lib = dlopen(GS_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    /* The messages say which call failed and why, not "no CUDA driver": the status's own
     * text (gs_status_string) says that, and applications print the two together. */
    if (!lib)
        return load_failed(GS_ERROR_NO_DRIVER, "dlopen(\"%s\") failed: %s", GS_LIBCUDA, dlerror());

    /* cuGetProcAddress_v2 (CUDA 12.0) is the only symbol taken with dlsym; everything else
     * comes from it at the ABI version we were written against. 12.0 is also where
     * cuStreamGetId, which keys the per-stream workspaces, appeared. */
    g_driver.cuGetProcAddress = (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
    if (!g_driver.cuGetProcAddress) {
        dlclose(lib);
        return load_failed(GS_ERROR_NO_DRIVER,
                           "the CUDA driver %s is too old: it has no cuGetProcAddress_v2 (a driver for "
                           "CUDA 12.0 or newer is needed)",
                           GS_LIBCUDA);
    }

    CUdriverProcAddressQueryResult found;
    CUresult rc;
#define GS_RESOLVE(name, ver)                                                                            \
    rc = g_driver.cuGetProcAddress(#name, (void **)&g_driver.name, ver, CU_GET_PROC_ADDRESS_LEGACY_STREAM, \
                                   &found);                                                              \
    if (rc != CUDA_SUCCESS || !g_driver.name) {                                                          \
        dlclose(lib);                                                                                    \
        memset(&g_driver, 0, sizeof g_driver);                                                           \
        return load_failed(GS_ERROR_NO_DRIVER,                                                           \
                           "the CUDA driver %s lacks %s (ABI of CUDA %d.%d): cuGetProcAddress returned " \
                           "%d, query result %d",                                                        \
                           GS_LIBCUDA, #name, ver / 1000, (ver % 1000) / 10, (int)rc, (int)found);       \
    }
    GS_DRIVER_FUNCTIONS(GS_RESOLVE)
    PFN_cuDriverGetVersion_v2020 get_version = NULL;
    rc = g_driver.cuGetProcAddress("cuDriverGetVersion", (void **)&get_version, 2020,
                                   CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found);
    if (rc != CUDA_SUCCESS || !get_version || get_version(&g_driver.version) != CUDA_SUCCESS)
        g_driver.version = 0;
#undef GS_RESOLVE
    /* The library handle stays open for the life of the process: driver entry points
     * are cached in g_driver and in every loaded backend. */

    rc = g_driver.cuInit(0);
    if (rc != CUDA_SUCCESS) {
        const char *name = "?";
        g_driver.cuGetErrorName(rc, &name);
        if (rc == CUDA_ERROR_NO_DEVICE)
            return load_failed(GS_ERROR_NO_DEVICE, "cuInit(0) failed: %s: no CUDA device is visible", name);
        return load_failed(GS_ERROR_NO_DRIVER, "cuInit(0) failed: %s (driver %s, version %d)", name,
                           GS_LIBCUDA, g_driver.version);
    }
    gs_trace("driver: %s loaded, version %d", GS_LIBCUDA, g_driver.version);
    return GS_SUCCESS;
}

static void load_once(void)
{
    g_status = load_driver();
}

const gs_driver *gs_driver_get(gs_status *status)
{
    pthread_once(&g_once, load_once);
    *status = g_status;
    if (g_status != GS_SUCCESS) {
        gs_set_error("%s", g_message);
        /* cuInit found no device, but the entry points are there: the version is real. */
        return NULL;
    }
    return &g_driver;
}

int gs_driver_version_loaded(void)
{
    pthread_once(&g_once, load_once);
    return g_driver.version;
}

gs_status gs_cuda_error(const gs_driver *drv, CUresult rc, const char *what, ...)
{
    char buf[384];
    va_list ap;
    va_start(ap, what);
    vsnprintf(buf, sizeof buf, what, ap);
    va_end(ap);
    const char *name = NULL, *desc = NULL;
    if (drv) {
        if (drv->cuGetErrorName(rc, &name) != CUDA_SUCCESS)
            name = NULL;
        if (drv->cuGetErrorString(rc, &desc) != CUDA_SUCCESS)
            desc = NULL;
    }
    gs_status status = gs_status_of_cuda(rc);
    if (name)
        return gs_fail(status, "%s failed: %s (%s)", buf, name, desc ? desc : "no description");
    return gs_fail(status, "%s failed: CUDA error %d", buf, (int)rc);
}
