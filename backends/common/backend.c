/*
 * The host side of a gridsync backend, the same for every backend: it answers which
 * reductions it does, sizes the grid (dispatch/grid.h, from the device's occupancy and L2
 * size), and launches one kernel per reduction. Its kernels (dispatch/kernel_list.h, looked up by
 * their extern "C" names) and their modules, loaded through the driver table the core
 * hands in, are modules.c's. Compiled once per backend with GS_BACKEND_NAME="<name>", next
 * to that backend's fatbins.
 */
#define _GNU_SOURCE /* secure_getenv */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_status.h"
#include "dtype.h"
#include "gridsync_backend.h"
#include "dispatch/grid.h"
#include "dispatch/kernel_list.h"
#include "launch.h"
#include "modules.h"
#include "scan_order.h"

#ifndef GS_BACKEND_NAME
#  error "GS_BACKEND_NAME must be defined"
#endif

#define GS_EXPORT __attribute__((visibility("default")))

_Static_assert(GS_NKERNELS < 255, "the kernel indices hold indices in a byte");

#define GS_EXACT_PAIR(dt, o) || (dtype == GS_DT_##dt && out == GS_DT_##o)

/* The index in gs_kernel_table_exact[] of dtype's exact kernel when it rounds into out; -1 if none. */
static int find_exact(gs_dtype dtype, gs_dtype out)
{
    if (!(0 GS_EXACT_OUTPUTS(GS_EXACT_PAIR)))
        return -1;
    for (int k = 0; k < GS_NEXACT_PLAIN; k++)
        if (gs_kernel_table_exact[k].dtype == dtype)
            return k;
    return -1;
}

/* The index in gs_kernel_table_exact[] of the exact segmented kernel for op over dtype into
 * out (a SUM into dtype itself); -1 if none. */
static int find_segexact(gs_dtype dtype, gs_op op, gs_dtype out)
{
    if (op != GS_OP_SUM || out != dtype)
        return -1;
    for (int k = GS_NEXACT_PLAIN; k < GS_EXACT_ROUND_INDEX; k++)
        if (gs_kernel_table_exact[k].dtype == dtype)
            return k;
    return -1;
}

/* (dtype, op, out) -> index into gs_kernel_table_reduce[] (_segmented[]) + 1, 0 when there is none; filled once by the
 * entry point, so a launch looks its kernel up in constant time. */
static unsigned char kernel_index[GS_DTYPE_COUNT][GS_OP_COUNT][GS_DTYPE_COUNT];
static unsigned char seg_kernel_index[GS_DTYPE_COUNT][GS_OP_COUNT][GS_DTYPE_COUNT];

static void index_kernels(void)
{
    for (int k = 0; k < GS_NKERNELS; k++) {
        const kernel_entry *e = &gs_kernel_table_reduce[k];
        kernel_index[e->dtype][e->op][e->out] = (unsigned char)(k + 1);
    }
    for (int k = 0; k < GS_NSEG_KERNELS; k++) {
        const kernel_entry *e = &gs_kernel_table_segmented[k];
        seg_kernel_index[e->dtype][e->op][e->out] = (unsigned char)(k + 1);
    }
    gs_scan_index_kernels();
}

static int lookup(unsigned char (*index)[GS_OP_COUNT][GS_DTYPE_COUNT], gs_dtype dtype, gs_op op, gs_dtype out)
{
    if (!gs_dtype_valid((int)dtype) || !gs_op_valid((int)op) || !gs_dtype_valid((int)out))
        return -1;
    return (int)index[dtype][op][out] - 1;
}

static int find_kernel(gs_dtype dtype, gs_op op, gs_dtype out)
{
    return lookup(kernel_index, dtype, op, out);
}

/* The minor of the backend ABI the core speaks, kept by the entry point from its
 * core_abi_version: the one place this backend learns which core calls it. */
static uint32_t g_core_minor;

/* Whether the core's reduce and segmented args carry `flags` (ABI 1.2): an older core's
 * args end before them, and it sends no exact sums. */
static int core_sends_flags(void)
{
    return g_core_minor >= 2;
}

