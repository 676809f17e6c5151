/* Grid sizes: how many blocks a launch of n elements gets (numbers from tuning.h). C and C++
 * host code, shared by backend.c and bench/tune.cu so the two agree. */
#ifndef GS_GRID_H
#define GS_GRID_H

#include <stdint.h>

#include "tuning.h"
#include "workspace.h"

/* The most blocks of a kernel with per_sm (at least 1) resident per multiprocessor: at most
 * threads_per_sm's worth (at least one block) each, and GS_MAX_BLOCKS (the partial slots). */
static inline unsigned int gs_grid_cap(unsigned int multiprocessors, int per_sm, int threads_per_sm)
{
    int cap = threads_per_sm / GS_BACKEND_BLOCK;
    if (cap < 1)
        cap = 1;
    if (per_sm < 1)
        per_sm = 1;
    const unsigned int blocks = (unsigned int)(per_sm < cap ? per_sm : cap) * multiprocessors;
    return blocks < GS_MAX_BLOCKS ? blocks : GS_MAX_BLOCKS;
}

/* Input bytes the L2 counts as holding: two thirds of the L2 size the driver reports, or of
 * 48 MiB where l2 <= 0. */
static inline uint64_t gs_grid_l2_bytes(int l2)
{
    if (l2 <= 0)
        l2 = 48 << 20;
    return (uint64_t)l2 / 3 * 2;
}

/* Blocks for n elements of `size` bytes: about two 16-byte vectors per thread, so a small
 * input is all in flight at once; at most max_blocks (max_blocks_dram beyond l2_bytes); one
 * block when one trip covers everything (no partials, no ticket). */
static inline unsigned int gs_grid_for(uint64_t n, uint64_t size, uint64_t l2_bytes, unsigned int max_blocks,
                                       unsigned int max_blocks_dram)
{
    const uint64_t per_vec = 16 / size;
    const uint64_t block_trip = (uint64_t)GS_BACKEND_BLOCK * GS_BACKEND_ITEMS * per_vec;
    if (n <= block_trip)
        return 1;
    const uint64_t want = (n + 2 * GS_BACKEND_BLOCK * per_vec - 1) / (2 * GS_BACKEND_BLOCK * per_vec);
    const unsigned int max = n > l2_bytes / size ? max_blocks_dram : max_blocks;
    return want < max ? (unsigned int)want : max;
}

/* The exact sums' grid (each extra block costs a ticket and a larger last fold): one block up
 * to GS_EXACT_ONE_BLOCK_VECTORS; one vector per thread while that needs at most a block per
 * multiprocessor; float64 in L2, whole loop trips on at most GS_EXACT_TRIP_CAP blocks per
 * multiprocessor; else gs_grid_for's. */
static inline unsigned int gs_grid_for_exact(uint64_t n, uint64_t size, unsigned int multiprocessors,
                                             uint64_t l2_bytes, unsigned int max_blocks,
                                             unsigned int max_blocks_dram)
{
    const uint64_t vectors = (n * size + 15) / 16;
    const uint64_t one = (vectors + GS_BACKEND_BLOCK - 1) / GS_BACKEND_BLOCK;
    if (vectors <= GS_EXACT_ONE_BLOCK_VECTORS)
        return 1;
    if (one <= multiprocessors && one <= max_blocks)
        return (unsigned int)one;
    if (size == GS_EXACT_WHOLE_TRIPS_SIZE && n * size <= l2_bytes && vectors >= (uint64_t)multiprocessors * GS_EXACT_ROW_VECTORS) {
        const uint64_t rows = (vectors + GS_EXACT_ROW_VECTORS - 1) / GS_EXACT_ROW_VECTORS;
        uint64_t cap = (uint64_t)GS_EXACT_TRIP_CAP * multiprocessors;
        if (cap > max_blocks)
            cap = max_blocks;
        const uint64_t trips = (rows + cap - 1) / cap;
        return (unsigned int)((rows + trips - 1) / trips);
    }
    return gs_grid_for(n, size, l2_bytes, max_blocks, max_blocks_dram);
}

#endif
