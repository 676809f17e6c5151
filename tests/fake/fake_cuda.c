/*
 * A fake CUDA driver, built as libcuda.so.1, for the CPU-only suites (loader, unit).
 *
 * Tests put its build directory first in LD_LIBRARY_PATH; libgridsync's dlopen("libcuda.so.1")
 * then finds it instead of a real driver (or instead of nothing, on CI). It exports what
 * libgridsync takes with dlsym, cuGetProcAddress_v2, which hands out an implementation of
 * every entry point in core/driver.h's GS_DRIVER_FUNCTIONS at exactly the ABI version the
 * core asks for (an older version gets CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, as a
 * real driver does for a symbol that did not exist yet), plus cuDriverGetVersion.
 *
 * It behaves like a small, strict driver: handles are checked, functions that need a
 * current context fail without one, memory is host memory with device-like bookkeeping
 * (cuPointerGetAttributes knows every allocation; fresh memory is filled with garbage so
 * a missing memset shows), kernels are looked up by name and launches are only logged.
 *
 * Environment, read at each call so a test can change it between calls:
 *   FAKE_CUDA_DEVICES=n       devices (default 1; 0 makes cuInit return CUDA_ERROR_NO_DEVICE)
 *   FAKE_CUDA_CC=M.m          compute capability of every device (default 9.0)
 *   FAKE_CUDA_SMS=n           multiprocessors per device (default 4)
 *   FAKE_CUDA_VERSION=n       what cuDriverGetVersion reports (default 13000)
 *   FAKE_CUDA_INIT_ERROR=n    the CUresult cuInit returns
 *   FAKE_CUDA_NO_BINARY=1     cuModuleLoadData returns CUDA_ERROR_NO_BINARY_FOR_GPU
 *   FAKE_CUDA_MISSING=a,b     cuGetProcAddress does not know these names
 *   FAKE_CUDA_FAIL=name:err,… these entry points return CUresult err (after logging)
 *   FAKE_CUDA_LOG=file        one line per call: the function and its key arguments
 *
 * Exported for tests besides cuGetProcAddress_v2: fake_cuda_live(what), the number of live
 * objects of a kind, so a test can check that gridsync releases what it acquired.
 *
 * Built with -DFAKE_CUDA_TOO_OLD it is a pre-12.0 driver instead: it exports only the old
 * cuGetProcAddress (no _v2), which gridsync must refuse.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GS_DRIVER_FUNCTIONS: the list of entry points the core resolves. Taking it from the core
 * (instead of copying it) means a function added there without a fake here fails to build. */
#include "driver.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

#define FAKE_MAX_DEVICES 8
#define FAKE_MAX_STACK 16
#define MAGIC_CTX 0x43545821u
#define MAGIC_STREAM 0x53545245u
#define MAGIC_STREAM_DEAD 0xdeadbeefu
#define MAGIC_MODULE 0x4d4f4455u
#define MAGIC_FUNCTION 0x46554e43u

/* ---- environment and logging ---------------------------------------------------------- */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static long env_long(const char *name, long fallback)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return fallback;
    char *end;
    long x = strtol(v, &end, 10);
    return *end ? fallback : x;
}

/* Whether `name` is an element of the comma-separated list in variable `var`; if the
 * element has a ":value" suffix, *value gets it. */
static int env_list_has(const char *var, const char *name, long *value)
{
    const char *list = getenv(var);
    size_t len = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n >= len && strncmp(p, name, len) == 0 && (n == len || p[len] == ':')) {
            if (value)
                *value = n > len ? strtol(p + len + 1, NULL, 10) : (long)CUDA_ERROR_UNKNOWN;
            return 1;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

static void fake_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fake_log(const char *fmt, ...)
{
    const char *path = getenv("FAKE_CUDA_LOG");
    if (!path || !*path)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* Opened per line in append mode: lines of several threads (or of a test that reads the
     * log half-way) are always whole. */
    pthread_mutex_lock(&g_lock);
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "%s\n", line);
        fclose(f);
    }
    pthread_mutex_unlock(&g_lock);
}

