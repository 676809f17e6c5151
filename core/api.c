/*
 * Every exported function but error.c's two (statuses) and exact.c's two (the host-only
 * accumulator functions), along the call path of docs/design.md:
 * clear the thread's error, check the arguments (validate.c: the cheap checks first, they
 * need no driver), resolve the context (context.c), check what needs the driver, and queue
 * the backend's one launch on the stream's workspace (launch(), workspace.c).
 */
#define _GNU_SOURCE
#include "gridsync.h"

#include <stdlib.h>

#include "context.h"
#include "error.h"
#include "validate.h"

/* ---- library, driver and devices ---------------------------------------------------- */

GS_API uint32_t gs_version(void)
{
    return GS_VERSION;
}

GS_API const char *gs_version_string(void)
{
    return GS_VERSION_STRING;
}

/* The driver queries' preamble: the error cleared, the output pointer checked (NULL:
 * *st is GS_ERROR_INVALID_ARGUMENT), the driver loaded (NULL, with its status in *st, when
 * there is none or no device). */
static const gs_driver *driver_for_query(const char *fn, const void *out, const char *name, gs_status *st)
{
    gs_clear_error();
    if (!out) {
        *st = gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, name);
        return NULL;
    }
    return gs_driver_get(st);
}

GS_API gs_status gs_driver_version(int *version)
{
    gs_status st;
    driver_for_query("gs_driver_version", version, "version", &st);
    if (!version)
        return st;
    /* A driver library without a device still has a version. */
    *version = gs_driver_version_loaded();
    if (*version <= 0)
        return st;
    gs_clear_error(); /* a driver without a usable device still answers this */
    return GS_SUCCESS;
}

GS_API gs_status gs_device_count(int *count)
{
    gs_status st;
    const gs_driver *drv = driver_for_query("gs_device_count", count, "count", &st);
    if (!count)
        return st;
    *count = 0;
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

/* ---- contexts ------------------------------------------------------------------------ */

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
    return gs_context_open(drv, device, out);
}

GS_API gs_status gs_context_destroy(gs_context *ctx)
{
    gs_clear_error();
    if (!ctx)
        return GS_SUCCESS;
    if (ctx->is_default)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT,
                       "gs_context_destroy: this is a library-owned default context, not one from gs_context_create");
    gs_context_close(ctx);
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
    /* Only the members the caller's struct_size covers: an older caller's struct is shorter. */
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

/* ---- reductions and scans ---------------------------------------------------------- */

/* One call as the entry points checked it; launch() turns it into the backend's
 * arguments: a scan when `scan` is set, else a segmented reduction when offsets is
 * non-NULL, else a reduction. */
typedef struct launch_plan {
    const char *fn;
    gs_dtype dtype, out_dtype;
    gs_op op;
    const void *in;
    uint64_t n;
    void *out;
    uint64_t out_count;
    CUstream stream;
    const int64_t *offsets; /* gs_segmented_reduce: num_segments + 1 of them */
    uint32_t flags;         /* gs_segmented_reduce's */
    uint32_t backend_flags; /* the backend args' flags (GS_BACKEND_REDUCE_EXACT*, ..., GS_BACKEND_SCAN_*) */
    int scan;               /* gs_scan: out_count (n) results */
    const gs_exact_acc *carry_in; /* gs_scan's, with GS_SCAN_EXACT */
    uint64_t carry_in_count;
    gs_exact_acc *total;
} launch_plan;

/* Every launch's tail, the same for all of them: the buffers are memory the device can
 * reach, ctx's CUDA context is current, the stream's workspace exists (made on first use),
 * and the backend queues its one kernel. */
