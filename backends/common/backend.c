/*
 * The host side of a gridsync backend, the same for every backend: it loads the backend's
 * embedded fatbin through the driver table the core hands in, looks the kernels of
 * kernel_list.h up by their extern "C" names, sizes the grid (grid_policy.h, from the
 * device's occupancy and L2 size), and launches one kernel per reduction. Compiled once per backend with
 * GS_BACKEND_NAME="<name>", next to that backend's fatbin.
 */
#define _GNU_SOURCE /* secure_getenv */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_status.h"
#include "dtype.h"
#include "gridsync_backend.h"
#include "grid_policy.h"
#include "kernel_list.h"

#ifndef GS_BACKEND_NAME
#  error "GS_BACKEND_NAME must be defined"
#endif
#ifndef GS_BACKEND_BLOCK
#  error "GS_BACKEND_BLOCK (threads per block of the kernels) must be defined"
#endif
#ifndef GS_BACKEND_ITEMS
#  error "GS_BACKEND_ITEMS (16-byte vectors per thread per loop trip) must be defined"
#endif

#define GS_EXPORT __attribute__((visibility("default")))

#define GS_COUNT_KERNEL(dt, op, o) +1
#define GS_COUNT_EXACT(dt) +1
enum {
    GS_NKERNELS = 0 GS_KERNELS(GS_COUNT_KERNEL),
    GS_NSEG_KERNELS = 0 GS_SEG_KERNELS(GS_COUNT_KERNEL),
    GS_NEXACT_KERNELS = 0 GS_EXACT_KERNELS(GS_COUNT_EXACT)
};
_Static_assert(GS_NKERNELS < 255, "kernel_index holds indices in a byte");

/* The fatbin, embedded by embed_fatbin.py's assembly. */
extern const unsigned char gs_fatbin[];

static const gs_backend_host *host;

typedef struct kernel_entry {
    gs_dtype dtype;
    gs_op op;
    gs_dtype out;
    const char *name;
} kernel_entry;

