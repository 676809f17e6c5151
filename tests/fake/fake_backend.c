/*
 * Fake gridsync backends for the loader suite: ONE source, built several times with
 * different -D switches into gridsync-<name>.so files (as libglvnd builds its dummy vendors).
 *
 *   (none)                 a good backend: every gs_backend_ops member, every call recorded
 *   FAKE_WRONG_ABI_MAJOR   ops->abi_version has major 2
 *   FAKE_ENTRY_REFUSES     the entry point refuses the core's ABI (GS_ERROR_BACKEND_ABI_MISMATCH)
 *   FAKE_NO_ENTRY          exports gridsync_backend_entry_v2 instead of ..._v1 (a future backend)
 *   FAKE_ENTRY_FAILS       the entry point fails (GS_ERROR_INTERNAL, with a detail message)
 *   FAKE_NO_REDUCE         ops->reduce is NULL
 *   FAKE_SMALL_STRUCT      ops->struct_size ends before reduce
 *   FAKE_OPEN_NO_IMAGE     open() returns GS_ERROR_NO_KERNEL_IMAGE (no code for the device)
 *   FAKE_ABI_1_0           a backend built for ABI 1.0: its struct_size and abi_version are
 *                          1.0's, and the ops members past them hold functions that record
 *                          "PAST_STRUCT_SIZE" if anything calls them (a core must not)
 *   FAKE_ABI_1_1           the same for ABI 1.1, whose segmented_reduce is its own
 *   FAKE_ABI_1_2           the same for ABI 1.2 (segmented_reduce its own; no scan)
 *
 * The current-ABI variants have 1.3's scan: query_scan refuses bfloat16 input, and exact
 * scans (GS_BACKEND_SCAN_EXACT) of anything but float32 and float64 (so refusals can be
 * seen), and accepts everything else the core asks; scan() records its args, and so does
 * 1.3's exact_round.
 *
 * FAKE_BACKEND_NAME is ops->name. Every call is appended to the file named by
 * FAKE_BACKEND_LOG as "<name>: <call> <arguments>", so a test can compare what the backend
 * saw with what the application asked for. Besides recording, the good backend checks what
 * the ABI promises it (the host table is complete, the device's context is current in every
 * call, workspaces are aligned, zero-filled when new and kept between launches) and writes
 * what it found into the same lines.
 *
 * FAKE_BACKEND_WORKSPACE=<bytes> overrides what workspace_size() returns (default 4096).
 *
 * Only for use with the fake driver: the workspace checks read device pointers as host
 * memory, which the fake driver's device memory is. With any other driver they are skipped.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "gridsync_backend.h"
#include <cudaTypedefs.h>

#ifndef FAKE_BACKEND_NAME
#  error "FAKE_BACKEND_NAME must be defined"
#endif

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_DEFAULT_WORKSPACE 4096u
#define FAKE_MAX_WORKSPACES 64

static const gs_backend_host *host;
static PFN_cuCtxGetCurrent_v4000 get_current;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void record(const char *fmt, ...)
{
    const char *path = getenv("FAKE_BACKEND_LOG");
    if (!path || !*path)
        return;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&g_lock);
    FILE *f = fopen(path, "a");
    if (f) {
        fputs(FAKE_BACKEND_NAME ": ", f);
        vfprintf(f, fmt, ap);
        fputc('\n', f);
        fclose(f);
    }
    pthread_mutex_unlock(&g_lock);
    va_end(ap);
}

struct gs_backend_instance {
    gs_backend_device dev;
    int fake_memory; /* device pointers are host memory (the fake driver is loaded) */
    /* Workspaces seen so far, numbered in order of first use ("ws=#0", "ws=#1", ...). */
    CUdeviceptr workspaces[FAKE_MAX_WORKSPACES];
    int nworkspaces;
};

/* 1 if `context` is the calling thread's current context, which the ABI promises for every
 * call into the backend. */
