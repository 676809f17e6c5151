#define _GNU_SOURCE
#include "context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "error.h"

/* Per-stream workspace limit (issue 4's budget). */
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

/* ctx->cu must be current. */
static void free_released(gs_context *ctx);

void gs_context_fini(gs_context *ctx)
{
    free_released(ctx);
    for (size_t i = 0; i < ctx->nslots; i++)
        if (ctx->slots[i].stream_id)
            ctx->drv->cuMemFree(ctx->slots[i].buffer);
    free(ctx->slots);
    ctx->slots = NULL;
    ctx->nslots = ctx->nused = 0;
    if (ctx->zero_stream)
        ctx->drv->cuStreamDestroy(ctx->zero_stream);
    if (ctx->instance)
        ctx->backend->ops->close(ctx->instance);
    ctx->instance = NULL;
    free(ctx->selection_log);
    ctx->selection_log = NULL;
    pthread_mutex_destroy(&ctx->lock);
}

/* ---- workspaces ----------------------------------------------------------------------- */

static size_t slot_index(unsigned long long id, size_t mask)
{
    /* splitmix64 finaliser: stream ids are small consecutive integers */
    unsigned long long z = id + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (size_t)(z ^ (z >> 31)) & mask;
}

static gs_workspace_slot *find_slot(gs_workspace_slot *slots, size_t nslots, unsigned long long id)
{
    size_t mask = nslots - 1;
    for (size_t i = slot_index(id, mask);; i = (i + 1) & mask)
        if (slots[i].stream_id == id || slots[i].stream_id == 0)
            return &slots[i];
}

static gs_status grow_table(gs_context *ctx)
{
    size_t n = ctx->nslots ? ctx->nslots * 2 : 16;
    gs_workspace_slot *slots = calloc(n, sizeof *slots);
    if (!slots)
        return gs_fail(GS_ERROR_OUT_OF_MEMORY, "out of host memory for the workspace table (%zu slots)", n);
    for (size_t i = 0; i < ctx->nslots; i++)
        if (ctx->slots[i].stream_id)
            *find_slot(slots, n, ctx->slots[i].stream_id) = ctx->slots[i];
    free(ctx->slots);
    ctx->slots = slots;
    ctx->nslots = n;
    return GS_SUCCESS;
}

/* Runs once per stream (and per queue), never on the hot path. It must also work while
 * some stream is being captured into a graph: the thread's capture mode is relaxed for the
 * allocation, and the zero fill goes to a private non-blocking stream (a legacy-stream
 * memset would join the capture and invalidate it). */
