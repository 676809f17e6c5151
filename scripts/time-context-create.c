/*
 * time-context-create: what the first gs_context_create costs, for the backend that
 * GRIDSYNC_BACKEND names (docs/PACKAGING.md, "Fatbin compression and load time": how much
 * a compressed or PTX-only fatbin adds to it).
 *
 *   cc -O2 -o time-context-create scripts/time-context-create.c \
 *      $(pkg-config --cflags --libs gridsync) -I<cuda>/include -ldl
 *   GRIDSYNC_BACKEND=/path/to/gridsync-cuda_sm20.so ./time-context-create [cold|reduce]
 *
 * The driver is initialised and device 0's primary context made active first, outside the
 * timed region, so the time is the backend's part: loading the .so, loading the fatbin it
 * loads when it is opened (decompressing it, or compiling PTX when the fatbin has no SASS
 * for this GPU) and whatever else the backend sets up. With `cold`, nothing is set up
 * first: the time is a program's very first call, the driver's initialisation and the
 * primary context's creation included. With `reduce`, the program's first gs_reduce
 * (float32 SUM of 2^20 zeros on the legacy default stream, until the device is done) is
 * timed too, from the same start: what a program that only reduces waits for before its
 * first result (the input and output are allocated before the clock starts).
 *
 * Prints one line: the backend chosen and the milliseconds (with `reduce`, the context's
 * and then create + first gs_reduce's). Run it in a fresh process per sample; with
 * CUDA_CACHE_DISABLE=1 PTX is compiled every time, without it only until the driver's
 * cache holds the result.
 *
 * Exit status: 0 measured, 1 an error, 77 no driver or no device.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <dlfcn.h>
#include <gridsync/gridsync.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    int cold = argc > 1 && strcmp(argv[1], "cold") == 0;
    int first_reduce = argc > 1 && strcmp(argv[1], "reduce") == 0;
    /* The driver's own entry points, for the untimed set-up only (gridsync loads its own). */
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        printf("time-context-create: no CUDA driver\n");
        return 77;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(lib, "cuInit");
    CUresult (*get)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))dlsym(lib, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))dlsym(lib, "cuDevicePrimaryCtxRetain");
    CUdevice dev;
    CUcontext primary;
    if (!init || !get || !retain || (!cold && (init(0) != CUDA_SUCCESS || get(&dev, 0) != CUDA_SUCCESS))) {
        printf("time-context-create: no CUDA device\n");
        return 77;
    }
    if (!cold && retain(&primary, dev) != CUDA_SUCCESS) {
        fprintf(stderr, "time-context-create: cuDevicePrimaryCtxRetain failed\n");
        return 1;
    }
    /* For `reduce`: 2^20 float32 zeros and the result, allocated before the clock starts. */
    enum { N = 1 << 20 };
    CUdeviceptr in = 0, out = 0;
    CUresult (*sync)(void) = (CUresult(*)(void))dlsym(lib, "cuCtxSynchronize");
    if (first_reduce) {
        CUresult (*set_current)(CUcontext) = (CUresult(*)(CUcontext))dlsym(lib, "cuCtxSetCurrent");
        CUresult (*alloc)(CUdeviceptr *, size_t) = (CUresult(*)(CUdeviceptr *, size_t))dlsym(lib, "cuMemAlloc_v2");
        CUresult (*memset32)(CUdeviceptr, unsigned int, size_t) =
            (CUresult(*)(CUdeviceptr, unsigned int, size_t))dlsym(lib, "cuMemsetD32_v2");
        if (!set_current || !alloc || !memset32 || !sync || set_current(primary) != CUDA_SUCCESS ||
            alloc(&in, (size_t)N * 4) != CUDA_SUCCESS || alloc(&out, 4) != CUDA_SUCCESS ||
            memset32(in, 0, N) != CUDA_SUCCESS || sync() != CUDA_SUCCESS) {
            fprintf(stderr, "time-context-create: setting up the input on the device failed\n");
            return 1;
        }
    }

    struct timespec t0, t1, t2;
    gs_context *ctx = NULL;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gs_status st = gs_context_create(0, &ctx);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st != GS_SUCCESS) {
        fprintf(stderr, "time-context-create: gs_context_create: %s: %s\n", gs_status_string(st),
                gs_last_error_message());
        return 1;
    }
    if (first_reduce) {
        st = gs_reduce(ctx, (const void *)(uintptr_t)in, N, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out, NULL);
        if (st != GS_SUCCESS || sync() != CUDA_SUCCESS) {
            fprintf(stderr, "time-context-create: the first gs_reduce: %s: %s\n", gs_status_string(st),
                    gs_last_error_message());
            return 1;
        }
        clock_gettime(CLOCK_MONOTONIC, &t2);
    }
    gs_context_info info = {0};
    info.struct_size = sizeof info;
    if (gs_context_get_info(ctx, &info) != GS_SUCCESS) {
        fprintf(stderr, "time-context-create: gs_context_get_info: %s\n", gs_last_error_message());
        return 1;
    }
    printf("%s %.3f ms", info.backend_path,
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    if (first_reduce)
        printf(" %.3f ms", (double)(t2.tv_sec - t0.tv_sec) * 1e3 + (double)(t2.tv_nsec - t0.tv_nsec) / 1e6);
    printf("\n");
    gs_context_destroy(ctx);
    return 0;
}
