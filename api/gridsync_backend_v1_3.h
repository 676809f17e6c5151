/*
 * gridsync backend plugin ABI 1.3, frozen once released: as gridsync 0.4.0 releases it
 * (GS_BACKEND_ABI_VERSION 0x00010003, entry point gridsync_backend_entry_v1). 1.3 is 1.2
 * (gridsync_backend_v1_2.h) with scans (gs_scan, docs/semantics.md "Scans") and the device
 * rounding of exact accumulators (gs_exact_round_device, §12): optional query_scan, scan and
 * exact_round appended to the ops, and the structs scan and exact_round take. Every 1.3
 * struct is written out whole below; their layouts never change once released
 * (docs/ABI-policy.md).
 *
 * 1.3 is the current minor, so its structs are the current ones and are written here under
 * the current names (struct tags and typedefs: gs_backend_host, gs_backend_device,
 * gs_backend_reduce_args, gs_backend_segmented_args, gs_backend_scan_args,
 * gs_backend_exact_round_args, gs_backend_ops).
 * Backends were compiled against those names, and the backend ABI baseline
 * (abi/gridsync-backend-v1.abi) records them, down to the types the ops' functions take.
 * The gs_backend_*_v1_3 names at the end are the same types. When 1.4 is released, this
 * file's structs take the _v1_3 names, as gridsync_backend_v1_2.h's carry _v1_2, and 1.4's
 * header takes the current ones.
 *
 * The core sends a scan only to a backend whose lifted ops have both query_scan and scan,
 * so a 1.2 backend never sees one: the core answers gs_scan with GS_ERROR_UNSUPPORTED, and
 * gs_exact_round_device likewise when exact_round is absent. A backend reads the core's
 * minor from its entry point (>= 3: the core may call scan and exact_round). Like
 * the others, this header needs cuda.h (CUDA 12.0 or newer).
 */
#ifndef GRIDSYNC_BACKEND_V1_3_H
#define GRIDSYNC_BACKEND_V1_3_H

#include "gridsync_backend_v1_2.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_BACKEND_ABI_VERSION_V1_3 (((uint32_t)1 << 16) | 3u)
#define GS_BACKEND_ENTRY_V1_3_NAME GS_BACKEND_ENTRY_V1_2_NAME
/* sizeof each struct on LP64 (x86_64, aarch64) for 1.3. */
#define GS_BACKEND_HOST_V1_3_SIZE GS_BACKEND_HOST_V1_2_SIZE
#define GS_BACKEND_DEVICE_V1_3_SIZE GS_BACKEND_DEVICE_V1_2_SIZE
#define GS_BACKEND_REDUCE_ARGS_V1_3_SIZE GS_BACKEND_REDUCE_ARGS_V1_2_SIZE
#define GS_BACKEND_SEGMENTED_ARGS_V1_3_SIZE GS_BACKEND_SEGMENTED_ARGS_V1_2_SIZE
#define GS_BACKEND_SCAN_ARGS_V1_3_SIZE 96
#define GS_BACKEND_EXACT_ROUND_ARGS_V1_3_SIZE 40
#define GS_BACKEND_OPS_V1_3_SIZE 96

#define GS_LOG_DEBUG_V1_3 GS_LOG_DEBUG_V1_2
#define GS_LOG_ERROR_V1_3 GS_LOG_ERROR_V1_2

/* The scan args' flags: the public GS_SCAN_EXCLUSIVE and GS_SCAN_EXACT (gridsync.h). */
#define GS_BACKEND_SCAN_EXCLUSIVE 1u /* out[0] is the op's identity, out[i] = in[0] op ... op in[i-1] */
#define GS_BACKEND_SCAN_EXACT 2u     /* correctly rounded float sums; carry_in and total */

/* The current names, declared first: the ops' functions take these types. */
typedef struct gs_backend_host gs_backend_host;
typedef struct gs_backend_device gs_backend_device;
typedef struct gs_backend_reduce_args gs_backend_reduce_args;
typedef struct gs_backend_segmented_args gs_backend_segmented_args;
typedef struct gs_backend_scan_args gs_backend_scan_args;
typedef struct gs_backend_exact_round_args gs_backend_exact_round_args;
typedef struct gs_backend_ops gs_backend_ops;

/* What the core gives a backend (1.0's, unchanged): driver entry points resolved once by
 * the core, with the ABI each prototype names, and services. Valid until the backend is
 * unloaded. */
