/* Contexts: the backend chosen for a device, making a context current, and the default
 * contexts that a NULL ctx stands for. */
#define _GNU_SOURCE
#include "context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "error.h"

/* The most workspace per stream a backend may ask for (gridsync.h promises 64 KiB). */
#define GS_MAX_WORKSPACE_BYTES (64u * 1024u)

/* ---- backend selection for a device --------------------------------------------------- */

static gs_status try_backend(const gs_backend_file *file, void *user)
{
    gs_context *ctx = user;
    const gs_backend_ops *ops = file->ops;
    gs_backend_device dev = {
        .struct_size = sizeof dev,
        .device = ctx->device,
        .context = ctx->cu,
        .cc_major = ctx->cc_major,
        .cc_minor = ctx->cc_minor,
        .multiprocessor_count = ctx->sm_count,
        .max_threads_per_multiprocessor = ctx->max_threads_per_sm,
    };
    gs_backend_instance *inst = NULL;
    gs_status st = ops->open(&dev, &inst);
    if (st != GS_SUCCESS) {
        if (!gs_last_error_message()[0])
            gs_set_error("%s: open() on device %d returned %s", file->path, ctx->ordinal, gs_status_string(st));
        /* "could not set up" is init failure unless the backend was specific about why */
        return st == GS_ERROR_NO_KERNEL_IMAGE || st == GS_ERROR_OUT_OF_MEMORY || st == GS_ERROR_CUDA
                   ? st
                   : GS_ERROR_BACKEND_INIT_FAILED;
    }
    uint64_t ws = ops->workspace_size(inst);
    if (ws == 0 || ws > GS_MAX_WORKSPACE_BYTES) {
        ops->close(inst);
        return gs_fail(GS_ERROR_BACKEND_INIT_FAILED,
                       "%s: asks for %llu bytes of workspace per stream (must be 1..%u)", file->path,
                       (unsigned long long)ws, GS_MAX_WORKSPACE_BYTES);
    }
    memset(ctx->supported, 0, sizeof ctx->supported);
    for (int d = 0; d < GS_DTYPE_COUNT; d++)
        for (int o = 0; o < GS_OP_COUNT; o++)
            for (int r = 0; r < GS_DTYPE_COUNT; r++)
                if (gs_op_defined((gs_dtype)d, (gs_op)o) &&
                    ops->query_reduce(inst, (gs_dtype)d, (gs_op)o, (gs_dtype)r) == GS_SUCCESS)
                    ctx->supported[d][o] |= (uint16_t)(1u << r);
    ctx->backend = file;
    ctx->instance = inst;
    ctx->workspace_bytes = ws;
    return GS_SUCCESS;
}

static gs_status device_attr(gs_context *ctx, CUdevice_attribute attr, int *value, const char *name)
{
    CUresult rc = ctx->drv->cuDeviceGetAttribute(value, attr, ctx->device);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(ctx->drv, rc, "cuDeviceGetAttribute(%s, device %d)", name, ctx->ordinal);
    return GS_SUCCESS;
}

gs_status gs_context_init(gs_context *ctx, const gs_driver *drv, CUcontext cu, CUdevice dev, int ordinal)
{
    ctx->drv = drv;
    ctx->cu = cu;
    ctx->device = dev;
    ctx->ordinal = ordinal;
    pthread_mutex_init(&ctx->lock, NULL);
    CUresult rc = drv->cuCtxGetId(cu, &ctx->cu_id);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(drv, rc, "cuCtxGetId");
    gs_status st;
    if ((st = device_attr(ctx, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &ctx->cc_major, "compute capability major")) ||
        (st = device_attr(ctx, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &ctx->cc_minor, "compute capability minor")) ||
        (st = device_attr(ctx, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &ctx->sm_count, "multiprocessor count")) ||
        (st = device_attr(ctx, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &ctx->max_threads_per_sm,
                          "max threads per multiprocessor")))
        return st;
    rc = drv->cuDeviceGetName(ctx->device_name, sizeof ctx->device_name, dev);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(drv, rc, "cuDeviceGetName(device %d)", ordinal);

    gs_strbuf log = {0};
    gs_strbuf_appendf(&log, "device %d (%s)", ordinal, ctx->device_name);
    gs_trace("context: device %d: %s, compute capability %d.%d, %d multiprocessors", ordinal, ctx->device_name,
             ctx->cc_major, ctx->cc_minor, ctx->sm_count);
    st = gs_select_backend(ctx->cc_major, ctx->cc_minor, try_backend, ctx, &log);
    ctx->selection_log = log.data;
    if (st != GS_SUCCESS) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", gs_last_error_message());
        return gs_fail(st, "device %d (%s, compute capability %d.%d): %s", ordinal, ctx->device_name, ctx->cc_major,
                       ctx->cc_minor, msg);
    }
    return GS_SUCCESS;
}

