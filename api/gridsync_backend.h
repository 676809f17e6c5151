/*
 * gridsync backend plugin ABI, version 1.
 *
 * A backend is a shared module (gridsync-<name>.so, installed in the directory that
 * `pkg-config --variable=backenddir gridsync` names) that exports exactly one symbol,
 * GS_BACKEND_ENTRY_V1_NAME. The core passes in its ABI version and a table of CUDA driver
 * entry points and services; the backend returns a pointer to its (static, constant) ops.
 * Backends never link libgridsync, libcuda or libcudart.
 *
 * Versioning: GS_BACKEND_ABI_VERSION is (major << 16) | minor. A new major breaks old
 * backends (the entry symbol name changes with it); a new minor only appends members at
 * the end of the structs. Every released version is written out plainly in its own frozen
 * header, gridsync_backend_v<major>_<minor>.h (1.0: gridsync_backend_v1.h), and the
 * current structs are the newest one's. The core lifts an older backend's ops into the
 * current struct in one place (core/loader.c); a backend learns the core's version from
 * core_abi_version, the first argument of its entry point.
 *
 * This header needs cuda.h (CUDA 12.0 or newer) for the driver's handle types.
 */
#ifndef GRIDSYNC_BACKEND_H
#define GRIDSYNC_BACKEND_H

#include "gridsync_backend_v1_3.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_BACKEND_ABI_MAJOR 1
#define GS_BACKEND_ABI_MINOR 3
#define GS_BACKEND_ABI_VERSION (((uint32_t)GS_BACKEND_ABI_MAJOR << 16) | GS_BACKEND_ABI_MINOR)
#define GS_BACKEND_ABI_VERSION_MAJOR(v) ((uint32_t)(v) >> 16)
#define GS_BACKEND_ENTRY_V1_NAME "gridsync_backend_entry_v1"

/* Log levels for gs_backend_host.log. */
#define GS_LOG_DEBUG GS_LOG_DEBUG_V1_3 /* shown with GRIDSYNC_DEBUG=1 */
#define GS_LOG_ERROR GS_LOG_ERROR_V1_3

/*
 * The current structs are 1.3's: gridsync_backend_v1_3.h writes them out, once, under the
 * current names (gs_backend_X and gs_backend_X_v1_3 are one type), with what each member
 * means. A new minor adds gridsync_backend_v1_<minor>.h, points the include above and
 * the typedef below at it, and moves the current names to its structs
 * (docs/ABI-policy.md).
 *
 * gs_backend_host: what the core gives a backend: driver entry points and services.
 *
 * gs_backend_device: the device a backend instance is opened for.
 *
 * gs_backend_reduce_args: one reduction. Validated by the core: in/out non-NULL (unless
 * n == 0 for in), aligned and device-accessible, dtype/op/out_dtype in range and supported
 * by the backend (query_reduce), workspace as large as the backend's workspace_size and
 * private to `stream`.
 *
 * gs_backend_segmented_args: one segmented reduction (ABI 1.1). Validated by the core like
 * gs_backend_reduce_args: in (n elements), offsets (num_segments + 1 int64 values) and out
 * (num_segments results of out_dtype) aligned and device-accessible, num_segments >= 1, the
 * dtype/op pair one that query_reduce accepts with the default out_dtype. The offsets
 * themselves are NOT validated (they live in device memory): the backend must stay inside
 * in[0, n), out[0, num_segments) and its workspace whatever they hold, and leave the
 * workspace ready for the next launch.
 *
 * gs_backend_scan_args: one scan (ABI 1.3). Validated by the core: in and out non-NULL, n >= 1,
 * aligned and device-accessible for n elements each, dtype/op/out_dtype accepted by
 * query_scan, in == out (same type) or no overlap at all, workspace as in the reduce args.
 *
 * gs_backend_exact_round_args: count exact accumulators to round (ABI 1.3). Validated by the
 * core: count >= 1, acc 8-byte aligned and out aligned to out_dtype (a float type), both
 * device-accessible for count of them and not overlapping; no workspace.
 *
 * gs_backend_ops: what a backend implements: struct_size, abi_version and name, then its
 * functions.
 *
 * gs_backend_entry_v1_fn: the entry point every backend exports under
 * GS_BACKEND_ENTRY_V1_NAME. The backend checks GS_BACKEND_ABI_VERSION_MAJOR(core_abi_version)
 * itself (and returns GS_ERROR_BACKEND_ABI_MISMATCH when it differs), keeps `host`, and
 * stores its ops in *ops. The minor of core_abi_version tells it which members the core's
 * structs have: a core older than the backend passes shorter args.
 */
typedef gs_backend_entry_v1_3_fn gs_backend_entry_v1_fn;

#ifdef __cplusplus
}
#endif

#endif /* GRIDSYNC_BACKEND_H */
