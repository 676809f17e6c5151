/*
 * The tuning table: every tuned number of both backends, each with one line of provenance
 * (the device and what was measured; the data is in bench/results, the story in
 * bench/HISTORY.md). Everything else in the kernels and launches is derived from these and
 * from the formats' facts. C and C++: the backends' host code sizes grids with it, the
 * kernels take their launch bounds from it. GS_BACKEND_COMPAT is 1 when compiling
 * cuda_sm11_compat (backends/meson.build). bench/tune.sh compiles variants of the launch
 * shape by defining GS_BACKEND_BLOCK and GS_BACKEND_ITEMS itself.
 */
#ifndef GS_TUNING_H
#define GS_TUNING_H

#ifndef GS_BACKEND_COMPAT
#  define GS_BACKEND_COMPAT 0
#endif

/* ---- launch shape (both backends) ---------------------------------------------------- */
#ifndef GS_BACKEND_BLOCK
#  define GS_BACKEND_BLOCK 256 /* threads per block; H100, bench/tune.sh threads x loads sweep */
#endif
#ifndef GS_BACKEND_ITEMS
#  define GS_BACKEND_ITEMS 4 /* 16-byte loads in flight per thread; H100, the same sweep */
#endif

/* ---- gs_reduce's grid (dispatch/grid.h) ------------------------------------------------ */
/* input the L2 holds: 3 blocks per SM beat a full device up to 32 MiB; H100, bench/tune.sh */
#define GS_GRID_THREADS_PER_SM 768
/* larger input: 6 blocks per SM keep DRAM busy for int32 SUM/ARGMAX, float64 MAX; same sweep */
#define GS_GRID_THREADS_PER_SM_DRAM 1536

/* ---- launch bounds: the minimum of resident blocks per SM (0: ptxas's own choice) ----- */
#if GS_BACKEND_COMPAT
/* SUM, PROD: two float64 loads in flight, 2 .. 6 % faster at 2^13 .. 2^27; H100, HISTORY v9 */
#  define GS_REDUCE_MIN_BLOCKS (GS_GRID_THREADS_PER_SM_DRAM / GS_BACKEND_BLOCK)
/* segmented ARGMIN/ARGMAX: tiny layout 1.17x, uniform 1.05x with the bound; H100 */
#  define GS_SEG_MIN_BLOCKS_ARG 4
#else
/* SUM, PROD: read-only loads keep two in flight unbounded; 0 .. 1 % slower bounded, H100 */
#  define GS_REDUCE_MIN_BLOCKS 0
/* segmented ARGMIN/ARGMAX: int8 spilled at 4 blocks; H100 */
#  define GS_SEG_MIN_BLOCKS_ARG 0
#endif
/* segmented kernels: float32 layouts 9 .. 12 % faster at 4 blocks (64 registers); H100 */
#define GS_SEG_MIN_BLOCKS 4
/* exact sums: 128 registers unbounded (2 blocks/SM), 4 blocks spilled; H100, sm_90 */
#define GS_EXACT_MIN_BLOCKS 3

/* gs_scan, 4-byte carried values: 8 blocks (32 registers) hide more of each tile's
 * look-back; float16 and int32 SUM at 2^28 1.2x faster, float32 the same; H200, scratch A/B
 * on the same buffers, bench/results/nvidia-h200/scan */
#define GS_SCAN_MIN_BLOCKS_NARROW 8
/* 8-byte values: float64 spills at 8 blocks and is 4 % slower; the same runs */
#define GS_SCAN_MIN_BLOCKS_WIDE 0
/* exact scans' 4-word kernels: 3 blocks (85 registers); float16 and bfloat16 (99 and 104
 * registers unbounded) 9 % faster from 2^24, the others already fit; 4 blocks spill and
 * float64 slows; H200, one-process A/B, bench/results/nvidia-h200/scan/ab-exact-blocks.csv */
#define GS_SCAN_EXACT_MIN_BLOCKS_NARROW 3

/* ---- the exact sums' grid (dispatch/grid.h: gs_grid_for_exact) ----------------------- */
/* one block up to two trips of the loop per thread; H100, forced grids, HISTORY 0.3 */
#define GS_EXACT_ONE_BLOCK_VECTORS (2 * GS_BACKEND_ITEMS * GS_BACKEND_BLOCK)
/* float64 on whole trips, a block's trip a row; H200, 2^19 .. 2^21 queued, HISTORY 0.3 */
#define GS_EXACT_ROW_VECTORS ((uint64_t)GS_BACKEND_ITEMS * GS_BACKEND_BLOCK)
/* at most 2 such blocks per SM; H200, the same runs */
#define GS_EXACT_TRIP_CAP 2
/* the element size that runs whole trips: float64's (float32 and the 16-bit types gained
 * nothing from them; H100) */
#define GS_EXACT_WHOLE_TRIPS_SIZE 8

#endif