struct gs_backend_instance {
    gs_backend_device dev;
    CUmodule module;
    /* Per kernel of kernels[]: its function, and the most blocks gs_grid_for() launches
     * for an input of up to l2_bytes (GS_GRID_THREADS_PER_SM's worth per multiprocessor) and
     * for a larger one (GS_GRID_THREADS_PER_SM_DRAM's), at most what is resident. */
    CUfunction fn[GS_NKERNELS];
    unsigned int max_blocks[GS_NKERNELS];
    unsigned int max_blocks_dram[GS_NKERNELS];
    uint64_t l2_bytes;
    /* The same for the segmented reduction's kernels, seg_kernels[], whose cap is what is
     * resident (its blocks take work from a queue). */
    CUfunction seg_fn[GS_NSEG_KERNELS];
    unsigned int seg_max_blocks[GS_NSEG_KERNELS];
    /* The exact sums' kernels, exact_kernels[], sized as gs_reduce's; exact_grid: the grid
     * GRIDSYNC_TEST_EXACT_GRID forces (0: none), for tests only. */
    CUfunction exact_fn[GS_NEXACT_KERNELS];
    unsigned int exact_max_blocks[GS_NEXACT_KERNELS];
    unsigned int exact_max_blocks_dram[GS_NEXACT_KERNELS];
    unsigned int exact_grid;
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

#define GS_KERNEL_ENTRY(dt, op, o) {GS_DT_##dt, GS_OPV_##op, GS_DT_##o, "gs_reduce_" #dt "_" #op "_" #o},
static const kernel_entry kernels[GS_NKERNELS] = {GS_KERNELS(GS_KERNEL_ENTRY)};
#define GS_SEG_KERNEL_ENTRY(dt, op, o) {GS_DT_##dt, GS_OPV_##op, GS_DT_##o, "gs_segreduce_" #dt "_" #op "_" #o},
static const kernel_entry seg_kernels[GS_NSEG_KERNELS] = {GS_SEG_KERNELS(GS_SEG_KERNEL_ENTRY)};
/* (out: unused, the output type is the kernel's argument) */
#define GS_EXACT_KERNEL_ENTRY(dt) {GS_DT_##dt, GS_OP_SUM, GS_DT_##dt, "gs_exact_" #dt},
static const kernel_entry exact_kernels[GS_NEXACT_KERNELS] = {GS_EXACT_KERNELS(GS_EXACT_KERNEL_ENTRY)};
#define GS_EXACT_PAIR(dt, o) || (dtype == GS_DT_##dt && out == GS_DT_##o)

/* The index in exact_kernels[] of dtype's exact kernel when it rounds into out; -1 if none. */
static int find_exact(gs_dtype dtype, gs_dtype out)
{
    if (!(0 GS_EXACT_OUTPUTS(GS_EXACT_PAIR)))
        return -1;
    for (int k = 0; k < GS_NEXACT_KERNELS; k++)
        if (exact_kernels[k].dtype == dtype)
            return k;
    return -1;
}

/* (dtype, op, out) -> index into kernels[] + 1, 0 when there is none; filled once by the
 * entry point, so a launch looks its kernel up in constant time. */
static unsigned char kernel_index[GS_DTYPE_COUNT][GS_OP_COUNT][GS_DTYPE_COUNT];
static unsigned char seg_kernel_index[GS_DTYPE_COUNT][GS_OP_COUNT][GS_DTYPE_COUNT];

static void index_kernels(void)
{
    for (int k = 0; k < GS_NKERNELS; k++)
        kernel_index[kernels[k].dtype][kernels[k].op][kernels[k].out] = (unsigned char)(k + 1);
    for (int k = 0; k < GS_NSEG_KERNELS; k++)
        seg_kernel_index[seg_kernels[k].dtype][seg_kernels[k].op][seg_kernels[k].out] = (unsigned char)(k + 1);
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

static gs_status cuda_fail(CUresult rc, const char *what)
{
    const char *name = "?";
    host->cuGetErrorName(rc, &name);
    host->set_error("%s backend: %s failed: %s", GS_BACKEND_NAME, what, name);
    return gs_status_of_cuda(rc);
}

/* Milliseconds on CLOCK_MONOTONIC, for GRIDSYNC_DEBUG's timings. */
static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static gs_status be_open(const gs_backend_device *dev, gs_backend_instance **out)
{
    const double t0 = now_ms();
    gs_backend_instance *inst = calloc(1, sizeof *inst);
    if (!inst) {
        host->set_error("%s backend: out of host memory", GS_BACKEND_NAME);
        return GS_ERROR_OUT_OF_MEMORY;
    }
    memcpy(&inst->dev, dev, dev->struct_size < sizeof inst->dev ? dev->struct_size : sizeof inst->dev);
    CUresult rc = host->cuModuleLoadData(&inst->module, gs_fatbin);
    if (rc != CUDA_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "loading its fatbin on compute capability %d.%d (cuModuleLoadData)",
                 dev->cc_major, dev->cc_minor);
        free(inst);
        return cuda_fail(rc, what);
    }
    const double t1 = now_ms();
    /* What counts as an input the L2 cache holds (grid_policy.h). */
    int l2 = 0;
    if (host->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev->device) != CUDA_SUCCESS)
        l2 = 0;
    inst->l2_bytes = gs_grid_l2_bytes(l2);
    double family_ms[3] = {0, 0, 0}, tk = now_ms(); /* gs_reduce's, segmented, exact */
    for (int k = 0; k < GS_NKERNELS + GS_NSEG_KERNELS + GS_NEXACT_KERNELS; k++) {
        const int seg = k >= GS_NKERNELS && k < GS_NKERNELS + GS_NSEG_KERNELS, exact = k >= GS_NKERNELS + GS_NSEG_KERNELS;
        const kernel_entry *e = exact ? &exact_kernels[k - GS_NKERNELS - GS_NSEG_KERNELS]
                                : seg ? &seg_kernels[k - GS_NKERNELS]
                                      : &kernels[k];
        CUfunction f;
        rc = host->cuModuleGetFunction(&f, inst->module, e->name);
        int per_sm = 0;
        if (rc == CUDA_SUCCESS)
            rc = host->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, GS_BACKEND_BLOCK, 0);
        if (rc != CUDA_SUCCESS) {
            char what[160];
            snprintf(what, sizeof what, "setting up kernel %s", e->name);
            host->cuModuleUnload(inst->module);
            free(inst);
            gs_status st = cuda_fail(rc, what);
            return st == GS_ERROR_CUDA ? GS_ERROR_BACKEND_INIT_FAILED : st;
        }
        if (per_sm < 1)
            per_sm = 1;
        if (exact) {
            const int x = k - GS_NKERNELS - GS_NSEG_KERNELS;
            const unsigned int sms = (unsigned int)dev->multiprocessor_count;
            inst->exact_fn[x] = f;
            inst->exact_max_blocks[x] = gs_grid_cap(sms, per_sm, GS_GRID_THREADS_PER_SM);
            inst->exact_max_blocks_dram[x] = gs_grid_cap(sms, per_sm, GS_GRID_THREADS_PER_SM_DRAM);
        } else if (seg) {
            inst->seg_fn[k - GS_NKERNELS] = f;
            inst->seg_max_blocks[k - GS_NKERNELS] = (unsigned int)per_sm * (unsigned int)dev->multiprocessor_count;
        } else {
            const unsigned int sms = (unsigned int)dev->multiprocessor_count;
            inst->fn[k] = f;
            inst->max_blocks[k] = gs_grid_cap(sms, per_sm, GS_GRID_THREADS_PER_SM);
            inst->max_blocks_dram[k] = gs_grid_cap(sms, per_sm, GS_GRID_THREADS_PER_SM_DRAM);
        }
        const double tn = now_ms();
        family_ms[exact ? 2 : seg ? 1 : 0] += tn - tk;
        tk = tn;
    }
    /* For tests only (docs/design.md, "Exact sums"): the exact kernels' grid, to show that
     * their bits do not depend on it. */
    const char *forced = secure_getenv("GRIDSYNC_TEST_EXACT_GRID");
    if (forced && *forced) {
        const unsigned long g = strtoul(forced, NULL, 10);
        inst->exact_grid = g > 0 && g <= (1ul << 20) ? (unsigned int)g : 0; /* exact.cuh: < 2^29 */
        host->log(GS_LOG_DEBUG, "%s backend: GRIDSYNC_TEST_EXACT_GRID=%s: exact sums on %u blocks", GS_BACKEND_NAME,
                  forced, inst->exact_grid);
    }
    host->log(GS_LOG_DEBUG,
              "%s backend: fatbin loaded in %.3f ms (cuModuleLoadData), kernels set up in %.3f ms "
              "(gs_reduce's %.3f, segmented %.3f, exact %.3f)",
              GS_BACKEND_NAME, t1 - t0, now_ms() - t1, family_ms[0], family_ms[1], family_ms[2]);
    host->log(GS_LOG_DEBUG,
              "%s backend: %d kernels ready on compute capability %d.%d, up to %u blocks (%u above %llu bytes)",
              GS_BACKEND_NAME, (int)(GS_NKERNELS + GS_NSEG_KERNELS + GS_NEXACT_KERNELS), dev->cc_major, dev->cc_minor, inst->max_blocks[0],
              inst->max_blocks_dram[0], (unsigned long long)inst->l2_bytes);
    *out = inst;
    return GS_SUCCESS;
}

