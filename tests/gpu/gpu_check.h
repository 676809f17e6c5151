/*
 * The gpu tests' checks over the driver shim: checks.h (FAIL, CHECK, CHECK_GS), CHECK_CU,
 * which ends the program when a driver call it cannot go on without fails,
 * gpu_test_init, which starts it or skips it, and gpu_test_rnd, a splitmix64 step.
 */
#ifndef GS_GPU_CHECK_H
#define GS_GPU_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "checks.h"
#include "cudashim.h"

#define CHECK_CU(call)                                                                             \
    do {                                                                                           \
        if ((call) != 0) {                                                                         \
            fprintf(stderr, "FATAL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cushim_error());  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Device 0's primary context made current: without a driver or a device the program is
 * skipped (exit 77, and only then); any other failure ends it. */
static inline void gpu_test_init(void)
{
    cushim_status cs = cushim_init(0);
    if (cs == CUSHIM_NO_DRIVER || cs == CUSHIM_NO_DEVICE) {
        printf("SKIP: %s\n", cushim_error());
        exit(77);
    }
    if (cs != CUSHIM_OK) {
        fprintf(stderr, "FATAL: %s\n", cushim_error());
        exit(1);
    }
}

/* splitmix64: the next value of the stream whose state is *s (one state per thread). */
static inline uint64_t gpu_test_rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif
