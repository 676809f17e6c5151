#define _GNU_SOURCE
#include "cudashim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Driver types, as ABI-stable integers and opaque pointers, so this file needs no
 * cuda.h. The symbols below are the driver's versioned exports (_v2 where the size
 * arguments became size_t in CUDA 3.2). */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;

static struct {
    CUresult (*cuInit)(unsigned);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuMemGetInfo)(size_t *, size_t *);
    CUresult (*cuMemAlloc)(cushim_ptr *, size_t);
    CUresult (*cuMemFree)(cushim_ptr);
    CUresult (*cuMemcpyHtoD)(cushim_ptr, const void *, size_t);
    CUresult (*cuMemcpyDtoH)(void *, cushim_ptr, size_t);
    CUresult (*cuMemsetD8)(cushim_ptr, unsigned char, size_t);
    CUresult (*cuStreamCreate)(cushim_stream *, unsigned);
    CUresult (*cuStreamDestroy)(cushim_stream);
    CUresult (*cuStreamSynchronize)(cushim_stream);
    CUresult (*cuEventCreate)(cushim_event *, unsigned);
    CUresult (*cuEventDestroy)(cushim_event);
    CUresult (*cuEventRecord)(cushim_event, cushim_stream);
    CUresult (*cuEventElapsedTime)(float *, cushim_event, cushim_event);
} d;

static const struct {
    const char *name;
    size_t offset;
} syms[] = {
#define S(field, sym) {sym, offsetof(__typeof__(d), field)}
    S(cuInit, "cuInit"),
    S(cuGetErrorName, "cuGetErrorName"),
    S(cuDeviceGetCount, "cuDeviceGetCount"),
    S(cuDeviceGet, "cuDeviceGet"),
    S(cuDeviceGetName, "cuDeviceGetName"),
    S(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    S(cuCtxSetCurrent, "cuCtxSetCurrent"),
    S(cuCtxSynchronize, "cuCtxSynchronize"),
    S(cuMemGetInfo, "cuMemGetInfo_v2"),
    S(cuMemAlloc, "cuMemAlloc_v2"),
    S(cuMemFree, "cuMemFree_v2"),
    S(cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
    S(cuMemcpyDtoH, "cuMemcpyDtoH_v2"),
    S(cuMemsetD8, "cuMemsetD8_v2"),
    S(cuStreamCreate, "cuStreamCreate"),
    S(cuStreamDestroy, "cuStreamDestroy_v2"),
    S(cuStreamSynchronize, "cuStreamSynchronize"),
    S(cuEventCreate, "cuEventCreate"),
    S(cuEventDestroy, "cuEventDestroy_v2"),
    S(cuEventRecord, "cuEventRecord"),
    S(cuEventElapsedTime, "cuEventElapsedTime"),
#undef S
};

static _Thread_local char t_err[512];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static cushim_status g_load;
static char g_load_err[512];

const char *cushim_error(void)
{
    return t_err;
}

static void seterr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void seterr(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_err, sizeof t_err, fmt, ap);
    va_end(ap);
}

static int check(CUresult rc, const char *what)
{
    if (rc == 0)
        return 0;
    const char *name = NULL;
    if (d.cuGetErrorName)
        d.cuGetErrorName(rc, &name);
    seterr("%s failed: %s", what, name ? name : "unknown CUDA error");
    return -1;
}

static void *g_handle;
static void load(void);

void *cushim_driver_symbol(const char *name)
{
    pthread_once(&g_once, load);
    return g_handle && g_load == CUSHIM_OK ? dlsym(g_handle, name) : NULL;
}

static void load(void)
{
    void *h = g_handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(g_load_err, sizeof g_load_err, "no CUDA driver: %s", dlerror());
        g_load = CUSHIM_NO_DRIVER;
        return;
    }
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(h, syms[i].name);
        if (!p) {
            snprintf(g_load_err, sizeof g_load_err, "the CUDA driver lacks %s", syms[i].name);
            g_load = CUSHIM_NO_DRIVER;
            return;
        }
        memcpy((char *)&d + syms[i].offset, &p, sizeof p);
    }
    CUresult rc = d.cuInit(0);
    if (rc == 100 /* CUDA_ERROR_NO_DEVICE */) {
        snprintf(g_load_err, sizeof g_load_err, "cuInit: no CUDA device");
        g_load = CUSHIM_NO_DEVICE;
    } else if (rc != 0) {
        const char *name = NULL;
        d.cuGetErrorName(rc, &name);
        snprintf(g_load_err, sizeof g_load_err, "cuInit failed: %s", name ? name : "unknown CUDA error");
        g_load = CUSHIM_NO_DRIVER;
    }
}

