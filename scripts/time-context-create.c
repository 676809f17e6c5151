/*
 * time-context-create: what the first gs_context_create costs, for the backend that
 * GRIDSYNC_BACKEND names (docs/PACKAGING.md, "Architectures and fatbin sizes": how much
 * a compressed or PTX-only fatbin adds to it).
 *
 *   cc -O2 -o time-context-create scripts/time-context-create.c \
 *      $(pkg-config --cflags --libs gridsync) -I<cuda>/include -ldl
 *   GRIDSYNC_BACKEND=/path/to/gridsync-cuda_sm20.so ./time-context-create [cold]
 *
 * The driver is initialised and device 0's primary context made active first, outside the
 * timed region, so the time is the backend's part: loading the .so, loading its fatbin
 * (decompressing it, or compiling PTX when the fatbin has no SASS for this GPU) and looking
 * up its kernels. With `cold`, nothing is set up first: the time is a program's very
 * first call, the driver's initialisation and the primary context's creation included. Prints one line: the backend chosen and the milliseconds. Run it in a
 * fresh process per sample; with CUDA_CACHE_DISABLE=1 PTX is compiled every time, without
 * it only until the driver's cache holds the result.
 *
 * Exit status: 0 measured, 1 an error, 77 no driver or no device.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <dlfcn.h>
#include <gridsync/gridsync.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    int cold = argc > 1 && strcmp(argv[1], "cold") == 0;
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

    struct timespec t0, t1;
    gs_context *ctx = NULL;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gs_status st = gs_context_create(0, &ctx);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st != GS_SUCCESS) {
        fprintf(stderr, "time-context-create: gs_context_create: %s: %s\n", gs_status_string(st),
                gs_last_error_message());
        return 1;
    }
    gs_context_info info = {0};
    info.struct_size = sizeof info;
    if (gs_context_get_info(ctx, &info) != GS_SUCCESS) {
        fprintf(stderr, "time-context-create: gs_context_get_info: %s\n", gs_last_error_message());
        return 1;
    }
    printf("%s %.3f ms\n", info.backend_path,
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    gs_context_destroy(ctx);
    return 0;
}