struct gs_backend_host {
    uint32_t struct_size;
    uint32_t abi_version; /* the core's GS_BACKEND_ABI_VERSION */
    /* Trace to stderr when GRIDSYNC_DEBUG is set (GS_LOG_DEBUG) or always (GS_LOG_ERROR). */
    void (*log)(int level, const char *fmt, ...);
    /* Sets the caller's thread-local detail message (what gs_last_error_message returns). */
    void (*set_error)(const char *fmt, ...);
    /* The CUDA driver API; the handles are the driver's. */
    CUresult (*cuGetErrorName)(CUresult error, const char **str);
    CUresult (*cuDeviceGetAttribute)(int *pi, CUdevice_attribute attrib, CUdevice dev);
    CUresult (*cuModuleLoadData)(CUmodule *module, const void *image);
    CUresult (*cuModuleUnload)(CUmodule hmod);
    CUresult (*cuModuleGetFunction)(CUfunction *hfunc, CUmodule hmod, const char *name);
    CUresult (*cuFuncGetAttribute)(int *pi, CUfunction_attribute attrib, CUfunction hfunc);
    CUresult (*cuFuncSetAttribute)(CUfunction hfunc, CUfunction_attribute attrib, int value);
    CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *numBlocks, CUfunction func, int blockSize,
                                                            size_t dynamicSMemSize);
    CUresult (*cuLaunchKernel)(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                               unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                               unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra);
    /* Any other driver entry point: cuGetProcAddress(symbol, pfn, cudaVersion, 0, NULL). */
    CUresult (*cuGetProcAddress)(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult *symbolStatus);
};

/* The device a backend instance is opened for (1.0's, unchanged). Its CUDA context is
 * current on the calling thread during every call into the backend. */
struct gs_backend_device {
    uint32_t struct_size;
    CUdevice device;
    CUcontext context;
    int32_t cc_major;
    int32_t cc_minor;
    int32_t multiprocessor_count;
    int32_t max_threads_per_multiprocessor;
};

/* One reduction: 1.2's, unchanged. */
struct gs_backend_reduce_args {
    uint32_t struct_size;
    gs_dtype dtype;
    gs_op op;
    gs_dtype out_dtype; /* resolved by the core: never GS_OUT_DEFAULT */
    CUdeviceptr in;
    uint64_t n;
    CUdeviceptr out;
    CUstream stream;
    /* At least workspace_size bytes, 256-byte aligned, zero-filled when first handed out;
     * from then on the backend keeps it as its kernels need it between launches. Launches
     * on one workspace are ordered (one stream), so a counter in it needs no atomics
     * across launches. */
    CUdeviceptr workspace;
    uint64_t workspace_bytes;
    /* ---- ABI 1.2 ---- */
    /* 0, or one of GS_BACKEND_REDUCE_EXACT*, only ever when query_reduce_flags accepted
     * (dtype, op, out_dtype, flags). */
    uint32_t flags;
};

/* One segmented reduction: 1.2's, unchanged. */
struct gs_backend_segmented_args {
    uint32_t struct_size;
    gs_dtype dtype;
    gs_op op;
    gs_dtype out_dtype; /* gs_reduce's default for dtype/op */
    CUdeviceptr in;
    uint64_t n;
    CUdeviceptr offsets;
    uint64_t num_segments;
    CUdeviceptr out;
    CUstream stream;
    CUdeviceptr workspace; /* as in the reduce args: the same per-stream buffer */
    uint64_t workspace_bytes;
    /* ---- ABI 1.2 ---- */
    /* 0, or GS_BACKEND_SEGMENTED_EXACT only ever when query_reduce_flags accepted
     * (dtype, GS_OP_SUM, out_dtype, GS_BACKEND_SEGMENTED_EXACT). */
    uint32_t flags;
};

/* New in 1.3: one scan (gs_scan). Validated by the core: in and out non-NULL, n >= 1,
 * aligned to their types and device-accessible for n elements each; (dtype, op, out_dtype)
 * accepted by query_scan; in == out (then out_dtype is dtype) or the two ranges do not
 * overlap at all; the workspace as in the reduce args. */
struct gs_backend_scan_args {
    uint32_t struct_size;
    gs_dtype dtype;
    gs_op op;
    gs_dtype out_dtype; /* resolved by the core: never GS_OUT_DEFAULT */
    CUdeviceptr in;
    uint64_t n;
    CUdeviceptr out;
    CUstream stream;
    CUdeviceptr workspace; /* as in the reduce args: the same per-stream buffer */
    uint64_t workspace_bytes;
    /* 0 (inclusive: out[i] = in[0] op ... op in[i]), GS_BACKEND_SCAN_EXCLUSIVE,
     * GS_BACKEND_SCAN_EXACT. */
    uint32_t flags;
    /* GS_BACKEND_SCAN_EXACT only, else 0: gs_scan_options' carry_in, carry_in_count and
     * total, validated as gs_exact_round_device's acc (carry_in: 8-byte aligned,
     * device-accessible for carry_in_count accumulators, 0 with a count of 0; total: one
     * accumulator or 0), none overlapping another or in or out. With total, n may be 0 (in
     * and out then 0): the backend writes the empty accumulator. */
    CUdeviceptr carry_in;
    uint64_t carry_in_count;
    CUdeviceptr total;
};

