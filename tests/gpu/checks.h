/*
 * The checks every gpu test program shares, with no CUDA header: FAIL counts a failure
 * in the program's g_failures and goes on (GS_CHECK_LOCK/GS_CHECK_UNLOCK guard it where
 * threads report), CHECK counts a check too (g_checks), CHECK_GS ends the program when a
 * gridsync call it cannot go on without fails. gpu_check.h adds the driver shim's part;
 * test_gpu_device.cu, a CUDA runtime program, uses this alone.
 */
#ifndef GS_GPU_CHECKS_H
#define GS_GPU_CHECKS_H

#include <stdio.h>
#include <stdlib.h>

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

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        g_checks++;                                                                                \
        if (!(cond))                                                                               \
            FAIL(__VA_ARGS__);                                                                     \
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

#endif
