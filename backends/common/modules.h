/*
 * A backend's kernels and the modules they come from (modules.c), shared by backend.c.
 *
 * The kernels come in three families (gs_reduce's, the segmented reduction's and the
 * exact sums') and five modules, each an embedded fatbin of its own (backends/meson.build,
 * dispatch/kernels.cuh): gs_reduce's are split into float32's, the other float types' and the
 * integer types'. A fatbin compressed with --compress-mode=size is decompressed whole when
 * it is loaded, and with the driver's lazy loading (CUDA 12+'s default) every
 * cuModuleGetFunction loads its kernel; the load and the look-ups of every kernel
 * were the bulk of the first gs_context_create (docs/PACKAGING.md,
 * "Architectures and fatbin sizes"). So be_open loads float32's gs_reduce module alone and
 * looks no kernel up; another module is loaded at the first call of one of its kernels,
 * and each kernel is looked up (function, occupancy, grid caps) at its own first call.
 *
 * Thread safety: a kernel's slot is filled once, under the instance's mutex, and
 * published by a release store of `ready`; a call that reads ready == 1 (acquire) uses
 * the slot without the lock, so a context's hot path takes no lock. A failed load or
 * look-up leaves nothing behind: the call that met it returns its status and message,
 * and the next call tries again.
 */
#ifndef GS_BACKEND_MODULES_H
#define GS_BACKEND_MODULES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "gridsync_backend.h"
#include "dispatch/kernel_list.h"
#include "workspace.h"

#define GS_COUNT_KERNEL(dt, op, o) +1
#define GS_COUNT_EXACT(dt) +1
enum {
    GS_NKERNELS = 0 GS_KERNELS(GS_COUNT_KERNEL),
    GS_NSEG_KERNELS = 0 GS_SEG_KERNELS(GS_COUNT_KERNEL),
    /* the exact family: gs_exact_<dtype>, then gs_segexact_<dtype> from GS_NEXACT_PLAIN on */
    GS_NEXACT_PLAIN = 0 GS_EXACT_KERNELS(GS_COUNT_EXACT),
    GS_NEXACT_KERNELS = GS_NEXACT_PLAIN GS_SEGEXACT_KERNELS(GS_COUNT_EXACT)
};

/* Mapping of the kernel list's short names to the public enums. */
#define GS_DT_i32 GS_INT32
#define GS_DT_u32 GS_UINT32
#define GS_DT_i64 GS_INT64
#define GS_DT_u64 GS_UINT64
#define GS_DT_f32 GS_FLOAT32
#define GS_DT_f64 GS_FLOAT64
#define GS_DT_f16 GS_FLOAT16
#define GS_DT_bf16 GS_BFLOAT16
#define GS_DT_i8 GS_INT8
#define GS_DT_u8 GS_UINT8
#define GS_OPV_sum GS_OP_SUM
#define GS_OPV_prod GS_OP_PROD
#define GS_OPV_min GS_OP_MIN
#define GS_OPV_max GS_OP_MAX
#define GS_OPV_argmin GS_OP_ARGMIN
#define GS_OPV_argmax GS_OP_ARGMAX
#define GS_OPV_and GS_OP_BIT_AND
#define GS_OPV_or GS_OP_BIT_OR
#define GS_OPV_xor GS_OP_BIT_XOR

typedef enum gs_family { GS_FAM_REDUCE, GS_FAM_SEGMENTED, GS_FAM_EXACT, GS_FAM_COUNT } gs_family;

/* The modules (one embedded fatbin each) the kernels come from: a family's, except that
 * gs_reduce's are split by input type (dispatch/kernel_list.h's GS_REDUCE_MODULE_<dtype>), so that
 * opening a backend loads float32's alone. */
typedef enum gs_module_id {
    GS_MOD_F32,      /* gs_reduce over float32: loaded by be_open */
    GS_MOD_FLOATS,   /* gs_reduce over float64, float16, bfloat16 */
    GS_MOD_INTEGERS, /* gs_reduce over integer types */
    GS_MOD_SEGMENTED,
    GS_MOD_EXACT,
    GS_MOD_COUNT
} gs_module_id;

typedef struct kernel_entry {
    gs_dtype dtype;
    gs_op op;
    gs_dtype out; /* exact kernels: unused, the output type is the kernel's argument */
    const char *name;
    int queued; /* its blocks take work from a queue (the segmented kernels): launched on what is resident */
    gs_module_id module; /* where it is */
} kernel_entry;

/* The kernels of dispatch/kernel_list.h, per family, in its order. */
extern const kernel_entry gs_kernel_table_reduce[GS_NKERNELS];
extern const kernel_entry gs_kernel_table_segmented[GS_NSEG_KERNELS];
extern const kernel_entry gs_kernel_table_exact[GS_NEXACT_KERNELS];

/* One kernel, once looked up: its function and the most blocks it is launched with.
 * gs_reduce's and the exact kernels: max_blocks for an input of up to l2_bytes
 * (GS_GRID_THREADS_PER_SM's worth per multiprocessor), max_blocks_dram for a larger one
 * (dispatch/grid.h); the segmented kernels: max_blocks is what is resident (their blocks take
 * work from a queue). */
typedef struct gs_kernel_slot {
    atomic_uchar ready;
    CUfunction fn;
    unsigned int max_blocks;
    unsigned int max_blocks_dram;
} gs_kernel_slot;

struct gs_backend_instance {
    gs_backend_device dev;
    uint64_t l2_bytes;
    /* exact_grid: the grid GRIDSYNC_TEST_EXACT_GRID forces for exact sums (0: none), tests only */
    unsigned int exact_grid;
    /* Guards module[] and the filling of the slots. */
    pthread_mutex_t lock;
    CUmodule module[GS_MOD_COUNT]; /* NULL until loaded; GS_MOD_F32's from be_open on */
    gs_kernel_slot reduce[GS_NKERNELS];
    gs_kernel_slot segmented[GS_NSEG_KERNELS];
    gs_kernel_slot exact[GS_NEXACT_KERNELS];
};

/* The driver table and logging the core handed to the entry point. */
extern const gs_backend_host *gs_host;

/* Sets the thread's message to "<backend> backend: <what> failed: <CUDA error name>" and
 * returns the status for rc. */
gs_status gs_cuda_fail(CUresult rc, const char *what);

/* Milliseconds on CLOCK_MONOTONIC, for GRIDSYNC_DEBUG's timings. */
double gs_now_ms(void);

/* Loads module m into inst (the caller holds inst->lock, or is be_open). */
gs_status gs_module_load(gs_backend_instance *inst, gs_module_id m);

/* Kernel k of family, looked up at its first call (its module loaded first if need be);
 * on failure the status, with the thread's message saying what failed. */
gs_status gs_kernel_slow(gs_backend_instance *inst, gs_family family, int k, const gs_kernel_slot **out);

/* Kernel k's slot in family's table of inst. */
static inline gs_kernel_slot *gs_kernel_slot_of(gs_backend_instance *inst, gs_family family, int k)
{
    return family == GS_FAM_REDUCE ? &inst->reduce[k] : family == GS_FAM_SEGMENTED ? &inst->segmented[k] : &inst->exact[k];
}

static inline gs_status gs_kernel(gs_backend_instance *inst, gs_family family, int k, const gs_kernel_slot **out)
{
    const gs_kernel_slot *s = gs_kernel_slot_of(inst, family, k);
    if (atomic_load_explicit(&s->ready, memory_order_acquire)) {
        *out = s;
        return GS_SUCCESS;
    }
    return gs_kernel_slow(inst, family, k, out);
}

#endif
