/*
 * unit suite, with the fake driver and the good fake backend: a default context (ctx NULL)
 * made while host memory runs out must leave nothing behind.
 *
 * The program's own malloc, calloc and realloc (found before the C library's by every
 * object in the process) pass each call on to the next definition (the C library's, or
 * the sanitizer's), except that, when armed with n, the n-th of the calls made directly by
 * libgridsync returns NULL. gs_queue_create(NULL, ...) is called with n = 1, 2, ..., each
 * in a child process that starts without a default context, until the call makes fewer
 * than n allocations; so every allocation on the way to a default context fails once, the
 * last one being the list entry that keeps the new context. After each failed call,
 * everything the half-made context held must have been given back: the device's primary
 * context retain (the fake driver counts them) and the backend instance (the fake backend
 * logs open and close). Its host memory is checked by LeakSanitizer when the unit suite
 * runs in the sanitizer build (scripts/ci-sanitize.sh). Under valgrind, whose malloc
 * replaces this program's, the switch cannot work and the test skips itself.
 *
 * Two ways to a default context: without a current CUDA context (device 0's primary one,
 * retained by gridsync) and with one (device 1's, made current by the application).
 *
 * Environment (tests/unit/meson.build): LD_LIBRARY_PATH names the fake driver's directory,
 * GRIDSYNC_BACKEND=fake_good and GRIDSYNC_BACKEND_PATH its directory, FAKE_CUDA_DEVICES=2.
 * FAKE_BACKEND_LOG is set here, to a temporary file. Exit status 77 (skipped) if
 * libcuda.so.1 is not the fake.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "gridsync.h"

/* ---- the allocation failure switch -------------------------------------------------------- */

/* The definitions this program's pass calls on to. Under AddressSanitizer they are its
 * interceptors, named directly: its runtime allocates through malloc while it starts, before
 * dlsym could be asked (and before instrumented code may run, hence NO_ASAN). Otherwise
 * they are the C library's, looked up at the first call. */