/*
 * TEST HOOKS, not an interface (docs/ABI.md, "Test hooks"): GRIDSYNC_TEST_EXACT_GRID=<blocks>
 * and GRIDSYNC_TEST_SCAN_GRID=<blocks> force the exact sums' and the scans' grids of the
 * instances opened while they are set, so that tests/gpu can show their bits do not depend
 * on the grid. Read here only, once per open: those tests open one context per grid in
 * one process. Returns the forced grid, 0 for none (unset, or not in 1..GS_MAX_BLOCKS: the
 * workspace holds that many exact partials, exact/grid.cuh).
 */
static unsigned int test_hook_grid(const char *name, const char *what)
{
    const char *forced = secure_getenv(name);
    if (!forced || !*forced)
        return 0;
    const unsigned long g = strtoul(forced, NULL, 10);
    const unsigned int grid = g > 0 && g <= GS_MAX_BLOCKS ? (unsigned int)g : 0;
    gs_host->log(GS_LOG_DEBUG, "%s backend: %s=%s: %s on %u blocks", GS_BACKEND_NAME, name, forced, what, grid);
    return grid;
}

static gs_status be_open(const gs_backend_device *dev, gs_backend_instance **out)
{
    gs_backend_instance *inst = calloc(1, sizeof *inst);
    if (!inst) {
        gs_host->set_error("%s backend: out of host memory", GS_BACKEND_NAME);
        return GS_ERROR_OUT_OF_MEMORY;
    }
    inst->dev = *dev; /* every 1.x core's device struct is 1.0's */
    if (pthread_mutex_init(&inst->lock, NULL) != 0) {
        free(inst);
        gs_host->set_error("%s backend: pthread_mutex_init failed", GS_BACKEND_NAME);
        return GS_ERROR_BACKEND_INIT_FAILED;
    }
    /* gs_reduce's float32 module now, so that a backend without code for this device is
     * skipped at once (the core tries the next one); its kernels and the other modules at
     * their first call (modules.h). */
    const double t0 = gs_now_ms();
    gs_status st = gs_module_load(inst, GS_MOD_F32);
    if (st != GS_SUCCESS) {
        pthread_mutex_destroy(&inst->lock);
        free(inst);
        return st;
    }
    const double t1 = gs_now_ms();
    /* What counts as an input the L2 cache holds (dispatch/grid.h). */
    int l2 = 0;
    if (gs_host->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev->device) != CUDA_SUCCESS)
        l2 = 0;
    inst->l2_bytes = gs_grid_l2_bytes(l2);
    inst->exact_grid = test_hook_grid("GRIDSYNC_TEST_EXACT_GRID", "exact sums");
    inst->scan_grid = test_hook_grid("GRIDSYNC_TEST_SCAN_GRID", "scans");
    gs_host->log(GS_LOG_DEBUG,
                 "%s backend: open on compute capability %d.%d in %.3f ms: module load %.3f ms, kernel set-up "
                 "none yet (each of the %d kernels at its first call, the other modules at the first call of one "
                 "of their kernels); inputs up to %llu bytes count as in L2",
                 GS_BACKEND_NAME, dev->cc_major, dev->cc_minor, gs_now_ms() - t0, t1 - t0,
                 (int)(GS_NKERNELS + GS_NSEG_KERNELS + GS_NEXACT_KERNELS + GS_NSCAN_KERNELS),
                 (unsigned long long)inst->l2_bytes);
    *out = inst;
    return GS_SUCCESS;
}

static void be_close(gs_backend_instance *inst)
{
    if (!inst)
        return;
    for (int m = 0; m < GS_MOD_COUNT; m++)
        if (inst->module[m])
            gs_host->cuModuleUnload(inst->module[m]);
    pthread_mutex_destroy(&inst->lock);
    free(inst);
}

static gs_status be_query_reduce(const gs_backend_instance *inst, gs_dtype dtype, gs_op op, gs_dtype out)
{
    (void)inst;
    return find_kernel(dtype, op, out) >= 0 ? GS_SUCCESS : GS_ERROR_UNSUPPORTED;
}

