/*
 * What the two sources of test_gpu_scan share: test_gpu_scan.c (main, offered, matrix,
 * special values, refusals and the check of one device scan) and test_gpu_scan_big.c
 * (grids, large, huge).
 */
#ifndef GS_GPU_SCAN_TEST_H
#define GS_GPU_SCAN_TEST_H

#include "gpu_check.h"
#include "scan_common.h"

extern int g_failures, g_checks, g_quick;
extern uint64_t g_rng;
/* results bitwise equal to the model, and to the same scan on another context */
extern long g_equal, g_cross;

#define POISON 0xA5
#define GUARD 16 /* elements after out[n) that must stay poisoned */

double now_s(void);
/* A host-to-device copy, landed when it returns. */
void upload(cushim_ptr d, const void *h, size_t bytes);
/* Scans n elements at din (or, with h_in, a copy of h_in placed at the output: in place)
 * into dbase + out_off elements on stream s, with the rest of out_off + n + GUARD elements
 * poisoned; checks the result against want[0, n) and the poison around it (g_equal counts
 * a pass). got: room for that span; it holds it afterwards. Returns whether all held. */
int check_scan(gs_context *ctx, const scan_case *c, cushim_ptr din, uint64_t n, cushim_ptr dbase, unsigned out_off,
               const void *h_in, const void *want, unsigned char *got, const char *what, cushim_stream s);

void test_grids(const gs_context_info *info);
void test_large(gs_context *ctx);
void test_huge(gs_context *ctx);

#endif
