/* The host side of the global work queue (gridsync.h, GRIDSYNC_1.1): the queue's device
 * memory made, re-zeroed stream-ordered, and freed. The device side, which hands out the
 * items and returns the queue to zero at the end of each launch, is gridsync_device.cuh. */
#define _GNU_SOURCE
#include <stdint.h>

#include "context.h"
#include "error.h"

/* The device header's gs_work_queue: two 8-byte-aligned words' worth, the first a 64-bit
 * counter that atomics update, hence the alignment rule. */
#define GS_QUEUE_ALIGN 8u

/* The driver, and ctx resolved to the default context when NULL (as in gs_reduce). */
static gs_status resolve_context(gs_context **ctx, const gs_driver **drv)
{
    gs_status st;
    *drv = gs_driver_get(&st);
    if (!*drv)
        return st;
    if (!*ctx)
        return gs_default_context(*drv, ctx);
    return GS_SUCCESS;
}

/* Makes ctx->cu current for the call unless it already is; *pushed says a pop is owed. */
static gs_status push_context(const gs_context *ctx, int *pushed)
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

static void pop_context(const gs_context *ctx, int pushed)
{
    CUcontext popped;
    if (pushed)
        ctx->drv->cuCtxPopCurrent(&popped);
}

/* What the driver knows of the memory at `queue`: its type (0: none the device can reach)
 * and the allocation around it. cuPointerGetAttributes does not fail for an unknown
 * address; it reports memory type 0. */
static gs_status query_queue(const gs_driver *drv, const char *fn, const void *queue, unsigned int *memtype,
                             CUdeviceptr *start, size_t *size)
{
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *data[] = {memtype, start, size};
    *memtype = 0;
    *start = 0;
    *size = 0;
    CUresult rc = drv->cuPointerGetAttributes(3, attrs, data, (CUdeviceptr)(uintptr_t)queue);
    if (rc != CUDA_SUCCESS || *memtype == 0)
        return gs_fail(GS_ERROR_INVALID_POINTER,
                       "%s: queue = %p is not memory the device can access (not from gs_queue_create or "
                       "cudaMalloc, or already freed)",
                       fn, queue);
    return GS_SUCCESS;
}

