/*
 * The host side of gs_scan, the same for every backend: which scans it does, the grids, and
 * the launches (agent/scan.cuh; with GS_SCAN_EXACT, agent/scan_exact.cuh's range pass and
 * scans). Compiled once per backend beside backend.c.
 */
#include <stdint.h>
#include <stdio.h>

#include "dtype.h"
#include "gridsync_backend.h"
#include "dispatch/grid.h"
#include "dispatch/kernel_list.h"
#include "launch.h"
#include "modules.h"
#include "scan_order.h"
#include "workspace.h"

_Static_assert(GS_NSCAN_KERNELS < 255, "the scan index holds indices in a byte");

/* (dtype, op, out) -> index into gs_kernel_table_scan[] + 1, 0 when there is none. */
static unsigned char scan_kernel_index[GS_DTYPE_COUNT][GS_OP_COUNT][GS_DTYPE_COUNT];

void gs_scan_index_kernels(void)
{
    for (int k = 0; k < GS_NSCAN_KERNELS; k++) {
        const kernel_entry *e = &gs_kernel_table_scan[k];
        scan_kernel_index[e->dtype][e->op][e->out] = (unsigned char)(k + 1);
    }
}

static int find_scan(gs_dtype dtype, gs_op op, gs_dtype out)
{
    if (!gs_dtype_valid((int)dtype) || !gs_op_valid((int)op) || !gs_dtype_valid((int)out))
        return -1;
    return (int)scan_kernel_index[dtype][op][out] - 1;
}

#define GS_EXACT_PAIR(dt, o) || (dtype == GS_DT_##dt && out == GS_DT_##o)

/* The index in gs_kernel_table_scan_exact[] of the exact scan of dtype into out at width
 * slot w (0, 1, 2: GS_SCAN_EXACT_WIDTHS' order), or of dtype's range pass (w = -1); -1 if none. */
static int find_scan_exact(gs_dtype dtype, gs_op op, gs_dtype out, int w)
{
    if (op != GS_OP_SUM || !(0 GS_EXACT_OUTPUTS(GS_EXACT_PAIR)))
        return -1;
    const int from = w < 0 ? 0 : GS_NEXACT_PLAIN + w * GS_NSCAN_EXACT_PAIRS;
    const int to = w < 0 ? GS_NEXACT_PLAIN : from + GS_NSCAN_EXACT_PAIRS;
    for (int k = from; k < to; k++)
        if (gs_kernel_table_scan_exact[k].dtype == dtype && (w < 0 || gs_kernel_table_scan_exact[k].out == out))
            return k;
    return -1;
}

gs_status gs_be_query_scan(const gs_backend_instance *inst, gs_dtype dtype, gs_op op, gs_dtype out, uint32_t flags)
{
    (void)inst;
    if (flags & ~(GS_BACKEND_SCAN_EXCLUSIVE | GS_BACKEND_SCAN_EXACT))
        return GS_ERROR_UNSUPPORTED;
    if (flags & GS_BACKEND_SCAN_EXACT)
        return find_scan_exact(dtype, op, out, 0) >= 0 ? GS_SUCCESS : GS_ERROR_UNSUPPORTED;
    return find_scan(dtype, op, out) >= 0 ? GS_SUCCESS : GS_ERROR_UNSUPPORTED;
}

/* A scan's grid: what fits (max_blocks, from the occupancy), at most one block per tile, and
 * at most half the tiles of a ring of `ring` tiles, so that a block seldom waits for a slot
 * (agent/scan_lookback.cuh, step 1); or what GRIDSYNC_TEST_SCAN_GRID forces. At least one. */
static uint64_t scan_grid(const gs_backend_instance *inst, const gs_kernel_slot *s, uint64_t tiles, uint64_t ring)
{
    uint64_t grid = inst->scan_grid ? inst->scan_grid : s->max_blocks < ring / 2 ? s->max_blocks : ring / 2;
    if (grid > tiles)
        grid = tiles;
    return grid ? grid : 1;
}

/* An exact scan (agent/scan_exact.cuh): the range pass on gs_grid_for's grid, then the scan
 * of every width, of which the plan's runs and the others return at once. n may be 0 when a
 * total is asked for: one block each then. */
