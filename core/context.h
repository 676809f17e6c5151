/* gs_context: one CUDA context, the backend chosen for its device, and the per-stream
 * workspaces. */
#ifndef GS_CORE_CONTEXT_H
#define GS_CORE_CONTEXT_H

#include <pthread.h>
#include <stdint.h>

#include "driver.h"
#include "dtype.h"
#include "loader.h"

/* One device buffer per stream: launches on one stream are ordered, launches on two
 * streams never share a counter. Keyed by cuStreamGetId, which is unique for the life of
 * the process, so a stream handle reused after cuStreamDestroy never finds the old one. */
typedef struct gs_workspace_slot {
    unsigned long long stream_id; /* 0 = empty */
    CUdeviceptr buffer;
} gs_workspace_slot;

/* The workspace of launches captured into a graph: one per (capture sequence, stream),
 * owned by the graph (a CUDA user object frees it with the graph). Remembered only so
 * that later calls in the same capture on the same stream reuse it; a forgotten entry
 * only costs a new workspace. */
#define GS_CAPTURE_SLOTS 32
typedef struct gs_capture_slot {
    unsigned long long capture_id; /* 0 = empty */
    CUstream stream;
    CUdeviceptr buffer;
} gs_capture_slot;

struct gs_context {
    const gs_driver *drv;
    CUcontext cu;
    unsigned long long cu_id; /* cuCtxGetId: distinguishes a re-created primary context */
    CUdevice device;
    int ordinal;
    int owns_primary; /* retained the device's primary context (gs_context_create) */
    int is_default;   /* owned by the library, never destroyed by the user */
    int cc_major, cc_minor, sm_count, max_threads_per_sm;
    char device_name[256];

    const gs_backend_file *backend;
    gs_backend_instance *instance;
    uint64_t workspace_bytes;
    /* supported[dtype][op] has bit out set when the backend implements op over dtype
     * written as out. */
    uint16_t supported[GS_DTYPE_COUNT][GS_OP_COUNT];
    char *selection_log;

    pthread_mutex_t lock; /* guards the workspace table and the zeroing stream */
    gs_workspace_slot *slots;
    size_t nslots, nused; /* open addressing, nslots a power of two */
    CUstream zero_stream; /* private non-blocking stream that zero-fills new workspaces */
    gs_capture_slot captures[GS_CAPTURE_SLOTS];
    unsigned next_capture; /* round-robin replacement */
};

/* Runs the backend selection for device `dev` with `cu` current; fills ctx. */
gs_status gs_context_init(gs_context *ctx, const gs_driver *drv, CUcontext cu, CUdevice dev, int ordinal);
void gs_context_fini(gs_context *ctx);

/* The default context for the calling thread's current CUDA context (device 0's primary
 * context when there is none). */
gs_status gs_default_context(const gs_driver *drv, gs_context **out);

/* Helpers of the public entry points (context.c, queue.c). */

/* The driver and, when *ctx is NULL, the default context, as gs_reduce resolves them. */
gs_status gs_context_resolve(gs_context **ctx, const gs_driver **drv);

/* Makes ctx->cu current for the call unless it already is; *pushed says a gs_context_pop
 * is owed. */
gs_status gs_context_push(const gs_context *ctx, int *pushed);
void gs_context_pop(const gs_context *ctx, int pushed);

/* [p, p + bytes) is memory the device can reach (GS_ERROR_INVALID_POINTER otherwise) and
 * inside one allocation (GS_ERROR_INVALID_ARGUMENT); `fn` and `name` name the function and
 * the argument in the message. *start and *memtype, when not NULL, get the allocation's
 * start (0 if the driver reports no range) and the memory type. */
gs_status gs_check_pointer(const gs_driver *drv, const char *fn, const char *name, const void *p, uint64_t bytes,
                           CUdeviceptr *start, unsigned int *memtype);

/* `bytes` of device memory in ctx, zero-filled and waited for, so it is zero for a launch
 * on any stream; works while some stream is being captured. `what` names it in messages.
 * Called with ctx->lock held (it guards the private zero-fill stream). */
gs_status gs_alloc_zeroed(gs_context *ctx, size_t bytes, const char *what, CUdeviceptr *out);

/* The workspace of `stream` in ctx, made on first use; while `stream` is being captured,
 * the capture's own (see gs_capture_slot). ctx->cu must be current. */
gs_status gs_workspace_get(gs_context *ctx, CUstream stream, CUdeviceptr *buffer);

#endif