GS_API gs_status gs_queue_create(gs_context *ctx, void **queue)
{
    gs_clear_error();
    if (!queue)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_queue_create: queue (the output pointer) is NULL");
    *queue = NULL;
    const gs_driver *d;
    gs_status st = resolve_context(&ctx, &d);
    if (st != GS_SUCCESS)
        return st;
    int pushed;
    if ((st = push_context(ctx, &pushed)) != GS_SUCCESS)
        return st;

    /* As for a stream workspace (core/context.c): the allocation and the fill must work
     * while some stream is being captured, so the thread's capture mode is relaxed for
     * them, and the fill goes to the context's private non-blocking stream (a memset on the
     * legacy stream would join, and break, a global capture) and is waited for, so the
     * queue is zero for a launch on any stream. */
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CUresult rc = d->cuThreadExchangeStreamCaptureMode(&mode);
    if (rc != CUDA_SUCCESS) {
        pop_context(ctx, pushed);
        return gs_cuda_error(d, rc, "gs_queue_create: cuThreadExchangeStreamCaptureMode");
    }
    CUdeviceptr p = 0;
    if ((rc = d->cuMemAlloc(&p, GS_QUEUE_BYTES)) != CUDA_SUCCESS) {
        p = 0;
        st = gs_cuda_error(d, rc, "gs_queue_create: cuMemAlloc(%u bytes) on device %d", (unsigned)GS_QUEUE_BYTES,
                           ctx->ordinal);
    } else {
        pthread_mutex_lock(&ctx->lock); /* guards ctx->zero_stream */
        if (!ctx->zero_stream && (rc = d->cuStreamCreate(&ctx->zero_stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
            ctx->zero_stream = NULL;
            st = gs_cuda_error(d, rc, "gs_queue_create: cuStreamCreate(non-blocking) for the zero fill");
        } else if ((rc = d->cuMemsetD8Async(p, 0, GS_QUEUE_BYTES, ctx->zero_stream)) != CUDA_SUCCESS ||
                   (rc = d->cuStreamSynchronize(ctx->zero_stream)) != CUDA_SUCCESS) {
            st = gs_cuda_error(d, rc, "gs_queue_create: zero-filling the new queue at 0x%llx", (unsigned long long)p);
        }
        pthread_mutex_unlock(&ctx->lock);
        if (st != GS_SUCCESS)
            d->cuMemFree(p);
    }
    CUstreamCaptureMode restore = mode;
    d->cuThreadExchangeStreamCaptureMode(&restore);
    pop_context(ctx, pushed);
    if (st != GS_SUCCESS)
        return st;
    if (p % GS_QUEUE_ALIGN) /* cuMemAlloc aligns to 256 bytes at least */
        return gs_fail(GS_ERROR_INTERNAL, "gs_queue_create: cuMemAlloc returned 0x%llx, not %u-byte aligned",
                       (unsigned long long)p, GS_QUEUE_ALIGN);
    gs_trace("queue: %u bytes at 0x%llx on device %d", (unsigned)GS_QUEUE_BYTES, (unsigned long long)p,
             ctx->ordinal);
    *queue = (void *)(uintptr_t)p;
    return GS_SUCCESS;
}

GS_API gs_status gs_queue_reset(gs_context *ctx, void *queue, gs_stream stream)
{
    gs_clear_error();
    /* Cheap checks first: they need no driver. */
    if (!queue)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_queue_reset: queue is NULL");
    if ((uintptr_t)queue % GS_QUEUE_ALIGN)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_queue_reset: queue = %p is not aligned to %u bytes", queue,
                       GS_QUEUE_ALIGN);
    const gs_driver *d;
    gs_status st = resolve_context(&ctx, &d);
    if (st != GS_SUCCESS)
        return st;
    unsigned int memtype;
    CUdeviceptr start;
    size_t size;
    if ((st = query_queue(d, "gs_queue_reset", queue, &memtype, &start, &size)) != GS_SUCCESS)
        return st;
    /* Some kinds of memory report no range; then there is nothing more to check. */
    if (size && (uint64_t)((uintptr_t)queue - start) + GS_QUEUE_BYTES > size)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT,
                       "gs_queue_reset: queue = %p + %u bytes runs past the end of its allocation (%zu bytes at "
                       "0x%llx)",
                       queue, (unsigned)GS_QUEUE_BYTES, size, (unsigned long long)start);

    int pushed;
    if ((st = push_context(ctx, &pushed)) != GS_SUCCESS)
        return st;
    CUstream s = (CUstream)stream;
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult rc = d->cuStreamIsCapturing(s, &cap);
    if (rc != CUDA_SUCCESS) {
        st = gs_cuda_error(d, rc, "gs_queue_reset: cuStreamIsCapturing(stream %p)", (void *)s);
    } else if (cap == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
        st = gs_fail(GS_ERROR_CUDA, "gs_queue_reset: stream %p is in a stream capture that was invalidated earlier",
                     (void *)s);
    } else if (cap == CU_STREAM_CAPTURE_STATUS_NONE) {
        /* A stream of another CUDA context would run the fill there. Not asked of a
         * capturing stream: stream queries may invalidate a capture (core/context.c), and
         * the driver refuses a cross-context capture dependency itself. NULL and the
         * per-thread stream resolve to the current context, ctx's. */
        CUcontext owner = NULL;
        rc = d->cuStreamGetCtx(s, &owner);
        if (rc != CUDA_SUCCESS)
            st = gs_cuda_error(d, rc, "gs_queue_reset: cuStreamGetCtx(stream %p)", (void *)s);
        else if (owner != ctx->cu)
            st = gs_fail(GS_ERROR_INVALID_CONTEXT,
                         "gs_queue_reset: stream %p belongs to another CUDA context than this gridsync context "
                         "(device %d)",
                         (void *)s, ctx->ordinal);
    }
    if (st == GS_SUCCESS && (rc = d->cuMemsetD8Async((CUdeviceptr)(uintptr_t)queue, 0, GS_QUEUE_BYTES, s)) != CUDA_SUCCESS)
        st = gs_cuda_error(d, rc, "gs_queue_reset: cuMemsetD8Async(queue = %p, %u bytes, stream %p)", queue,
                           (unsigned)GS_QUEUE_BYTES, (void *)s);
    pop_context(ctx, pushed);
    return st;
}

GS_API gs_status gs_queue_destroy(gs_context *ctx, void *queue)
{
    gs_clear_error();
    if (!queue)
        return GS_SUCCESS;
    if ((uintptr_t)queue % GS_QUEUE_ALIGN)
        return gs_fail(GS_ERROR_INVALID_POINTER,
                       "gs_queue_destroy: queue = %p is not aligned to %u bytes, so not from gs_queue_create", queue,
                       GS_QUEUE_ALIGN);
    const gs_driver *d;
    gs_status st = resolve_context(&ctx, &d);
    if (st != GS_SUCCESS)
        return st;
    unsigned int memtype;
    CUdeviceptr start;
    size_t size;
    if ((st = query_queue(d, "gs_queue_destroy", queue, &memtype, &start, &size)) != GS_SUCCESS)
        return st;
    if (memtype != CU_MEMORYTYPE_DEVICE || (start && start != (CUdeviceptr)(uintptr_t)queue))
        return gs_fail(GS_ERROR_INVALID_POINTER,
                       "gs_queue_destroy: queue = %p is not the start of a device allocation, so not from "
                       "gs_queue_create",
                       queue);
    int pushed;
    if ((st = push_context(ctx, &pushed)) != GS_SUCCESS)
        return st;
    CUresult rc = d->cuMemFree((CUdeviceptr)(uintptr_t)queue);
    if (rc != CUDA_SUCCESS)
        st = gs_cuda_error(d, rc, "gs_queue_destroy: cuMemFree(queue = %p)", queue);
    pop_context(ctx, pushed);
    return st;
}
