/* gs_context: one CUDA context, the backend chosen for its device, and the per-stream
 * workspaces; the default contexts that a NULL ctx stands for. */
#ifndef GS_CORE_CONTEXT_H
#define GS_CORE_CONTEXT_H

#include <pthread.h>
#include <stdint.h>

#include "driver.h"
#include "dtype.h"
#include "loader.h"
#include "workspace.h"

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

    pthread_mutex_t lock; /* guards ws */
    gs_workspaces ws;
};

/* Runs the backend selection for device `dev` with `cu` current; fills ctx. */
gs_status gs_context_init(gs_context *ctx, const gs_driver *drv, CUcontext cu, CUdevice dev, int ordinal);
void gs_context_fini(gs_context *ctx);

/* gs_context_create and gs_context_destroy: a context on device `device`'s primary
 * context, and its end (workspaces freed, the primary context released). */
gs_status gs_context_open(const gs_driver *drv, int device, gs_context **out);
void gs_context_close(gs_context *ctx);

/* The default context for the calling thread's current CUDA context (device 0's primary
 * context when there is none). */
gs_status gs_default_context(const gs_driver *drv, gs_context **out);

/* The driver and, when *ctx is NULL, the default context, as every entry point resolves
 * them. */
gs_status gs_context_resolve(gs_context **ctx, const gs_driver **drv);

/* Makes ctx->cu current for the call unless it already is; *pushed says a gs_context_pop
 * is owed. */
gs_status gs_context_push(const gs_context *ctx, int *pushed);
void gs_context_pop(const gs_context *ctx, int pushed);

#endif