cushim_status cushim_init(int ordinal)
{
    pthread_once(&g_once, load);
    if (g_load != CUSHIM_OK) {
        seterr("%s", g_load_err);
        return g_load;
    }
    int count = 0;
    if (check(d.cuDeviceGetCount(&count), "cuDeviceGetCount"))
        return CUSHIM_ERROR;
    if (ordinal < 0 || ordinal >= count) {
        seterr("device %d does not exist (%d visible)", ordinal, count);
        return CUSHIM_NO_DEVICE;
    }
    CUdevice dev;
    CUcontext ctx;
    if (check(d.cuDeviceGet(&dev, ordinal), "cuDeviceGet") ||
        check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
        check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent"))
        return CUSHIM_ERROR;
    return CUSHIM_OK;
}

int cushim_device_count(int *count)
{
    return check(d.cuDeviceGetCount(count), "cuDeviceGetCount");
}

int cushim_device_name(int ordinal, char *name, size_t len)
{
    CUdevice dev;
    if (check(d.cuDeviceGet(&dev, ordinal), "cuDeviceGet"))
        return -1;
    return check(d.cuDeviceGetName(name, (int)len, dev), "cuDeviceGetName");
}

int cushim_device_memory(size_t *free_bytes, size_t *total_bytes)
{
    return check(d.cuMemGetInfo(free_bytes, total_bytes), "cuMemGetInfo");
}

int cushim_alloc(cushim_ptr *p, size_t bytes)
{
    char what[64];
    snprintf(what, sizeof what, "cuMemAlloc(%zu bytes)", bytes);
    return check(d.cuMemAlloc(p, bytes ? bytes : 1), what);
}

int cushim_free(cushim_ptr p)
{
    return p ? check(d.cuMemFree(p), "cuMemFree") : 0;
}

/* The legacy default stream, on which cuMemcpyHtoD and cuMemsetD8 run. */
#define CUSHIM_STREAM_LEGACY ((cushim_stream)0x1)

/* cuMemcpyHtoD from pageable memory returns once the source is staged, and cuMemsetD8 at
 * once: both run on the legacy stream, which a non-blocking stream does not wait for. So
 * each waits for that stream here, and a kernel queued on any stream afterwards reads
 * what they wrote. */
static int then_wait_legacy(CUresult rc, const char *what)
{
    if (check(rc, what))
        return -1;
    return check(d.cuStreamSynchronize(CUSHIM_STREAM_LEGACY), "cuStreamSynchronize of the legacy stream");
}

int cushim_h2d(cushim_ptr dst, const void *src, size_t bytes)
{
    return bytes ? then_wait_legacy(d.cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD") : 0;
}

int cushim_d2h(void *dst, cushim_ptr src, size_t bytes)
{
    return bytes ? check(d.cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH") : 0;
}

int cushim_memset8(cushim_ptr dst, unsigned char value, size_t bytes)
{
    return bytes ? then_wait_legacy(d.cuMemsetD8(dst, value, bytes), "cuMemsetD8") : 0;
}

int cushim_stream_create(cushim_stream *s)
{
    return check(d.cuStreamCreate(s, 1 /* CU_STREAM_NON_BLOCKING */), "cuStreamCreate");
}

int cushim_stream_destroy(cushim_stream s)
{
    return check(d.cuStreamDestroy(s), "cuStreamDestroy");
}

int cushim_stream_sync(cushim_stream s)
{
    return check(d.cuStreamSynchronize(s), "cuStreamSynchronize");
}

int cushim_ctx_sync(void)
{
    return check(d.cuCtxSynchronize(), "cuCtxSynchronize");
}

int cushim_event_create(cushim_event *e)
{
    return check(d.cuEventCreate(e, 0), "cuEventCreate");
}

int cushim_event_destroy(cushim_event e)
{
    return check(d.cuEventDestroy(e), "cuEventDestroy");
}

int cushim_event_record(cushim_event e, cushim_stream s)
{
    return check(d.cuEventRecord(e, s), "cuEventRecord");
}

int cushim_event_elapsed_ms(float *ms, cushim_event start, cushim_event end)
{
    return check(d.cuEventElapsedTime(ms, start, end), "cuEventElapsedTime");
}
