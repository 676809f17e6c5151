/* gs_scan's argument checks (validate.h): the options, the exact flag's carry-in and total,
 * and the four ranges a launch touches. */
#define _GNU_SOURCE
#include "validate.h"

#include "context.h"
#include "dtype.h"
#include "error.h"

static const char fn[] = "gs_scan";

/* gs_scan's outputs: dtype, or gs_reduce_options' wider ones (gridsync.h). */
static int scan_out_allowed(gs_dtype in, gs_op op, gs_dtype out)
{
    if (out == in)
        return 1;
    const int sum_prod = op == GS_OP_SUM || op == GS_OP_PROD;
    switch (in) {
    case GS_INT8:
    case GS_INT32: return sum_prod && out == GS_INT64;
    case GS_UINT8:
    case GS_UINT32: return sum_prod && out == GS_UINT64;
    case GS_FLOAT32: return sum_prod && out == GS_FLOAT64;
    case GS_FLOAT16:
    case GS_BFLOAT16: return (sum_prod || op == GS_OP_MIN || op == GS_OP_MAX) && out == GS_FLOAT32;
    default: return 0;
    }
}

/* Whether opts, struct_size bytes long, holds `member` whole. */
#define SCAN_HAS(opts, member) \
    ((opts)->struct_size >= offsetof(gs_scan_options, member) + sizeof((opts)->member))

/* The options' members that struct_size covers, checked alone and against each other. */
static gs_status read_options(const gs_scan_options *opts, gs_scan_request *req)
{
    if (!SCAN_HAS(opts, out_dtype))
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: opts->struct_size (%u) is too small", fn, opts->struct_size);
    if (opts->out_dtype != GS_OUT_DEFAULT) {
        if (!gs_dtype_valid(opts->out_dtype))
            return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: out_dtype %d is not a gs_dtype", fn, (int)opts->out_dtype);
        req->out_dtype = (gs_dtype)opts->out_dtype;
    }
    /* A caller built against an older header has a shorter struct: its bytes past
     * struct_size are not ours to read. */
    if (SCAN_HAS(opts, flags))
        req->flags = opts->flags;
    if (SCAN_HAS(opts, carry_in))
        req->carry_in = opts->carry_in;
    if (SCAN_HAS(opts, carry_in_count))
        req->carry_in_count = opts->carry_in_count;
    if (SCAN_HAS(opts, total))
        req->total = opts->total;
    const uint32_t known = GS_SCAN_EXCLUSIVE | GS_SCAN_EXACT;
    if (req->flags & ~known)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: reserved flags 0x%x", fn, req->flags & ~known);
    if (!(req->flags & GS_SCAN_EXACT) && (req->carry_in || req->carry_in_count || req->total))
        return gs_fail(GS_ERROR_INVALID_ARGUMENT,
                       "%s: carry_in = %p, carry_in_count = %llu, total = %p without GS_SCAN_EXACT (they must be "
                       "NULL, 0, NULL)", fn, (const void *)req->carry_in, (unsigned long long)req->carry_in_count,
                       (void *)req->total);
    if (!req->carry_in != !req->carry_in_count)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: carry_in = %p with carry_in_count = %llu (NULL goes with 0 "
                       "and only with 0)", fn, (const void *)req->carry_in, (unsigned long long)req->carry_in_count);
    return GS_SUCCESS;
}

/* The checks made before knowing whether the call launches: dtype, op and the options. */
static gs_status check_scan_kind(gs_dtype dtype, gs_op op, const gs_scan_options *opts, gs_scan_request *req)
{
    gs_status st;
    if ((st = gs_check_dtype_op(fn, dtype, op)) != GS_SUCCESS)
        return st;
    if (op == GS_OP_ARGMIN || op == GS_OP_ARGMAX)
        return gs_fail(GS_ERROR_UNSUPPORTED,
                       "%s: ARGMIN/ARGMAX have no scan; MIN/MAX give the running extremes, gs_reduce the index", fn);
    *req = (gs_scan_request){.out_dtype = dtype};
    if (opts && (st = read_options(opts, req)) != GS_SUCCESS)
        return st;
    if (!scan_out_allowed(dtype, op, req->out_dtype))
        return gs_fail(GS_ERROR_UNSUPPORTED, "%s: no scan of %s over %s into %s (outputs: dtype, or gs_reduce_ex's "
                       "wider ones)", fn, gs_op_name(op), gs_dtype_name(dtype), gs_dtype_name(req->out_dtype));
    if ((req->flags & GS_SCAN_EXACT) && (op != GS_OP_SUM || !gs_exact_pair(dtype, req->out_dtype)))
        return gs_fail(GS_ERROR_UNSUPPORTED, "%s: GS_SCAN_EXACT scans are float SUMs (f16/bf16 -> same or f32, f32 -> "
                       "f32 or f64, f64 -> f64), not %s over %s into %s", fn, gs_op_name(op), gs_dtype_name(dtype),
                       gs_dtype_name(req->out_dtype));
    return GS_SUCCESS;
}

/* One byte range a launch touches; empty ones overlap nothing. */
typedef struct range {
    const char *name;
    uint64_t start, bytes;
} range;