static void be_close(gs_backend_instance *inst)
{
    if (!inst)
        return;
    host->cuModuleUnload(inst->module);
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
    if ((flags != GS_BACKEND_REDUCE_EXACT && flags != GS_BACKEND_REDUCE_EXACT_ACCUMULATOR) || op != GS_OP_SUM)
        return GS_ERROR_UNSUPPORTED;
    return find_exact(dtype, out) >= 0 ? GS_SUCCESS : GS_ERROR_UNSUPPORTED;
}

static uint64_t be_workspace_size(const gs_backend_instance *inst)
{
    (void)inst;
    return GS_WORKSPACE_BYTES;
}

/* An exact sum (exact.cuh): gs_reduce's grid, but at least n / GS_EXACT_BLOCK_ELEMENTS
 * blocks (the kernel's limb bound), or what GRIDSYNC_TEST_EXACT_GRID forces (no less). */
static gs_status exact_reduce(gs_backend_instance *inst, const gs_backend_reduce_args *a)
{
    const int k = a->op == GS_OP_SUM ? find_exact(a->dtype, a->out_dtype) : -1;
    if (k < 0) {
        host->set_error("%s backend: no exact kernel for %s over %s into %s", GS_BACKEND_NAME, gs_op_name(a->op),
                        gs_dtype_name(a->dtype), gs_dtype_name(a->out_dtype));
        return GS_ERROR_UNSUPPORTED;
    }
    const uint64_t least = (a->n + GS_EXACT_BLOCK_ELEMENTS - 1) / GS_EXACT_BLOCK_ELEMENTS;
    uint64_t grid = inst->exact_grid ? inst->exact_grid
                                     : gs_grid_for(a->n, gs_dtype_size(a->dtype), inst->l2_bytes,
                                                   inst->exact_max_blocks[k], inst->exact_max_blocks_dram[k]);
    if (grid < least)
        grid = least;
    CUdeviceptr in = a->in, out = a->out, ws = a->workspace;
    uint64_t n = a->n;
    int out_dtype = (int)a->out_dtype;
    unsigned int mode = a->flags == GS_BACKEND_REDUCE_EXACT_ACCUMULATOR;
    void *params[] = {&in, &n, &out, &ws, &out_dtype, &mode};
    CUresult rc = host->cuLaunchKernel(inst->exact_fn[k], (unsigned int)grid, 1, 1, GS_BACKEND_BLOCK, 1, 1, 0,
                                       a->stream, params, NULL);
    if (rc != CUDA_SUCCESS) {
        char what[128];
        snprintf(what, sizeof what, "cuLaunchKernel(%s, %u blocks)", exact_kernels[k].name, (unsigned int)grid);
        return cuda_fail(rc, what);
    }
    return GS_SUCCESS;
}

