/*
 * The frozen backend ABI 1.1 (gridsync_backend_v1_1.h) against the current one (gridsync_backend.h):
 * the checks are frozen_backend_check.h's, the members of every 1.1 struct are listed here.
 */
#define FROZEN_MINOR 1
#define FROZEN_VERSION "1.1"
#define FROZEN_SUFFIX v1_1
#define FROZEN_SUFFIX_U V1_1

#include "gridsync_backend.h"
#include "gridsync_backend_v1_1.h"

#include "frozen_backend_check.h"

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