static gs_status launch(gs_context *ctx, const gs_driver *drv, const launch_plan *p)
{
    const char *fn = p->fn;
    const uint64_t segments = p->offsets ? p->out_count : 0;
    const int accumulator = !p->scan && !p->offsets && (p->backend_flags & GS_BACKEND_REDUCE_EXACT_ACCUMULATOR);
    const uint64_t out_bytes = accumulator ? sizeof(gs_exact_acc) : p->out_count * gs_dtype_size(p->out_dtype);
    gs_status st;
    /* The checks before bounded every byte count (an exact scan with n == 0 has no out). */
    if ((p->n && (st = gs_check_pointer(drv, fn, "in", p->in, p->n * gs_dtype_size(p->dtype), NULL, NULL))) ||
        (p->offsets &&
         (st = gs_check_pointer(drv, fn, "offsets", p->offsets, (segments + 1) * sizeof(int64_t), NULL, NULL))) ||
        (out_bytes && (st = gs_check_pointer(drv, fn, "out", p->out, out_bytes, NULL, NULL))) ||
        (p->carry_in && (st = gs_check_pointer(drv, fn, "carry_in", p->carry_in,
                                               p->carry_in_count * sizeof(gs_exact_acc), NULL, NULL))) ||
        (p->total && (st = gs_check_pointer(drv, fn, "total", p->total, sizeof(gs_exact_acc), NULL, NULL))))
        return st;
    int pushed;
    if ((st = gs_context_push(ctx, &pushed)) != GS_SUCCESS)
        return st;
    CUdeviceptr ws = 0;
    if (p->flags & GS_SEGMENTED_CHECK_OFFSETS)
        st = gs_check_offsets(ctx, p->offsets, segments, p->n, p->stream);
    if (st == GS_SUCCESS)
        st = gs_workspace_get(ctx, p->stream, fn, &ws);
    /* A scan of n == 0 (an exact scan's total alone): in and out are 0, whatever the caller
     * passed. A reduction of n == 0 still writes its identity to out. */
    const int no_data = p->scan && p->n == 0;
    const CUdeviceptr in = no_data ? 0 : (CUdeviceptr)(uintptr_t)p->in;
    const CUdeviceptr out = no_data ? 0 : (CUdeviceptr)(uintptr_t)p->out;
    if (st == GS_SUCCESS && p->scan) {
        gs_backend_scan_args a = {
            .struct_size = sizeof a, .dtype = p->dtype, .op = p->op, .out_dtype = p->out_dtype,
            .in = in, .n = p->n, .out = out, .stream = p->stream,
            .workspace = ws, .workspace_bytes = ctx->workspace_bytes, .flags = p->backend_flags,
            .carry_in = (CUdeviceptr)(uintptr_t)p->carry_in, .carry_in_count = p->carry_in_count,
            .total = (CUdeviceptr)(uintptr_t)p->total};
        st = ctx->backend->ops->scan(ctx->instance, &a);
    } else if (st == GS_SUCCESS && p->offsets) {
        gs_backend_segmented_args a = {
            .struct_size = sizeof a, .dtype = p->dtype, .op = p->op, .out_dtype = p->out_dtype,
            .in = in, .n = p->n, .offsets = (CUdeviceptr)(uintptr_t)p->offsets, .num_segments = segments,
            .out = out, .stream = p->stream, .workspace = ws, .workspace_bytes = ctx->workspace_bytes,
            .flags = p->backend_flags};
        st = ctx->backend->ops->segmented_reduce(ctx->instance, &a);
    } else if (st == GS_SUCCESS) {
        gs_backend_reduce_args a = {
            .struct_size = sizeof a, .dtype = p->dtype, .op = p->op, .out_dtype = p->out_dtype,
            .in = in, .n = p->n, .out = out, .stream = p->stream,
            .workspace = ws, .workspace_bytes = ctx->workspace_bytes, .flags = p->backend_flags};
        st = ctx->backend->ops->reduce(ctx->instance, &a);
    }
    gs_context_pop(ctx, pushed);
    return st;
}

GS_API gs_status gs_reduce(gs_context *ctx, const void *in, uint64_t n, gs_dtype dtype, gs_op op, void *out,
                           gs_stream stream)
{
    return gs_reduce_ex(ctx, in, n, dtype, op, out, stream, NULL);
}

