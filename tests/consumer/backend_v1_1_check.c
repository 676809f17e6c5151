/*
 * The frozen backend ABI 1.1 (gridsync_backend_v1_1.h) against the current one
 * (gridsync_backend.h), both included in one program: every 1.1 member sits at the same
 * offset with the same size in the current structs (a new minor may only append), and the
 * current major is still 1. Checked when this file compiles; running it prints the sizes.
 */
#include <stddef.h>
#include <stdio.h>

#include "gridsync_backend.h"
#include "gridsync_backend_v1_1.h"

#define SAME_MEMBER(cur, old, m)                                                                 \
    _Static_assert(offsetof(cur, m) == offsetof(old, m) &&                                       \
                       sizeof(((cur *)0)->m) == sizeof(((old *)0)->m),                           \
                   #cur "." #m " moved or changed size since backend ABI 1.1")
/* Members whose types do not involve the versioned structs must have the very same type. */
#if defined(__GNUC__)
#define SAME_TYPE(cur, old, m)                                                                   \
    _Static_assert(__builtin_types_compatible_p(__typeof__(((cur *)0)->m), __typeof__(((old *)0)->m)), \
                   #cur "." #m " changed type since backend ABI 1.1")
#else
#define SAME_TYPE(cur, old, m) _Static_assert(1, "")
#endif
#define SAME(cur, old, m) SAME_MEMBER(cur, old, m); SAME_TYPE(cur, old, m)
/* The current struct holds all of 1.1, and exactly 1.1 while the minor is 1. */
#define COVERS(cur, old, size)                                                                   \
    _Static_assert(sizeof(old) == (size) || sizeof(void *) != 8, #old " is not its 1.1 size");   \
    _Static_assert(GS_BACKEND_ABI_MINOR != 1 ? sizeof(cur) >= sizeof(old) : sizeof(cur) == sizeof(old), \
                   #cur " does not cover backend ABI 1.1")

_Static_assert(GS_BACKEND_ABI_MAJOR == 1, "a new backend ABI major: give it its own frozen header");
_Static_assert(GS_BACKEND_ABI_VERSION_MAJOR(GS_BACKEND_ABI_VERSION) ==
                   GS_BACKEND_ABI_VERSION_MAJOR(GS_BACKEND_ABI_VERSION_V1_1),
               "major differs");
_Static_assert(GS_LOG_DEBUG == GS_LOG_DEBUG_V1_1 && GS_LOG_ERROR == GS_LOG_ERROR_V1_1, "log levels changed");

COVERS(gs_backend_host, gs_backend_host_v1_1, GS_BACKEND_HOST_V1_1_SIZE);
SAME(gs_backend_host, gs_backend_host_v1_1, struct_size);
SAME(gs_backend_host, gs_backend_host_v1_1, abi_version);
SAME(gs_backend_host, gs_backend_host_v1_1, log);
SAME(gs_backend_host, gs_backend_host_v1_1, set_error);
SAME(gs_backend_host, gs_backend_host_v1_1, cuGetErrorName);
SAME(gs_backend_host, gs_backend_host_v1_1, cuDeviceGetAttribute);
SAME(gs_backend_host, gs_backend_host_v1_1, cuModuleLoadData);
SAME(gs_backend_host, gs_backend_host_v1_1, cuModuleUnload);
SAME(gs_backend_host, gs_backend_host_v1_1, cuModuleGetFunction);
SAME(gs_backend_host, gs_backend_host_v1_1, cuFuncGetAttribute);
SAME(gs_backend_host, gs_backend_host_v1_1, cuFuncSetAttribute);
SAME(gs_backend_host, gs_backend_host_v1_1, cuOccupancyMaxActiveBlocksPerMultiprocessor);
SAME(gs_backend_host, gs_backend_host_v1_1, cuLaunchKernel);
SAME(gs_backend_host, gs_backend_host_v1_1, cuGetProcAddress);

COVERS(gs_backend_device, gs_backend_device_v1_1, GS_BACKEND_DEVICE_V1_1_SIZE);
SAME(gs_backend_device, gs_backend_device_v1_1, struct_size);
SAME(gs_backend_device, gs_backend_device_v1_1, device);
SAME(gs_backend_device, gs_backend_device_v1_1, context);
SAME(gs_backend_device, gs_backend_device_v1_1, cc_major);
SAME(gs_backend_device, gs_backend_device_v1_1, cc_minor);
SAME(gs_backend_device, gs_backend_device_v1_1, multiprocessor_count);
SAME(gs_backend_device, gs_backend_device_v1_1, max_threads_per_multiprocessor);

COVERS(gs_backend_reduce_args, gs_backend_reduce_args_v1_1, GS_BACKEND_REDUCE_ARGS_V1_1_SIZE);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_1, struct_size);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_1, dtype);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_1, op);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_1, out_dtype);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_1, in);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_1, n);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_1, out);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_1, stream);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_1, workspace);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_1, workspace_bytes);