/* Logs the call; returns the error FAKE_CUDA_FAIL injects for it, or CUDA_SUCCESS. */
#define FAKE_ENTER(name, ...)                                   \
    do {                                                        \
        fake_log(name __VA_ARGS__);                             \
        long injected_;                                         \
        if (env_list_has("FAKE_CUDA_FAIL", name, &injected_))   \
            return (CUresult)injected_;                         \
    } while (0)

/* ---- error names ------------------------------------------------------------------- */

static const struct {
    CUresult rc;
    const char *name, *text;
} g_errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

/* The name (or the description) of `error`; NULL and CUDA_ERROR_INVALID_VALUE for a value
 * the driver does not know, as the real one answers. */
static CUresult error_words(CUresult error, const char **str, int description)
{
    if (!str)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++)
        if (g_errors[i].rc == error) {
            *str = description ? g_errors[i].text : g_errors[i].name;
            return CUDA_SUCCESS;
        }
    *str = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuGetErrorName(CUresult error, const char **str)
{
    FAKE_ENTER("cuGetErrorName", " %d", (int)error);
    return error_words(error, str, 0);
}

static CUresult fake_cuGetErrorString(CUresult error, const char **str)
{
    FAKE_ENTER("cuGetErrorString", " %d", (int)error);
    return error_words(error, str, 1);
}

/* ---- init and devices ----------------------------------------------------------------- */

static int g_initialized;

static int device_count(void)
{
    long n = env_long("FAKE_CUDA_DEVICES", 1);
    return n < 0 ? 0 : n > FAKE_MAX_DEVICES ? FAKE_MAX_DEVICES : (int)n;
}

