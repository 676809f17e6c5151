/* Per-stream and per-capture workspaces (workspace.h; docs/design.md, "Workspaces").
 * Everything here runs once per stream or per capture, never on the hot path's common
 * case: a known stream costs one hash lookup under the context's lock. */
#define _GNU_SOURCE
#include "workspace.h"

#include <stdlib.h>

#include "context.h"
#include "error.h"
#include "validate.h"

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
    size_t n = ctx->ws.nslots ? ctx->ws.nslots * 2 : 16;
    gs_workspace_slot *slots = calloc(n, sizeof *slots);
    if (!slots)
        return gs_fail(GS_ERROR_OUT_OF_MEMORY, "out of host memory for the workspace table (%zu slots)", n);
    for (size_t i = 0; i < ctx->ws.nslots; i++)
        if (ctx->ws.slots[i].stream_id)
            *find_slot(slots, n, ctx->ws.slots[i].stream_id) = ctx->ws.slots[i];
    free(ctx->ws.slots);
    ctx->ws.slots = slots;
    ctx->ws.nslots = n;
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
    if (!ctx->ws.zero_stream && (rc = d->cuStreamCreate(&ctx->ws.zero_stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
        ctx->ws.zero_stream = NULL;
        st = gs_cuda_error(d, rc, "cuStreamCreate(non-blocking) to zero-fill %s", what);
    } else if ((rc = d->cuMemAlloc(&buf, bytes)) != CUDA_SUCCESS) {
        st = gs_cuda_error(d, rc, "cuMemAlloc(%zu bytes) for %s on device %d", bytes, what, ctx->ordinal);
    } else if ((rc = d->cuMemsetD8Async(buf, 0, bytes, ctx->ws.zero_stream)) != CUDA_SUCCESS ||
               (rc = d->cuStreamSynchronize(ctx->ws.zero_stream)) != CUDA_SUCCESS) {
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
        if (ctx->ws.captures[i].capture_id == capture_id && ctx->ws.captures[i].stream == stream) {
            *buffer = ctx->ws.captures[i].buffer;
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
    gs_capture_slot *slot = &ctx->ws.captures[ctx->ws.next_capture++ % GS_CAPTURE_SLOTS];
    slot->capture_id = capture_id;
    slot->stream = stream;
    slot->buffer = b->buffer;
    gs_trace("workspace: captured launch on stream %p (capture %llu): %llu bytes at 0x%llx, owned by the graph",
             (void *)stream, capture_id, (unsigned long long)ctx->workspace_bytes, (unsigned long long)b->buffer);
    *buffer = b->buffer;
    return GS_SUCCESS;
}

gs_status gs_workspace_get(gs_context *ctx, CUstream stream, const char *fn, CUdeviceptr *buffer)
{
    const gs_driver *d = ctx->drv;
    CUstreamCaptureStatus cap;
    gs_status st = gs_check_capture(ctx, stream, fn, &cap);
    if (st != GS_SUCCESS)
        return st;
    CUresult rc;
    if (cap == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        cuuint64_t capture_id = 0;
        CUgraph graph = NULL;
        rc = d->cuStreamGetCaptureInfo(stream, &cap, &capture_id, &graph, NULL, NULL);
        if (rc != CUDA_SUCCESS)
            return gs_cuda_error(d, rc, "cuStreamGetCaptureInfo(stream %p)", (void *)stream);
        pthread_mutex_lock(&ctx->lock);
        st = capture_workspace(ctx, stream, capture_id, graph, buffer);
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
    gs_workspace_slot *slot = ctx->ws.nslots ? find_slot(ctx->ws.slots, ctx->ws.nslots, id) : NULL;
    if (!slot || slot->stream_id == 0) {
        /* First sight of this stream (ids are never reused, so once is enough). */
        st = gs_check_stream_owner(ctx, stream, fn);
        if (st != GS_SUCCESS) {
            pthread_mutex_unlock(&ctx->lock);
            return st;
        }
        CUdeviceptr buf = 0;
        st = gs_alloc_zeroed(ctx, (size_t)ctx->workspace_bytes, "a stream workspace", &buf);
        if (st == GS_SUCCESS && (ctx->ws.nused + 1) * 2 > ctx->ws.nslots)
            st = grow_table(ctx);
        if (st == GS_SUCCESS) {
            slot = find_slot(ctx->ws.slots, ctx->ws.nslots, id);
            slot->stream_id = id;
            slot->buffer = buf;
            ctx->ws.nused++;
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

void gs_workspaces_free(gs_context *ctx)
{
    free_released(ctx);
    for (size_t i = 0; i < ctx->ws.nslots; i++)
        if (ctx->ws.slots[i].stream_id)
            ctx->drv->cuMemFree(ctx->ws.slots[i].buffer);
    free(ctx->ws.slots);
    ctx->ws.slots = NULL;
    ctx->ws.nslots = ctx->ws.nused = 0;
    if (ctx->ws.zero_stream)
        ctx->drv->cuStreamDestroy(ctx->ws.zero_stream);
    ctx->ws.zero_stream = NULL;
}
