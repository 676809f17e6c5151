/*
 * The layout of every public struct, as released in ABI 1.0 (gridsync.h 0.1, backend ABI
 * 1.0), on LP64 targets. Members may only be appended: an inserted, removed, resized or
 * reordered member moves an offset here, and programs or backends built against the
 * older header would read the wrong field. Exits 77 (skipped) on other data models.
 */
#include <stddef.h>
#include <stdio.h>

#include "check.h"
#include "gridsync.h"
#include "gridsync_backend.h"

#define OFFSET(type, member, want) CHECK_INT(offsetof(type, member), want)
/* A struct may grow at its end, never shrink below the released end. */
#define AT_LEAST(type, want)                                                              \
    do {                                                                                  \
        if (sizeof(type) < (want))                                                        \
            CHECK_FAIL("sizeof(%s) is %zu, smaller than released (%d)", #type, sizeof(type), (int)(want)); \
    } while (0)

int main(void)
{
    if (sizeof(void *) != 8 || sizeof(long) != 8 || sizeof(int) != 4) {
        printf("skipped: the recorded layouts are for LP64\n");
        return 77;
    }
    CHECK_INT(sizeof(gs_status), 4);
    CHECK_INT(sizeof(gs_dtype), 4);
    CHECK_INT(sizeof(gs_op), 4);

    OFFSET(gs_context_info, struct_size, 0);
    OFFSET(gs_context_info, device, 4);
    OFFSET(gs_context_info, cc_major, 8);
    OFFSET(gs_context_info, cc_minor, 12);
    OFFSET(gs_context_info, multiprocessor_count, 16);
    OFFSET(gs_context_info, device_name, 24);
    OFFSET(gs_context_info, backend_name, 32);
    OFFSET(gs_context_info, backend_path, 40);
    OFFSET(gs_context_info, selection_log, 48);
    AT_LEAST(gs_context_info, 56);

    OFFSET(gs_reduce_options, struct_size, 0);
    OFFSET(gs_reduce_options, out_dtype, 4);
    AT_LEAST(gs_reduce_options, 8);

    OFFSET(gs_backend_host, struct_size, 0);
    OFFSET(gs_backend_host, abi_version, 4);
    OFFSET(gs_backend_host, log, 8);
    OFFSET(gs_backend_host, set_error, 16);
    OFFSET(gs_backend_host, cuGetErrorName, 24);
    OFFSET(gs_backend_host, cuDeviceGetAttribute, 32);
    OFFSET(gs_backend_host, cuModuleLoadData, 40);
    OFFSET(gs_backend_host, cuModuleUnload, 48);
    OFFSET(gs_backend_host, cuModuleGetFunction, 56);
    OFFSET(gs_backend_host, cuFuncGetAttribute, 64);
    OFFSET(gs_backend_host, cuFuncSetAttribute, 72);
    OFFSET(gs_backend_host, cuOccupancyMaxActiveBlocksPerMultiprocessor, 80);
    OFFSET(gs_backend_host, cuLaunchKernel, 88);
    OFFSET(gs_backend_host, cuGetProcAddress, 96);
    AT_LEAST(gs_backend_host, 104);

    OFFSET(gs_backend_device, struct_size, 0);
    OFFSET(gs_backend_device, device, 4);
    OFFSET(gs_backend_device, context, 8);
    OFFSET(gs_backend_device, cc_major, 16);
    OFFSET(gs_backend_device, cc_minor, 20);
    OFFSET(gs_backend_device, multiprocessor_count, 24);
    OFFSET(gs_backend_device, max_threads_per_multiprocessor, 28);
    AT_LEAST(gs_backend_device, 32);

    OFFSET(gs_backend_reduce_args, struct_size, 0);
    OFFSET(gs_backend_reduce_args, dtype, 4);
    OFFSET(gs_backend_reduce_args, op, 8);
    OFFSET(gs_backend_reduce_args, out_dtype, 12);
    OFFSET(gs_backend_reduce_args, in, 16);
    OFFSET(gs_backend_reduce_args, n, 24);
    OFFSET(gs_backend_reduce_args, out, 32);
    OFFSET(gs_backend_reduce_args, stream, 40);
    OFFSET(gs_backend_reduce_args, workspace, 48);
    OFFSET(gs_backend_reduce_args, workspace_bytes, 56);
    AT_LEAST(gs_backend_reduce_args, 64);

    OFFSET(gs_backend_ops, struct_size, 0);
    OFFSET(gs_backend_ops, abi_version, 4);
    OFFSET(gs_backend_ops, name, 8);
    OFFSET(gs_backend_ops, open, 16);
    OFFSET(gs_backend_ops, close, 24);
    OFFSET(gs_backend_ops, query_reduce, 32);
    OFFSET(gs_backend_ops, workspace_size, 40);
    OFFSET(gs_backend_ops, reduce, 48);
    AT_LEAST(gs_backend_ops, 56);

    /* The ABI version a 1.0 backend was built with must still be what this header says
     * is compatible: same major. */
    CHECK_INT(GS_BACKEND_ABI_MAJOR, 1);
    CHECK_STR(GS_BACKEND_ENTRY_V1_NAME, "gridsync_backend_entry_v1");
    return check_exit_code();
}
