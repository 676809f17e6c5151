/*
 * The frozen backend ABI 1.0 (gridsync_backend_v1.h) against the current one (gridsync_backend.h):
 * the checks are frozen_backend_check.h's, the members of every 1.0 struct are listed here.
 */
#define FROZEN_MINOR 0
#define FROZEN_VERSION "1.0"
#define FROZEN_SUFFIX v1_0
#define FROZEN_SUFFIX_U V1_0

#include "gridsync_backend.h"
#include "gridsync_backend_v1.h"

#include "frozen_backend_check.h"

COVERS(gs_backend_host, gs_backend_host_v1_0, GS_BACKEND_HOST_V1_0_SIZE);
SAME(gs_backend_host, gs_backend_host_v1_0, struct_size);
SAME(gs_backend_host, gs_backend_host_v1_0, abi_version);
SAME(gs_backend_host, gs_backend_host_v1_0, log);
SAME(gs_backend_host, gs_backend_host_v1_0, set_error);
SAME(gs_backend_host, gs_backend_host_v1_0, cuGetErrorName);
SAME(gs_backend_host, gs_backend_host_v1_0, cuDeviceGetAttribute);
SAME(gs_backend_host, gs_backend_host_v1_0, cuModuleLoadData);
SAME(gs_backend_host, gs_backend_host_v1_0, cuModuleUnload);
SAME(gs_backend_host, gs_backend_host_v1_0, cuModuleGetFunction);
SAME(gs_backend_host, gs_backend_host_v1_0, cuFuncGetAttribute);
SAME(gs_backend_host, gs_backend_host_v1_0, cuFuncSetAttribute);
SAME(gs_backend_host, gs_backend_host_v1_0, cuOccupancyMaxActiveBlocksPerMultiprocessor);
SAME(gs_backend_host, gs_backend_host_v1_0, cuLaunchKernel);
SAME(gs_backend_host, gs_backend_host_v1_0, cuGetProcAddress);

COVERS(gs_backend_device, gs_backend_device_v1_0, GS_BACKEND_DEVICE_V1_0_SIZE);
SAME(gs_backend_device, gs_backend_device_v1_0, struct_size);
SAME(gs_backend_device, gs_backend_device_v1_0, device);
SAME(gs_backend_device, gs_backend_device_v1_0, context);
SAME(gs_backend_device, gs_backend_device_v1_0, cc_major);
SAME(gs_backend_device, gs_backend_device_v1_0, cc_minor);
SAME(gs_backend_device, gs_backend_device_v1_0, multiprocessor_count);
SAME(gs_backend_device, gs_backend_device_v1_0, max_threads_per_multiprocessor);

COVERS(gs_backend_reduce_args, gs_backend_reduce_args_v1_0, GS_BACKEND_REDUCE_ARGS_V1_0_SIZE);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_0, struct_size);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_0, dtype);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_0, op);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_0, out_dtype);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_0, in);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_0, n);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_0, out);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_0, stream);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_0, workspace);
SAME(gs_backend_reduce_args, gs_backend_reduce_args_v1_0, workspace_bytes);

/* The function pointers of the ops take the versioned structs: offsets and sizes only. */
COVERS(gs_backend_ops, gs_backend_ops_v1_0, GS_BACKEND_OPS_V1_0_SIZE);
SAME(gs_backend_ops, gs_backend_ops_v1_0, struct_size);
SAME(gs_backend_ops, gs_backend_ops_v1_0, abi_version);
SAME(gs_backend_ops, gs_backend_ops_v1_0, name);
SAME_MEMBER(gs_backend_ops, gs_backend_ops_v1_0, open);
SAME_MEMBER(gs_backend_ops, gs_backend_ops_v1_0, close);
SAME_MEMBER(gs_backend_ops, gs_backend_ops_v1_0, query_reduce);
SAME_MEMBER(gs_backend_ops, gs_backend_ops_v1_0, workspace_size);
SAME_MEMBER(gs_backend_ops, gs_backend_ops_v1_0, reduce);