gs_status gs_alloc_zeroed(gs_context *ctx, size_t bytes, const char *what, CUdeviceptr *out)
{
    const gs_driver *d = ctx->drv;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CUresult rc = d->cuThreadExchangeStreamCaptureMode(&mode);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(d, rc, "cuThreadExchangeStreamCaptureMode for %s", what);
    gs_status st = GS_SUCCESS;
    CUdeviceptr buf = 0;
    if (!ctx->zero_stream && (rc = d->cuStreamCreate(&ctx->zero_stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
        ctx->zero_stream = NULL;
        st = gs_cuda_error(d, rc, "cuStreamCreate(non-blocking) to zero-fill %s", what);
    } else if ((rc = d->cuMemAlloc(&buf, bytes)) != CUDA_SUCCESS) {
        st = gs_cuda_error(d, rc, "cuMemAlloc(%zu bytes) for %s on device %d", bytes, what, ctx->ordinal);
    } else if ((rc = d->cuMemsetD8Async(buf, 0, bytes, ctx->zero_stream)) != CUDA_SUCCESS ||
               (rc = d->cuStreamSynchronize(ctx->zero_stream)) != CUDA_SUCCESS) {
        st = gs_cuda_error(d, rc, "zero-filling %s at 0x%llx", what, (unsigned long long)buf);
        d->cuMemFree(buf);
    }
    CUstreamCaptureMode restore = mode;
    d->cuThreadExchangeStreamCaptureMode(&restore);
    if (st == GS_SUCCESS)
        *out = buf;
    return st;
}

/* ---- workspaces of captured launches ---------------------------------------------------
 * cuStreamGetId (and other stream queries) are not permitted on a capturing stream - the
 * call fails and invalidates the capture - and a graph may be replayed long after, on any
 * stream, while the capturing stream is used directly. So a captured launch gets a
 * workspace of its own, tied to the graph: a CUDA user object whose destructor runs when
 * the graph (and every executable graph made from it) is gone. Destructors may not call
 * CUDA, so they only queue the buffer here; it is freed by the next gridsync call in that
 * CUDA context that is not capturing (or by gs_context_destroy). Buffers still queued at
 * exit are released with the CUDA context. */
typedef struct graph_buffer {
    struct graph_buffer *next;
    CUcontext cu;
    CUdeviceptr buffer;
} graph_buffer;

static pthread_mutex_t g_released_lock = PTHREAD_MUTEX_INITIALIZER;
static graph_buffer *g_released;

static void CUDA_CB graph_released(void *p)
{
    graph_buffer *b = p;
    pthread_mutex_lock(&g_released_lock);
    b->next = g_released;
    __atomic_store_n(&g_released, b, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_released_lock);
}

/* Frees the queued buffers of ctx's CUDA context (current, not capturing). */
static void free_released(gs_context *ctx)
{
    if (!__atomic_load_n(&g_released, __ATOMIC_ACQUIRE))
        return;
    graph_buffer *mine = NULL;
    pthread_mutex_lock(&g_released_lock);
    for (graph_buffer **pp = &g_released; *pp;) {
        graph_buffer *b = *pp;
        if (b->cu == ctx->cu) {
            *pp = b->next;
            b->next = mine;
            mine = b;
        } else {
            pp = &b->next;
        }
    }
    pthread_mutex_unlock(&g_released_lock);
    while (mine) {
        graph_buffer *b = mine;
        mine = b->next;
        gs_trace("workspace: freeing 0x%llx of a destroyed graph", (unsigned long long)b->buffer);
        ctx->drv->cuMemFree(b->buffer);
        free(b);
    }
}

/* The workspace for a launch captured on `stream` (capture sequence `capture_id` of
 * `graph`). Called with ctx->lock held. */
static gs_status capture_workspace(gs_context *ctx, CUstream stream, unsigned long long capture_id, CUgraph graph,
                                   CUdeviceptr *buffer)
{
    for (int i = 0; i < GS_CAPTURE_SLOTS; i++)
        if (ctx->captures[i].capture_id == capture_id && ctx->captures[i].stream == stream) {
            *buffer = ctx->captures[i].buffer;
            return GS_SUCCESS;
        }
    const gs_driver *d = ctx->drv;
    graph_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return gs_fail(GS_ERROR_OUT_OF_MEMORY, "out of host memory for a graph workspace record");
    b->cu = ctx->cu;
    gs_status st = gs_alloc_zeroed(ctx, (size_t)ctx->workspace_bytes, "a stream workspace", &b->buffer);
    if (st != GS_SUCCESS) {
        free(b);
        return st;
    }
    /* The user object starts with one reference, moved to the graph; from here on the
     * destructor owns b (it runs at once if the graph could not take it). */
    CUuserObject obj;
    CUresult rc = d->cuUserObjectCreate(&obj, b, graph_released, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
    if (rc != CUDA_SUCCESS) {
        d->cuMemFree(b->buffer);
        free(b);
        return gs_cuda_error(d, rc, "cuUserObjectCreate for a graph workspace");
    }
    rc = d->cuGraphRetainUserObject(graph, obj, 1, CU_GRAPH_USER_OBJECT_MOVE);
    if (rc != CUDA_SUCCESS) {
        d->cuUserObjectRelease(obj, 1);
        return gs_cuda_error(d, rc, "cuGraphRetainUserObject for a graph workspace");
    }
    gs_capture_slot *slot = &ctx->captures[ctx->next_capture++ % GS_CAPTURE_SLOTS];
    slot->capture_id = capture_id;
    slot->stream = stream;
    slot->buffer = b->buffer;
    gs_trace("workspace: captured launch on stream %p (capture %llu): %llu bytes at 0x%llx, owned by the graph",
             (void *)stream, capture_id, (unsigned long long)ctx->workspace_bytes, (unsigned long long)b->buffer);
    *buffer = b->buffer;
    return GS_SUCCESS;
}

gs_status gs_workspace_get(gs_context *ctx, CUstream stream, CUdeviceptr *buffer)
{
    const gs_driver *d = ctx->drv;
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult rc = d->cuStreamIsCapturing(stream, &cap);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(d, rc, "cuStreamIsCapturing(stream %p)", (void *)stream);
    if (cap == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
        return gs_fail(GS_ERROR_CUDA, "gs_reduce: stream %p is in a stream capture that was invalidated earlier",
                       (void *)stream);
    if (cap == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        cuuint64_t capture_id = 0;
        CUgraph graph = NULL;
        rc = d->cuStreamGetCaptureInfo(stream, &cap, &capture_id, &graph, NULL, NULL);
        if (rc != CUDA_SUCCESS)
            return gs_cuda_error(d, rc, "cuStreamGetCaptureInfo(stream %p)", (void *)stream);
        pthread_mutex_lock(&ctx->lock);
        gs_status st = capture_workspace(ctx, stream, capture_id, graph, buffer);
        pthread_mutex_unlock(&ctx->lock);
        return st;
    }

    unsigned long long id = 0;
    rc = d->cuStreamGetId(stream, &id);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(d, rc, "cuStreamGetId(stream %p)", (void *)stream);
    if (id == 0)
        return gs_fail(GS_ERROR_INTERNAL, "cuStreamGetId returned id 0 for stream %p", (void *)stream);

    free_released(ctx);
    pthread_mutex_lock(&ctx->lock);
    gs_status st = GS_SUCCESS;
    gs_workspace_slot *slot = ctx->nslots ? find_slot(ctx->slots, ctx->nslots, id) : NULL;
    if (!slot || slot->stream_id == 0) {
        /* First sight of this stream (ids are never reused, so once is enough): a stream
         * of another CUDA context would launch into that context with our workspace. */
        CUcontext owner = NULL;
        rc = d->cuStreamGetCtx(stream, &owner);
        if (rc != CUDA_SUCCESS) {
            pthread_mutex_unlock(&ctx->lock);
            return gs_cuda_error(d, rc, "cuStreamGetCtx(stream %p)", (void *)stream);
        }
        if (owner != ctx->cu) {
            pthread_mutex_unlock(&ctx->lock);
            return gs_fail(GS_ERROR_INVALID_CONTEXT,
                           "gs_reduce: stream %p belongs to another CUDA context than this gridsync context "
                           "(device %d's primary context)",
                           (void *)stream, ctx->ordinal);
        }
        CUdeviceptr buf = 0;
        st = gs_alloc_zeroed(ctx, (size_t)ctx->workspace_bytes, "a stream workspace", &buf);
        if (st == GS_SUCCESS && (ctx->nused + 1) * 2 > ctx->nslots)
            st = grow_table(ctx);
        if (st == GS_SUCCESS) {
            slot = find_slot(ctx->slots, ctx->nslots, id);
            slot->stream_id = id;
            slot->buffer = buf;
            ctx->nused++;
            gs_trace("workspace: stream %p (id %llu): %llu bytes at 0x%llx", (void *)stream, id,
                     (unsigned long long)ctx->workspace_bytes, (unsigned long long)buf);
        } else if (buf) {
            d->cuMemFree(buf);
        }
    }
    if (st == GS_SUCCESS)
        *buffer = slot->buffer;
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

/* ---- public: create, destroy, info ---------------------------------------------------- */

/* Pushes cu unless it is already current; returns whether a pop is owed. For contexts
 * being set up or torn down, where a failed push is no reason to stop. */
static int push_if_needed(const gs_driver *d, CUcontext cu)
{
    CUcontext cur = NULL;
    if (d->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == cu)
        return 0;
    return d->cuCtxPushCurrent(cu) == CUDA_SUCCESS;
}

static void pop_if(const gs_driver *d, int pushed)
{
    CUcontext popped;
    if (pushed)
        d->cuCtxPopCurrent(&popped);
}

gs_status gs_context_push(const gs_context *ctx, int *pushed)
{
    const gs_driver *d = ctx->drv;
    CUcontext cur = NULL;
    *pushed = 0;
    if (d->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == ctx->cu)
        return GS_SUCCESS;
    CUresult rc = d->cuCtxPushCurrent(ctx->cu);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(d, rc, "cuCtxPushCurrent(the CUDA context of device %d)", ctx->ordinal);
    *pushed = 1;
    return GS_SUCCESS;
}

void gs_context_pop(const gs_context *ctx, int pushed)
{
    pop_if(ctx->drv, pushed);
}

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
    int pushed = push_if_needed(drv, cu);
    st = gs_context_init(ctx, drv, cu, dev, device);
    if (st != GS_SUCCESS)
        gs_context_fini(ctx);
    pop_if(drv, pushed);
    if (st != GS_SUCCESS) {
        drv->cuDevicePrimaryCtxRelease(dev);
        free(ctx);
        return st;
    }
    *out = ctx;
    return GS_SUCCESS;
}

GS_API gs_status gs_context_create(int device, gs_context **out)
{
    gs_clear_error();
    if (!out)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_context_create: the output pointer is NULL");
    *out = NULL;
    gs_status st;
    const gs_driver *drv = gs_driver_get(&st);
    if (!drv)
        return st;
    return create_on_primary(drv, device, 0, out);
}

GS_API gs_status gs_context_destroy(gs_context *ctx)
{
    gs_clear_error();
    if (!ctx)
        return GS_SUCCESS;
    if (ctx->is_default)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT,
                       "gs_context_destroy: this is a library-owned default context, not one from gs_context_create");
    const gs_driver *drv = ctx->drv;
    int pushed = push_if_needed(drv, ctx->cu);
    gs_context_fini(ctx);
    pop_if(drv, pushed);
    if (ctx->owns_primary)
        drv->cuDevicePrimaryCtxRelease(ctx->device);
    free(ctx);
    return GS_SUCCESS;
}

GS_API gs_status gs_context_get_info(const gs_context *ctx, gs_context_info *info)
{
    gs_clear_error();
    if (!ctx || !info)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_context_get_info: %s is NULL", ctx ? "info" : "ctx");
    if (info->struct_size < offsetof(gs_context_info, device) + sizeof info->device)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_context_get_info: info->struct_size (%u) is too small",
                       info->struct_size);
#define GS_SET(field, value)                                                         \
    if (info->struct_size >= offsetof(gs_context_info, field) + sizeof info->field) \
        info->field = (value);
    GS_SET(device, ctx->ordinal)
    GS_SET(cc_major, ctx->cc_major)
    GS_SET(cc_minor, ctx->cc_minor)
    GS_SET(multiprocessor_count, ctx->sm_count)
    GS_SET(device_name, ctx->device_name)
    GS_SET(backend_name, ctx->backend->ops->name)
    GS_SET(backend_path, ctx->backend->path)
    GS_SET(selection_log, ctx->selection_log ? ctx->selection_log : "")
#undef GS_SET
    return GS_SUCCESS;
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

/* ---- the hot path --------------------------------------------------------------------- */

/* One cuPointerGetAttributes call: it does not fail on unknown pointers, it reports a
 * memory type of 0 for them (pageable host memory, freed or never-allocated addresses). */
gs_status gs_check_pointer(const gs_driver *drv, const char *fn, const char *name, const void *p, uint64_t bytes,
                           CUdeviceptr *start_out, unsigned int *memtype_out)
{
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    unsigned int memtype = 0;
    CUdeviceptr start = 0;
    size_t size = 0;
    void *data[] = {&memtype, &start, &size};
    CUresult rc = drv->cuPointerGetAttributes(3, attrs, data, (CUdeviceptr)(uintptr_t)p);
    if (rc != CUDA_SUCCESS || memtype == 0)
        return gs_fail(GS_ERROR_INVALID_POINTER,
                       "%s: %s = %p is not memory the device can access (not from cudaMalloc, "
                       "cudaMallocManaged or cudaHostAlloc, or already freed)",
                       fn, name, p);
    /* Some kinds of memory report no range; then there is nothing more to check. */
    if (size && (uint64_t)(uintptr_t)p - start + bytes > size)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT,
                       "%s: %s = %p + %llu bytes runs past the end of its allocation (%zu bytes at 0x%llx)", fn,
                       name, p, (unsigned long long)bytes, size, (unsigned long long)start);
    if (start_out)
        *start_out = size ? start : 0;
    if (memtype_out)
        *memtype_out = memtype;
    return GS_SUCCESS;
}

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

/* The checks gs_reduce and gs_segmented_reduce share, on arguments alone: dtype and op in
 * range and op defined for dtype. */
static gs_status check_dtype_op(const char *fn, gs_dtype dtype, gs_op op)
{
    if (!gs_dtype_valid((int)dtype))
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: dtype %d is not a gs_dtype", fn, (int)dtype);
    if (!gs_op_valid((int)op))
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: op %d is not a gs_op", fn, (int)op);
    if (!gs_op_defined(dtype, op))
        return gs_fail(GS_ERROR_UNSUPPORTED, "%s: op %s is not defined for dtype %s", fn, gs_op_name(op),
                       gs_dtype_name(dtype));
    return GS_SUCCESS;
}

/* ... and on the input: in non-NULL unless n is 0, aligned to its elements, not wrapping. */
static gs_status check_input(const char *fn, const void *in, uint64_t n, gs_dtype dtype)
{
    const uint64_t esize = gs_dtype_size(dtype);
    if (!in && n)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: in is NULL but n is %llu", fn, (unsigned long long)n);
    if ((uintptr_t)in % esize)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: in = %p is not aligned to its %s elements (%llu bytes)", fn,
                       in, gs_dtype_name(dtype), (unsigned long long)esize);
    if (n > (UINT64_MAX - (uint64_t)(uintptr_t)in) / esize)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: n = %llu elements of %s from %p wrap around memory", fn,
                       (unsigned long long)n, gs_dtype_name(dtype), in);
    return GS_SUCCESS;
}

GS_API gs_status gs_reduce(gs_context *ctx, const void *in, uint64_t n, gs_dtype dtype, gs_op op, void *out,
                           gs_stream stream)
{
    return gs_reduce_ex(ctx, in, n, dtype, op, out, stream, NULL);
}

GS_API gs_status gs_reduce_ex(gs_context *ctx, const void *in, uint64_t n, gs_dtype dtype, gs_op op, void *out,
                              gs_stream stream, const gs_reduce_options *opts)
{
    gs_clear_error();
    /* Cheap checks first: they need no driver, so a caller learns of them anywhere. */
    gs_status st;
    if ((st = check_dtype_op("gs_reduce", dtype, op)) != GS_SUCCESS)
        return st;
    gs_dtype out_dtype = gs_default_out(dtype, op);
    if (opts) {
        if (opts->struct_size < offsetof(gs_reduce_options, out_dtype) + sizeof opts->out_dtype)
            return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_reduce_ex: opts->struct_size (%u) is too small",
                           opts->struct_size);
        if (opts->out_dtype != GS_OUT_DEFAULT) {
            if (!gs_dtype_valid(opts->out_dtype))
                return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_reduce_ex: out_dtype %d is not a gs_dtype",
                               (int)opts->out_dtype);
            out_dtype = (gs_dtype)opts->out_dtype;
        }
    }
    if (!out)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_reduce: out is NULL");
    if ((st = check_input("gs_reduce", in, n, dtype)) != GS_SUCCESS)
        return st;
    const uint64_t esize = gs_dtype_size(dtype), osize = gs_dtype_size(out_dtype);
    if ((uintptr_t)out % osize)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_reduce: out = %p is not aligned to its %s result", out,
                       gs_dtype_name(out_dtype));

    const gs_driver *drv;
    if ((st = gs_context_resolve(&ctx, &drv)) != GS_SUCCESS)
        return st;
    if (!(ctx->supported[dtype][op] & (1u << out_dtype)))
        return gs_fail(GS_ERROR_UNSUPPORTED, "gs_reduce: backend %s does not offer %s over %s into %s",
                       ctx->backend->ops->name, gs_op_name(op), gs_dtype_name(dtype), gs_dtype_name(out_dtype));
    if ((n && (st = gs_check_pointer(drv, "gs_reduce", "in", in, n * esize, NULL, NULL)) != GS_SUCCESS) ||
        (st = gs_check_pointer(drv, "gs_reduce", "out", out, osize, NULL, NULL)) != GS_SUCCESS)
        return st;

    int pushed;
    if ((st = gs_context_push(ctx, &pushed)) != GS_SUCCESS)
        return st;
    gs_backend_reduce_args args = {
        .struct_size = sizeof args,
        .dtype = dtype,
        .op = op,
        .out_dtype = out_dtype,
        .in = (CUdeviceptr)(uintptr_t)in,
        .n = n,
        .out = (CUdeviceptr)(uintptr_t)out,
        .stream = (CUstream)stream,
        .workspace_bytes = ctx->workspace_bytes,
    };
    st = gs_workspace_get(ctx, args.stream, &args.workspace);
    if (st == GS_SUCCESS)
        st = ctx->backend->ops->reduce(ctx->instance, &args);
    gs_context_pop(ctx, pushed);
    return st;
}

