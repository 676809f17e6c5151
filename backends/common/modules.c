/*
 * A backend's kernel tables, its seven embedded fatbins, and the loading of their modules
 * and kernels at first use (modules.h says why and how it is thread-safe).
 */
#define _GNU_SOURCE
#include "modules.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cuda_status.h"
#include "dtype.h"
#include "dispatch/grid.h"

/* The fatbins, embedded by embed_fatbin.py's assembly. */
extern const unsigned char gs_fatbin_reduce[];
extern const unsigned char gs_fatbin_reduce_float[];
extern const unsigned char gs_fatbin_reduce_int[];
extern const unsigned char gs_fatbin_segmented[];
extern const unsigned char gs_fatbin_exact[];
extern const unsigned char gs_fatbin_scan_float[];
extern const unsigned char gs_fatbin_scan_int[];
extern const unsigned char gs_fatbin_scan_exact[];

static const unsigned char *const fatbins[GS_MOD_COUNT] = {
    gs_fatbin_reduce, gs_fatbin_reduce_float, gs_fatbin_reduce_int, gs_fatbin_segmented,
    gs_fatbin_exact,  gs_fatbin_scan_float,   gs_fatbin_scan_int, gs_fatbin_scan_exact};
static const char *const module_names[GS_MOD_COUNT] = {
    "gs_reduce (float32)", "gs_reduce (other float types)", "gs_reduce (integer types)", "segmented",
    "exact-sum",           "gs_scan (float types)",         "gs_scan (integer types)",       "exact gs_scan"};

const gs_backend_host *gs_host;

