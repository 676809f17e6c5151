/*
 * The gpu tests' checks over the driver shim: checks.h (FAIL, CHECK, CHECK_GS), CHECK_CU,
 * which ends the program when a driver call it cannot go on without fails, and
 * gpu_test_init, which starts it or skips it.
 */
#ifndef GS_GPU_CHECK_H
#define GS_GPU_CHECK_H

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

#endif