static gs_status scan_exact(gs_backend_instance *inst, const gs_backend_scan_args *a)
{
    const gs_kernel_slot *range, *s;
    const int kr = find_scan_exact(a->dtype, a->op, a->out_dtype, -1);
    gs_status st = gs_kernel_for(inst, GS_FAM_SCAN_EXACT, kr, a->op, a->dtype, a->out_dtype, &range);
    if (st != GS_SUCCESS)
        return st;
    uint64_t grid = gs_grid_for(a->n, gs_dtype_size(a->dtype), inst->l2_bytes, range->max_blocks,
                                range->max_blocks_dram);
    grid = grid < 1 ? 1 : grid > GS_MAX_BLOCKS ? GS_MAX_BLOCKS : grid;
    CUdeviceptr in = a->in, out = a->out, ws = a->workspace, carry = a->carry_in, total = a->total;
    uint64_t n = a->n, ncarry = a->carry_in_count;
    unsigned int flags = a->flags & GS_BACKEND_SCAN_EXCLUSIVE;
    void *rparams[] = {&in, &n, &carry, &ncarry, &ws};
    if ((st = gs_launch(range, gs_kernel_table_scan_exact[kr].name, (unsigned int)grid, a->stream, rparams)) != GS_SUCCESS)
        return st;
    static const unsigned int widths[] = {GS_EXACT_SCAN_NARROW, GS_EXACT_SCAN_MID, GS_EXACT_SCAN_WIDE};
    const uint64_t out_bytes = gs_dtype_size(a->out_dtype);
    for (int w = 0; w < 3; w++) {
        const int k = find_scan_exact(a->dtype, a->op, a->out_dtype, w);
        if ((st = gs_kernel_for(inst, GS_FAM_SCAN_EXACT, k, a->op, a->dtype, a->out_dtype, &s)) != GS_SUCCESS)
            return st;
        const unsigned int block = (unsigned int)gs_block_of(&gs_kernel_table_scan_exact[k]);
        const uint64_t tile = (uint64_t)block * GS_SCAN_ITEMS(out_bytes);
        const uint64_t tiles = a->n / tile + (a->n % tile != 0);
        const uint64_t ring = (uint64_t)GS_SCAN_SLOTS(GS_EXACT_SCAN_VALUE_BYTES(widths[w])) * GS_SCAN_GROUP;
        const uint64_t g = widths[w] == GS_EXACT_SCAN_WIDE ? 1 : scan_grid(inst, s, tiles, ring);
        if (tiles + g > UINT32_MAX) {
            gs_host->set_error("%s backend: an exact scan into %s takes at most %llu elements, not %llu",
                               GS_BACKEND_NAME, gs_dtype_name(a->out_dtype),
                               (unsigned long long)((UINT32_MAX - g) * tile), (unsigned long long)a->n);
            return GS_ERROR_INVALID_ARGUMENT;
        }
        void *params[] = {&in, &n, &out, &ws, &flags, &total};
        if ((st = gs_launch_block(s, gs_kernel_table_scan_exact[k].name, (unsigned int)g, block, a->stream, params)) !=
            GS_SUCCESS)
            return st;
    }
    return GS_SUCCESS;
}

/* A scan (agent/scan.cuh): its blocks stay resident and take tiles from the ticket, on
 * scan_grid's grid. Any grid gives the same bits. The tickets (tiles + grid) count in 32
 * bits. */
gs_status gs_be_scan(gs_backend_instance *inst, const gs_backend_scan_args *a)
{
    if ((a->flags & GS_BACKEND_SCAN_EXACT) && a->struct_size >= GS_BACKEND_SCAN_ARGS_V1_3_SIZE) {
        gs_status st = gs_workspace_fits(a->workspace_bytes);
        return st != GS_SUCCESS ? st : scan_exact(inst, a);
    }
    const int k = find_scan(a->dtype, a->op, a->out_dtype);
    const gs_kernel_slot *s;
    gs_status st = gs_kernel_for(inst, GS_FAM_SCAN, k, a->op, a->dtype, a->out_dtype, &s);
    if (st != GS_SUCCESS)
        return st;
    if ((st = gs_workspace_fits(a->workspace_bytes)) != GS_SUCCESS)
        return st;
    const uint64_t out_bytes = gs_dtype_size(a->out_dtype);
    const uint64_t tile = (uint64_t)GS_SCAN_THREADS * GS_SCAN_ITEMS(out_bytes);
    const uint64_t tiles = a->n / tile + (a->n % tile != 0);
    const uint64_t ring = (uint64_t)GS_SCAN_SLOTS(GS_SCAN_VALUE_BYTES(out_bytes)) * GS_SCAN_GROUP;
    const uint64_t grid = scan_grid(inst, s, tiles, ring);
    if (tiles + grid > UINT32_MAX) {
        gs_host->set_error("%s backend: a scan into %s takes at most %llu elements, not %llu", GS_BACKEND_NAME,
                           gs_dtype_name(a->out_dtype), (unsigned long long)((UINT32_MAX - grid) * tile),
                           (unsigned long long)a->n);
        return GS_ERROR_INVALID_ARGUMENT;
    }
    CUdeviceptr in = a->in, out = a->out, ws = a->workspace;
    uint64_t n = a->n;
    unsigned int flags = a->flags & GS_BACKEND_SCAN_EXCLUSIVE;
    void *params[] = {&in, &n, &out, &ws, &flags};
    return gs_launch_block(s, gs_kernel_table_scan[k].name, (unsigned int)grid, GS_SCAN_THREADS, a->stream, params);
}