static int is_current(CUcontext context)
{
    CUcontext cur = NULL;
    return get_current && get_current(&cur) == CUDA_SUCCESS && cur == context;
}

static gs_status be_open(const gs_backend_device *dev, gs_backend_instance **out)
{
    record("open device=%d cc=%d.%d sms=%d current=%d", (int)dev->device, dev->cc_major, dev->cc_minor,
           dev->multiprocessor_count, is_current(dev->context));
#ifdef FAKE_OPEN_NO_IMAGE
    (void)out;
    host->set_error("%s: no kernel image for compute capability %d.%d (on purpose)", FAKE_BACKEND_NAME, dev->cc_major,
                    dev->cc_minor);
    return GS_ERROR_NO_KERNEL_IMAGE;
#else
    gs_backend_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return GS_ERROR_OUT_OF_MEMORY;
    memcpy(&inst->dev, dev, dev->struct_size < sizeof inst->dev ? dev->struct_size : sizeof inst->dev);
    /* The fake driver's device memory is host memory; anything else must not be touched. */
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    inst->fake_memory = cuda && dlsym(cuda, "fake_cuda_live");
    if (cuda)
        dlclose(cuda);
    *out = inst;
    return GS_SUCCESS;
#endif
}

static void be_close(gs_backend_instance *inst)
{
    record("close current=%d", inst ? is_current(inst->dev.context) : -1);
    free(inst);
}

static gs_status be_query_reduce(const gs_backend_instance *inst, gs_dtype dtype, gs_op op, gs_dtype out)
{
    record("query_reduce dtype=%d op=%d out=%d current=%d", (int)dtype, (int)op, (int)out,
           is_current(inst->dev.context));
    /* Only gs_reduce's default output types: gs_reduce_ex's wider ones are "not offered". */
    return gs_dtype_valid((int)dtype) && gs_op_valid((int)op) && out == gs_default_out(dtype, op)
               ? GS_SUCCESS
               : GS_ERROR_UNSUPPORTED;
}

static uint64_t workspace_bytes(void)
{
    const char *v = getenv("FAKE_BACKEND_WORKSPACE");
    return v && *v ? strtoull(v, NULL, 10) : FAKE_DEFAULT_WORKSPACE;
}

static uint64_t be_workspace_size(const gs_backend_instance *inst)
{
    record("workspace_size current=%d", is_current(inst->dev.context));
    return workspace_bytes();
}

#ifndef FAKE_NO_REDUCE
/* Which workspace this is (#k in order of first use) and what state it is in: "new zeroed"
 * (first use, all zero as promised), "new DIRTY", "kept" (same buffer as before, still
 * holding what this backend left in it), "CLOBBERED". */
static const char *workspace_state_of(gs_backend_instance *inst, CUdeviceptr workspace, uint64_t bytes, int *index)
{
    if (workspace % 256)
        return "MISALIGNED";
    pthread_mutex_lock(&g_lock);
    int k;
    for (k = 0; k < inst->nworkspaces; k++)
        if (inst->workspaces[k] == workspace)
            break;
    int fresh = k == inst->nworkspaces;
    if (fresh && k < FAKE_MAX_WORKSPACES)
        inst->workspaces[inst->nworkspaces++] = workspace;
    pthread_mutex_unlock(&g_lock);
    *index = k;
    if (!inst->fake_memory)
        return "unchecked";
    unsigned char *ws = (unsigned char *)(uintptr_t)workspace;
    const char *state;
    if (fresh) {
        state = "new zeroed";
        for (uint64_t i = 0; i < bytes; i++)
            if (ws[i]) {
                state = "new DIRTY";
                break;
            }
    } else {
        state = ws[bytes - 1] == 0x5a ? "kept" : "CLOBBERED";
    }
    /* What a kernel leaves behind, for the next launch on this workspace to find. */
    ws[bytes - 1] = 0x5a;
    return state;
}

static const char *workspace_state(gs_backend_instance *inst, const gs_backend_reduce_args *a, int *index)
{
    return workspace_state_of(inst, a->workspace, a->workspace_bytes, index);
}

static gs_status be_reduce(gs_backend_instance *inst, const gs_backend_reduce_args *a)
{
    int k = -1;
    const char *ws = a->workspace_bytes ? workspace_state(inst, a, &k) : "EMPTY";
    record("reduce dtype=%d op=%d out=%d n=%llu in=0x%llx out=0x%llx stream=%p ws=#%d %s bytes=%s current=%d",
           (int)a->dtype, (int)a->op, (int)a->out_dtype, (unsigned long long)a->n, (unsigned long long)a->in,
           (unsigned long long)a->out, (void *)a->stream, k, ws,
           a->workspace_bytes >= workspace_bytes() ? "enough" : "TOO_FEW", is_current(inst->dev.context));
    return GS_SUCCESS;
}

#if !defined(FAKE_ABI_1_0) && !defined(FAKE_ABI_1_1) && !defined(FAKE_ABI_1_2)
/* 1.3's scan: asked before each gs_scan; bfloat16, and exact scans of float16, are refused,
 * on purpose. */
static gs_status be_query_scan(const gs_backend_instance *inst, gs_dtype dtype, gs_op op, gs_dtype out,
                               uint32_t flags)
{
    (void)inst;
    record("query_scan dtype=%d op=%d out=%d flags=%u", (int)dtype, (int)op, (int)out, (unsigned)flags);
    if (dtype == GS_BFLOAT16)
        return GS_ERROR_UNSUPPORTED;
    if ((flags & GS_BACKEND_SCAN_EXACT) && dtype != GS_FLOAT32 && dtype != GS_FLOAT64)
        return GS_ERROR_UNSUPPORTED;
    return GS_SUCCESS;
}

static gs_status be_scan(gs_backend_instance *inst, const gs_backend_scan_args *a)
{
    int k = -1;
    const char *ws = a->workspace_bytes ? workspace_state_of(inst, a->workspace, a->workspace_bytes, &k) : "EMPTY";
    record("scan dtype=%d op=%d out=%d n=%llu in=0x%llx out=0x%llx flags=%u carry_in=0x%llx carry_in_count=%llu "
           "total=0x%llx struct_size=%u stream=%p ws=#%d %s bytes=%s current=%d",
           (int)a->dtype, (int)a->op, (int)a->out_dtype, (unsigned long long)a->n, (unsigned long long)a->in,
           (unsigned long long)a->out, (unsigned)a->flags, (unsigned long long)a->carry_in,
           (unsigned long long)a->carry_in_count, (unsigned long long)a->total, (unsigned)a->struct_size,
           (void *)a->stream, k, ws, a->workspace_bytes >= workspace_bytes() ? "enough" : "TOO_FEW",
           is_current(inst->dev.context));
    return GS_SUCCESS;
}

static gs_status be_exact_round(gs_backend_instance *inst, const gs_backend_exact_round_args *a)
{
    record("exact_round out=%d count=%llu acc=0x%llx out=0x%llx struct_size=%u stream=%p current=%d",
           (int)a->out_dtype, (unsigned long long)a->count, (unsigned long long)a->acc, (unsigned long long)a->out,
           (unsigned)a->struct_size, (void *)a->stream, is_current(inst->dev.context));
    return GS_SUCCESS;
}
#endif
#endif

#if defined(FAKE_ABI_1_0) || defined(FAKE_ABI_1_1) || defined(FAKE_ABI_1_2)
/* Past an older table's end: 1.3's scan functions, never to be called. */
static gs_status past_end_query_scan(const gs_backend_instance *inst, gs_dtype dtype, gs_op op, gs_dtype out,
                                     uint32_t flags)
{
    (void)inst;
    record("PAST_STRUCT_SIZE query_scan dtype=%d op=%d out=%d flags=%u", (int)dtype, (int)op, (int)out,
           (unsigned)flags);
    return GS_SUCCESS;
}

static gs_status past_end_scan(gs_backend_instance *inst, const gs_backend_scan_args *a)
{
    (void)inst;
    record("PAST_STRUCT_SIZE scan n=%llu", (unsigned long long)a->n);
    return GS_SUCCESS;
}

static gs_status past_end_exact_round(gs_backend_instance *inst, const gs_backend_exact_round_args *a)
{
    (void)inst;
    record("PAST_STRUCT_SIZE exact_round count=%llu", (unsigned long long)a->count);
    return GS_SUCCESS;
}
#endif

#if defined(FAKE_ABI_1_0)
/* What lies in memory after an older backend's table: never its functions, so never called. */
static gs_status past_end_segmented_reduce(gs_backend_instance *inst, const gs_backend_segmented_args *a)
{
    (void)inst;
    (void)a;
    record("PAST_STRUCT_SIZE segmented_reduce");
    return GS_SUCCESS;
}
#endif

#if defined(FAKE_ABI_1_0) || defined(FAKE_ABI_1_1)
static gs_status past_end_query_reduce_flags(const gs_backend_instance *inst, gs_dtype dtype, gs_op op, gs_dtype out,
                                             uint32_t flags)
{
    (void)inst;
    record("PAST_STRUCT_SIZE query_reduce_flags dtype=%d op=%d out=%d flags=%u", (int)dtype, (int)op, (int)out,
           (unsigned)flags);
    return GS_SUCCESS;
}
#endif

#if defined(FAKE_ABI_1_1) || defined(FAKE_ABI_1_2)
/* 1.1's segmented reduction, recorded (a 1.3 core's args, whatever the minor). */
static gs_status be_segmented_reduce(gs_backend_instance *inst, const gs_backend_segmented_args *a)
{
    record("segmented_reduce dtype=%d op=%d out=%d n=%llu segments=%llu struct_size=%u current=%d", (int)a->dtype,
           (int)a->op, (int)a->out_dtype, (unsigned long long)a->n, (unsigned long long)a->num_segments,
           (unsigned)a->struct_size, is_current(inst->dev.context));
    return GS_SUCCESS;
}
#endif

static const gs_backend_ops ops = {
#if defined(FAKE_SMALL_STRUCT)
    .struct_size = offsetof(gs_backend_ops, reduce),
#elif defined(FAKE_ABI_1_0)
    .struct_size = sizeof(gs_backend_ops_v1_0),
#elif defined(FAKE_ABI_1_1)
    .struct_size = sizeof(gs_backend_ops_v1_1),
#elif defined(FAKE_ABI_1_2)
    .struct_size = sizeof(gs_backend_ops_v1_2),
#else
    .struct_size = sizeof(gs_backend_ops),
#endif
#if defined(FAKE_WRONG_ABI_MAJOR)
    .abi_version = (2u << 16) | 0u,
#elif defined(FAKE_ABI_1_0)
    .abi_version = GS_BACKEND_ABI_VERSION_V1_0,
#elif defined(FAKE_ABI_1_1)
    .abi_version = GS_BACKEND_ABI_VERSION_V1_1,
#elif defined(FAKE_ABI_1_2)
    .abi_version = GS_BACKEND_ABI_VERSION_V1_2,
#else
    .abi_version = GS_BACKEND_ABI_VERSION,
#endif
    .name = FAKE_BACKEND_NAME,
    .open = be_open,
    .close = be_close,
    .query_reduce = be_query_reduce,
    .workspace_size = be_workspace_size,
#ifndef FAKE_NO_REDUCE
    .reduce = be_reduce,
#endif
#if defined(FAKE_ABI_1_0)
    .segmented_reduce = past_end_segmented_reduce,
#elif defined(FAKE_ABI_1_1) || defined(FAKE_ABI_1_2)
    .segmented_reduce = be_segmented_reduce,
#endif
#if defined(FAKE_ABI_1_0) || defined(FAKE_ABI_1_1)
    .query_reduce_flags = past_end_query_reduce_flags,
#endif
#if defined(FAKE_ABI_1_0) || defined(FAKE_ABI_1_1) || defined(FAKE_ABI_1_2)
    .query_scan = past_end_query_scan,
    .scan = past_end_scan,
    .exact_round = past_end_exact_round,
#elif !defined(FAKE_NO_REDUCE)
    .query_scan = be_query_scan,
    .scan = be_scan,
    .exact_round = be_exact_round,
#endif
};