static gs_status be_query_reduce_flags(const gs_backend_instance *inst, gs_dtype dtype, gs_op op, gs_dtype out,
                                       uint32_t flags)
{
    if (!flags)
        return be_query_reduce(inst, dtype, op, out);
    if (flags == GS_BACKEND_SEGMENTED_EXACT)
        return find_segexact(dtype, op, out) >= 0 ? GS_SUCCESS : GS_ERROR_UNSUPPORTED;
    if ((flags != GS_BACKEND_REDUCE_EXACT && flags != GS_BACKEND_REDUCE_EXACT_ACCUMULATOR) || op != GS_OP_SUM)
        return GS_ERROR_UNSUPPORTED;
    return find_exact(dtype, out) >= 0 ? GS_SUCCESS : GS_ERROR_UNSUPPORTED;
}

static uint64_t be_workspace_size(const gs_backend_instance *inst)
{
    (void)inst;
    return GS_WORKSPACE_BYTES;
}

/* Kernel k of family, set up at its first call (modules.c); k < 0: no kernel does op over
 * dtype into out, GS_ERROR_UNSUPPORTED. */
gs_status gs_kernel_for(gs_backend_instance *inst, gs_family family, int k, gs_op op, gs_dtype dtype,
                            gs_dtype out, const gs_kernel_slot **s)
{
    static const char *const kinds[GS_FAM_COUNT] = {"", "segmented ", "exact ", "scan ", "exact scan "};
    if (k < 0) {
        gs_host->set_error("%s backend: no %skernel for %s over %s into %s", GS_BACKEND_NAME, kinds[family],
                           gs_op_name(op), gs_dtype_name(dtype), gs_dtype_name(out));
        return GS_ERROR_UNSUPPORTED;
    }
    return gs_kernel(inst, family, k, s);
}

/* The core hands every launch the stream's workspace; one smaller than this backend's
 * regions is the core's bug, refused before any kernel could run past it. */
gs_status gs_workspace_fits(uint64_t bytes)
{
    if (bytes >= GS_WORKSPACE_BYTES)
        return GS_SUCCESS;
    gs_host->set_error("%s backend: workspace of %llu bytes, %u needed", GS_BACKEND_NAME, (unsigned long long)bytes,
                       (unsigned)GS_WORKSPACE_BYTES);
    return GS_ERROR_INTERNAL;
}

/* One launch of kernel `name` (s) on grid blocks of `block` threads. */
gs_status gs_launch_block(const gs_kernel_slot *s, const char *name, unsigned int grid, unsigned int block,
                              CUstream stream, void **params)
{
    CUresult rc = gs_host->cuLaunchKernel(s->fn, grid, 1, 1, block, 1, 1, 0, stream, params, NULL);
    if (rc != CUDA_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "cuLaunchKernel(%s, %u blocks)", name, grid);
        return gs_cuda_fail(rc, what);
    }
    return GS_SUCCESS;
}


/* An exact sum (agent/exact.cuh): its grid (gs_grid_for_exact), but at least n /
 * GS_EXACT_BLOCK_ELEMENTS blocks (the kernel's limb bound), or what GRIDSYNC_TEST_EXACT_GRID
 * forces (no less); never more than GS_MAX_BLOCKS, whose partials the workspace holds. */