void gs_context_fini(gs_context *ctx)
{
    gs_workspaces_free(ctx);
    if (ctx->instance)
        ctx->backend->ops->close(ctx->instance);
    ctx->instance = NULL;
    free(ctx->selection_log);
    ctx->selection_log = NULL;
    pthread_mutex_destroy(&ctx->lock);
}

/* ---- making a context current ----------------------------------------------------------- */

/* Pushes cu unless it is already current; *pushed says a pop is owed. */
static CUresult push_current(const gs_driver *d, CUcontext cu, int *pushed)
{
    CUcontext cur = NULL;
    *pushed = 0;
    if (d->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == cu)
        return CUDA_SUCCESS;
    CUresult rc = d->cuCtxPushCurrent(cu);
    *pushed = rc == CUDA_SUCCESS;
    return rc;
}

static void pop_current(const gs_driver *d, int pushed)
{
    CUcontext popped;
    if (pushed)
        d->cuCtxPopCurrent(&popped);
}

gs_status gs_context_push(const gs_context *ctx, int *pushed)
{
    CUresult rc = push_current(ctx->drv, ctx->cu, pushed);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(ctx->drv, rc, "cuCtxPushCurrent(the CUDA context of device %d)", ctx->ordinal);
    return GS_SUCCESS;
}

void gs_context_pop(const gs_context *ctx, int pushed)
{
    pop_current(ctx->drv, pushed);
}

/* ---- contexts on a device's primary context ---------------------------------------------- */

static gs_status open_device(const gs_driver *drv, int device, CUdevice *dev)
{
    int count = 0;
    CUresult rc = drv->cuDeviceGetCount(&count);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(drv, rc, "cuDeviceGetCount");
    if (device < 0 || device >= count)
        return gs_fail(GS_ERROR_NO_DEVICE, "device %d does not exist (%d CUDA device%s visible)", device, count,
                       count == 1 ? "" : "s");
    rc = drv->cuDeviceGet(dev, device);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(drv, rc, "cuDeviceGet(%d)", device);
    return GS_SUCCESS;
}

/* Makes a context on the primary context of `device`; `is_default` marks library-owned. */
static gs_status create_on_primary(const gs_driver *drv, int device, int is_default, gs_context **out)
{
    CUdevice dev;
    gs_status st = open_device(drv, device, &dev);
    if (st != GS_SUCCESS)
        return st;
    gs_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return gs_fail(GS_ERROR_OUT_OF_MEMORY, "out of host memory for a context");
    CUcontext cu;
    CUresult rc = drv->cuDevicePrimaryCtxRetain(&cu, dev);
    if (rc != CUDA_SUCCESS) {
        free(ctx);
        return gs_cuda_error(drv, rc, "cuDevicePrimaryCtxRetain(device %d)", device);
    }
    ctx->owns_primary = 1;
    ctx->is_default = is_default;
    /* A failed push is no reason to stop here: gs_context_init reports what fails. */
    int pushed;
    push_current(drv, cu, &pushed);
    st = gs_context_init(ctx, drv, cu, dev, device);
    if (st != GS_SUCCESS)
        gs_context_fini(ctx);
    pop_current(drv, pushed);
    if (st != GS_SUCCESS) {
        drv->cuDevicePrimaryCtxRelease(dev);
        free(ctx);
        return st;
    }
    *out = ctx;
    return GS_SUCCESS;
}

gs_status gs_context_open(const gs_driver *drv, int device, gs_context **out)
{
    return create_on_primary(drv, device, 0, out);
}

void gs_context_close(gs_context *ctx)
{
    const gs_driver *drv = ctx->drv;
    int pushed;
    push_current(drv, ctx->cu, &pushed); /* as in create_on_primary */
    gs_context_fini(ctx);
    pop_current(drv, pushed);
    if (ctx->owns_primary)
        drv->cuDevicePrimaryCtxRelease(ctx->device);
    free(ctx);
}

