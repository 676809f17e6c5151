/* gs_reduce's launch policy: how many blocks for n elements. Host functions, C and C++:
 * used by backends/common/backend.c (the launches) and by bench/tune.cu (to mark the grid
 * the policy would choose), so the two cannot disagree; cuda_sm11_compat's kernels.cu
 * takes GS_GRID_THREADS_PER_SM_DRAM for its launch bounds (kMinBlocks), so those match the
 * grid too. Needs GS_BACKEND_BLOCK and GS_BACKEND_ITEMS (threads per block, loads in
 * flight; backends/meson.build). */
#ifndef GS_GRID_POLICY_H
#define GS_GRID_POLICY_H

#include <stdint.h>

#include "kernel_list.h"

#if !defined(GS_BACKEND_BLOCK) || !defined(GS_BACKEND_ITEMS)
#  error "GS_BACKEND_BLOCK and GS_BACKEND_ITEMS must be defined"
#endif

/* At most this many threads per multiprocessor (3 blocks of 256) for an input the L2
 * cache holds, and GS_GRID_THREADS_PER_SM_DRAM (6 blocks) for a larger one, where what is
 * resident is less. Measured on an H100 (bench/tune.sh, bench/NOTES.md v6): up to 32 MiB,
 * 2 .. 3 blocks per multiprocessor beat a full device by up to 12 % (fewer partials for
 * the last block, less contention in L2); beyond, the kernels with more work per byte
 * (int32 ARGMAX and SUM, float64 MAX) need 5 .. 8 blocks to keep DRAM busy (3 cost them up
 * to 11 %) while the others are flat from 3 to 8. */
#define GS_GRID_THREADS_PER_SM 768
#define GS_GRID_THREADS_PER_SM_DRAM 1536

/* The most blocks of a kernel with per_sm of them resident per multiprocessor (at least
 * one assumed): threads_per_sm's worth per multiprocessor (at least one block), at most
 * what is resident, at most GS_MAX_BLOCKS (the workspace's partial slots). */
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

/* The input size up to which the L2 cache counts as holding it, from the L2 size in bytes
 * the driver reports: two thirds of it (32 MiB of an H100's 50); 32 MiB where l2 <= 0. */
static inline uint64_t gs_grid_l2_bytes(int l2)
{
    if (l2 <= 0)
        l2 = 48 << 20;
    return (uint64_t)l2 / 3 * 2;
}

/* Blocks for n elements of `size` bytes: enough that every thread has about two 16-byte
 * vectors (so the whole input is in flight at once for small n), at most max_blocks (each
 * thread then loops; max_blocks_dram when the input is larger than l2_bytes), and one
 * block when a block covers everything in one trip (no partials, no ticket). */
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

/* The exact sums' kernels (exact.cuh) do more per element and per block than gs_reduce's,
 * and a launch of several blocks adds more to them (the ticket, then the last block's
 * checked folds) than a longer loop in one block. So: one block up to
 * GS_EXACT_ONE_BLOCK_VECTORS 16-byte vectors (two trips of the kernel's loop per thread);
 * then one vector per thread while those blocks fit one per multiprocessor (a second
 * vector is a second round trip to memory, after the first, in the kernel's short loop);
 * then gs_grid_for's grid. Exact minus default per call on an H100, queued (the GPU alone),
 * grids forced: one block against one vector per thread, float32 2^13 +0.18 against +1.06
 * us, float16 2^14 +0.50 against +1.21 (a third trip lost: float32 2^14 +1.32 against
 * +1.04); float64 2^12 one block +0.81, gs_grid_for's 4 blocks +1.85; one vector per thread
 * against gs_grid_for's grid, float32 2^14 +1.07 against +1.22 and 2^16 +0.97 against
 * +1.24, float64 2^14 +1.36 against +1.71; two blocks per multiprocessor lost (float32 2^18
 * +1.43 against +1.26). bench/HISTORY.md. */
#define GS_EXACT_ONE_BLOCK_VECTORS (2 * GS_BACKEND_ITEMS * GS_BACKEND_BLOCK)

/* float64 from a multiprocessor's worth of whole trips (GS_EXACT_ROW_VECTORS, a block's
 * trip of the kernel's loop, per multiprocessor) up to inputs the L2 cache holds: a whole
 * number of trips per thread, on the fewest blocks that keep at most GS_EXACT_TRIP_CAP per
 * multiprocessor. float64's kernel takes a part of a trip in a rolled loop, one vector's
 * round trip to memory after the other (exact.cuh; loads issued at once spilled a
 * register in its main loop, 0.97 -> 0.76 of the default at 2^26, and an early load of
 * the next vector cost lone calls 0.1 .. 0.5 us, H200), and gs_grid_for's 3 blocks per
 * multiprocessor left one: 2^20 elements on 396 blocks are 5.2 vectors a thread. Here 256
 * blocks (one trip at 2^19, two at 2^20, four at 2^21); exact minus default per call on an
 * H200, queued: 2^19 1.23 -> 1.08 us, 2^20 1.46 -> 1.16, 2^21 1.54 -> 1.29, 2^22 the same
 * within 0.1; lone 0.16 .. 0.28 us less. 2^17 and 2^18 (fewer rows than multiprocessors)
 * gained nothing on whole trips, and keep gs_grid_for's grid. float32 issues
 * a part trip's loads at once and gains nothing from whole trips (2^20 on 256 blocks: the
 * same); float16 and bfloat16 neither (2^20 on 128: the same). bench/HISTORY.md. */
#define GS_EXACT_ROW_VECTORS ((uint64_t)GS_BACKEND_ITEMS * GS_BACKEND_BLOCK)
#define GS_EXACT_TRIP_CAP 2
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
    if (size == 8 && n * size <= l2_bytes && vectors >= (uint64_t)multiprocessors * GS_EXACT_ROW_VECTORS) {
        /* float64: whole trips per thread (GS_EXACT_TRIP_CAP) */
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
