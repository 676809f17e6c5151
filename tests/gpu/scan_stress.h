/*
 * What the two sources of test_gpu_scan_stress share: test_gpu_scan_stress.c (main,
 * threads, graphs) and test_gpu_scan_stress_entry.c (mixed, entry).
 */
#ifndef GS_GPU_SCAN_STRESS_H
#define GS_GPU_SCAN_STRESS_H

#include <pthread.h>

extern pthread_mutex_t g_lock;
#define GS_CHECK_LOCK() pthread_mutex_lock(&g_lock)
#define GS_CHECK_UNLOCK() pthread_mutex_unlock(&g_lock)
#include "gpu_check.h"
#include "scan_common.h"

extern int g_failures, g_checks, g_quick;
extern long g_equal; /* whole results bitwise equal to the model */
extern uint64_t g_rng;

/* A check from any thread, counted under the lock; a pass counts in g_equal. */
#define TCHECK(cond, ...)                                                                          \
    do {                                                                                           \
        const int ok_ = (cond);                                                                    \
        pthread_mutex_lock(&g_lock);                                                               \
        g_checks++;                                                                                \
        g_equal += ok_;                                                                            \
        pthread_mutex_unlock(&g_lock);                                                             \
        if (!ok_)                                                                                  \
            FAIL(__VA_ARGS__);                                                                     \
    } while (0)

double now_s(void);
/* Device results out[0, n) against want[0, n) (host: room for them): one TCHECK. */
void check_result(const scan_case *c, cushim_ptr dout, uint64_t n, const void *want, void *host, const char *what);
void test_mixed(gs_context *ctx);
void test_entry(gs_context *ctx);
/* SIGALRM ends the program, naming the call that did not come back (test_entry's watchdog). */
void scan_stress_watchdog(void);

#endif