/* GS_SEGMENTED_CHECK_OFFSETS: the offsets, copied to the host once the stream's earlier
 * work (which may write them) is done. */
static gs_status check_offsets(gs_context *ctx, const int64_t *offsets, uint64_t num_segments, uint64_t n,
                               CUstream stream)
{
    const gs_driver *d = ctx->drv;
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult rc = d->cuStreamIsCapturing(stream, &cap);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(d, rc, "cuStreamIsCapturing(stream %p)", (void *)stream);
    if (cap != CU_STREAM_CAPTURE_STATUS_NONE)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT,
                       "gs_segmented_reduce: GS_SEGMENTED_CHECK_OFFSETS needs a host synchronisation, which "
                       "stream %p cannot do while it is being captured into a graph",
                       (void *)stream);
    if (num_segments + 1 > SIZE_MAX / sizeof(int64_t))
        return gs_fail(GS_ERROR_OUT_OF_MEMORY, "gs_segmented_reduce: %llu offsets do not fit in host memory",
                       (unsigned long long)num_segments + 1);
    const size_t bytes = (size_t)(num_segments + 1) * sizeof(int64_t);
    int64_t *h = malloc(bytes);
    if (!h)
        return gs_fail(GS_ERROR_OUT_OF_MEMORY, "gs_segmented_reduce: out of host memory for %zu bytes of offsets",
                       bytes);
    gs_status st = GS_SUCCESS;
    if ((rc = d->cuStreamSynchronize(stream)) != CUDA_SUCCESS)
        st = gs_cuda_error(d, rc, "cuStreamSynchronize(stream %p) before checking the offsets", (void *)stream);
    else if ((rc = d->cuMemcpyDtoH(h, (CUdeviceptr)(uintptr_t)offsets, bytes)) != CUDA_SUCCESS)
        st = gs_cuda_error(d, rc, "cuMemcpyDtoH(%zu bytes of offsets)", bytes);
    else if (h[0] < 0)
        st = gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_segmented_reduce: offsets[0] = %lld is negative",
                     (long long)h[0]);
    else if ((uint64_t)h[num_segments] > n)
        st = gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_segmented_reduce: offsets[%llu] = %lld is beyond n = %llu",
                     (unsigned long long)num_segments, (long long)h[num_segments], (unsigned long long)n);
    else
        for (uint64_t j = 0; j < num_segments; j++)
            if (h[j + 1] < h[j]) {
                st = gs_fail(GS_ERROR_INVALID_ARGUMENT,
                             "gs_segmented_reduce: offsets decrease: offsets[%llu] = %lld, offsets[%llu] = %lld",
                             (unsigned long long)j, (long long)h[j], (unsigned long long)j + 1,
                             (long long)h[j + 1]);
                break;
            }
    free(h);
    return st;
}