#ifdef __SANITIZE_ADDRESS__
#  define NO_ASAN __attribute__((no_sanitize_address))
#else
#  define NO_ASAN
#endif
#define INTERCEPTORS(fn, ret, params)                       \
    extern ret __interceptor_##fn params __attribute__((weak)); \
    extern ret ___interceptor_##fn params __attribute__((weak)); \
    static ret(*next_##fn) params;
INTERCEPTORS(malloc, void *, (size_t))
INTERCEPTORS(calloc, void *, (size_t, size_t))
INTERCEPTORS(realloc, void *, (void *, size_t))
#define NEXT(fn)                                                                                    \
    (next_##fn ? next_##fn                                                                          \
               : (next_##fn = __interceptor_##fn    ? __interceptor_##fn                            \
                              : ___interceptor_##fn ? ___interceptor_##fn                           \
                                                    : (__typeof__(next_##fn))dlsym(RTLD_NEXT, #fn)))

static void *gridsync_base; /* where libgridsync is loaded: its calls are the ones counted */
static int fail_at;         /* 0: off; else the call (from arming) that fails */
static int calls;           /* libgridsync's allocation calls since arming */

NO_ASAN static int should_fail(void *caller)
{
    Dl_info info;
    if (!fail_at || !gridsync_base || !dladdr(caller, &info) || info.dli_fbase != gridsync_base)
        return 0;
    return ++calls == fail_at;
}

NO_ASAN void *malloc(size_t n)
{
    if (should_fail(__builtin_return_address(0)))
        return NULL;
    void *(*next)(size_t) = NEXT(malloc);
    return next(n);
}

NO_ASAN void *calloc(size_t count, size_t n)
{
    if (should_fail(__builtin_return_address(0)))
        return NULL;
    void *(*next)(size_t, size_t) = NEXT(calloc);
    return next(count, n);
}

NO_ASAN void *realloc(void *p, size_t n)
{
    if (should_fail(__builtin_return_address(0)))
        return NULL;
    void *(*next)(void *, size_t) = NEXT(realloc);
    return next(p, n);
}

static void arm(int n)
{
    calls = 0;
    fail_at = n;
}

/* ---- the application's side of the fake driver ------------------------------------------- */

static long (*live)(const char *kind);
static PFN_cuDevicePrimaryCtxRetain_v7000 app_retain;
static PFN_cuDevicePrimaryCtxRelease_v11000 app_release;
static PFN_cuCtxPushCurrent_v4000 app_push;
static PFN_cuCtxPopCurrent_v4000 app_pop;

static int load_fake_driver(void)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda || !(live = (long (*)(const char *))dlsym(cuda, "fake_cuda_live")))
        return 0;
    PFN_cuGetProcAddress_v12000 gpa = (PFN_cuGetProcAddress_v12000)dlsym(cuda, "cuGetProcAddress_v2");
    return gpa && gpa("cuDevicePrimaryCtxRetain", (void **)&app_retain, 7000, 0, NULL) == CUDA_SUCCESS &&
           gpa("cuDevicePrimaryCtxRelease", (void **)&app_release, 11000, 0, NULL) == CUDA_SUCCESS &&
           gpa("cuCtxPushCurrent", (void **)&app_push, 4000, 0, NULL) == CUDA_SUCCESS &&
           gpa("cuCtxPopCurrent", (void **)&app_pop, 4000, 0, NULL) == CUDA_SUCCESS;
}

/* Lines of the fake backend's log that contain `needle`. */
static int backend_log_lines(const char *needle)
{
    FILE *f = fopen(getenv("FAKE_BACKEND_LOG"), "r");
    int n = 0;
    char line[1024];
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

/* ---- the cases ------------------------------------------------------------------------- */

/* One try, in a child process (so that each starts without a default context): the n-th
 * allocation fails, and after a failed call the fake driver's primary retains and pushed
 * contexts and the fake backend's open instances must be as before it. Exits 0 when the
 * n-th allocation failed and all was well, 2 when there was no n-th allocation (the call
 * made fewer), 1 when a check failed. */
static void try_failing(const char *what, int n)
{
    check_failures = 0; /* the parent's so far are not this child's */
    const long primary = live("primary"), stack = live("stack");
    const int open = backend_log_lines(": open ") - backend_log_lines(": close ");
    void *queue = NULL;
    arm(n);
    gs_status st = gs_queue_create(NULL, &queue);
    const int reached = calls >= n;
    arm(0);
    if (st == GS_SUCCESS) {
        /* That allocation could be done without (a log line shortened), or there was none. */
        CHECK_STATUS(gs_queue_destroy(NULL, queue), GS_SUCCESS);
        CHECK_INT(backend_log_lines(": open ") - backend_log_lines(": close "), open + 1);
    } else {
        if (st != GS_ERROR_OUT_OF_MEMORY)
            CHECK_FAIL("%s: with allocation %d failing, gs_queue_create returned %s: %s", what, n,
                       check_status_name(st), gs_last_error_message());
        CHECK(queue == NULL);
        const int open_now = backend_log_lines(": open ") - backend_log_lines(": close ");
        if (live("primary") != primary || live("stack") != stack || open_now != open)
            CHECK_FAIL("%s: with allocation %d failing (%s), the context was not given back: %ld primary "
                       "retains (expected %ld), %ld contexts pushed (expected %ld), %d backend instances "
                       "open (expected %d)",
                       what, n, gs_last_error_message(), live("primary"), primary, live("stack"), stack, open_now,
                       open);
        else
            printf("%s: allocation %d failing: %s, all given back\n", what, n, gs_last_error_message());
    }
    fflush(stdout);
    /* exit, not _exit: the leak checkers look at the child's memory when it exits. */
    exit(check_failures ? 1 : reached ? 0 : 2);
}

/* gs_queue_create(NULL) with its 1st, 2nd, ... allocation failing, each in a child process,
 * until the call makes no more allocations. */
static void default_context_under_oom(const char *what)
{
    int n;
    for (n = 1; n <= 200; n++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) {
            CHECK_FAIL("fork: %s", strerror(errno));
            return;
        }
        if (pid == 0)
            try_failing(what, n);
        int status = 0;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
            CHECK_FAIL("%s: the child failing allocation %d did not exit (status 0x%x)", what, n, status);
            return;
        }
        if (WEXITSTATUS(status) == 2)
            break;
        if (WEXITSTATUS(status) != 0)
            CHECK_FAIL("%s: the child failing allocation %d exited %d", what, n, WEXITSTATUS(status));
    }
    /* At least the context itself, its selection log and the list entry. */
    if (n - 1 < 3)
        CHECK_FAIL("%s: only %d allocations on the way to a default context", what, n - 1);
    printf("%s: each of %d allocations failed in turn\n", what, n - 1);
}

int main(void)
{
    if (!load_fake_driver()) {
        printf("SKIP: libcuda.so.1 is not the fake driver (LD_LIBRARY_PATH=%s)\n", getenv("LD_LIBRARY_PATH"));
        return 77;
    }
    Dl_info info;
    if (!dladdr((void *)gs_version, &info)) {
        printf("FAIL: dladdr(gs_version) found no libgridsync\n");
        return 1;
    }
    gridsync_base = info.dli_fbase;
    char log[] = "/tmp/gridsync-default-oom.XXXXXX";
    int fd = mkstemp(log);
    if (fd < 0 || setenv("FAKE_BACKEND_LOG", log, 1) != 0) {
        printf("FAIL: no temporary file for the backend's log\n");
        return 1;
    }
    close(fd);

    /* The driver and the backend file are loaded once per process: loaded first, with
     * nothing failing, so that the loops below see only a context being made. */
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    CHECK_INT(live("primary"), 0);
    /* The switch works where this program's malloc is the one libgridsync calls; valgrind
     * puts its own in place of every malloc, the program's too (the leak checks of the
     * sanitizer build then stand for it). */
    arm(1);
    gs_status st = gs_context_create(0, &ctx);
    const int counted = calls;
    arm(0);
    if (st == GS_SUCCESS)
        gs_context_destroy(ctx);
    if (!counted) {
        printf("SKIP: libgridsync's allocations do not reach this program's malloc (valgrind?)\n");
        remove(log);
        return 77;
    }
    CHECK_INT(st, GS_ERROR_OUT_OF_MEMORY);

    /* No current context: device 0's primary context, retained by gridsync. */
    default_context_under_oom("no current context");

    /* Device 1's primary context current. */
    CUcontext cu;
    if (app_retain(&cu, 1) != CUDA_SUCCESS || app_push(cu) != CUDA_SUCCESS) {
        printf("FAIL: the application could not make device 1's primary context current\n");
        return 1;
    }
    default_context_under_oom("device 1's context current");
    CUcontext popped;
    app_pop(&popped);
    app_release(1);
    remove(log);
    return check_exit_code();
}
