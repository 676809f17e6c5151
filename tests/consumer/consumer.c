/*
 * A program outside the gridsync tree, as a user of the installed library writes it:
 *
 *     cc consumer.c $(pkg-config --cflags --libs gridsync)
 *
 * and nothing else (no CUDA header, no CUDA library: device memory comes from the driver,
 * dlopen'ed here the way gridsync itself does it).
 *
 *     consumer                  create a context on device 0, then reduce random data
 *                               and check it against a host reference
 *     consumer --context-only   create the context and print where its backend came from
 *                               (with the fake driver of tests/fake, which runs no kernels)
 *
 * CONSUMER_SEED=n repeats a run's data (the seed is printed).
 *
 * Exit status: 0 all good; 3 GS_ERROR_NO_DRIVER, reported as documented (status string,
 * a message naming libcuda.so.1, the context pointer set to NULL); 4 GS_ERROR_NO_DEVICE;
 * 1 anything else. The last line printed before a context is created names the library.
 */
#define _GNU_SOURCE
#include <gridsync/gridsync.h>

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The few driver entry points this program needs, as plain C types (CUresult is an int,
 * CUdevice an int, CUcontext a pointer, CUdeviceptr a 64-bit integer): no cuda.h. */
static struct {
    int (*cuInit)(unsigned);
    int (*cuDeviceGet)(int *, int);
    int (*cuDevicePrimaryCtxRetain)(void **, int);
    int (*cuDevicePrimaryCtxRelease)(int);
    int (*cuCtxSetCurrent)(void *);
    int (*cuMemAlloc)(unsigned long long *, size_t);
    int (*cuMemFree)(unsigned long long);
    int (*cuMemcpyHtoD)(unsigned long long, const void *, size_t);
    int (*cuMemcpyDtoH)(void *, unsigned long long, size_t);
} cu;

static int fail(const char *what)
{
    fprintf(stderr, "consumer: FAIL: %s\n", what);
    return 1;
}

static int load_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return fail("gridsync found a driver, but dlopen(libcuda.so.1) fails here");
#define SYM(field, name)                                                                \
    if (!(*(void **)&cu.field = dlsym(h, name))) {                                      \
        fprintf(stderr, "consumer: FAIL: the driver has no %s\n", name);              \
        return 1;                                                                       \
    }
    SYM(cuInit, "cuInit");
    SYM(cuDeviceGet, "cuDeviceGet");
    SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
    SYM(cuMemAlloc, "cuMemAlloc_v2");
    SYM(cuMemFree, "cuMemFree_v2");
    SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
#undef SYM
    return 0;
}

static double absd(double x) { return x < 0 ? -x : x; } /* no -lm: pkg-config's flags only */

/* xorshift64*: fresh data every run, reproducible from the printed seed. */
static uint64_t rng;
static uint64_t next(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1DULL;
}

