/* Argument checks of the entry points (core/api.c). The cheap ones need no driver, so a
 * caller learns of a bad argument anywhere, and come first; those that ask the driver
 * about a pointer or a stream come after the context is resolved. Each returns the status
 * and sets the message naming the function (`fn`) and the argument. */
#ifndef GS_CORE_VALIDATE_H
#define GS_CORE_VALIDATE_H

#include <stdint.h>

#include "driver.h"

typedef struct gs_context gs_context;

/* ---- on the arguments alone ---------------------------------------------------------- */

/* dtype and op are valid and op is defined for dtype (GS_ERROR_UNSUPPORTED if not). */
gs_status gs_check_dtype_op(const char *fn, gs_dtype dtype, gs_op op);
/* in non-NULL unless n is 0, aligned to its elements, and n elements from in not wrapping. */
gs_status gs_check_input(const char *fn, const void *in, uint64_t n, gs_dtype dtype);
/* The (input, output) pairs of exact sums: the float SUMs of §2, wider outputs included. */
int gs_exact_pair(gs_dtype in, gs_dtype out);

/* gs_reduce / gs_reduce_ex: dtype, op, the options, in, n and out. *out_dtype gets the
 * output type the options ask for (the default for dtype and op when opts is NULL or says
 * GS_OUT_DEFAULT), *flags the options' flags (0 when opts is NULL or ends before them);
 * an exact flag is refused here for what it does not apply to (docs/semantics.md §12). */
gs_status gs_check_reduce(const void *in, uint64_t n, gs_dtype dtype, gs_op op, const void *out,
                          const gs_reduce_options *opts, gs_dtype *out_dtype, uint32_t *flags);

/* gs_segmented_reduce: dtype, op, flags, in, n, offsets, num_segments and out (the
 * offsets' values are the kernel's business, or gs_check_offsets'). */
gs_status gs_check_segmented(const void *in, uint64_t n, gs_dtype dtype, gs_op op, const int64_t *offsets,
                             uint64_t num_segments, const void *out, uint32_t flags);

/* gs_scan's options as the library reads them: each member that opts->struct_size does not
 * cover (or opts NULL) reads as its default (GS_OUT_DEFAULT resolved to dtype, 0, NULL). */
typedef struct gs_scan_request {
    gs_dtype out_dtype;
    uint32_t flags; /* GS_SCAN_* */
    const gs_exact_acc *carry_in;
    uint64_t carry_in_count;
    gs_exact_acc *total;
} gs_scan_request;

/* gs_scan (validate_scan.c): dtype, op and the options, then, when the call launches (n >= 1,
 * or n == 0 with a total), in, out, carry_in and total: aligned, not wrapping around memory
 * (so their byte counts do not overflow), no two overlapping but in == out. A call that
 * does not launch has only what needs no pointer checked. */
gs_status gs_check_scan(const void *in, uint64_t n, gs_dtype dtype, gs_op op, const void *out,
                        const gs_scan_options *opts, gs_scan_request *req);

/* gs_exact_round_device: out_dtype, then (count >= 1 only) acc and out: non-NULL, aligned,
 * not wrapping around memory (so their byte counts do not overflow), not overlapping. */
gs_status gs_check_exact_round(const gs_exact_acc *acc, uint64_t count, gs_dtype out_dtype, const void *out);

/* ---- once the context is known ------------------------------------------------------- */

/* ctx's backend offers op over dtype written as out_dtype. */
gs_status gs_check_supported(const gs_context *ctx, const char *fn, gs_dtype dtype, gs_op op, gs_dtype out_dtype);
/* ... and with these gs_reduce_ex flags (backend ABI 1.2's query_reduce_flags; a backend
 * without it offers none). */
gs_status gs_check_supported_flags(const gs_context *ctx, const char *fn, gs_dtype dtype, gs_op op,
                                   gs_dtype out_dtype, uint32_t flags);

/* ... and scans it with these GS_BACKEND_SCAN_* flags (backend ABI 1.3's query_scan and scan;
 * a backend without them has none). Asked at every call: no table caches the answer. */
gs_status gs_check_supported_scan(const gs_context *ctx, const char *fn, gs_dtype dtype, gs_op op,
                                  gs_dtype out_dtype, uint32_t backend_flags);

/* ---- asking the driver ------------------------------------------------------------------ */

/* [p, p + bytes) is memory the device can reach (GS_ERROR_INVALID_POINTER otherwise) and
 * inside one allocation (GS_ERROR_INVALID_ARGUMENT). *start and *memtype, when not NULL,
 * get the allocation's start (0 if the driver reports no range) and the memory type. */
gs_status gs_check_pointer(const gs_driver *drv, const char *fn, const char *name, const void *p, uint64_t bytes,
                           CUdeviceptr *start, unsigned int *memtype);

/* *cap gets whether `stream` is being captured; a capture invalidated earlier is an error
 * (anything queued into it would be lost). */
gs_status gs_check_capture(gs_context *ctx, CUstream stream, const char *fn, CUstreamCaptureStatus *cap);

/* `stream` belongs to ctx's CUDA context (a stream of another one would run our launch
 * there, with our workspace). Not for a capturing stream: stream queries may invalidate a
 * capture. NULL and the per-thread stream resolve to the current context, ctx's. */
gs_status gs_check_stream_owner(gs_context *ctx, CUstream stream, const char *fn);

/* GS_SEGMENTED_CHECK_OFFSETS: offsets[0] >= 0, non-decreasing, offsets[num_segments] <= n,
 * read on the host once the stream's earlier work (which may write them) is done. Refused
 * while `stream` is being captured (it cannot synchronise). ctx->cu must be current. */
gs_status gs_check_offsets(gs_context *ctx, const int64_t *offsets, uint64_t num_segments, uint64_t n,
                           CUstream stream);

#endif
