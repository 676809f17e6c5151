/*
 * unit suite: what libgridsync does without any CUDA driver -- status strings, versions,
 * argument validation, the thread-local detail message, and the no-driver path.
 *
 * Argument validation must need no driver: the program checks, after all invalid calls,
 * that libcuda.so.1 was never loaded into the process (meson also runs this program with
 * the fake driver on LD_LIBRARY_PATH, where that check has teeth on a machine without
 * CUDA). The no-driver part runs only where dlopen("libcuda.so.1") fails; elsewhere it
 * prints that it was skipped.
 *
 * The work queue's host functions (gs_queue_*) get the same treatment: their argument
 * checks need no driver, and without one they say so.
 *
 * Every failed check prints file:line and what differed; the exit status is 1 if any did.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gridsync.h"

/* The numeric values are ABI: fixed forever (gridsync.h). */
_Static_assert(GS_SUCCESS == 0 && GS_ERROR_INVALID_ARGUMENT == 1 && GS_ERROR_UNSUPPORTED == 2 &&
                   GS_ERROR_NO_DRIVER == 3 && GS_ERROR_NO_DEVICE == 4 && GS_ERROR_BACKEND_NOT_FOUND == 5 &&
                   GS_ERROR_BACKEND_ABI_MISMATCH == 6 && GS_ERROR_BACKEND_INCOMPLETE == 7 &&
                   GS_ERROR_BACKEND_INIT_FAILED == 8 && GS_ERROR_NO_KERNEL_IMAGE == 9 &&
                   GS_ERROR_OUT_OF_MEMORY == 10 && GS_ERROR_CUDA == 11 && GS_ERROR_INVALID_POINTER == 12 &&
                   GS_ERROR_INVALID_CONTEXT == 13 && GS_ERROR_INTERNAL == 14,
               "gs_status values are ABI");
_Static_assert(GS_INT32 == 0 && GS_UINT32 == 1 && GS_INT64 == 2 && GS_UINT64 == 3 && GS_FLOAT32 == 4 &&
                   GS_FLOAT64 == 5 && GS_FLOAT16 == 6 && GS_BFLOAT16 == 7 && GS_INT8 == 8 && GS_UINT8 == 9,
               "gs_dtype values are ABI");
_Static_assert(GS_OP_SUM == 0 && GS_OP_PROD == 1 && GS_OP_MIN == 2 && GS_OP_MAX == 3 && GS_OP_ARGMIN == 4 &&
                   GS_OP_ARGMAX == 5 && GS_OP_BIT_AND == 6 && GS_OP_BIT_OR == 7 && GS_OP_BIT_XOR == 8,
               "gs_op values are ABI");

#define LAST_STATUS GS_ERROR_INTERNAL
#define NDTYPES 10
#define NOPS 9

static const size_t dtype_size[NDTYPES] = {4, 4, 8, 8, 4, 8, 2, 2, 1, 1};

static int is_float(int d)
{
    return d == GS_FLOAT32 || d == GS_FLOAT64 || d == GS_FLOAT16 || d == GS_BFLOAT16;
}

/* Plausible device addresses: aligned for every type, never dereferenced (validation must
 * reject these calls before anything looks at memory). */
#define IN ((const void *)(uintptr_t)0x100000)
#define OUT ((void *)(uintptr_t)0x200000)

