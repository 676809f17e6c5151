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

GS_API gs_status gs_queue_create(gs_context *ctx, void **queue)
{
    gs_clear_error();
    if (!queue)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_queue_create: queue (the output pointer) is NULL");
    *queue = NULL;
    const gs_driver *d;
    gs_status st = gs_context_resolve(&ctx, &d);
    if (st != GS_SUCCESS)
        return st;
    int pushed;
    if ((st = gs_context_push(ctx, &pushed)) != GS_SUCCESS)
        return st;
    /* As a stream workspace is made (core/context.c): zero for a launch on any stream,
     * and possible while some stream is being captured. */
    CUdeviceptr p = 0;
    pthread_mutex_lock(&ctx->lock);
    st = gs_alloc_zeroed(ctx, GS_QUEUE_BYTES, "a work queue", &p);
    pthread_mutex_unlock(&ctx->lock);
    gs_context_pop(ctx, pushed);
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
    gs_status st = gs_context_resolve(&ctx, &d);
    if (st != GS_SUCCESS)
        return st;
    if ((st = gs_check_pointer(d, "gs_queue_reset", "queue", queue, GS_QUEUE_BYTES, NULL, NULL)) != GS_SUCCESS)
        return st;

    int pushed;
    if ((st = gs_context_push(ctx, &pushed)) != GS_SUCCESS)
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
    gs_context_pop(ctx, pushed);
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
    gs_status st = gs_context_resolve(&ctx, &d);
    if (st != GS_SUCCESS)
        return st;
    unsigned int memtype;
    CUdeviceptr start;
    if ((st = gs_check_pointer(d, "gs_queue_destroy", "queue", queue, GS_QUEUE_BYTES, &start, &memtype)) !=
        GS_SUCCESS)
        return st;
    if (memtype != CU_MEMORYTYPE_DEVICE || (start && start != (CUdeviceptr)(uintptr_t)queue))
        return gs_fail(GS_ERROR_INVALID_POINTER,
                       "gs_queue_destroy: queue = %p is not the start of a device allocation, so not from "
                       "gs_queue_create",
                       queue);
    int pushed;
    if ((st = gs_context_push(ctx, &pushed)) != GS_SUCCESS)
        return st;
    CUresult rc = d->cuMemFree((CUdeviceptr)(uintptr_t)queue);
    if (rc != CUDA_SUCCESS)
        st = gs_cuda_error(d, rc, "gs_queue_destroy: cuMemFree(queue = %p)", queue);
    gs_context_pop(ctx, pushed);
    return st;
}