#define CU(call)                                                                        \
    do {                                                                                \
        int rc_ = (call);                                                               \
        if (rc_ != 0) {                                                                 \
            fprintf(stderr, "consumer: FAIL: %s returned CUDA error %d\n", #call, rc_); \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

#define GS(call)                                                                        \
    do {                                                                                \
        gs_status st_ = (call);                                                         \
        if (st_ != GS_SUCCESS) {                                                        \
            fprintf(stderr, "consumer: FAIL: %s: %s: %s\n", #call, gs_status_string(st_), \
                    gs_last_error_message());                                           \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

/* int32 SUM into int64 (exact: compared bit for bit) and float32 SUM (compared with a
 * float64 host sum), on n random elements, through the caller's own device memory. */
static int reduce_and_check(gs_context *ctx)
{
    const uint64_t n = ((uint64_t)1 << 22) + 4093; /* many blocks and a ragged tail */
    int32_t *hi = malloc(n * sizeof *hi);
    float *hf = malloc(n * sizeof *hf);
    if (!hi || !hf)
        return fail("out of host memory");
    int64_t want_i = 0;
    double want_f = 0, abs_f = 0;
    for (uint64_t i = 0; i < n; i++) {
        hi[i] = (int32_t)(uint32_t)next();
        want_i += hi[i];
        hf[i] = (float)((double)(next() >> 11) / 9007199254740992.0 * 2.0 - 0.5); /* [-0.5, 1.5) */
        want_f += hf[i];
        abs_f += absd((double)hf[i]);
    }

    void *cuctx;
    int dev;
    CU(cu.cuInit(0));
    CU(cu.cuDeviceGet(&dev, 0));
    CU(cu.cuDevicePrimaryCtxRetain(&cuctx, dev)); /* the context gridsync uses for device 0 */
    CU(cu.cuCtxSetCurrent(cuctx));
    unsigned long long din_i, din_f, dout;
    CU(cu.cuMemAlloc(&din_i, n * sizeof *hi));
    CU(cu.cuMemAlloc(&din_f, n * sizeof *hf));
    CU(cu.cuMemAlloc(&dout, 16));
    CU(cu.cuMemcpyHtoD(din_i, hi, n * sizeof *hi));
    CU(cu.cuMemcpyHtoD(din_f, hf, n * sizeof *hf));

    int bad = 0;
    /* The legacy default stream (NULL): the synchronous copy back waits for the launch. */
    gs_reduce_options wide = {.struct_size = sizeof wide, .out_dtype = GS_INT64};
    GS(gs_reduce_ex(ctx, (const void *)(uintptr_t)din_i, n, GS_INT32, GS_OP_SUM, (void *)(uintptr_t)dout, NULL,
                    &wide));
    int64_t got_i = 0;
    CU(cu.cuMemcpyDtoH(&got_i, dout, sizeof got_i));
    printf("consumer: int32 SUM -> int64 of %" PRIu64 " elements: %" PRId64 " (host %" PRId64 ")\n", n, got_i,
           want_i);
    bad |= got_i != want_i;

    GS(gs_reduce(ctx, (const void *)(uintptr_t)din_f, n, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)dout, NULL));
    float got_f = 0;
    CU(cu.cuMemcpyDtoH(&got_f, dout, sizeof got_f));
    /* float32 accumulation in any order stays well within 1e-5 of sum|x| for 4M
     * elements; a lost or doubled block is off by about 1/(number of blocks) of it. */
    double err = absd((double)got_f - want_f), tol = 1e-5 * abs_f;
    printf("consumer: float32 SUM of %" PRIu64 " elements: %.9g (host %.9g, |error| %.3g, tolerance %.3g)\n", n,
           (double)got_f, want_f, err, tol);
    bad |= !(err <= tol);

    CU(cu.cuMemFree(din_i));
    CU(cu.cuMemFree(din_f));
    CU(cu.cuMemFree(dout));
    CU(cu.cuDevicePrimaryCtxRelease(dev));
    free(hi);
    free(hf);
    return bad ? fail("a result differs from the host reference") : 0;
}

int main(int argc, char **argv)
{
    int context_only = argc == 2 && strcmp(argv[1], "--context-only") == 0;
    if (argc > 2 || (argc == 2 && !context_only)) {
        fprintf(stderr, "usage: consumer [--context-only]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);

    /* Header and library agree (the header's version is compiled in). */
    printf("consumer: built against gridsync %d.%d.%d, running libgridsync %s\n", GS_VERSION_MAJOR,
           GS_VERSION_MINOR, GS_VERSION_PATCH, gs_version_string());
    if (gs_version() != GS_VERSION)
        return fail("gs_version() differs from GS_VERSION of the header");

    gs_context *ctx = (gs_context *)&ctx; /* must come back NULL on failure */
    gs_status st = gs_context_create(0, &ctx);
    if (st == GS_ERROR_NO_DRIVER || st == GS_ERROR_NO_DEVICE) {
        const char *msg = gs_last_error_message();
        printf("consumer: gs_context_create: %s: %s\n", gs_status_string(st), msg);
        if (ctx != NULL)
            return fail("the context pointer was not set to NULL");
        if (st == GS_ERROR_NO_DEVICE)
            return 4;
        if (strcmp(gs_status_string(st), "GS_ERROR_NO_DRIVER: no usable CUDA driver") != 0)
            return fail("gs_status_string(GS_ERROR_NO_DRIVER) is not the documented string");
        if (!strstr(msg, "libcuda.so.1"))
            return fail("the no-driver message does not name libcuda.so.1");
        return 3;
    }
    GS(st);

    gs_context_info info = {.struct_size = sizeof info};
    GS(gs_context_get_info(ctx, &info));
    printf("consumer: device %d: %s, compute capability %d.%d, %d multiprocessors\n", info.device,
           info.device_name, info.cc_major, info.cc_minor, info.multiprocessor_count);
    printf("consumer: backend %s from %s\n", info.backend_name, info.backend_path);

    int rc = 0;
    if (!context_only) {
        const char *seed = getenv("CONSUMER_SEED"); /* to repeat a run */
        rng = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ULL ^ (uint64_t)getpid();
        rng |= 1; /* xorshift's state must not be 0 */
        printf("consumer: seed %" PRIu64 "\n", rng);
        rc = load_driver() || reduce_and_check(ctx);
    }
    GS(gs_context_destroy(ctx));
    if (rc == 0)
        printf("consumer: ok\n");
    return rc;
}