GS_API gs_status gs_reduce_ex(gs_context *ctx, const void *in, uint64_t n, gs_dtype dtype, gs_op op, void *out,
                              gs_stream stream, const gs_reduce_options *opts)
{
    static const char fn[] = "gs_reduce";
    gs_clear_error();
    gs_dtype out_dtype;
    uint32_t flags;
    gs_status st = gs_check_reduce(in, n, dtype, op, out, opts, &out_dtype, &flags);
    if (st != GS_SUCCESS)
        return st;
    const gs_driver *drv;
    if ((st = gs_context_resolve(&ctx, &drv)) != GS_SUCCESS ||
        (st = gs_check_supported(ctx, fn, dtype, op, out_dtype)) != GS_SUCCESS ||
        (flags && (st = gs_check_supported_flags(ctx, fn, dtype, op, out_dtype, flags)) != GS_SUCCESS))
        return st;
    const launch_plan plan = {.fn = fn, .dtype = dtype, .out_dtype = out_dtype, .op = op, .in = in, .n = n,
                              .out = out, .out_count = 1, .stream = (CUstream)stream, .backend_flags = flags};
    return launch(ctx, drv, &plan);
}

GS_API gs_status gs_segmented_reduce(gs_context *ctx, const void *in, uint64_t n, gs_dtype dtype, gs_op op,
                                     const int64_t *offsets, uint64_t num_segments, void *out, gs_stream stream,
                                     uint32_t flags)
{
    static const char fn[] = "gs_segmented_reduce";
    gs_clear_error();
    gs_status st = gs_check_segmented(in, n, dtype, op, offsets, num_segments, out, flags);
    if (st != GS_SUCCESS)
        return st;
    const gs_dtype out_dtype = gs_default_out(dtype, op);
    const gs_driver *drv;
    if ((st = gs_context_resolve(&ctx, &drv)) != GS_SUCCESS)
        return st;
    const gs_backend_ops *ops = ctx->backend->ops;
    if (!ops->segmented_reduce) /* NULL for a 1.0 backend too (loader.c: lift_ops) */
        return gs_fail(GS_ERROR_UNSUPPORTED, "%s: backend %s (%s, backend ABI %u.%u) has no segmented reduction", fn,
                       ops->name, ctx->backend->path, GS_BACKEND_ABI_VERSION_MAJOR(ops->abi_version),
                       ops->abi_version & 0xffffu);
    const uint32_t backend_flags = flags & GS_SEGMENTED_EXACT ? GS_BACKEND_SEGMENTED_EXACT : 0;
    if ((st = gs_check_supported(ctx, fn, dtype, op, out_dtype)) != GS_SUCCESS ||
        (backend_flags && (st = gs_check_supported_flags(ctx, fn, dtype, op, out_dtype, backend_flags)) != GS_SUCCESS))
        return st;
    if (num_segments == 0)
        return GS_SUCCESS; /* nothing to write: no launch */
    const launch_plan plan = {.fn = fn, .dtype = dtype, .out_dtype = out_dtype, .op = op, .in = in, .n = n,
                              .out = out, .out_count = num_segments, .stream = (CUstream)stream,
                              .offsets = offsets, .flags = flags, .backend_flags = backend_flags};
    return launch(ctx, drv, &plan);
}

GS_API gs_status gs_scan(gs_context *ctx, const void *in, uint64_t n, gs_dtype dtype, gs_op op, void *out,
                         gs_stream stream, const gs_scan_options *opts)
{
    static const char fn[] = "gs_scan";
    gs_clear_error();
    gs_scan_request r;
    gs_status st = gs_check_scan(in, n, dtype, op, out, opts, &r);
    if (st != GS_SUCCESS || (n == 0 && !r.total))
        return st; /* nothing to write, so no launch and no context (gridsync.h) */
    const uint32_t backend_flags = (r.flags & GS_SCAN_EXCLUSIVE ? GS_BACKEND_SCAN_EXCLUSIVE : 0) |
                                   (r.flags & GS_SCAN_EXACT ? GS_BACKEND_SCAN_EXACT : 0);
    const gs_driver *drv;
    if ((st = gs_context_resolve(&ctx, &drv)) != GS_SUCCESS ||
        (st = gs_check_supported_scan(ctx, fn, dtype, op, r.out_dtype, backend_flags)) != GS_SUCCESS)
        return st;
    const launch_plan plan = {.fn = fn, .dtype = dtype, .out_dtype = r.out_dtype, .op = op, .in = in, .n = n,
                              .out = out, .out_count = n, .stream = (CUstream)stream,
                              .backend_flags = backend_flags, .scan = 1, .carry_in = r.carry_in,
                              .carry_in_count = r.carry_in_count, .total = r.total};
    return launch(ctx, drv, &plan);
}

