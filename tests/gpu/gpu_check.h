/*
 * The gpu tests' checks, written once: FAIL counts a failure and goes on (the program's
 * g_failures; GS_CHECK_LOCK/GS_CHECK_UNLOCK guard it where threads report), CHECK_CU and
 * CHECK_GS end the program when a call it cannot go on without fails, gpu_test_init
 * starts it or skips it.
 */
#ifndef GS_GPU_CHECK_H
#define GS_GPU_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "cudashim.h"
#include "gridsync.h"

#ifndef GS_CHECK_LOCK
#  define GS_CHECK_LOCK()
#  define GS_CHECK_UNLOCK()
#endif

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        GS_CHECK_LOCK();                                                                           \
        g_failures++;                                                                              \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                      \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        GS_CHECK_UNLOCK();                                                                         \
    } while (0)

#define CHECK_CU(call)                                                                             \
    do {                                                                                           \
        if ((call) != 0) {                                                                         \
            fprintf(stderr, "FATAL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cushim_error());  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_GS(call)                                                                             \
    do {                                                                                           \
        gs_status st_ = (call);                                                                    \
        if (st_ != GS_SUCCESS) {                                                                   \
            fprintf(stderr, "FATAL %s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,               \
                    gs_status_string(st_), gs_last_error_message());                               \
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