static CUresult fake_cuInit(unsigned int flags)
{
    FAKE_ENTER("cuInit", " flags=%u", flags);
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    long err = env_long("FAKE_CUDA_INIT_ERROR", 0);
    if (err)
        return (CUresult)err;
    if (device_count() == 0)
        return CUDA_ERROR_NO_DEVICE;
    g_initialized = 1;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDriverGetVersion(int *version)
{
    FAKE_ENTER("cuDriverGetVersion", "");
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = (int)env_long("FAKE_CUDA_VERSION", 13000);
    return CUDA_SUCCESS;
}

static CUresult check_device(CUdevice dev)
{
    if (!g_initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= device_count())
        return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_SUCCESS;
}

/* What a query of the driver's state answers before writing to `out`: the driver's order
 * of checks (initialised first, then the pointer). */
static CUresult query_ok(const void *out)
{
    return !g_initialized ? CUDA_ERROR_NOT_INITIALIZED : !out ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetCount(int *count)
{
    FAKE_ENTER("cuDeviceGetCount", "");
    CUresult rc = query_ok(count);
    if (rc == CUDA_SUCCESS)
        *count = device_count();
    return rc;
}

static CUresult fake_cuDeviceGet(CUdevice *dev, int ordinal)
{
    FAKE_ENTER("cuDeviceGet", " %d", ordinal);
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = check_device(ordinal);
    if (rc == CUDA_SUCCESS)
        *dev = ordinal; /* CUdevice values are ordinals, as in every real driver so far */
    return rc;
}

static void compute_capability(int *major, int *minor)
{
    const char *cc = getenv("FAKE_CUDA_CC");
    *major = 9;
    *minor = 0;
    if (cc && *cc)
        sscanf(cc, "%d.%d", major, minor);
}

static CUresult fake_cuDeviceGetName(char *name, int len, CUdevice dev)
{
    FAKE_ENTER("cuDeviceGetName", " device=%d", (int)dev);
    CUresult rc = check_device(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "Fake CUDA Device %d", (int)dev);
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice dev)
{
    FAKE_ENTER("cuDeviceGetAttribute", " attr=%d device=%d", (int)attr, (int)dev);
    CUresult rc = check_device(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    int major, minor;
    compute_capability(&major, &minor);
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = major; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = minor; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = (int)env_long("FAKE_CUDA_SMS", 4); break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
    default: *value = 0; break;
    }
    return CUDA_SUCCESS;
}

/* ---- contexts ------------------------------------------------------------------------- */

typedef struct fake_ctx {
    uint32_t magic;
    int device;
    int retains;                        /* primary context reference count; 0 = inactive */
    unsigned long long id;              /* new for every activation, as cuCtxGetId's are */
    unsigned long long legacy_stream_id; /* the id of this context's NULL stream */
} fake_ctx;

static fake_ctx g_primary[FAKE_MAX_DEVICES];
static unsigned long long g_next_ctx_id = 1;
/* Stream ids come from one counter for created, legacy and per-thread streams alike, so
 * every stream the process ever sees has its own id (as cuStreamGetId promises). */
static unsigned long long g_next_stream_id = 1;

static _Thread_local fake_ctx *t_stack[FAKE_MAX_STACK];
static _Thread_local int t_depth;

static fake_ctx *current_ctx(void)
{
    return t_depth ? t_stack[t_depth - 1] : NULL;
}

static int ctx_alive(const fake_ctx *c)
{
    return c && c >= g_primary && c < g_primary + FAKE_MAX_DEVICES && c->magic == MAGIC_CTX && c->retains > 0;
}

static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    FAKE_ENTER("cuDevicePrimaryCtxRetain", " device=%d", (int)dev);
    CUresult rc = check_device(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    fake_ctx *c = &g_primary[dev];
    if (c->retains++ == 0) {
        c->magic = MAGIC_CTX;
        c->device = (int)dev;
        c->id = g_next_ctx_id++;
        c->legacy_stream_id = g_next_stream_id++;
    }
    pthread_mutex_unlock(&g_lock);
    *pctx = (CUcontext)(void *)c;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxRelease(CUdevice dev)
{
    FAKE_ENTER("cuDevicePrimaryCtxRelease", " device=%d", (int)dev);
    CUresult rc = check_device(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&g_lock);
    rc = g_primary[dev].retains > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CUDA_SUCCESS)
        g_primary[dev].retains--;
    pthread_mutex_unlock(&g_lock);
    return rc;
}

static CUresult fake_cuCtxGetCurrent(CUcontext *pctx)
{
    FAKE_ENTER("cuCtxGetCurrent", "");
    CUresult rc = query_ok(pctx);
    if (rc == CUDA_SUCCESS)
        *pctx = (CUcontext)(void *)current_ctx();
    return rc;
}

static CUresult fake_cuCtxGetDevice(CUdevice *dev)
{
    FAKE_ENTER("cuCtxGetDevice", "");
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    fake_ctx *c = current_ctx();
    if (!ctx_alive(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    *dev = c->device;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
    FAKE_ENTER("cuCtxGetId", "");
    if (!id)
        return CUDA_ERROR_INVALID_VALUE;
    fake_ctx *c = ctx ? (fake_ctx *)(void *)ctx : current_ctx();
    if (!ctx_alive(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    *id = c->id;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxPushCurrent(CUcontext ctx)
{
    fake_ctx *c = (fake_ctx *)(void *)ctx;
    FAKE_ENTER("cuCtxPushCurrent", " device=%d", ctx_alive(c) ? c->device : -1);
    if (!ctx_alive(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (t_depth == FAKE_MAX_STACK)
        return CUDA_ERROR_INVALID_VALUE;
    t_stack[t_depth++] = c;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxPopCurrent(CUcontext *pctx)
{
    FAKE_ENTER("cuCtxPopCurrent", "");
    if (t_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_ctx *c = t_stack[--t_depth];
    if (pctx)
        *pctx = (CUcontext)(void *)c;
    return CUDA_SUCCESS;
}

/* ---- memory --------------------------------------------------------------------------- */

typedef struct fake_alloc {
    struct fake_alloc *next;
    uintptr_t base;
    size_t size;
} fake_alloc;

static fake_alloc *g_allocs;
static long g_live_allocs;

/* The allocation that contains [p, p + 1), or NULL. Call with g_lock held. */
static fake_alloc *find_alloc(uintptr_t p)
{
    for (fake_alloc *a = g_allocs; a; a = a->next)
        if (p >= a->base && p - a->base < a->size)
            return a;
    return NULL;
}

static CUresult fake_cuMemAlloc(CUdeviceptr *dptr, size_t bytes)
{
    FAKE_ENTER("cuMemAlloc", " bytes=%zu", bytes);
    if (!dptr || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx_alive(current_ctx()))
        return CUDA_ERROR_INVALID_CONTEXT;
    /* 256-byte aligned like cudaMalloc's, and not zeroed: a caller that relies on fresh
     * memory being zero is wrong on a real GPU, so it must be wrong here too. */
    size_t rounded = (bytes + 255) & ~(size_t)255;
    void *mem = aligned_alloc(256, rounded);
    fake_alloc *a = malloc(sizeof *a);
    if (!mem || !a) {
        free(mem);
        free(a);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(mem, 0xcd, rounded);
    a->base = (uintptr_t)mem;
    a->size = bytes;
    pthread_mutex_lock(&g_lock);
    a->next = g_allocs;
    g_allocs = a;
    g_live_allocs++;
    pthread_mutex_unlock(&g_lock);
    *dptr = (CUdeviceptr)a->base;
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemFree(CUdeviceptr dptr)
{
    FAKE_ENTER("cuMemFree", " 0x%llx", (unsigned long long)dptr);
    pthread_mutex_lock(&g_lock);
    fake_alloc **pp = &g_allocs;
    while (*pp && (*pp)->base != (uintptr_t)dptr)
        pp = &(*pp)->next;
    fake_alloc *a = *pp;
    if (a) {
        *pp = a->next;
        g_live_allocs--;
    }
    pthread_mutex_unlock(&g_lock);
    if (!a)
        return CUDA_ERROR_INVALID_VALUE; /* not the start of a live allocation */
    memset((void *)a->base, 0xdd, a->size);
    free((void *)a->base);
    free(a);
    return CUDA_SUCCESS;
}

static CUresult fake_cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr)
{
    FAKE_ENTER("cuPointerGetAttributes", " n=%u 0x%llx", n, (unsigned long long)ptr);
    if (!attrs || !data)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    fake_alloc *a = find_alloc((uintptr_t)ptr);
    uintptr_t base = a ? a->base : 0;
    size_t size = a ? a->size : 0;
    pthread_mutex_unlock(&g_lock);
    /* Like the real driver, an address it does not know is not an error: it is memory of
     * type 0 (pageable host memory, or nothing at all). */
    for (unsigned int i = 0; i < n; i++) {
        switch (attrs[i]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned int *)data[i] = a ? CU_MEMORYTYPE_DEVICE : 0; break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data[i] = (CUdeviceptr)base; break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data[i] = size; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data[i] = a ? 0 : -1; break;
        default: return CUDA_ERROR_INVALID_VALUE; /* the fake knows only these: extend it */
        }
    }
    return CUDA_SUCCESS;
}

/* ---- streams -------------------------------------------------------------------------- */

typedef struct fake_stream {
    uint32_t magic;
    unsigned long long id;
    fake_ctx *ctx;
    struct fake_stream *next_free;
} fake_stream;

/* Destroyed stream objects are reused, newest first, so a stream created after a destroy
 * gets the destroyed stream's handle back, as happens with real drivers: the handle alone
 * must never be taken for the stream's identity. */
static fake_stream *g_free_streams;
static long g_live_streams;
static _Thread_local unsigned long long t_per_thread_stream_id;

/* The context and id of any stream handle, the special ones included. */
static CUresult resolve_stream(CUstream s, fake_ctx **ctx, unsigned long long *id)
{
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
        fake_ctx *c = current_ctx();
        if (!ctx_alive(c))
            return CUDA_ERROR_INVALID_CONTEXT;
        *ctx = c;
        if (s == CU_STREAM_PER_THREAD) {
            pthread_mutex_lock(&g_lock);
            if (!t_per_thread_stream_id)
                t_per_thread_stream_id = g_next_stream_id++;
            pthread_mutex_unlock(&g_lock);
            *id = t_per_thread_stream_id;
        } else {
            *id = c->legacy_stream_id;
        }
        return CUDA_SUCCESS;
    }
    fake_stream *st = (fake_stream *)(void *)s;
    if (st->magic != MAGIC_STREAM)
        return CUDA_ERROR_INVALID_HANDLE;
    *ctx = st->ctx;
    *id = st->id;
    return CUDA_SUCCESS;
}

static CUresult fake_cuStreamCreate(CUstream *ps, unsigned int flags)
{
    FAKE_ENTER("cuStreamCreate", " flags=%u", flags);
    if (!ps || flags > CU_STREAM_NON_BLOCKING)
        return CUDA_ERROR_INVALID_VALUE;
    fake_ctx *c = current_ctx();
    if (!ctx_alive(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&g_lock);
    fake_stream *s = g_free_streams;
    if (s)
        g_free_streams = s->next_free;
    else
        s = malloc(sizeof *s);
    if (s) {
        s->magic = MAGIC_STREAM;
        s->id = g_next_stream_id++;
        s->ctx = c;
        s->next_free = NULL;
        g_live_streams++;
    }
    pthread_mutex_unlock(&g_lock);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ps = (CUstream)(void *)s;
    return CUDA_SUCCESS;
}

static CUresult fake_cuStreamDestroy(CUstream s)
{
    FAKE_ENTER("cuStreamDestroy", " %p", (void *)s);
    fake_stream *st = (fake_stream *)(void *)s;
    if (!st || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || st->magic != MAGIC_STREAM)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&g_lock);
    st->magic = MAGIC_STREAM_DEAD;
    st->next_free = g_free_streams;
    g_free_streams = st;
    g_live_streams--;
    pthread_mutex_unlock(&g_lock);
    return CUDA_SUCCESS;
}

static CUresult fake_cuStreamSynchronize(CUstream s)
{
    fake_ctx *c;
    unsigned long long id;
    CUresult rc = resolve_stream(s, &c, &id);
    FAKE_ENTER("cuStreamSynchronize", " stream=%llu", rc == CUDA_SUCCESS ? id : 0ull);
    return rc;
}

/* A query about stream `s` that writes to `out`: its context and id, or why not. */
static CUresult stream_query(CUstream s, const void *out, fake_ctx **ctx, unsigned long long *id)
{
    unsigned long long ignored;
    return out ? resolve_stream(s, ctx, id ? id : &ignored) : CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuStreamGetId(CUstream s, unsigned long long *id)
{
    FAKE_ENTER("cuStreamGetId", " %p", (void *)s);
    fake_ctx *c;
    return stream_query(s, id, &c, id);
}

static CUresult fake_cuStreamGetCtx(CUstream s, CUcontext *pctx)
{
    FAKE_ENTER("cuStreamGetCtx", "");
    fake_ctx *c;
    CUresult rc = stream_query(s, pctx, &c, NULL);
    if (rc == CUDA_SUCCESS)
        *pctx = (CUcontext)(void *)c;
    return rc;
}

/* The fake never captures: every stream of a live context is not capturing. */
static CUresult not_capturing(CUstream s, CUstreamCaptureStatus *status)
{
    fake_ctx *c;
    CUresult rc = stream_query(s, status, &c, NULL);
    if (rc == CUDA_SUCCESS)
        *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return rc;
}

static CUresult fake_cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status)
{
    FAKE_ENTER("cuStreamIsCapturing", "");
    return not_capturing(s, status);
}

static CUresult fake_cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id_out,
                                            CUgraph *graph, const CUgraphNode **deps, size_t *ndeps)
{
    FAKE_ENTER("cuStreamGetCaptureInfo", "");
    CUresult rc = not_capturing(s, status);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (id_out)
        *id_out = 0;
    if (graph)
        *graph = NULL;
    if (deps)
        *deps = NULL;
    if (ndeps)
        *ndeps = 0;
    return CUDA_SUCCESS;
}

/* Graphs do not exist in the fake: the core only reaches these while capturing. */
static CUresult fake_cuUserObjectCreate(CUuserObject *obj, void *ptr, CUhostFn destroy, unsigned int refs,
                                        unsigned int flags)
{
    FAKE_ENTER("cuUserObjectCreate", "");
    (void)obj, (void)ptr, (void)destroy, (void)refs, (void)flags;
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult fake_cuUserObjectRelease(CUuserObject obj, unsigned int count)
{
    FAKE_ENTER("cuUserObjectRelease", "");
    (void)obj, (void)count;
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult fake_cuGraphRetainUserObject(CUgraph graph, CUuserObject obj, unsigned int count, unsigned int flags)
{
    FAKE_ENTER("cuGraphRetainUserObject", "");
    (void)graph, (void)obj, (void)count, (void)flags;
    return CUDA_ERROR_NOT_SUPPORTED;
}

static _Thread_local CUstreamCaptureMode t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

static CUresult fake_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    FAKE_ENTER("cuThreadExchangeStreamCaptureMode", " mode=%d", mode ? (int)*mode : -1);
    if (!mode || (int)*mode < 0 || (int)*mode > (int)CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = t_capture_mode;
    t_capture_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream s)
{
    fake_ctx *c;
    unsigned long long id;
    CUresult rc = resolve_stream(s, &c, &id);
    FAKE_ENTER("cuMemsetD8Async", " 0x%llx value=%u bytes=%zu stream=%llu", (unsigned long long)dst,
               (unsigned)value, n, rc == CUDA_SUCCESS ? id : 0ull);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (c != current_ctx())
        return CUDA_ERROR_INVALID_HANDLE; /* a stream of another context */
    pthread_mutex_lock(&g_lock);
    fake_alloc *a = find_alloc((uintptr_t)dst);
    int inside = a && (uintptr_t)dst - a->base + n <= a->size;
    pthread_mutex_unlock(&g_lock);
    if (!inside)
        return CUDA_ERROR_INVALID_VALUE;
    memset((void *)(uintptr_t)dst, value, n); /* "async" work done at once: the fake has no queue */
    return CUDA_SUCCESS;
}

/* Fake device memory is host memory, so a copy to the host is a memcpy. */
static CUresult fake_cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
    FAKE_ENTER("cuMemcpyDtoH", " 0x%llx bytes=%zu", (unsigned long long)src, n);
    if (!current_ctx())
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&g_lock);
    fake_alloc *a = find_alloc((uintptr_t)src);
    int inside = a && (uintptr_t)src - a->base + n <= a->size;
    pthread_mutex_unlock(&g_lock);
    if (!inside || !dst)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

/* ---- modules, functions, launches ----------------------------------------------------- */

typedef struct fake_function {
    uint32_t magic;
    struct fake_function *next;
    char name[128];
} fake_function;

typedef struct fake_module {
    uint32_t magic;
    fake_function *functions;
} fake_module;

static long g_live_modules;

/* What kind of code image `image` is, by its first bytes; NULL when it is none. */
static const char *image_kind(const void *image)
{
    const unsigned char *p = image;
    uint32_t magic;
    memcpy(&magic, p, sizeof magic);
    if (magic == 0xba55ed50u)
        return "fatbin";
    if (memcmp(p, "\177ELF", 4) == 0)
        return "cubin";
    if (memcmp(p, "//", 2) == 0 || memcmp(p, ".version", 8) == 0)
        return "ptx";
    return NULL;
}

static CUresult fake_cuModuleLoadData(CUmodule *pmod, const void *image)
{
    const char *kind = image ? image_kind(image) : NULL;
    FAKE_ENTER("cuModuleLoadData", " %s", kind ? kind : "(not a code image)");
    if (!pmod || !image)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx_alive(current_ctx()))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!kind)
        return CUDA_ERROR_INVALID_IMAGE;
    if (env_long("FAKE_CUDA_NO_BINARY", 0))
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    fake_module *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->magic = MAGIC_MODULE;
    pthread_mutex_lock(&g_lock);
    g_live_modules++;
    pthread_mutex_unlock(&g_lock);
    *pmod = (CUmodule)(void *)m;
    return CUDA_SUCCESS;
}

static CUresult fake_cuModuleUnload(CUmodule mod)
{
    FAKE_ENTER("cuModuleUnload", "");
    fake_module *m = (fake_module *)(void *)mod;
    if (!m || m->magic != MAGIC_MODULE)
        return CUDA_ERROR_INVALID_HANDLE;
    for (fake_function *f = m->functions, *next; f; f = next) {
        next = f->next;
        f->magic = 0;
        free(f);
    }
    m->magic = 0;
    free(m);
    pthread_mutex_lock(&g_lock);
    g_live_modules--;
    pthread_mutex_unlock(&g_lock);
    return CUDA_SUCCESS;
}

static CUresult fake_cuModuleGetFunction(CUfunction *pf, CUmodule mod, const char *name)
{
    FAKE_ENTER("cuModuleGetFunction", " %s", name ? name : "(null)");
    fake_module *m = (fake_module *)(void *)mod;
    if (!pf || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!m || m->magic != MAGIC_MODULE)
        return CUDA_ERROR_INVALID_HANDLE;
    if (strlen(name) >= sizeof ((fake_function *)0)->name)
        return CUDA_ERROR_NOT_FOUND;
    fake_function *f;
    for (f = m->functions; f; f = f->next)
        if (strcmp(f->name, name) == 0)
            break;
    if (!f) {
        f = calloc(1, sizeof *f);
        if (!f)
            return CUDA_ERROR_OUT_OF_MEMORY;
        f->magic = MAGIC_FUNCTION;
        strcpy(f->name, name);
        f->next = m->functions;
        m->functions = f;
    }
    *pf = (CUfunction)(void *)f;
    return CUDA_SUCCESS;
}

static int function_valid(CUfunction fn)
{
    const fake_function *f = (const fake_function *)(const void *)fn;
    return f && f->magic == MAGIC_FUNCTION;
}

static CUresult fake_cuFuncGetAttribute(int *value, CUfunction_attribute attr, CUfunction fn)
{
    FAKE_ENTER("cuFuncGetAttribute", " attr=%d", (int)attr);
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    if (!function_valid(fn))
        return CUDA_ERROR_INVALID_HANDLE;
    *value = attr == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
    return CUDA_SUCCESS;
}

static CUresult fake_cuFuncSetAttribute(CUfunction fn, CUfunction_attribute attr, int value)
{
    FAKE_ENTER("cuFuncSetAttribute", " attr=%d value=%d", (int)attr, value);
    return function_valid(fn) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult fake_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction fn, int block_size,
                                                                 size_t smem)
{
    FAKE_ENTER("cuOccupancyMaxActiveBlocksPerMultiprocessor", " block=%d smem=%zu", block_size, smem);
    if (!blocks || block_size <= 0 || block_size > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (!function_valid(fn))
        return CUDA_ERROR_INVALID_HANDLE;
    *blocks = 2048 / block_size; /* 2048 threads per multiprocessor, no other limit */
    return CUDA_SUCCESS;
}

static CUresult fake_cuLaunchKernel(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                    unsigned int by, unsigned int bz, unsigned int smem, CUstream s, void **params,
                                    void **extra)
{
    fake_ctx *c;
    unsigned long long id = 0;
    CUresult rc = resolve_stream(s, &c, &id);
    const fake_function *f = (const fake_function *)(const void *)fn;
    FAKE_ENTER("cuLaunchKernel", " %s grid=%u block=%u smem=%u stream=%llu%s", function_valid(fn) ? f->name : "(invalid)",
               gx, bx, smem, id, gy != 1 || gz != 1 || by != 1 || bz != 1 ? " (multi-dimensional)" : "");
    if (!function_valid(fn))
        return CUDA_ERROR_INVALID_HANDLE;
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!ctx_alive(current_ctx()))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (c != current_ctx())
        return CUDA_ERROR_INVALID_HANDLE; /* a stream of another context */
    if (!gx || !gy || !gz || !bx || !by || !bz || (unsigned long long)bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS; /* nothing runs: the fake has no device */
}

/* ---- cuGetProcAddress ----------------------------------------------------------------- */

typedef struct proc_entry {
    const char *name;
    int version; /* the CUDA version whose ABI this implementation has */
    void *fn;
} proc_entry;

/* Every function of GS_DRIVER_FUNCTIONS must have a fake_<name> whose type is exactly the
 * PFN_<name>_v<version> the core calls it through: a mismatch would be a silent ABI bug in
 * the fake, so it is a compile error. */
#define FAKE_CHECK_TYPE(name, version)                                                                \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&fake_##name), PFN_##name##_v##version), \
                   "fake_" #name " does not have the type PFN_" #name "_v" #version);
GS_DRIVER_FUNCTIONS(FAKE_CHECK_TYPE)
FAKE_CHECK_TYPE(cuDriverGetVersion, 2020)
#undef FAKE_CHECK_TYPE

#define FAKE_PROC(name, version) {#name, version, (void *)fake_##name},
static const proc_entry g_procs[] = {
    GS_DRIVER_FUNCTIONS(FAKE_PROC) FAKE_PROC(cuDriverGetVersion, 2020)
};
#undef FAKE_PROC

static CUresult get_proc(const char *symbol, void **pfn, int version, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *status)
{
    fake_log("cuGetProcAddress %s version=%d flags=%llu", symbol ? symbol : "(null)", version,
             (unsigned long long)flags);
    if (status)
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    if (env_list_has("FAKE_CUDA_MISSING", symbol, NULL))
        return CUDA_ERROR_NOT_FOUND;
    for (size_t i = 0; i < sizeof g_procs / sizeof g_procs[0]; i++) {
        if (strcmp(g_procs[i].name, symbol) != 0)
            continue;
        if (version < g_procs[i].version) {
            if (status)
                *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            return CUDA_ERROR_NOT_FOUND;
        }
        *pfn = g_procs[i].fn;
        if (status)
            *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_NOT_FOUND;
}

#ifndef FAKE_CUDA_TOO_OLD
FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult *status)
{
    return get_proc(symbol, pfn, version, flags, status);
}
#else
/* The CUDA 11.3 form, without the query result: the only one a pre-12.0 driver has. */
FAKE_EXPORT CUresult fake_cuGetProcAddress_v1(const char *symbol, void **pfn, int version, cuuint64_t flags)
    __asm__("cuGetProcAddress");
FAKE_EXPORT CUresult fake_cuGetProcAddress_v1(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    return get_proc(symbol, pfn, version, flags, NULL);
}
#endif

/* ---- for tests ------------------------------------------------------------------------ */

/* Live objects of one kind: "mem" (allocations), "streams" (created, not destroyed),
 * "modules", "primary" (primary context retains, all devices) and "stack" (contexts pushed
 * on the calling thread). -1 for an unknown kind. Its presence also tells a test that the
 * libcuda.so.1 it loaded is this fake and not a real driver. */
FAKE_EXPORT long fake_cuda_live(const char *kind)
{
    long n = -1;
    pthread_mutex_lock(&g_lock);
    if (strcmp(kind, "mem") == 0)
        n = g_live_allocs;
    else if (strcmp(kind, "streams") == 0)
        n = g_live_streams;
    else if (strcmp(kind, "modules") == 0)
        n = g_live_modules;
    else if (strcmp(kind, "primary") == 0) {
        n = 0;
        for (int i = 0; i < FAKE_MAX_DEVICES; i++)
            n += g_primary[i].retains;
    } else if (strcmp(kind, "stack") == 0)
        n = t_depth;
    pthread_mutex_unlock(&g_lock);
    return n;
}