/* The function pointers of the ops take the versioned structs: offsets and sizes only. */
COVERS(gs_backend_ops, gs_backend_ops_v1_1, GS_BACKEND_OPS_V1_1_SIZE);
SAME(gs_backend_ops, gs_backend_ops_v1_1, struct_size);
SAME(gs_backend_ops, gs_backend_ops_v1_1, abi_version);
SAME(gs_backend_ops, gs_backend_ops_v1_1, name);
SAME_MEMBER(gs_backend_ops, gs_backend_ops_v1_1, open);
SAME_MEMBER(gs_backend_ops, gs_backend_ops_v1_1, close);
SAME_MEMBER(gs_backend_ops, gs_backend_ops_v1_1, query_reduce);
SAME_MEMBER(gs_backend_ops, gs_backend_ops_v1_1, workspace_size);
SAME_MEMBER(gs_backend_ops, gs_backend_ops_v1_1, reduce);
SAME_MEMBER(gs_backend_ops, gs_backend_ops_v1_1, segmented_reduce);

COVERS(gs_backend_segmented_args, gs_backend_segmented_args_v1_1, GS_BACKEND_SEGMENTED_ARGS_V1_1_SIZE);
SAME(gs_backend_segmented_args, gs_backend_segmented_args_v1_1, struct_size);
SAME(gs_backend_segmented_args, gs_backend_segmented_args_v1_1, dtype);
SAME(gs_backend_segmented_args, gs_backend_segmented_args_v1_1, op);
SAME(gs_backend_segmented_args, gs_backend_segmented_args_v1_1, out_dtype);
SAME(gs_backend_segmented_args, gs_backend_segmented_args_v1_1, in);
SAME(gs_backend_segmented_args, gs_backend_segmented_args_v1_1, n);
SAME(gs_backend_segmented_args, gs_backend_segmented_args_v1_1, offsets);
SAME(gs_backend_segmented_args, gs_backend_segmented_args_v1_1, num_segments);
SAME(gs_backend_segmented_args, gs_backend_segmented_args_v1_1, out);
SAME(gs_backend_segmented_args, gs_backend_segmented_args_v1_1, stream);
SAME(gs_backend_segmented_args, gs_backend_segmented_args_v1_1, workspace);
SAME(gs_backend_segmented_args, gs_backend_segmented_args_v1_1, workspace_bytes);

int main(void)
{
    /* The entry point's name never changes within a major. */
    const char cur[] = GS_BACKEND_ENTRY_V1_NAME, old[] = GS_BACKEND_ENTRY_V1_1_NAME;
    _Static_assert(sizeof cur == sizeof old, "entry point name changed");
    for (size_t i = 0; i < sizeof cur; i++)
        if (cur[i] != old[i]) {
            fprintf(stderr, "FAIL: GS_BACKEND_ENTRY_V1_NAME is %s, 1.1 had %s\n", cur, old);
            return 1;
        }
    printf("backend ABI %u.%u covers 1.1: host %zu >= %zu, device %zu >= %zu, reduce_args %zu >= %zu, "
           "ops %zu >= %zu bytes\n",
           (unsigned)GS_BACKEND_ABI_MAJOR, (unsigned)GS_BACKEND_ABI_MINOR, sizeof(gs_backend_host),
           sizeof(gs_backend_host_v1_1), sizeof(gs_backend_device), sizeof(gs_backend_device_v1_1),
           sizeof(gs_backend_reduce_args), sizeof(gs_backend_reduce_args_v1_1), sizeof(gs_backend_ops),
           sizeof(gs_backend_ops_v1_1));
    return 0;
}
