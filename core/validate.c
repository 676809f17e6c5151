/* Argument checks of the entry points (validate.h); gs_scan's are in validate_scan.c. */
#define _GNU_SOURCE
#include "validate.h"

#include <stdlib.h>

#include "context.h"
#include "dtype.h"
#include "error.h"
#include "pointer_query.h"

/* ---- on the arguments alone ---------------------------------------------------------- */

gs_status gs_check_dtype_op(const char *fn, gs_dtype dtype, gs_op op)
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

gs_status gs_check_input(const char *fn, const void *in, uint64_t n, gs_dtype dtype)
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

int gs_exact_pair(gs_dtype in, gs_dtype out)
{
    switch (in) {
    case GS_FLOAT16:
    case GS_BFLOAT16: return out == in || out == GS_FLOAT32;
    case GS_FLOAT32: return out == GS_FLOAT32 || out == GS_FLOAT64;
    case GS_FLOAT64: return out == GS_FLOAT64;
    default: return 0;
    }
}

/* opts->flags (GRIDSYNC_1.2): known bits, one exact choice at most, and what it applies to. */
static gs_status check_flags(uint32_t flags, gs_dtype dtype, gs_op op, gs_dtype out_dtype)
{
    const uint32_t known = GS_REDUCE_EXACT | GS_REDUCE_EXACT_ACCUMULATOR;
    if (flags & ~known)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_reduce_ex: unknown flags 0x%x", flags & ~known);
    if (flags == known)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT,
                       "gs_reduce_ex: GS_REDUCE_EXACT and GS_REDUCE_EXACT_ACCUMULATOR together (choose one output)");
    if (flags && (op != GS_OP_SUM || !gs_exact_pair(dtype, out_dtype)))
        return gs_fail(GS_ERROR_UNSUPPORTED,
                       "gs_reduce_ex: exact sums are float SUMs (f16/bf16 -> same or f32, f32 -> f32 or f64, f64 -> "
                       "f64), not %s over %s into %s",
                       gs_op_name(op), gs_dtype_name(dtype), gs_dtype_name(out_dtype));
    return GS_SUCCESS;
}

gs_status gs_check_reduce(const void *in, uint64_t n, gs_dtype dtype, gs_op op, const void *out,
                          const gs_reduce_options *opts, gs_dtype *out_dtype, uint32_t *flags)
{
    gs_status st;
    if ((st = gs_check_dtype_op("gs_reduce", dtype, op)) != GS_SUCCESS)
        return st;
    *out_dtype = gs_default_out(dtype, op);
    *flags = 0;
    if (opts) {
        if (opts->struct_size < offsetof(gs_reduce_options, out_dtype) + sizeof opts->out_dtype)
            return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_reduce_ex: opts->struct_size (%u) is too small",
                           opts->struct_size);
        if (opts->out_dtype != GS_OUT_DEFAULT) {
            if (!gs_dtype_valid(opts->out_dtype))
                return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_reduce_ex: out_dtype %d is not a gs_dtype",
                               (int)opts->out_dtype);
            *out_dtype = (gs_dtype)opts->out_dtype;
        }
        if (opts->struct_size >= offsetof(gs_reduce_options, flags) + sizeof opts->flags)
            *flags = opts->flags;
        if ((st = check_flags(*flags, dtype, op, *out_dtype)) != GS_SUCCESS)
            return st;
    }
    if (!out)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_reduce: out is NULL");
    if ((st = gs_check_input("gs_reduce", in, n, dtype)) != GS_SUCCESS)
        return st;
    if (*flags & GS_REDUCE_EXACT_ACCUMULATOR) {
        if ((uintptr_t)out % sizeof(int64_t))
            return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_reduce_ex: out = %p is not aligned to 8 bytes (a gs_exact_acc)",
                           out);
    } else if ((uintptr_t)out % gs_dtype_size(*out_dtype)) {
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_reduce: out = %p is not aligned to its %s result", out,
                       gs_dtype_name(*out_dtype));
    }
    return GS_SUCCESS;
}