#define GS_MOD_OF2(module) GS_MOD_##module
#define GS_MOD_OF(module) GS_MOD_OF2(module)
#define GS_KERNEL_ENTRY(dt, op, o) \
    {GS_DT_##dt, GS_OPV_##op, GS_DT_##o, "gs_reduce_" #dt "_" #op "_" #o, 0, GS_MOD_OF(GS_REDUCE_MODULE_##dt), 0},
const kernel_entry gs_kernel_table_reduce[GS_NKERNELS] = {GS_KERNELS(GS_KERNEL_ENTRY)};
#define GS_SEG_KERNEL_ENTRY(dt, op, o) \
    {GS_DT_##dt, GS_OPV_##op, GS_DT_##o, "gs_segreduce_" #dt "_" #op "_" #o, 1, GS_MOD_SEGMENTED, 0},
const kernel_entry gs_kernel_table_segmented[GS_NSEG_KERNELS] = {GS_SEG_KERNELS(GS_SEG_KERNEL_ENTRY)};
#define GS_EXACT_KERNEL_ENTRY(dt) {GS_DT_##dt, GS_OP_SUM, GS_DT_##dt, "gs_exact_" #dt, 0, GS_MOD_EXACT, 0},
#define GS_SEGEXACT_KERNEL_ENTRY(dt) {GS_DT_##dt, GS_OP_SUM, GS_DT_##dt, "gs_segexact_" #dt, 1, GS_MOD_EXACT, 0},
#define GS_NAME_OF2(name) #name
#define GS_NAME_OF(name) GS_NAME_OF2(name)
/* The rounding kernel reads accumulators (int64 words) into any float type, an argument. */
const kernel_entry gs_kernel_table_exact[GS_NEXACT_KERNELS] = {
    GS_EXACT_KERNELS(GS_EXACT_KERNEL_ENTRY) GS_SEGEXACT_KERNELS(GS_SEGEXACT_KERNEL_ENTRY)
    {GS_INT64, GS_OP_SUM, GS_FLOAT64, GS_NAME_OF(GS_EXACT_ROUND_KERNEL), 0, GS_MOD_EXACT, 0}};
/* gs_scan's kernels run on the resident blocks: "queued", as the tiles come from a ticket. */
#define GS_SCAN_KERNEL_ENTRY(dt, op, o) \
    {GS_DT_##dt, GS_OPV_##op, GS_DT_##o, "gs_scan_" #dt "_" #op "_" #o, 1, GS_MOD_OF(GS_SCAN_MODULE_##dt), 0},
const kernel_entry gs_kernel_table_scan[GS_NSCAN_KERNELS] = {GS_SCAN_KERNELS(GS_SCAN_KERNEL_ENTRY)};
/* The exact scans' range kernels run on GS_BACKEND_BLOCK threads, the scans on
 * GS_SCAN_THREADS but the widest on GS_EXACT_SCAN_WIDE_THREADS (agent/scan_exact.cuh). */
#define GS_SCAN_EXACT_RANGE_ENTRY(dt) \
    {GS_DT_##dt, GS_OP_SUM, GS_DT_##dt, "gs_scan_exact_range_" #dt, 0, GS_MOD_SCAN_EXACT, GS_BACKEND_BLOCK},
#define GS_SCAN_EXACT_ENTRY_W(dt, o, w)                                                                    \
    {GS_DT_##dt, GS_OP_SUM, GS_DT_##o, "gs_scan_exact_" #dt "_" #o "_w" #w, 1, GS_MOD_SCAN_EXACT,          \
     (w) == GS_EXACT_SCAN_WIDE ? GS_EXACT_SCAN_WIDE_THREADS : GS_SCAN_THREADS},
#define GS_SCAN_EXACT_ENTRY_4(dt, o) GS_SCAN_EXACT_ENTRY_W(dt, o, 4)
#define GS_SCAN_EXACT_ENTRY_10(dt, o) GS_SCAN_EXACT_ENTRY_W(dt, o, 10)
#define GS_SCAN_EXACT_ENTRY_72(dt, o) GS_SCAN_EXACT_ENTRY_W(dt, o, 72)
#define GS_SCAN_EXACT_WIDTH_ENTRIES(w) GS_EXACT_OUTPUTS(GS_SCAN_EXACT_ENTRY_##w)
const kernel_entry gs_kernel_table_scan_exact[GS_NSCAN_EXACT_KERNELS] = {
    GS_EXACT_KERNELS(GS_SCAN_EXACT_RANGE_ENTRY) GS_SCAN_EXACT_WIDTHS(GS_SCAN_EXACT_WIDTH_ENTRIES)};
static const kernel_entry *const tables[GS_FAM_COUNT] = {gs_kernel_table_reduce, gs_kernel_table_segmented,
                                                         gs_kernel_table_exact, gs_kernel_table_scan,
                                                         gs_kernel_table_scan_exact};

double gs_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

gs_status gs_cuda_fail(CUresult rc, const char *what)
{
    const char *name = "?";
    gs_host->cuGetErrorName(rc, &name);
    gs_host->set_error("%s backend: %s failed: %s", GS_BACKEND_NAME, what, name);
    return gs_status_of_cuda(rc);
}

gs_status gs_module_load(gs_backend_instance *inst, gs_module_id id)
{
    if (inst->module[id])
        return GS_SUCCESS;
    const double t0 = gs_now_ms();
    CUmodule m = NULL;
    CUresult rc = gs_host->cuModuleLoadData(&m, fatbins[id]);
    if (rc != CUDA_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "loading its %s kernels' fatbin on compute capability %d.%d (cuModuleLoadData)",
                 module_names[id], inst->dev.cc_major, inst->dev.cc_minor);
        return gs_cuda_fail(rc, what);
    }
    inst->module[id] = m;
    gs_host->log(GS_LOG_DEBUG, "%s backend: %s kernels' fatbin loaded in %.3f ms (cuModuleLoadData)",
                 GS_BACKEND_NAME, module_names[id], gs_now_ms() - t0);
    return GS_SUCCESS;
}

/* Looks kernel e up in m and fills s (not yet published). */
static gs_status set_up(const gs_backend_instance *inst, CUmodule m, const kernel_entry *e, gs_kernel_slot *s)
{
    CUfunction f;
    CUresult rc = gs_host->cuModuleGetFunction(&f, m, e->name);
    int per_sm = 0;
    if (rc == CUDA_SUCCESS)
        rc = gs_host->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, gs_block_of(e), 0);
    if (rc != CUDA_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "setting up kernel %s (cuModuleGetFunction, occupancy)", e->name);
        return gs_cuda_fail(rc, what);
    }
    if (per_sm < 1)
        per_sm = 1;
    const unsigned int sms = (unsigned int)inst->dev.multiprocessor_count;
    s->fn = f;
    if (e->queued) {
        s->max_blocks = (unsigned int)per_sm * sms;
        s->max_blocks_dram = s->max_blocks;
    } else {
        s->max_blocks = gs_grid_cap(sms, per_sm, GS_GRID_THREADS_PER_SM);
        s->max_blocks_dram = gs_grid_cap(sms, per_sm, GS_GRID_THREADS_PER_SM_DRAM);
    }
    return GS_SUCCESS;
}

gs_status gs_kernel_slow(gs_backend_instance *inst, gs_family family, int k, const gs_kernel_slot **out)
{
    gs_kernel_slot *s = gs_kernel_slot_of(inst, family, k);
    const kernel_entry *e = &tables[family][k];
    gs_status st = GS_SUCCESS;
    pthread_mutex_lock(&inst->lock);
    if (!atomic_load_explicit(&s->ready, memory_order_relaxed)) { /* another thread may have filled it */
        const double t0 = gs_now_ms();
        st = gs_module_load(inst, e->module);
        if (st == GS_SUCCESS)
            st = set_up(inst, inst->module[e->module], e, s);
        if (st == GS_SUCCESS) {
            atomic_store_explicit(&s->ready, 1, memory_order_release);
            gs_host->log(GS_LOG_DEBUG, "%s backend: kernel %s set up at its first call in %.3f ms, up to %u blocks",
                         GS_BACKEND_NAME, e->name, gs_now_ms() - t0, s->max_blocks);
        }
    }
    pthread_mutex_unlock(&inst->lock);
    if (st == GS_SUCCESS)
        *out = s;
    return st;
}