/* Returns NULL when the host table has everything the ABI promises, else what is missing. */
static const char *host_missing(const gs_backend_host *h)
{
    if (h->struct_size < sizeof(gs_backend_host))
        return "(table too small)";
#define FAKE_NEED(member) \
    if (!h->member)       \
        return #member;
    FAKE_NEED(log)
    FAKE_NEED(set_error)
    FAKE_NEED(cuGetErrorName)
    FAKE_NEED(cuDeviceGetAttribute)
    FAKE_NEED(cuModuleLoadData)
    FAKE_NEED(cuModuleUnload)
    FAKE_NEED(cuModuleGetFunction)
    FAKE_NEED(cuFuncGetAttribute)
    FAKE_NEED(cuFuncSetAttribute)
    FAKE_NEED(cuOccupancyMaxActiveBlocksPerMultiprocessor)
    FAKE_NEED(cuLaunchKernel)
    FAKE_NEED(cuGetProcAddress)
#undef FAKE_NEED
    return NULL;
}

#ifdef FAKE_NO_ENTRY
#  define FAKE_ENTRY_SYMBOL gridsync_backend_entry_v2
#else
#  define FAKE_ENTRY_SYMBOL gridsync_backend_entry_v1
#endif

FAKE_EXPORT gs_status FAKE_ENTRY_SYMBOL(uint32_t core_abi_version, const gs_backend_host *h,
                                        const gs_backend_ops **out);
FAKE_EXPORT gs_status FAKE_ENTRY_SYMBOL(uint32_t core_abi_version, const gs_backend_host *h,
                                        const gs_backend_ops **out)
{
    record("entry abi=%u.%u", (unsigned)GS_BACKEND_ABI_VERSION_MAJOR(core_abi_version),
           (unsigned)(core_abi_version & 0xffffu));
    if (!h || !out)
        return GS_ERROR_BACKEND_INIT_FAILED;
    if (GS_BACKEND_ABI_VERSION_MAJOR(core_abi_version) != GS_BACKEND_ABI_MAJOR)
        return GS_ERROR_BACKEND_ABI_MISMATCH;
    const char *missing = host_missing(h);
    if (missing) {
        h->set_error("%s: the core's host table lacks %s", FAKE_BACKEND_NAME, missing);
        return GS_ERROR_BACKEND_INIT_FAILED;
    }
    host = h;
    if (h->cuGetProcAddress("cuCtxGetCurrent", (void **)&get_current, 4000, 0, NULL) != CUDA_SUCCESS) {
        h->set_error("%s: cuGetProcAddress(cuCtxGetCurrent) failed", FAKE_BACKEND_NAME);
        return GS_ERROR_BACKEND_INIT_FAILED;
    }
#if defined(FAKE_ENTRY_REFUSES)
    h->set_error("%s: built for backend ABI 2.0 only (on purpose)", FAKE_BACKEND_NAME);
    return GS_ERROR_BACKEND_ABI_MISMATCH;
#elif defined(FAKE_ENTRY_FAILS)
    h->set_error("%s: the entry point failed (on purpose)", FAKE_BACKEND_NAME);
    return GS_ERROR_INTERNAL;
#endif
    *out = &ops;
    return GS_SUCCESS;
}