static gs_status be_reduce(gs_backend_instance *inst, const gs_backend_reduce_args *a)
{
    if (a->workspace_bytes < GS_WORKSPACE_BYTES) {
        host->set_error("%s backend: workspace of %llu bytes, %u needed", GS_BACKEND_NAME,
                        (unsigned long long)a->workspace_bytes, (unsigned)GS_WORKSPACE_BYTES);
        return GS_ERROR_INTERNAL;
    }
    /* flags: ABI 1.2 args only (an older core's struct ends before them) */
    if (a->struct_size >= offsetof(gs_backend_reduce_args, flags) + sizeof a->flags && a->flags)
        return exact_reduce(inst, a);
    int k = find_kernel(a->dtype, a->op, a->out_dtype);
    if (k < 0) {
        host->set_error("%s backend: no kernel for %s over %s into %s", GS_BACKEND_NAME, gs_op_name(a->op),
                        gs_dtype_name(a->dtype), gs_dtype_name(a->out_dtype));
        return GS_ERROR_UNSUPPORTED;
    }
    unsigned int grid = gs_grid_for(a->n, gs_dtype_size(a->dtype), inst->l2_bytes, inst->max_blocks[k],
                                    inst->max_blocks_dram[k]);
    CUdeviceptr in = a->in, out = a->out, ws = a->workspace;
    uint64_t n = a->n;
    void *params[] = {&in, &n, &out, &ws};
    CUresult rc = host->cuLaunchKernel(inst->fn[k], grid, 1, 1, GS_BACKEND_BLOCK, 1, 1, 0, a->stream, params, NULL);
    if (rc != CUDA_SUCCESS) {
        char what[128];
        snprintf(what, sizeof what, "cuLaunchKernel(%s, %u blocks)", kernels[k].name, grid);
        return cuda_fail(rc, what);
    }
    return GS_SUCCESS;
}

