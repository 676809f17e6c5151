/*
 * unit suite: the launch policies of backends/common/dispatch/grid.h, the host functions that
 * size gs_reduce's grid (gs_grid_for) and the exact sums' (gs_grid_for_exact), for the
 * launch shape of backends/common/tuning.h. What the kernels rely on and the
 * policies' comments promise, over every element size and a sweep of n and devices:
 *  - at least one block, at most max_blocks (the workspace holds GS_MAX_BLOCKS partials);
 *  - gs_grid_for: one block while a block's first trip covers the input;
 *  - gs_grid_for_exact: one block up to two of the loop's trips per thread; past that, one
 *    16-byte vector per thread (every vector covered, no block without one) while that
 *    many blocks fit one per multiprocessor; past that, for float64 from a
 *    multiprocessor's worth of trips up to what L2 holds, the fewest trips per thread that
 *    GS_EXACT_TRIP_CAP blocks per multiprocessor allow, on the fewest blocks (whole trips
 *    for every thread where they divide); else gs_grid_for's grid.
 */
#include <inttypes.h>

#include "dispatch/grid.h"

static int g_failures, g_checks; /* checks.h's counters */
#include "checks.h" /* CHECK: tests/gpu's, no CUDA header */

static void one_case(uint64_t n, uint64_t size, unsigned int sms, uint64_t l2)
{
    /* as modules.c sizes them: 3 blocks per multiprocessor resident (an exact kernel's), capped */
    const unsigned int max_blocks = gs_grid_cap(sms, 3, GS_GRID_THREADS_PER_SM);
    const unsigned int max_dram = gs_grid_cap(sms, 3, GS_GRID_THREADS_PER_SM_DRAM);
    const uint64_t vectors = (n * size + 15) / 16;
    const unsigned int g = gs_grid_for(n, size, l2, max_blocks, max_dram);
    const unsigned int e = gs_grid_for_exact(n, size, sms, l2, max_blocks, max_dram);
    CHECK(g >= 1 && g <= max_blocks && g <= GS_MAX_BLOCKS, "n %" PRIu64 " size %" PRIu64 ": grid %u", n, size, g);
    CHECK(e >= 1 && e <= max_blocks && e <= GS_MAX_BLOCKS, "n %" PRIu64 " size %" PRIu64 ": exact grid %u", n,
          size, e);
    if (n * size <= (uint64_t)GS_BACKEND_BLOCK * GS_BACKEND_ITEMS * 16)
        CHECK(g == 1, "n %" PRIu64 " size %" PRIu64 ": one trip, grid %u", n, size, g);
    if (vectors <= 2ull * GS_BACKEND_ITEMS * GS_BACKEND_BLOCK) {
        CHECK(e == 1, "n %" PRIu64 " size %" PRIu64 ": two trips, exact grid %u", n, size, e);
    } else if ((vectors + GS_BACKEND_BLOCK - 1) / GS_BACKEND_BLOCK <= sms) {
        CHECK((uint64_t)e * GS_BACKEND_BLOCK >= vectors && (uint64_t)(e - 1) * GS_BACKEND_BLOCK < vectors,
              "n %" PRIu64 " size %" PRIu64 ": one vector per thread, exact grid %u for %" PRIu64 " vectors", n, size,
              e, vectors);
        CHECK(e <= sms, "n %" PRIu64 ": exact grid %u on %u multiprocessors", n, e, sms);
    } else if (size == 8 && n * size <= l2 && vectors >= (uint64_t)sms * GS_EXACT_ROW_VECTORS) {
        const uint64_t rows = (vectors + GS_EXACT_ROW_VECTORS - 1) / GS_EXACT_ROW_VECTORS;
        uint64_t cap = (uint64_t)GS_EXACT_TRIP_CAP * sms;
        if (cap > max_blocks)
            cap = max_blocks;
        const uint64_t trips = (rows + e - 1) / e; /* what e blocks take per thread */
        CHECK(e <= cap, "n %" PRIu64 ": float64 exact grid %u, cap %" PRIu64, n, e, cap);
        CHECK(trips == (rows + cap - 1) / cap, "n %" PRIu64 ": float64 exact grid %u: %" PRIu64
              " trips a thread, the cap allows %" PRIu64, n, e, trips, (rows + cap - 1) / cap);
        CHECK((uint64_t)(e - 1) * trips < rows, "n %" PRIu64 ": float64 exact grid %u: fewer blocks would do", n, e);
        if (rows % trips == 0)
            CHECK((uint64_t)e * trips == rows, "n %" PRIu64 ": float64 exact grid %u: not whole trips", n, e);
    } else {
        CHECK(e == g, "n %" PRIu64 " size %" PRIu64 ": exact grid %u, gs_grid_for %u", n, size, e, g);
    }
}

int main(void)
{
    static const uint64_t sizes[] = {1, 2, 4, 8};
    static const unsigned int devices[] = {1, 2, 16, 80, 108, 132, 144, 1000};
    for (size_t d = 0; d < sizeof devices / sizeof devices[0]; d++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int lg = 0; lg <= 34; lg++)
                for (int64_t delta = -1; delta <= 1; delta++) {
                    const int64_t n = (int64_t)(1ull << lg) + delta;
                    if (n >= 0)
                        one_case((uint64_t)n, sizes[s], devices[d], gs_grid_l2_bytes(50 << 20));
                }
    /* the H100's sizes that the comments quote (132 multiprocessors): want 0 is
     * gs_grid_for's grid */
    static const struct {
        int lg;
        uint64_t size;
        unsigned int want;
        const char *what;
    } quoted[] = {
        {13, 4, 1, "2^13 float32: one block"},
        {14, 4, 16, "2^14 float32: 16 blocks"},
        {16, 4, 64, "2^16 float32: 64 blocks"},
        {18, 4, 0, "2^18 float32: gs_grid_for's"},
        {20, 4, 0, "2^20 float32: gs_grid_for's"},
        /* float64: whole trips from 2^19 (a block's trip per multiprocessor) up to L2's 2^22 */
        {18, 8, 0, "2^18 float64: gs_grid_for's"},
        {19, 8, 256, "2^19 float64: 256 blocks, one trip"},
        {20, 8, 256, "2^20 float64: 256 blocks, two trips"},
        {22, 8, 256, "2^22 float64: 256 blocks, eight trips"},
        {23, 8, 0, "2^23 float64 (beyond L2): gs_grid_for's"},
    };
    const unsigned int cap = gs_grid_cap(132, 3, GS_GRID_THREADS_PER_SM);
    const unsigned int dram = gs_grid_cap(132, 3, GS_GRID_THREADS_PER_SM_DRAM);
    const uint64_t l2 = gs_grid_l2_bytes(50 << 20);
    for (size_t i = 0; i < sizeof quoted / sizeof quoted[0]; i++) {
        const uint64_t n = 1ull << quoted[i].lg;
        const unsigned int want = quoted[i].want ? quoted[i].want : gs_grid_for(n, quoted[i].size, l2, cap, dram);
        const unsigned int got = gs_grid_for_exact(n, quoted[i].size, 132, l2, cap, dram);
        CHECK(got == want, "%s (grid %u, want %u)", quoted[i].what, got, want);
    }
    printf("grid policies: %d checks, %d failed\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