static gs_status exact_reduce(gs_backend_instance *inst, const gs_backend_reduce_args *a)
{
    const int k = a->op == GS_OP_SUM ? find_exact(a->dtype, a->out_dtype) : -1;
    const gs_kernel_slot *s;
    gs_status st = gs_kernel_for(inst, GS_FAM_EXACT, k, a->op, a->dtype, a->out_dtype, &s);
    if (st != GS_SUCCESS)
        return st;
    const uint64_t least = (a->n + GS_EXACT_BLOCK_ELEMENTS - 1) / GS_EXACT_BLOCK_ELEMENTS;
    if (least > GS_MAX_BLOCKS) { /* more than 2^39 elements: more partials than the workspace holds */
        gs_host->set_error("%s backend: an exact sum takes at most %llu elements, not %llu", GS_BACKEND_NAME,
                           (unsigned long long)GS_MAX_BLOCKS * GS_EXACT_BLOCK_ELEMENTS, (unsigned long long)a->n);
        return GS_ERROR_INVALID_ARGUMENT;
    }
    uint64_t grid = inst->exact_grid ? inst->exact_grid
                                     : gs_grid_for_exact(a->n, gs_dtype_size(a->dtype),
                                                         (unsigned int)inst->dev.multiprocessor_count, inst->l2_bytes,
                                                         s->max_blocks, s->max_blocks_dram);
    if (grid < least)
        grid = least;
    CUdeviceptr in = a->in, out = a->out, ws = a->workspace;
    uint64_t n = a->n;
    int out_dtype = (int)a->out_dtype;
    unsigned int mode = a->flags == GS_BACKEND_REDUCE_EXACT_ACCUMULATOR;
    void *params[] = {&in, &n, &out, &ws, &out_dtype, &mode};
    return gs_launch(s, gs_kernel_table_exact[k].name, (unsigned int)grid, a->stream, params);
}

static gs_status be_reduce(gs_backend_instance *inst, const gs_backend_reduce_args *a)
{
    gs_status st = gs_workspace_fits(a->workspace_bytes);
    if (st != GS_SUCCESS)
        return st;
    if (core_sends_flags() && a->flags)
        return exact_reduce(inst, a);
    const int k = find_kernel(a->dtype, a->op, a->out_dtype);
    const gs_kernel_slot *s;
    st = gs_kernel_for(inst, GS_FAM_REDUCE, k, a->op, a->dtype, a->out_dtype, &s);
    if (st != GS_SUCCESS)
        return st;
    unsigned int grid = gs_grid_for(a->n, gs_dtype_size(a->dtype), inst->l2_bytes, s->max_blocks, s->max_blocks_dram);
    CUdeviceptr in = a->in, out = a->out, ws = a->workspace;
    uint64_t n = a->n;
    void *params[] = {&in, &n, &out, &ws};
    return gs_launch(s, gs_kernel_table_reduce[k].name, grid, a->stream, params);
}

/* The segmented reduction's split (backends/common/segmented.cuh): chunks of the n + S
 * merged elements and segments, at least four 16-byte vectors per thread of a block, as
 * many as the workspace has slots for at most; one block per two chunks at most, the
 * queue balances the rest. n + S does not overflow: S < 2^56 (checked by the core), and n
 * elements lie in one allocation (where the driver reports the allocation's range; where
 * it reports none, n is only known not to wrap around memory). */
static void seg_plan(unsigned int max_blocks, gs_dtype dtype, int wide_slots, uint64_t n, uint64_t S,
                     uint64_t *chunk, uint32_t *nchunks, unsigned int *grid)
{
    const uint64_t total = n + S;
    const uint64_t max_chunks = GS_SEG_MAX_CHUNKS(wide_slots);
    const uint64_t base = (uint64_t)GS_BACKEND_BLOCK * 4 * (16 / gs_dtype_size(dtype));
    uint64_t c = base;
    /* About `base` elements per chunk (each chunk pays one search, so many segments should
     * not multiply the chunks), but small enough for two chunks per block of the grid
     * (a million empty segments over a short input still spread over every block). */
    if (n && S) {
        const uint64_t scaled = base + (uint64_t)((unsigned __int128)base * S / n);
        const uint64_t cap = total / (2u * max_blocks + 1);
        c = scaled < cap ? scaled : (cap > base ? cap : base);
    }
    const uint64_t need = (total + max_chunks - 1) / max_chunks;
    if (need > c)
        c = need;
    const uint64_t nc = (total + c - 1) / c;
    *chunk = c;
    *nchunks = (uint32_t)nc;
    const uint64_t want = (nc + 1) / 2;
    *grid = want < max_blocks ? (unsigned int)want : max_blocks;
}