/* carry_in's and total's accumulators: 8-byte aligned (the kernel reads and writes int64
 * words), their bytes not wrapping around memory, as gs_check_exact_round's acc. */
static gs_status check_accumulators(const char *name, const void *p, uint64_t count)
{
    const uint64_t b = (uint64_t)(uintptr_t)p;
    if (b % 8)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: %s = %p is not aligned to 8 bytes (gs_exact_acc is int64 words)",
                       fn, name, p);
    if (count > (UINT64_MAX - b) / sizeof(gs_exact_acc))
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: %s = %p + %llu accumulators (%zu bytes each) wraps around "
                       "memory", fn, name, p, (unsigned long long)count, sizeof(gs_exact_acc));
    return GS_SUCCESS;
}

gs_status gs_check_scan(const void *in, uint64_t n, gs_dtype dtype, gs_op op, const void *out,
                        const gs_scan_options *opts, gs_scan_request *req)
{
    gs_status st;
    if ((st = check_scan_kind(dtype, op, opts, req)) != GS_SUCCESS || (n == 0 && !req->total))
        return st;
    if (req->carry_in && (st = check_accumulators("carry_in", req->carry_in, req->carry_in_count)) != GS_SUCCESS)
        return st;
    if (req->total && (st = check_accumulators("total", req->total, 1)) != GS_SUCCESS)
        return st;
    const uint64_t isize = gs_dtype_size(dtype), osize = gs_dtype_size(req->out_dtype);
    const uint64_t ib = (uint64_t)(uintptr_t)in, ob = (uint64_t)(uintptr_t)out;
    if (n) {
        if (!out)
            return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: out is NULL but n is %llu", fn, (unsigned long long)n);
        if ((st = gs_check_input(fn, in, n, dtype)) != GS_SUCCESS)
            return st;
        if (ob % osize)
            return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: out = %p is not aligned to its %s results", fn, out,
                           gs_dtype_name(req->out_dtype));
        if (n > (UINT64_MAX - ob) / osize)
            return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: n = %llu results of %s from %p wrap around memory", fn,
                           (unsigned long long)n, gs_dtype_name(req->out_dtype), out);
        /* In place is one element read, then written, by the same position; any other
         * overlap would have a position read after another one wrote it. */
        if (ib == ob && req->out_dtype != dtype)
            return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: in == out, but the results (%s) are wider than the "
                           "input (%s): in place needs the input's type", fn, gs_dtype_name(req->out_dtype),
                           gs_dtype_name(dtype));
    }
    /* Every range is bounded above (no end wraps). The accumulators are read and written
     * while the elements are, by other blocks: no order protects any overlap among them. */
    const range r[] = {
        {"in", ib, n * isize},
        {"out", ob, n * osize},
        {"carry_in", (uint64_t)(uintptr_t)req->carry_in, req->carry_in_count * sizeof(gs_exact_acc)},
        {"total", (uint64_t)(uintptr_t)req->total, req->total ? sizeof(gs_exact_acc) : 0},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        for (size_t j = i + 1; j < sizeof r / sizeof r[0]; j++) {
            if (i == 0 && j == 1 && ib == ob)
                continue; /* in place, checked above */
            if (r[i].bytes && r[j].bytes && r[i].start < r[j].start + r[j].bytes &&
                r[j].start < r[i].start + r[i].bytes)
                return gs_fail(GS_ERROR_INVALID_ARGUMENT, "%s: %s = %p (%llu bytes) and %s = %p (%llu bytes) overlap%s",
                               fn, r[i].name, (void *)(uintptr_t)r[i].start, (unsigned long long)r[i].bytes,
                               r[j].name, (void *)(uintptr_t)r[j].start, (unsigned long long)r[j].bytes,
                               i == 0 && j == 1 ? ": only in == out may" : "");
        }
    return GS_SUCCESS;
}

gs_status gs_check_supported_scan(const gs_context *ctx, const char *fn_name, gs_dtype dtype, gs_op op,
                                  gs_dtype out_dtype, uint32_t backend_flags)
{
    const gs_backend_ops *ops = ctx->backend->ops;
    /* NULL for a backend older than 1.3 too (loader.c: lift_ops) */
    if (!ops->query_scan || !ops->scan)
        return gs_fail(GS_ERROR_UNSUPPORTED, "%s: backend %s (%s, backend ABI %u.%u) has no scan", fn_name, ops->name,
                       ctx->backend->path, GS_BACKEND_ABI_VERSION_MAJOR(ops->abi_version), ops->abi_version & 0xffffu);
    if (ops->query_scan(ctx->instance, dtype, op, out_dtype, backend_flags) != GS_SUCCESS)
        return gs_fail(GS_ERROR_UNSUPPORTED, "%s: backend %s does not offer %sscans of %s over %s into %s", fn_name,
                       ops->name, backend_flags & GS_BACKEND_SCAN_EXACT ? "exact " : "", gs_op_name(op),
                       gs_dtype_name(dtype), gs_dtype_name(out_dtype));
    return GS_SUCCESS;
}
