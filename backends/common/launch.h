/*
 * What backend.c's launches share with scan.c's: a kernel looked up for a call, the
 * workspace's size check and one launch. Host code of every backend, C.
 */
#ifndef GS_BACKEND_LAUNCH_H
#define GS_BACKEND_LAUNCH_H

#include <stdint.h>

#include "gridsync_backend.h"
#include "modules.h"

/* Kernel k of family (k < 0: none for op over dtype into out, GS_ERROR_UNSUPPORTED with a
 * message), loaded at its first call. */
gs_status gs_kernel_for(gs_backend_instance *inst, gs_family family, int k, gs_op op, gs_dtype dtype, gs_dtype out,
                        const gs_kernel_slot **s);

/* GS_ERROR_INTERNAL, with a message, when the core's workspace is smaller than this backend's
 * regions (workspace.h). */
gs_status gs_workspace_fits(uint64_t bytes);

/* One launch of kernel `name` (s) on grid blocks of `block` threads. */
gs_status gs_launch_block(const gs_kernel_slot *s, const char *name, unsigned int grid, unsigned int block,
                          CUstream stream, void **params);

/* One launch on blocks of GS_BACKEND_BLOCK threads. */
static inline gs_status gs_launch(const gs_kernel_slot *s, const char *name, unsigned int grid, CUstream stream,
                                  void **params)
{
    return gs_launch_block(s, name, grid, GS_BACKEND_BLOCK, stream, params);
}

/* scan.c: the scan index filled once by the entry point, and the two scan ops. */
void gs_scan_index_kernels(void);
gs_status gs_be_query_scan(const gs_backend_instance *inst, gs_dtype dtype, gs_op op, gs_dtype out, uint32_t flags);
gs_status gs_be_scan(gs_backend_instance *inst, const gs_backend_scan_args *a);

#endif