/* New in 1.3: rounding exact accumulators on the device (gs_exact_round_device). Validated
 * by the core: count >= 1; acc 8-byte aligned and device-accessible for count gs_exact_acc
 * (GS_EXACT_ACC_WORDS int64 each); out_dtype GS_FLOAT16, GS_BFLOAT16, GS_FLOAT32 or
 * GS_FLOAT64; out aligned to its size and device-accessible for count results, not
 * overlapping acc; stream of the instance's context (unless capturing). out[i] gets
 * the bits gs_exact_round gives for acc[i] (internal/exact_format.h). No workspace: each
 * result depends on its own accumulator only. */
struct gs_backend_exact_round_args {
    uint32_t struct_size;
    gs_dtype out_dtype;
    CUdeviceptr acc;
    uint64_t count;
    CUdeviceptr out;
    CUstream stream;
};

/* The ops a backend returns: 1.2's, then query_scan, scan and exact_round. */
struct gs_backend_ops {
    uint32_t struct_size; /* sizeof(the ops) as the backend was built */
    uint32_t abi_version; /* GS_BACKEND_ABI_VERSION the backend was built with */
    const char *name;     /* e.g. "cuda_sm20" */
    /* Required. Sets up the backend for a device: loads its code into the current context.
     * Returns GS_ERROR_NO_KERNEL_IMAGE when it has no code for the device, so the core
     * can try the next backend. */
    gs_status (*open)(const gs_backend_device *device, gs_backend_instance **instance);
    /* Required. Frees what open made; the context is current. */
    void (*close)(gs_backend_instance *instance);
    /* Required. GS_SUCCESS if op over dtype written as out_dtype is implemented, else
     * GS_ERROR_UNSUPPORTED. */
    gs_status (*query_reduce)(const gs_backend_instance *instance, gs_dtype dtype, gs_op op, gs_dtype out_dtype);
    /* Required. Bytes of per-stream device workspace the backend needs (<= 64 KiB). */
    uint64_t (*workspace_size)(const gs_backend_instance *instance);
    /* Required. Queues the reduction on args->stream; never synchronizes the host. */
    gs_status (*reduce)(gs_backend_instance *instance, const gs_backend_reduce_args *args);
    /* ---- ABI 1.1 ---- */
    /* Optional. Queues a segmented reduction (one launch) on args->stream; never
     * synchronizes the host. Absent (NULL, or not covered by struct_size): the core
     * answers gs_segmented_reduce with GS_ERROR_UNSUPPORTED. */
    gs_status (*segmented_reduce)(gs_backend_instance *instance, const gs_backend_segmented_args *args);
    /* ---- ABI 1.2 ---- */
    /* Optional. GS_SUCCESS if reduce() does op over dtype into out_dtype with these flags
     * (GS_BACKEND_REDUCE_EXACT*), else GS_ERROR_UNSUPPORTED. Absent (NULL, or not covered by
     * struct_size): the core sends no flags and refuses them with GS_ERROR_UNSUPPORTED. */
    gs_status (*query_reduce_flags)(const gs_backend_instance *instance, gs_dtype dtype, gs_op op,
                                    gs_dtype out_dtype, uint32_t flags);
    /* ---- ABI 1.3 ---- */
    /* Optional. GS_SUCCESS if scan() does op over dtype into out_dtype with these flags
     * (GS_BACKEND_SCAN_*), else GS_ERROR_UNSUPPORTED. Absent (NULL, or not covered by
     * struct_size): the core answers gs_scan with GS_ERROR_UNSUPPORTED. */
    gs_status (*query_scan)(const gs_backend_instance *instance, gs_dtype dtype, gs_op op, gs_dtype out_dtype,
                            uint32_t flags);
    /* Optional, with query_scan (one without the other is absent). Queues the scan on
     * args->stream (gridsync's: one launch; with GS_BACKEND_SCAN_EXACT, a few); never
     * synchronizes the host. */
    gs_status (*scan)(gs_backend_instance *instance, const gs_backend_scan_args *args);
    /* Optional. Rounds count device accumulators (one launch) on args->stream; never
     * synchronizes the host. Absent (NULL, or not covered by struct_size): the core answers
     * gs_exact_round_device with GS_ERROR_UNSUPPORTED. */
    gs_status (*exact_round)(gs_backend_instance *instance, const gs_backend_exact_round_args *args);
};

typedef gs_status (*gs_backend_entry_v1_3_fn)(uint32_t core_abi_version, const gs_backend_host *host,
                                              const gs_backend_ops **ops);

/* 1.3's names for the structs above. */
typedef gs_backend_host gs_backend_host_v1_3;
typedef gs_backend_device gs_backend_device_v1_3;
typedef gs_backend_reduce_args gs_backend_reduce_args_v1_3;
typedef gs_backend_segmented_args gs_backend_segmented_args_v1_3;
typedef gs_backend_scan_args gs_backend_scan_args_v1_3;
typedef gs_backend_exact_round_args gs_backend_exact_round_args_v1_3;
typedef gs_backend_ops gs_backend_ops_v1_3;

#ifdef __cplusplus
}
#endif

#endif /* GRIDSYNC_BACKEND_V1_3_H */
