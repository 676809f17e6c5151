/* Per-stream and per-capture device workspaces (docs/design.md, "Workspaces"): the ticket
 * counter and the blocks' partials of each launch live in a buffer that belongs to one
 * stream, or to one graph for a captured launch, so two launches that could run at the
 * same time never share a counter. */
#ifndef GS_CORE_WORKSPACE_H
#define GS_CORE_WORKSPACE_H

#include <stddef.h>

#include "driver.h"

typedef struct gs_context gs_context;

/* One device buffer per stream, keyed by cuStreamGetId, which is unique for the life of
 * the process: a stream handle reused after cuStreamDestroy never finds the old buffer. */
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

/* A context's workspaces; the context's lock guards all of it. */
typedef struct gs_workspaces {
    gs_workspace_slot *slots;
    size_t nslots, nused; /* open addressing, nslots a power of two */
    CUstream zero_stream; /* private non-blocking stream that zero-fills new buffers */
    gs_capture_slot captures[GS_CAPTURE_SLOTS];
    unsigned next_capture; /* round-robin replacement */
} gs_workspaces;

/* The workspace of `stream` in ctx, made on first use; while `stream` is being captured,
 * the capture's own. ctx->cu must be current. `fn` names the caller in messages. */
gs_status gs_workspace_get(gs_context *ctx, CUstream stream, const char *fn, CUdeviceptr *buffer);

/* `bytes` of device memory in ctx, zero-filled and waited for, so it is zero for a launch
 * on any stream; works while some stream is being captured. `what` names it in messages.
 * Called with ctx->lock held (it guards the private zero-fill stream). */
gs_status gs_alloc_zeroed(gs_context *ctx, size_t bytes, const char *what, CUdeviceptr *out);

/* Frees every workspace of ctx, and the buffers of destroyed graphs of ctx's CUDA
 * context; ctx->cu must be current. */
void gs_workspaces_free(gs_context *ctx);

#endif