gs_status gs_check_segmented(const void *in, uint64_t n, gs_dtype dtype, gs_op op, const int64_t *offsets,
                             uint64_t num_segments, const void *out, uint32_t flags)
{
    static const char fn[] = "gs_segmented_reduce";
    gs_status st;
    if ((st = gs_check_dtype_op(fn, dtype, op)) != GS_SUCCESS)
        return st;
    const uint32_t known = GS_SEGMENTED_CHECK_OFFSETS | GS_SEGMENTED_EXACT;
    if (flags & ~known)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", fn, flags & ~known);
    const gs_dtype out_dtype = gs_default_out(dtype, op);
    if ((flags & GS_SEGMENTED_EXACT) && (op != GS_OP_SUM || !gs_exact_pair(dtype, out_dtype)))
        return gs_fail(GS_ERROR_UNSUPPORTED,
                       "%s: GS_SEGMENTED_EXACT sums float16, bfloat16, float32 or float64 (SUM), not %s over %s", fn,
                       gs_op_name(op), gs_dtype_name(dtype));
    if (num_segments && !offsets)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: offsets is NULL", fn);
    if (num_segments && !out)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    if ((st = gs_check_input(fn, in, n, dtype)) != GS_SUCCESS)
        return st;
    if ((uintptr_t)offsets % sizeof(int64_t))
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: offsets = %p is not aligned to 8 bytes", fn,
                       (const void *)offsets);
    if ((uintptr_t)out % gs_dtype_size(out_dtype))
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: out = %p is not aligned to its %s results", fn, out,
                       gs_dtype_name(out_dtype));
    /* 2^56 segments: more than any device holds, and far from any overflow of the
     * offsets' and results' byte counts */
    if (num_segments >= (1ull << 56))
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: num_segments = %llu is too large", fn,
                       (unsigned long long)num_segments);
    return GS_SUCCESS;
}

gs_status gs_check_exact_round(const gs_exact_acc *acc, uint64_t count, gs_dtype out_dtype, const void *out)
{
    static const char fn[] = "gs_exact_round_device";
    if (!gs_dtype_valid((int)out_dtype) || !gs_dtype_is_float(out_dtype))
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: out_dtype %d is not a float type (f16, bf16, f32 or f64)", fn,
                       (int)out_dtype);
    if (count == 0)
        return GS_SUCCESS;
    if (!acc || !out)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: %s is NULL but count is %llu", fn, acc ? "out" : "acc",
                       (unsigned long long)count);
    const uint64_t asize = sizeof(gs_exact_acc), osize = gs_dtype_size(out_dtype);
    const uint64_t ab = (uint64_t)(uintptr_t)acc, ob = (uint64_t)(uintptr_t)out;
    /* The kernel reads the accumulators as int64 words. */
    if (ab % 8)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: acc = %p is not aligned to 8 bytes (gs_exact_acc is int64 words)",
                       fn, (const void *)acc);
    if (ob % osize)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: out = %p is not aligned to its %s results (%llu bytes)", fn, out,
                       gs_dtype_name(out_dtype), (unsigned long long)osize);
    /* So neither count * size overflows nor a range's end wraps. */
    if (count > (UINT64_MAX - ab) / asize)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: count = %llu accumulators (%llu bytes each) from %p wrap around "
                       "memory", fn, (unsigned long long)count, (unsigned long long)asize, (const void *)acc);
    if (count > (UINT64_MAX - ob) / osize)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: count = %llu results of %s from %p wrap around memory", fn,
                       (unsigned long long)count, gs_dtype_name(out_dtype), out);
    /* A result written over another thread's accumulator could land before that thread
     * read it: the kernel gives no order between threads. */
    if (ab < ob + count * osize && ob < ab + count * asize)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: acc = %p and out = %p overlap (count = %llu)", fn,
                       (const void *)acc, out, (unsigned long long)count);
    return GS_SUCCESS;
}

/* ---- once the context is known ------------------------------------------------------- */

gs_status gs_check_supported(const gs_context *ctx, const char *fn, gs_dtype dtype, gs_op op, gs_dtype out_dtype)
{
    if (ctx->supported[dtype][op] & (1u << out_dtype))
        return GS_SUCCESS;
    return gs_fail(GS_ERROR_UNSUPPORTED, "%s: backend %s does not offer %s over %s into %s", fn,
                   ctx->backend->ops->name, gs_op_name(op), gs_dtype_name(dtype), gs_dtype_name(out_dtype));
}

gs_status gs_check_supported_flags(const gs_context *ctx, const char *fn, gs_dtype dtype, gs_op op,
                                   gs_dtype out_dtype, uint32_t flags)
{
    const gs_backend_ops *ops = ctx->backend->ops;
    /* NULL for a backend older than 1.2 too (loader.c: lift_ops) */
    if (ops->query_reduce_flags && ops->query_reduce_flags(ctx->instance, dtype, op, out_dtype, flags) == GS_SUCCESS)
        return GS_SUCCESS;
    return gs_fail(GS_ERROR_UNSUPPORTED, "%s: backend %s (%s, backend ABI %u.%u) does not offer exact sums of %s into %s",
                   fn, ops->name, ctx->backend->path, GS_BACKEND_ABI_VERSION_MAJOR(ops->abi_version),
                   ops->abi_version & 0xffffu, gs_dtype_name(dtype), gs_dtype_name(out_dtype));
}

/* ---- asking the driver ------------------------------------------------------------------ */