/* The segmented reduction's split (backends/common/segmented.cuh): chunks of the n + S
 * merged elements and segments, at least four 16-byte vectors per thread of a block, as
 * many as the workspace has slots for at most; one block per two chunks at most, the
 * queue balances the rest. n + S does not overflow: S < 2^56 (checked by the core), and n
 * elements lie in one allocation (where the driver reports the allocation's range; where
 * it reports none, n is only known not to wrap around memory). */
static void seg_plan(const gs_backend_instance *inst, int k, gs_dtype dtype, gs_op op, uint64_t n, uint64_t S,
                     uint64_t *chunk, uint32_t *nchunks, unsigned int *grid)
{
    const uint64_t total = n + S;
    const uint64_t max_chunks = GS_SEG_MAX_CHUNKS(op == GS_OP_ARGMIN || op == GS_OP_ARGMAX);
    const uint64_t base = (uint64_t)GS_BACKEND_BLOCK * 4 * (16 / gs_dtype_size(dtype));
    uint64_t c = base;
    /* About `base` elements per chunk (each chunk pays one search, so many segments should
     * not multiply the chunks), but small enough for two chunks per block of the grid
     * (a million empty segments over a short input still spread over every block). */
    if (n && S) {
        const uint64_t scaled = base + (uint64_t)((unsigned __int128)base * S / n);
        const uint64_t cap = total / (2u * inst->seg_max_blocks[k] + 1);
        c = scaled < cap ? scaled : (cap > base ? cap : base);
    }
    const uint64_t need = (total + max_chunks - 1) / max_chunks;
    if (need > c)
        c = need;
    const uint64_t nc = (total + c - 1) / c;
    *chunk = c;
    *nchunks = (uint32_t)nc;
    const uint64_t want = (nc + 1) / 2;
    *grid = want < inst->seg_max_blocks[k] ? (unsigned int)want : inst->seg_max_blocks[k];
}

static gs_status be_segmented_reduce(gs_backend_instance *inst, const gs_backend_segmented_args *a)
{
    int k = lookup(seg_kernel_index, a->dtype, a->op, a->out_dtype);
    if (k < 0) {
        host->set_error("%s backend: no segmented kernel for %s over %s into %s", GS_BACKEND_NAME,
                        gs_op_name(a->op), gs_dtype_name(a->dtype), gs_dtype_name(a->out_dtype));
        return GS_ERROR_UNSUPPORTED;
    }
    if (a->workspace_bytes < GS_WORKSPACE_BYTES) {
        host->set_error("%s backend: workspace of %llu bytes, %u needed", GS_BACKEND_NAME,
                        (unsigned long long)a->workspace_bytes, (unsigned)GS_WORKSPACE_BYTES);
        return GS_ERROR_INTERNAL;
    }
    uint64_t chunk;
    uint32_t nchunks;
    unsigned int grid;
    seg_plan(inst, k, a->dtype, a->op, a->n, a->num_segments, &chunk, &nchunks, &grid);
    CUdeviceptr in = a->in, offsets = a->offsets, out = a->out, ws = a->workspace;
    uint64_t n = a->n, nseg = a->num_segments;
    void *params[] = {&in, &n, &offsets, &nseg, &out, &ws, &chunk, &nchunks};
    CUresult rc =
        host->cuLaunchKernel(inst->seg_fn[k], grid, 1, 1, GS_BACKEND_BLOCK, 1, 1, 0, a->stream, params, NULL);
    if (rc != CUDA_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "cuLaunchKernel(%s, %u blocks)", seg_kernels[k].name, grid);
        return cuda_fail(rc, what);
    }
    return GS_SUCCESS;
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
};

GS_EXPORT gs_status gridsync_backend_entry_v1(uint32_t core_abi_version, const gs_backend_host *h,
                                              const gs_backend_ops **out)
{
    if (GS_BACKEND_ABI_VERSION_MAJOR(core_abi_version) != GS_BACKEND_ABI_MAJOR)
        return GS_ERROR_BACKEND_ABI_MISMATCH;
    if (!h || !out || h->struct_size < sizeof(gs_backend_host))
        return GS_ERROR_BACKEND_INIT_FAILED;
    host = h;
    index_kernels(); /* idempotent: the same table whenever the core calls again */
    *out = &ops;
    return GS_SUCCESS;
}
