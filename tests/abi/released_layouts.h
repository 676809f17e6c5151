/*
 * Every public struct member as a release put it, with its offset on LP64 (x86_64,
 * aarch64), written once for the tests that check them: tests/abi/test_layout.c (the
 * current structs still have these offsets) and tests/consumer/frozen_backend_check.c (each
 * frozen backend header agrees with the current one member by member). A list is an
 * X-macro: LIST(X, T) expands to X(T, member, offset) for each member, in order (T is
 * passed through: the struct type the caller checks).
 *
 * These are the record: a change here is an ABI change. A release that appends members
 * adds a list that begins with the previous one (see BACKEND_OPS_1_1).
 */
#ifndef GS_TEST_RELEASED_LAYOUTS_H
#define GS_TEST_RELEASED_LAYOUTS_H

/* gridsync.h, 0.1.0 */
#define CONTEXT_INFO_1_0(X, T)                                                       \
    X(T, struct_size, 0) X(T, device, 4) X(T, cc_major, 8) X(T, cc_minor, 12)        \
    X(T, multiprocessor_count, 16) X(T, device_name, 24) X(T, backend_name, 32)      \
    X(T, backend_path, 40) X(T, selection_log, 48)
#define CONTEXT_INFO_1_0_SIZE 56
#define REDUCE_OPTIONS_1_0(X, T) X(T, struct_size, 0) X(T, out_dtype, 4)
#define REDUCE_OPTIONS_1_0_SIZE 8
/* gridsync.h, 0.3.0 (GRIDSYNC_1.2): flags appended */
#define REDUCE_OPTIONS_1_2(X, T) REDUCE_OPTIONS_1_0(X, T) X(T, flags, 8)
#define REDUCE_OPTIONS_1_2_SIZE 12
/* gridsync.h, 0.4.0 (GRIDSYNC_1.3) */
#define SCAN_OPTIONS_1_3(X, T)                                                       \
    X(T, struct_size, 0) X(T, out_dtype, 4) X(T, flags, 8) X(T, carry_in, 16)         \
    X(T, carry_in_count, 24) X(T, total, 32)
#define SCAN_OPTIONS_1_3_SIZE 40

/* Backend ABI 1.0 (gridsync 0.1.0); the sizes are the frozen header's GS_BACKEND_*_V1_0_SIZE. */
#define BACKEND_HOST_1_0(X, T)                                                       \
    X(T, struct_size, 0) X(T, abi_version, 4) X(T, log, 8) X(T, set_error, 16)       \
    X(T, cuGetErrorName, 24) X(T, cuDeviceGetAttribute, 32)                          \
    X(T, cuModuleLoadData, 40) X(T, cuModuleUnload, 48)                              \
    X(T, cuModuleGetFunction, 56) X(T, cuFuncGetAttribute, 64)                       \
    X(T, cuFuncSetAttribute, 72) X(T, cuOccupancyMaxActiveBlocksPerMultiprocessor, 80) \
    X(T, cuLaunchKernel, 88) X(T, cuGetProcAddress, 96)
#define BACKEND_DEVICE_1_0(X, T)                                                     \
    X(T, struct_size, 0) X(T, device, 4) X(T, context, 8) X(T, cc_major, 16)         \
    X(T, cc_minor, 20) X(T, multiprocessor_count, 24)                                \
    X(T, max_threads_per_multiprocessor, 28)
#define BACKEND_REDUCE_ARGS_1_0(X, T)                                                \
    X(T, struct_size, 0) X(T, dtype, 4) X(T, op, 8) X(T, out_dtype, 12) X(T, in, 16) \
    X(T, n, 24) X(T, out, 32) X(T, stream, 40) X(T, workspace, 48)                   \
    X(T, workspace_bytes, 56)
#define BACKEND_OPS_1_0(X, T)                                                        \
    X(T, struct_size, 0) X(T, abi_version, 4) X(T, name, 8) X(T, open, 16)           \
    X(T, close, 24) X(T, query_reduce, 32) X(T, workspace_size, 40) X(T, reduce, 48)

/* Backend ABI 1.1 (gridsync 0.2.0): segmented_reduce appended to the ops, and its args. */
#define BACKEND_OPS_1_1(X, T) BACKEND_OPS_1_0(X, T) X(T, segmented_reduce, 56)
#define BACKEND_SEGMENTED_ARGS_1_1(X, T)                                             \
    X(T, struct_size, 0) X(T, dtype, 4) X(T, op, 8) X(T, out_dtype, 12) X(T, in, 16) \
    X(T, n, 24) X(T, offsets, 32) X(T, num_segments, 40) X(T, out, 48)               \
    X(T, stream, 56) X(T, workspace, 64) X(T, workspace_bytes, 72)

/* Backend ABI 1.2 (gridsync 0.3.0): flags appended to the reduce args and the segmented
 * args, query_reduce_flags to the ops. */
#define BACKEND_REDUCE_ARGS_1_2(X, T) BACKEND_REDUCE_ARGS_1_0(X, T) X(T, flags, 64)
#define BACKEND_SEGMENTED_ARGS_1_2(X, T) BACKEND_SEGMENTED_ARGS_1_1(X, T) X(T, flags, 80)
#define BACKEND_OPS_1_2(X, T) BACKEND_OPS_1_1(X, T) X(T, query_reduce_flags, 64)

/* Backend ABI 1.3 (gridsync 0.4.0): query_scan, scan and exact_round appended to the ops,
 * the scan's args and the accumulators' rounding args. */
#define BACKEND_OPS_1_3(X, T) BACKEND_OPS_1_2(X, T) X(T, query_scan, 72) X(T, scan, 80) X(T, exact_round, 88)
#define BACKEND_SCAN_ARGS_1_3(X, T)                                                  \
    X(T, struct_size, 0) X(T, dtype, 4) X(T, op, 8) X(T, out_dtype, 12) X(T, in, 16) \
    X(T, n, 24) X(T, out, 32) X(T, stream, 40) X(T, workspace, 48)                   \
    X(T, workspace_bytes, 56) X(T, flags, 64) X(T, carry_in, 72)                     \
    X(T, carry_in_count, 80) X(T, total, 88)
#define BACKEND_EXACT_ROUND_ARGS_1_3(X, T)                                            \
    X(T, struct_size, 0) X(T, out_dtype, 4) X(T, acc, 8) X(T, count, 16) X(T, out, 24) \
    X(T, stream, 32)

#endif