/* One cuPointerGetAttributes call (internal/pointer_query.h). */
gs_status gs_check_pointer(const gs_driver *drv, const char *fn, const char *name, const void *p, uint64_t bytes,
                           CUdeviceptr *start_out, unsigned int *memtype_out)
{
    gs_pointer_info info;
    CUresult rc = gs_query_pointer(drv->cuPointerGetAttributes, (CUdeviceptr)(uintptr_t)p, &info);
    if (rc != CUDA_SUCCESS || info.memtype == 0)
        return gs_fail(GS_ERROR_INVALID_POINTER,
                       "%s: %s = %p is not memory the device can access (not from cudaMalloc, "
                       "cudaMallocManaged or cudaHostAlloc, or already freed)",
                       fn, name, p);
    /* Some kinds of memory report no range; then there is nothing more to check. */
    if (info.size && (uint64_t)(uintptr_t)p - info.start + bytes > info.size)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT,
                       "%s: %s = %p + %llu bytes runs past the end of its allocation (%zu bytes at 0x%llx)", fn,
                       name, p, (unsigned long long)bytes, info.size, (unsigned long long)info.start);
    if (start_out)
        *start_out = info.size ? info.start : 0;
    if (memtype_out)
        *memtype_out = info.memtype;
    return GS_SUCCESS;
}

gs_status gs_check_capture(gs_context *ctx, CUstream stream, const char *fn, CUstreamCaptureStatus *cap)
{
    const gs_driver *d = ctx->drv;
    *cap = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult rc = d->cuStreamIsCapturing(stream, cap);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(d, rc, "%s: cuStreamIsCapturing(stream %p)", fn, (void *)stream);
    if (*cap == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
        return gs_fail(GS_ERROR_CUDA, "%s: stream %p is in a stream capture that was invalidated earlier", fn,
                       (void *)stream);
    return GS_SUCCESS;
}

gs_status gs_check_stream_owner(gs_context *ctx, CUstream stream, const char *fn)
{
    const gs_driver *d = ctx->drv;
    CUcontext owner = NULL;
    CUresult rc = d->cuStreamGetCtx(stream, &owner);
    if (rc != CUDA_SUCCESS)
        return gs_cuda_error(d, rc, "%s: cuStreamGetCtx(stream %p)", fn, (void *)stream);
    if (owner != ctx->cu)
        return gs_fail(GS_ERROR_INVALID_CONTEXT,
                       "%s: stream %p belongs to another CUDA context than this gridsync context (device %d)", fn,
                       (void *)stream, ctx->ordinal);
    return GS_SUCCESS;
}

gs_status gs_check_offsets(gs_context *ctx, const int64_t *offsets, uint64_t num_segments, uint64_t n,
                           CUstream stream)
{
    static const char fn[] = "gs_segmented_reduce";
    const gs_driver *d = ctx->drv;
    CUstreamCaptureStatus cap;
    gs_status st = gs_check_capture(ctx, stream, fn, &cap);
    if (st != GS_SUCCESS)
        return st;
    if (cap != CU_STREAM_CAPTURE_STATUS_NONE)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT,
                       "%s: GS_SEGMENTED_CHECK_OFFSETS needs a host synchronisation, which stream %p cannot do "
                       "while it is being captured into a graph",
                       fn, (void *)stream);
    if (num_segments + 1 > SIZE_MAX / sizeof(int64_t))
        return gs_fail(GS_ERROR_OUT_OF_MEMORY, "%s: %llu offsets do not fit in host memory", fn,
                       (unsigned long long)num_segments + 1);
    const size_t bytes = (size_t)(num_segments + 1) * sizeof(int64_t);
    int64_t *h = malloc(bytes);
    if (!h)
        return gs_fail(GS_ERROR_OUT_OF_MEMORY, "%s: out of host memory for %zu bytes of offsets", fn, bytes);
    CUresult rc;
    if ((rc = d->cuStreamSynchronize(stream)) != CUDA_SUCCESS)
        st = gs_cuda_error(d, rc, "cuStreamSynchronize(stream %p) before checking the offsets", (void *)stream);
    else if ((rc = d->cuMemcpyDtoH(h, (CUdeviceptr)(uintptr_t)offsets, bytes)) != CUDA_SUCCESS)
        st = gs_cuda_error(d, rc, "cuMemcpyDtoH(%zu bytes of offsets)", bytes);
    else if (h[0] < 0)
        st = gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: offsets[0] = %lld is negative", fn, (long long)h[0]);
    else if ((uint64_t)h[num_segments] > n)
        st = gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: offsets[%llu] = %lld is beyond n = %llu", fn,
                     (unsigned long long)num_segments, (long long)h[num_segments], (unsigned long long)n);
    else
        for (uint64_t j = 0; j < num_segments; j++)
            if (h[j + 1] < h[j]) {
                st = gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: offsets decrease: offsets[%llu] = %lld, offsets[%llu] = %lld",
                             fn, (unsigned long long)j, (long long)h[j], (unsigned long long)j + 1,
                             (long long)h[j + 1]);
                break;
            }
    free(h);
    return st;
}