/* ---- default contexts ----------------------------------------------------------------- */

/* Library-owned contexts, one per CUDA context (by cuCtxGetId), kept for the life of the
 * process. A thread-local cache makes the common case (same CUDA context as last time)
 * two cheap driver queries and no lock. */
typedef struct default_entry {
    struct default_entry *next;
    gs_context *ctx;
} default_entry;

static pthread_mutex_t g_default_lock = PTHREAD_MUTEX_INITIALIZER;
static default_entry *g_defaults;
static _Thread_local gs_context *t_last_default;

static gs_status create_default_for(const gs_driver *drv, CUcontext cu, gs_context **out)
{
    CUdevice dev;
    CUresult rc = drv->cuCtxGetDevice(&dev);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(drv, rc, "cuCtxGetDevice for the current context");
    /* The device ordinal of `dev`: CUdevice values are ordinals in every driver so far,
     * but find it properly. */
    int count = 0, ordinal = -1;
    drv->cuDeviceGetCount(&count);
    for (int i = 0; i < count; i++) {
        CUdevice d;
        if (drv->cuDeviceGet(&d, i) == CUDA_SUCCESS && d == dev) {
            ordinal = i;
            break;
        }
    }
    gs_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return gs_fail(GS_ERROR_OUT_OF_MEMORY, "out of host memory for a default context");
    ctx->is_default = 1;
    gs_status st = gs_context_init(ctx, drv, cu, dev, ordinal);
    if (st != GS_SUCCESS) {
        gs_context_fini(ctx);
        free(ctx);
        return st;
    }
    *out = ctx;
    return GS_SUCCESS;
}

gs_status gs_default_context(const gs_driver *drv, gs_context **out)
{
    CUcontext cu = NULL;
    CUresult rc = drv->cuCtxGetCurrent(&cu);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(drv, rc, "cuCtxGetCurrent");
    unsigned long long id = 0;
    if (cu) {
        rc = drv->cuCtxGetId(cu, &id);
        if (rc != CUDA_SUCCESS)
            return gs_cuda_error(drv, rc, "cuCtxGetId of the current context");
        gs_context *last = t_last_default;
        if (last && last->cu == cu && last->cu_id == id) {
            *out = last;
            return GS_SUCCESS;
        }
    }

    pthread_mutex_lock(&g_default_lock);
    gs_status st = GS_SUCCESS;
    gs_context *found = NULL;
    if (!cu) {
        /* No current context: device 0's primary context, as the runtime would pick. Its
         * default context retains it for the life of the process. */
        for (default_entry *e = g_defaults; e; e = e->next)
            if (e->ctx->owns_primary && e->ctx->ordinal == 0) {
                found = e->ctx;
                break;
            }
        if (!found)
            st = create_on_primary(drv, 0, 1, &found);
    } else {
        for (default_entry *e = g_defaults; e; e = e->next)
            if (e->ctx->cu_id == id) {
                found = e->ctx;
                break;
            }
        if (!found)
            st = create_default_for(drv, cu, &found);
    }
    if (st == GS_SUCCESS && found) {
        int known = 0;
        for (default_entry *e = g_defaults; e; e = e->next)
            known |= e->ctx == found;
        if (!known) {
            default_entry *e = malloc(sizeof *e);
            if (!e) {
                /* Made just now and not yet listed, so nobody else holds it: closed here,
                 * its backend instance and primary context retain given back. */
                gs_context_close(found);
                found = NULL;
                st = gs_fail(GS_ERROR_OUT_OF_MEMORY, "out of host memory for a default context");
            } else {
                e->ctx = found;
                e->next = g_defaults;
                g_defaults = e;
                gs_trace("context: default context for CUDA context id %llu on device %d", found->cu_id,
                         found->ordinal);
            }
        }
    }
    pthread_mutex_unlock(&g_default_lock);
    if (st != GS_SUCCESS)
        return st;
    if (cu)
        t_last_default = found;
    *out = found;
    return GS_SUCCESS;
}

/* ---- the entry points' context ------------------------------------------------------ */

gs_status gs_context_resolve(gs_context **ctx, const gs_driver **drv)
{
    gs_status st;
    *drv = gs_driver_get(&st);
    if (!*drv)
        return st;
    if (!*ctx)
        return gs_default_context(*drv, ctx);
    return GS_SUCCESS;
}