static gs_status be_segmented_reduce(gs_backend_instance *inst, const gs_backend_segmented_args *a)
{
    const int exact = core_sends_flags() && (a->flags & GS_BACKEND_SEGMENTED_EXACT);
    const gs_family family = exact ? GS_FAM_EXACT : GS_FAM_SEGMENTED;
    const int k = exact ? find_segexact(a->dtype, a->op, a->out_dtype)
                        : lookup(seg_kernel_index, a->dtype, a->op, a->out_dtype);
    if (k < 0)
        return gs_kernel_for(inst, family, k, a->op, a->dtype, a->out_dtype, NULL);
    gs_status st = gs_workspace_fits(a->workspace_bytes);
    if (st != GS_SUCCESS)
        return st;
    const gs_kernel_slot *s;
    st = gs_kernel_for(inst, family, k, a->op, a->dtype, a->out_dtype, &s);
    if (st != GS_SUCCESS)
        return st;
    uint64_t chunk;
    uint32_t nchunks;
    unsigned int grid;
    const int wide = exact ? a->dtype == GS_FLOAT64 : a->op == GS_OP_ARGMIN || a->op == GS_OP_ARGMAX;
    seg_plan(s->max_blocks, a->dtype, wide, a->n, a->num_segments, &chunk, &nchunks, &grid);
    CUdeviceptr in = a->in, offsets = a->offsets, out = a->out, ws = a->workspace;
    uint64_t n = a->n, nseg = a->num_segments;
    void *params[] = {&in, &n, &offsets, &nseg, &out, &ws, &chunk, &nchunks};
    return gs_launch(s, (exact ? gs_kernel_table_exact : gs_kernel_table_segmented)[k].name, grid, a->stream, params);
}

/* Rounding exact accumulators (agent/exact_round.cuh): GS_EXACT_ROUND_PER_BLOCK a block, and
 * no more blocks than the occupancy grid (max_blocks); the grid-stride loop takes the rest. The core checked count >= 1, the pointers, out_dtype. */
static gs_status be_exact_round(gs_backend_instance *inst, const gs_backend_exact_round_args *a)
{
    const gs_kernel_slot *s;
    gs_status st = gs_kernel(inst, GS_FAM_EXACT, GS_EXACT_ROUND_INDEX, &s);
    if (st != GS_SUCCESS)
        return st;
    const uint64_t blocks = (a->count + GS_EXACT_ROUND_PER_BLOCK - 1) / GS_EXACT_ROUND_PER_BLOCK;
    const unsigned int grid = blocks < s->max_blocks ? (unsigned int)blocks : s->max_blocks;
    CUdeviceptr acc = a->acc, out = a->out;
    uint64_t count = a->count;
    int out_dtype = (int)a->out_dtype;
    void *params[] = {&acc, &count, &out, &out_dtype};
    return gs_launch(s, gs_kernel_table_exact[GS_EXACT_ROUND_INDEX].name, grid, a->stream, params);
}

static const gs_backend_ops ops = {
    .struct_size = sizeof(gs_backend_ops),
    .abi_version = GS_BACKEND_ABI_VERSION,
    .name = GS_BACKEND_NAME,
    .open = be_open,
    .close = be_close,
    .query_reduce = be_query_reduce,
    .workspace_size = be_workspace_size,
    .reduce = be_reduce,
    .segmented_reduce = be_segmented_reduce,
    .query_reduce_flags = be_query_reduce_flags,
    .query_scan = gs_be_query_scan,
    .scan = gs_be_scan,
    .exact_round = be_exact_round,
};

GS_EXPORT gs_status gridsync_backend_entry_v1(uint32_t core_abi_version, const gs_backend_host *h,
                                              const gs_backend_ops **out)
{
    if (GS_BACKEND_ABI_VERSION_MAJOR(core_abi_version) != GS_BACKEND_ABI_MAJOR)
        return GS_ERROR_BACKEND_ABI_MISMATCH;
    if (!h || !out || h->struct_size < sizeof(gs_backend_host))
        return GS_ERROR_BACKEND_INIT_FAILED;
    gs_host = h;
    g_core_minor = core_abi_version & 0xffffu;
    index_kernels(); /* idempotent: the same table whenever the core calls again */
    *out = &ops;
    return GS_SUCCESS;
}