static void test_status_strings(void)
{
    for (int s = 0; s <= LAST_STATUS; s++) {
        const char *str = gs_status_string((gs_status)s);
        const char *name = check_status_name(s);
        if (!str) {
            CHECK_FAIL("gs_status_string(%s) is NULL", name);
            continue;
        }
        /* "GS_ERROR_NO_DRIVER: ...": the enumerator's name, then a description. */
        size_t n = strlen(name);
        if (strncmp(str, name, n) != 0 || str[n] != ':' || strlen(str) < n + 3)
            CHECK_FAIL("gs_status_string(%d) is \"%s\", expected \"%s: <description>\"", s, str, name);
        for (int t = 0; t < s; t++)
            if (strcmp(str, gs_status_string((gs_status)t)) == 0)
                CHECK_FAIL("gs_status_string(%d) and (%d) are both \"%s\"", s, t, str);
    }
    static const int unknown[] = {LAST_STATUS + 1, 100, -1, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        CHECK_STR(gs_status_string((gs_status)unknown[i]), "unknown gridsync status");
}

static void test_version(void)
{
    CHECK_INT(gs_version(), GS_VERSION);
    CHECK_INT(GS_VERSION, ((uint32_t)GS_VERSION_MAJOR << 16) | ((uint32_t)GS_VERSION_MINOR << 8) | GS_VERSION_PATCH);
    CHECK_INT(GS_VERSION_ENCODE(1, 2, 3), 0x010203);
    /* The string comes from the build (meson's project version), the numbers from the
     * header: they must agree. */
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", GS_VERSION_MAJOR, GS_VERSION_MINOR, GS_VERSION_PATCH);
    CHECK_STR(gs_version_string(), want);
    CHECK(gs_version_string() == gs_version_string()); /* static storage */
}

static void test_reduce_validation(void)
{
    gs_status st;
    /* dtype and op out of range. */
    static const int bad_dtypes[] = {-1, NDTYPES, 100, INT32_MIN};
    for (size_t i = 0; i < sizeof bad_dtypes / sizeof bad_dtypes[0]; i++) {
        CHECK_STATUS(gs_reduce(NULL, IN, 16, (gs_dtype)bad_dtypes[i], GS_OP_SUM, OUT, NULL), GS_ERROR_INVALID_ARGUMENT);
        CHECK_HAS(gs_last_error_message(), "dtype");
    }
    static const int bad_ops[] = {-1, NOPS, 100, INT32_MAX};
    for (size_t i = 0; i < sizeof bad_ops / sizeof bad_ops[0]; i++) {
        CHECK_STATUS(gs_reduce(NULL, IN, 16, GS_INT32, (gs_op)bad_ops[i], OUT, NULL), GS_ERROR_INVALID_ARGUMENT);
        CHECK_HAS(gs_last_error_message(), "op");
    }
    /* Bitwise operations exist for integers only. */
    for (int d = 0; d < NDTYPES; d++)
        for (int o = GS_OP_BIT_AND; o <= GS_OP_BIT_XOR; o++)
            if (is_float(d)) {
                st = gs_reduce(NULL, IN, 16, (gs_dtype)d, (gs_op)o, OUT, NULL);
                if (st != GS_ERROR_UNSUPPORTED)
                    CHECK_FAIL("gs_reduce(dtype %d, bitwise op %d) returned %s, expected GS_ERROR_UNSUPPORTED", d, o,
                               check_status_name(st));
            }
    /* NULL pointers. */
    CHECK_STATUS(gs_reduce(NULL, IN, 16, GS_FLOAT32, GS_OP_SUM, NULL, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "out");
    CHECK_STATUS(gs_reduce(NULL, NULL, 16, GS_FLOAT32, GS_OP_SUM, OUT, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "in");
    CHECK_STATUS(gs_reduce(NULL, NULL, 0, GS_FLOAT32, GS_OP_SUM, NULL, NULL), GS_ERROR_INVALID_ARGUMENT);
    /* Misaligned input, for every type wider than a byte, by every offset. */
    for (int d = 0; d < NDTYPES; d++)
        for (size_t off = 1; off < dtype_size[d]; off++) {
            const void *in = (const char *)IN + off;
            st = gs_reduce(NULL, in, 16, (gs_dtype)d, GS_OP_MAX, OUT, NULL);
            if (st != GS_ERROR_INVALID_ARGUMENT || !strstr(gs_last_error_message(), "aligned"))
                CHECK_FAIL("gs_reduce(dtype %d, in misaligned by %zu) returned %s (\"%s\"), expected "
                           "GS_ERROR_INVALID_ARGUMENT about alignment",
                           d, off, check_status_name(st), gs_last_error_message());
        }
    /* Misaligned output: its alignment is the result's, not the input's -- ARGMAX of
     * bytes writes an int64 index. */
    CHECK_STATUS(gs_reduce(NULL, IN, 16, GS_FLOAT64, GS_OP_SUM, (char *)OUT + 4, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "out");
    CHECK_STATUS(gs_reduce(NULL, IN, 16, GS_INT8, GS_OP_ARGMAX, (char *)OUT + 4, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "aligned");
    gs_reduce_options wide = {.struct_size = sizeof wide, .out_dtype = GS_INT64};
    CHECK_STATUS(gs_reduce_ex(NULL, IN, 16, GS_INT32, GS_OP_SUM, (char *)OUT + 4, NULL, &wide),
                 GS_ERROR_INVALID_ARGUMENT);
    /* A range that wraps around the address space. */
    CHECK_STATUS(gs_reduce(NULL, IN, UINT64_MAX, GS_INT8, GS_OP_SUM, OUT, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "wrap");
    CHECK_STATUS(gs_reduce(NULL, IN, UINT64_MAX / 4, GS_FLOAT32, GS_OP_SUM, OUT, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(gs_reduce(NULL, IN, (UINT64_MAX - 0x100000) / 8 + 1, GS_FLOAT64, GS_OP_SUM, OUT, NULL),
                 GS_ERROR_INVALID_ARGUMENT);
    const void *top = (const void *)(uintptr_t)(UINTPTR_MAX - 15); /* 16-byte aligned, 16 bytes left */
    CHECK_STATUS(gs_reduce(NULL, top, 5, GS_FLOAT32, GS_OP_SUM, OUT, NULL), GS_ERROR_INVALID_ARGUMENT);

    /* gs_reduce_ex's options. */
    gs_reduce_options o = {.struct_size = 0, .out_dtype = GS_OUT_DEFAULT};
    CHECK_STATUS(gs_reduce_ex(NULL, IN, 16, GS_FLOAT32, GS_OP_SUM, OUT, NULL, &o), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "struct_size");
    o.struct_size = sizeof o;
    static const int bad_out[] = {-2, NDTYPES, 1000};
    for (size_t i = 0; i < sizeof bad_out / sizeof bad_out[0]; i++) {
        o.out_dtype = bad_out[i];
        CHECK_STATUS(gs_reduce_ex(NULL, IN, 16, GS_FLOAT32, GS_OP_SUM, OUT, NULL, &o), GS_ERROR_INVALID_ARGUMENT);
        CHECK_HAS(gs_last_error_message(), "out_dtype");
    }
    /* The cheap checks come first whatever the options: a bad op is a bad op. */
    o.out_dtype = GS_OUT_DEFAULT;
    CHECK_STATUS(gs_reduce_ex(NULL, IN, 16, GS_FLOAT32, GS_OP_BIT_OR, OUT, NULL, &o), GS_ERROR_UNSUPPORTED);
}

static void test_context_arguments(void)
{
    CHECK_STATUS(gs_context_create(0, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "NULL");
    CHECK_STATUS(gs_context_destroy(NULL), GS_SUCCESS);
    gs_context_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_STATUS(gs_context_get_info(NULL, &info), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "ctx");
    CHECK_STATUS(gs_context_get_info(NULL, NULL), GS_ERROR_INVALID_ARGUMENT);
    info.struct_size = 0;
    CHECK_STATUS(gs_context_get_info(NULL, &info), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(gs_driver_version(NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(gs_device_count(NULL), GS_ERROR_INVALID_ARGUMENT);
}

/* The work queue's host functions (GRIDSYNC_1.1): what they refuse before any driver call. */
_Static_assert(GS_QUEUE_BYTES == 16, "GS_QUEUE_BYTES is ABI: gridsync_device.cuh's GS_WORK_QUEUE_BYTES");

static void test_queue_arguments(void)
{
    /* No output pointer. */
    CHECK_STATUS(gs_queue_create(NULL, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "gs_queue_create");
    CHECK_HAS(gs_last_error_message(), "NULL");
    /* No queue to reset, or one that cannot be a queue: its 64-bit counter needs 8 bytes. */
    CHECK_STATUS(gs_queue_reset(NULL, NULL, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "gs_queue_reset");
    CHECK_HAS(gs_last_error_message(), "NULL");
    for (size_t off = 1; off < 8; off++) {
        void *q = (char *)OUT + off;
        gs_status st = gs_queue_reset(NULL, q, NULL);
        if (st != GS_ERROR_INVALID_ARGUMENT || !strstr(gs_last_error_message(), "aligned"))
            CHECK_FAIL("gs_queue_reset(queue misaligned by %zu) returned %s (\"%s\"), expected "
                       "GS_ERROR_INVALID_ARGUMENT about alignment",
                       off, check_status_name(st), gs_last_error_message());
        st = gs_queue_destroy(NULL, q);
        if (st != GS_ERROR_INVALID_POINTER || !strstr(gs_last_error_message(), "aligned"))
            CHECK_FAIL("gs_queue_destroy(queue misaligned by %zu) returned %s (\"%s\"), expected "
                       "GS_ERROR_INVALID_POINTER about alignment",
                       off, check_status_name(st), gs_last_error_message());
    }
    /* Destroying NULL does nothing, successfully, and clears the previous message. */
    CHECK_STATUS(gs_queue_reset(NULL, NULL, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(gs_queue_destroy(NULL, NULL), GS_SUCCESS);
    CHECK_STR(gs_last_error_message(), "");
}

/* ---- the detail message is per thread ------------------------------------------------- */

typedef struct {
    pthread_barrier_t *barrier;
    char initial[256], after_own[256], after_main[256];
    const char *pointer;
} thread_view;

static void *other_thread(void *arg)
{
    thread_view *v = arg;
    snprintf(v->initial, sizeof v->initial, "%s", gs_last_error_message());
    /* Fail with a message of our own ... */
    gs_reduce(NULL, IN, 16, (gs_dtype)77, GS_OP_SUM, OUT, NULL);
    snprintf(v->after_own, sizeof v->after_own, "%s", gs_last_error_message());
    v->pointer = gs_last_error_message();
    pthread_barrier_wait(v->barrier); /* 1: main may now fail differently */
    pthread_barrier_wait(v->barrier); /* 2: it has */
    /* ... which the main thread's failure did not touch. */
    snprintf(v->after_main, sizeof v->after_main, "%s", gs_last_error_message());
    return NULL;
}

static void test_thread_local_message(void)
{
    CHECK_STATUS(gs_reduce(NULL, IN, 16, GS_FLOAT32, (gs_op)55, OUT, NULL), GS_ERROR_INVALID_ARGUMENT);
    char mine[256];
    snprintf(mine, sizeof mine, "%s", gs_last_error_message());
    CHECK_HAS(mine, "55");

    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 2);
    thread_view v = {.barrier = &barrier};
    pthread_t t;
    pthread_create(&t, NULL, other_thread, &v);
    pthread_barrier_wait(&barrier); /* 1 */
    /* The other thread's failure did not change this thread's message. */
    CHECK_STR(gs_last_error_message(), mine);
    CHECK_STATUS(gs_reduce(NULL, NULL, 16, GS_FLOAT32, GS_OP_SUM, OUT, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "in is NULL");
    pthread_barrier_wait(&barrier); /* 2 */
    pthread_join(t, NULL);
    pthread_barrier_destroy(&barrier);

    CHECK_STR(v.initial, ""); /* a new thread starts with no message */
    CHECK_HAS(v.after_own, "77");
    CHECK_STR(v.after_main, v.after_own);
    CHECK(v.pointer != gs_last_error_message()); /* separate storage per thread */
}

/* ---- without a driver ----------------------------------------------------------------- */

static int driver_loaded(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

static void test_no_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) {
        dlclose(h);
        printf("no-driver checks: skipped (this machine has a libcuda.so.1)\n");
        /* With a driver, the version at least must be known. */
        int v = 0;
        gs_status st = gs_driver_version(&v);
        if (st == GS_SUCCESS)
            CHECK(v > 0);
        return;
    }
    gs_context *ctx = (gs_context *)&ctx; /* must come back NULL */
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_NO_DRIVER);
    CHECK(ctx == NULL);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    int n = -1;
    CHECK_STATUS(gs_device_count(&n), GS_ERROR_NO_DRIVER);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    CHECK_INT(n, 0);
    int v = -1;
    CHECK_STATUS(gs_driver_version(&v), GS_ERROR_NO_DRIVER);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    CHECK_INT(v, 0);
    /* Valid arguments get through validation and then find no driver. */
    CHECK_STATUS(gs_reduce(NULL, IN, 16, GS_FLOAT32, GS_OP_SUM, OUT, NULL), GS_ERROR_NO_DRIVER);
    CHECK_STATUS(gs_reduce(NULL, NULL, 0, GS_FLOAT32, GS_OP_SUM, OUT, NULL), GS_ERROR_NO_DRIVER);
    /* The queue's functions too, with the output pointer cleared. */
    void *q = &q;
    CHECK_STATUS(gs_queue_create(NULL, &q), GS_ERROR_NO_DRIVER);
    CHECK(q == NULL);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    CHECK_STATUS(gs_queue_reset(NULL, OUT, NULL), GS_ERROR_NO_DRIVER);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    CHECK_STATUS(gs_queue_destroy(NULL, OUT), GS_ERROR_NO_DRIVER);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    CHECK_STATUS(gs_queue_destroy(NULL, NULL), GS_SUCCESS); /* nothing to do needs no driver */
    CHECK_STR(gs_last_error_message(), "");
    printf("no-driver checks: done\n");
}

int main(void)
{
    CHECK_STR(gs_last_error_message(), ""); /* before any call */
    test_status_strings();
    test_version();
    test_reduce_validation();
    test_context_arguments();
    test_queue_arguments();
    test_thread_local_message();
    /* None of the above may have needed the driver. */
    if (driver_loaded())
        CHECK_FAIL("libcuda.so.1 was loaded by calls that should have failed validation first");
    test_no_driver();
    return check_exit_code();
}
