/*
 * The kernels and their modules (embedded fatbins). Loading a compressed fatbin decompresses
 * it whole, and lazy loading makes each cuModuleGetFunction load its kernel
 * (docs/PACKAGING.md), so be_open loads float32's gs_reduce module alone; the rest load, and
 * each kernel is looked up, at first use.
 * Thread safety: a slot is filled once under inst->lock and published by a release store of
 * `ready`; a reader seeing ready == 1 (acquire) needs no lock. A failed load or look-up
 * leaves nothing behind, so the next call retries.
 */
#ifndef GS_BACKEND_MODULES_H
#define GS_BACKEND_MODULES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "gridsync_backend.h"
#include "dispatch/kernel_list.h"
#include "scan_order.h"
#include "tuning.h"
#include "workspace.h"

#define GS_COUNT_KERNEL(dt, op, o) +1
#define GS_COUNT_EXACT(dt) +1
#define GS_COUNT_KERNEL2(dt, o) +1
enum {
    GS_NKERNELS = 0 GS_KERNELS(GS_COUNT_KERNEL),
    GS_NSEG_KERNELS = 0 GS_SEG_KERNELS(GS_COUNT_KERNEL),
    /* exact family: gs_exact_<dtype>, then gs_segexact_<dtype> from GS_NEXACT_PLAIN on,
     * then GS_EXACT_ROUND_KERNEL at GS_EXACT_ROUND_INDEX */
    GS_NEXACT_PLAIN = 0 GS_EXACT_KERNELS(GS_COUNT_EXACT),
    GS_EXACT_ROUND_INDEX = GS_NEXACT_PLAIN GS_SEGEXACT_KERNELS(GS_COUNT_EXACT),
    GS_NEXACT_KERNELS = GS_EXACT_ROUND_INDEX + 1,
    GS_NSCAN_KERNELS = 0 GS_SCAN_KERNELS(GS_COUNT_KERNEL),
    /* exact scans: the range kernels, then the scans of each width */
    GS_NSCAN_EXACT_PAIRS = 0 GS_EXACT_OUTPUTS(GS_COUNT_KERNEL2),
    GS_NSCAN_EXACT_KERNELS = GS_NEXACT_PLAIN + GS_NSCAN_EXACT_PAIRS * (0 GS_SCAN_EXACT_WIDTHS(GS_COUNT_EXACT))
};

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

typedef enum gs_family {
    GS_FAM_REDUCE,
    GS_FAM_SEGMENTED,
    GS_FAM_EXACT,
    GS_FAM_SCAN,
    GS_FAM_SCAN_EXACT,
    GS_FAM_COUNT
} gs_family;

/* One module per family, gs_reduce's split by input type (GS_REDUCE_MODULE_<dtype>). */
typedef enum gs_module_id {
    GS_MOD_F32,      /* loaded by be_open */
    GS_MOD_FLOATS,   /* float64, float16, bfloat16 */
    GS_MOD_INTEGERS,
    GS_MOD_SEGMENTED,
    GS_MOD_EXACT,
    GS_MOD_SCAN_FLOAT, /* gs_scan over float32, float64, float16, bfloat16 */
    GS_MOD_SCAN_INT,
    GS_MOD_SCAN_EXACT, /* gs_scan with GS_SCAN_EXACT */
    GS_MOD_COUNT
} gs_module_id;

typedef struct kernel_entry {
    gs_dtype dtype;
    gs_op op;
    gs_dtype out; /* unused by exact kernels (an argument) */
    const char *name;
    int queued; /* queue-fed: launched on the resident blocks */
    gs_module_id module;
    int block; /* its threads per block, or 0: by module */
} kernel_entry;

/* The threads per block kernel e is launched with: gs_scan's are part of its order. */
static inline int gs_block_of(const kernel_entry *e)
{
    if (e->block)
        return e->block;
    return e->module == GS_MOD_SCAN_FLOAT || e->module == GS_MOD_SCAN_INT ? (int)GS_SCAN_THREADS : GS_BACKEND_BLOCK;
}

/* dispatch/kernel_list.h's kernels, in its order. */
extern const kernel_entry gs_kernel_table_reduce[GS_NKERNELS];
extern const kernel_entry gs_kernel_table_segmented[GS_NSEG_KERNELS];
extern const kernel_entry gs_kernel_table_exact[GS_NEXACT_KERNELS];
extern const kernel_entry gs_kernel_table_scan[GS_NSCAN_KERNELS];
extern const kernel_entry gs_kernel_table_scan_exact[GS_NSCAN_EXACT_KERNELS];

/* A looked-up kernel and its grid caps (dispatch/grid.h): max_blocks for inputs up to
 * l2_bytes, max_blocks_dram beyond; for queued kernels max_blocks is what is resident. */
typedef struct gs_kernel_slot {
    atomic_uchar ready;
    CUfunction fn;
    unsigned int max_blocks;
    unsigned int max_blocks_dram;
} gs_kernel_slot;

struct gs_backend_instance {
    gs_backend_device dev;
    uint64_t l2_bytes;
    /* test hooks: GRIDSYNC_TEST_EXACT_GRID's and GRIDSYNC_TEST_SCAN_GRID's grids, or 0 */
    unsigned int exact_grid;
    unsigned int scan_grid;
    /* guards module[] and filling the slots */
    pthread_mutex_t lock;
    CUmodule module[GS_MOD_COUNT]; /* NULL until loaded */
    gs_kernel_slot reduce[GS_NKERNELS];
    gs_kernel_slot segmented[GS_NSEG_KERNELS];
    gs_kernel_slot exact[GS_NEXACT_KERNELS];
    gs_kernel_slot scan[GS_NSCAN_KERNELS];
    gs_kernel_slot scan_exact[GS_NSCAN_EXACT_KERNELS];
};

/* The core's driver table and logging. */
extern const gs_backend_host *gs_host;

/* Sets the message "<backend> backend: <what> failed: <CUDA error>"; returns rc's status. */
gs_status gs_cuda_fail(CUresult rc, const char *what);

/* CLOCK_MONOTONIC in ms, for GRIDSYNC_DEBUG. */
double gs_now_ms(void);

/* Loads module m; the caller holds inst->lock or is be_open. */
gs_status gs_module_load(gs_backend_instance *inst, gs_module_id m);

/* Looks kernel k up, loading its module if need be; on failure sets the message. */
gs_status gs_kernel_slow(gs_backend_instance *inst, gs_family family, int k, const gs_kernel_slot **out);

static inline gs_kernel_slot *gs_kernel_slot_of(gs_backend_instance *inst, gs_family family, int k)
{
    return family == GS_FAM_REDUCE      ? &inst->reduce[k]
           : family == GS_FAM_SEGMENTED ? &inst->segmented[k]
           : family == GS_FAM_EXACT     ? &inst->exact[k]
           : family == GS_FAM_SCAN      ? &inst->scan[k]
                                        : &inst->scan_exact[k];
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