GS_API gs_status gs_segmented_reduce(gs_context *ctx, const void *in, uint64_t n, gs_dtype dtype, gs_op op,
                                     const int64_t *offsets, uint64_t num_segments, void *out, gs_stream stream,
                                     uint32_t flags)
{
    static const char fn[] = "gs_segmented_reduce";
    gs_clear_error();
    gs_status st;
    if ((st = check_dtype_op(fn, dtype, op)) != GS_SUCCESS)
        return st;
    if (flags & ~GS_SEGMENTED_CHECK_OFFSETS)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", fn, flags & ~GS_SEGMENTED_CHECK_OFFSETS);
    const gs_dtype out_dtype = gs_default_out(dtype, op);
    const uint64_t esize = gs_dtype_size(dtype), osize = gs_dtype_size(out_dtype);
    if (num_segments && !offsets)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: offsets is NULL", fn);
    if (num_segments && !out)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    if ((st = check_input(fn, in, n, dtype)) != GS_SUCCESS)
        return st;
    if ((uintptr_t)offsets % sizeof(int64_t))
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: offsets = %p is not aligned to 8 bytes", fn,
                       (const void *)offsets);
    if ((uintptr_t)out % osize)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: out = %p is not aligned to its %s results", fn, out,
                       gs_dtype_name(out_dtype));
    /* 2^56 segments: more than any device holds, and far from any overflow below */
    if (num_segments >= (1ull << 56))
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: num_segments = %llu is too large", fn,
                       (unsigned long long)num_segments);

    const gs_driver *drv;
    if ((st = gs_context_resolve(&ctx, &drv)) != GS_SUCCESS)
        return st;
    const gs_backend_ops *ops = ctx->backend->ops;
    if (ops->struct_size < offsetof(gs_backend_ops, segmented_reduce) + sizeof ops->segmented_reduce ||
        !ops->segmented_reduce)
        return gs_fail(GS_ERROR_UNSUPPORTED, "%s: backend %s (%s, backend ABI %u.%u) has no segmented reduction", fn,
                       ops->name, ctx->backend->path, GS_BACKEND_ABI_VERSION_MAJOR(ops->abi_version),
                       ops->abi_version & 0xffffu);
    if (!(ctx->supported[dtype][op] & (1u << out_dtype)))
        return gs_fail(GS_ERROR_UNSUPPORTED, "%s: backend %s does not offer %s over %s", fn, ops->name,
                       gs_op_name(op), gs_dtype_name(dtype));
    if (num_segments == 0)
        return GS_SUCCESS; /* nothing to write: no launch */
    if ((n && (st = gs_check_pointer(drv, fn, "in", in, n * esize, NULL, NULL)) != GS_SUCCESS) ||
        (st = gs_check_pointer(drv, fn, "offsets", offsets, (num_segments + 1) * sizeof(int64_t), NULL, NULL)) !=
            GS_SUCCESS ||
        (st = gs_check_pointer(drv, fn, "out", out, num_segments * osize, NULL, NULL)) != GS_SUCCESS)
        return st;

    int pushed;
    if ((st = gs_context_push(ctx, &pushed)) != GS_SUCCESS)
        return st;
    gs_backend_segmented_args args = {
        .struct_size = sizeof args,
        .dtype = dtype,
        .op = op,
        .out_dtype = out_dtype,
        .in = (CUdeviceptr)(uintptr_t)in,
        .n = n,
        .offsets = (CUdeviceptr)(uintptr_t)offsets,
        .num_segments = num_segments,
        .out = (CUdeviceptr)(uintptr_t)out,
        .stream = (CUstream)stream,
        .workspace_bytes = ctx->workspace_bytes,
    };
    st = GS_SUCCESS;
    if (flags & GS_SEGMENTED_CHECK_OFFSETS)
        st = check_offsets(ctx, offsets, num_segments, n, args.stream);
    if (st == GS_SUCCESS)
        st = gs_workspace_get(ctx, args.stream, &args.workspace);
    if (st == GS_SUCCESS)
        st = ops->segmented_reduce(ctx->instance, &args);
    gs_context_pop(ctx, pushed);
    return st;
}