/* ---- exact accumulators rounded on the device (GRIDSYNC_1.3) -------------------------- */

GS_API gs_status gs_exact_round_device(gs_context *ctx, const gs_exact_acc *acc, uint64_t count, gs_dtype out_dtype,
                                       void *out, gs_stream stream)
{
    static const char fn[] = "gs_exact_round_device";
    gs_clear_error();
    gs_status st = gs_check_exact_round(acc, count, out_dtype, out);
    if (st != GS_SUCCESS || count == 0)
        return st; /* count == 0: nothing to write, so no launch and no context (gridsync.h) */
    const gs_driver *d;
    if ((st = gs_context_resolve(&ctx, &d)) != GS_SUCCESS)
        return st;
    const gs_backend_ops *ops = ctx->backend->ops;
    if (!ops->exact_round) /* NULL for a 1.0-1.2 backend (loader.c: lift_ops) */
        return gs_fail(GS_ERROR_UNSUPPORTED, "%s: backend %s (%s, backend ABI %u.%u) has no device rounding of "
                       "exact accumulators", fn, ops->name, ctx->backend->path,
                       GS_BACKEND_ABI_VERSION_MAJOR(ops->abi_version), ops->abi_version & 0xffffu);
    /* gs_check_exact_round bounded both byte counts. */
    if ((st = gs_check_pointer(d, fn, "acc", acc, count * sizeof(gs_exact_acc), NULL, NULL)) != GS_SUCCESS ||
        (st = gs_check_pointer(d, fn, "out", out, count * gs_dtype_size(out_dtype), NULL, NULL)) != GS_SUCCESS)
        return st;
    int pushed;
    if ((st = gs_context_push(ctx, &pushed)) != GS_SUCCESS)
        return st;
    /* No workspace, so the stream is checked here as gs_queue_reset checks it: a stream of
     * another CUDA context would run the kernel there; not asked of a capturing stream. */
    const CUstream s = (CUstream)stream;
    CUstreamCaptureStatus cap;
    st = gs_check_capture(ctx, s, fn, &cap);
    if (st == GS_SUCCESS && cap == CU_STREAM_CAPTURE_STATUS_NONE)
        st = gs_check_stream_owner(ctx, s, fn);
    if (st == GS_SUCCESS) {
        const gs_backend_exact_round_args a = {
            .struct_size = sizeof a, .out_dtype = out_dtype, .acc = (CUdeviceptr)(uintptr_t)acc,
            .count = count, .out = (CUdeviceptr)(uintptr_t)out, .stream = s};
        st = ops->exact_round(ctx->instance, &a);
    }
    gs_context_pop(ctx, pushed);
    return st;
}

/* ---- the work queue's memory (GRIDSYNC_1.1; the device side is gridsync_device.cuh) ---- */

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
    /* As a stream workspace is made (workspace.c): zero for a launch on any stream, and
     * possible while some stream is being captured. */
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
    CUstreamCaptureStatus cap;
    st = gs_check_capture(ctx, s, "gs_queue_reset", &cap);
    /* A stream of another CUDA context would run the fill there. Not asked of a capturing
     * stream (gs_check_stream_owner); the driver refuses a cross-context capture
     * dependency itself. */
    if (st == GS_SUCCESS && cap == CU_STREAM_CAPTURE_STATUS_NONE)
        st = gs_check_stream_owner(ctx, s, "gs_queue_reset");
    CUresult rc;
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
