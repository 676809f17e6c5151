/*
 * The loader suite's fixture: the case table's shape, the environments a case can ask for,
 * and the helpers every area file uses (the logs of the fakes, the application's side of
 * the fake driver, a context made and checked in one call).
 *
 * Library state is per process (the driver is loaded once, a backend load is remembered
 * forever, GRIDSYNC_DEBUG is read once, and the dynamic loader reads LD_LIBRARY_PATH only
 * at start), so every case runs in a fresh process with a clean environment: run.c says how.
 */
#ifndef GS_LOADER_FIXTURE_H
#define GS_LOADER_FIXTURE_H

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_FAILURES_EXTERN
#include "check.h"
#include "gridsync.h"

#if !defined(FAKE_DRIVER_DIR) || !defined(FAKE_OLD_DRIVER_DIR) || !defined(FAKE_BACKEND_DIR) || \
    !defined(FAKE_FALLBACK_DIR) || !defined(REAL_BACKEND_DIR) || !defined(CONFIGURED_BACKEND_DIR)
#  error "the build must define the directories of the fakes and of the real backends"
#endif

#define SKIP 77

/*
 * The status for a backend file that exists but cannot be loaded at all (not an ELF file,
 * truncated): gridsync.h documents GS_ERROR_BACKEND_NOT_FOUND as "no backend file could
 * be found/opened", and GS_ERROR_BACKEND_INIT_FAILED as "backend entry point or device
 * setup failed", which is not what happened.
 */
#define STATUS_UNLOADABLE_FILE GS_ERROR_BACKEND_NOT_FOUND

/* ---- the case table ------------------------------------------------------------------- */

typedef struct test_case {
    const char *name;
    const char *env[6]; /* NAME=VALUE, on top of the clean environment */
    int (*run)(void);
    /* Or, for one function that runs several cases, the function and its parameters. */
    int (*run_with)(const struct test_case *c);
    gs_status want;
    const char *arg;
} test_case;

/*
 * One case a line: tests/loader/meson.build registers a test for every line of an area
 * file that begins with CASE, named by the line's first string. The tables are the only
 * list of the cases.
 */
#define CASE(name, fn, ...) {name, {__VA_ARGS__}, fn, NULL, GS_SUCCESS, NULL}
#define CASE_WITH(name, fn, want, arg, ...) {name, {__VA_ARGS__}, NULL, fn, want, arg}
#define END_OF_CASES {NULL, {NULL}, NULL, NULL, GS_SUCCESS, NULL}

/* The environments cases ask for. The fake driver is libcuda.so.1 unless a case says
 * otherwise: LD_LIBRARY_PATH names the directory it is found in. */
#define NO_ENV NULL
#define NO_DRIVER "LD_LIBRARY_PATH=" /* empty: no directory at all */
#define OLD_DRIVER "LD_LIBRARY_PATH=" FAKE_OLD_DRIVER_DIR
#define FORCE(variant) "GRIDSYNC_BACKEND=" FAKE_BACKEND_DIR "/gridsync-" #variant ".so"
#define USE_GOOD "GRIDSYNC_BACKEND=fake_good", "GRIDSYNC_BACKEND_PATH=" FAKE_BACKEND_DIR
#define REAL_PATH "GRIDSYNC_BACKEND_PATH=" REAL_BACKEND_DIR
#define FALLBACK_PATH "GRIDSYNC_BACKEND_PATH=" FAKE_FALLBACK_DIR
#define FAKE_GOOD_PATH FAKE_BACKEND_DIR "/gridsync-fake_good.so"
#define FALLBACK_SM11_PATH FAKE_FALLBACK_DIR "/gridsync-cuda_sm11_compat.so"

/* Each area file's table, ended by END_OF_CASES; run.c walks them in this order. */
extern const test_case driver_cases[], forced_cases[], files_cases[], selection_cases[], real_cases[],
    calls_cases[], scan_cases[], scan_exact_cases[], workspace_cases[], queue_cases[], exact_round_cases[];

/* ---- files and logs ------------------------------------------------------------------- */

/* A path in the case's temporary directory (static storage, four at a time). */
const char *tmp_path(const char *name);
/* The whole file ("" when it does not exist); free it. Exits when out of memory. */
char *slurp(const char *path);
void write_file(const char *path, const void *data, size_t len);
/* The error dlopen itself gives for `path` (static storage); "" if it loads. */
const char *dlopen_error(const char *path);

/* What the fake driver and the fake backends logged (FAKE_CUDA_LOG, FAKE_BACKEND_LOG). */
char *cuda_log(void);
char *backend_log(void);
/* Lines of `text` that contain `needle`. */
int count_lines(const char *text, const char *needle);
/* The same, of the logs. */
int cuda_log_lines(const char *needle);
int backend_log_lines(const char *needle);
/* The last (or first) line of `text` containing `needle`, or "" (static storage). */
const char *find_line(const char *text, const char *needle, int last);
/* The 1-based number of the first line at or after line `from` containing `needle`; 0 if none. */
int line_number(const char *text, const char *needle, int from);
/* `msg` with every occurrence of `remove` blanked out, so a reason can be looked for
 * without matching the file name it follows (static storage). */
const char *without(const char *msg, const char *remove);

/* mkfifo(path), or exit; returns `path`. */
const char *make_fifo(const char *path);
/* Turns a call that blocks for 10 s into a failure naming `what`; NULL disarms it. */
void watchdog(const char *what);

/* ---- the library ---------------------------------------------------------------------- */

/* gs_context_get_info into a full-size struct. */
gs_status get_info(const gs_context *ctx, gs_context_info *info);
/* A context on device 0 that must be created, with backend `name` loaded from `path`
 * (NULL: either not checked); NULL (a failed check) when creation fails. */
gs_context *create_context(const char *name, const char *path);
/* gs_reduce of n floats at device address `in` into `out`: the call most cases make. */
gs_status reduce_f32(gs_context *ctx, CUdeviceptr in, uint64_t n, CUdeviceptr out, gs_stream stream);
/* gs_reduce_ex of op over n elements of dt at `in`, written to `out` as out_dtype (a gs_dtype
 * or GS_OUT_DEFAULT), no flags. */
gs_status reduce_as(gs_context *ctx, CUdeviceptr in, uint64_t n, gs_dtype dt, gs_op op, int32_t out_dtype,
                    CUdeviceptr out, gs_stream stream);

/* ---- the application's side of the fake driver ---------------------------------------- */

/* What an application does with the driver (allocate, make streams, make a context
 * current), through the same libcuda.so.1 that gridsync loads: the fake. */
typedef struct app_driver {
    PFN_cuInit_v2000 init;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain;
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemFree_v3020 free;
    PFN_cuStreamCreate_v2000 stream_create;
    PFN_cuStreamDestroy_v4000 stream_destroy;
    PFN_cuStreamGetId_v12000 stream_get_id;
    PFN_cuThreadExchangeStreamCaptureMode_v10010 exchange_capture_mode;
    long (*live)(const char *kind);
    CUcontext ctx[2]; /* primary contexts of devices 0 and 1, retained as the runtime would */
} app_driver;
extern app_driver app;

void app_fatal(const char *what, CUresult rc);
#define APP(call)                        \
    do {                                 \
        CUresult rc_ = (call);           \
        if (rc_ != CUDA_SUCCESS)         \
            app_fatal(#call, rc_);       \
    } while (0)

/* Loads the fake driver for the application and retains the primary contexts of the
 * first `devices` devices (1 or 2). Refuses to go on with a real driver: these tests must
 * never touch a GPU. */
void app_init(int devices);
CUdeviceptr app_alloc(size_t bytes);
void app_free(CUdeviceptr p);
/* A non-blocking stream of device `device`'s primary context. */
CUstream app_stream_of(int device);
static inline CUstream app_stream(void) { return app_stream_of(0); }
/* The driver's id of stream `s` (of device 0's context), as the driver's log shows it. */
unsigned long long app_stream_id(CUstream s);
/* The thread's stream capture mode, which gridsync relaxes while it allocates and must
 * give back. */
int app_capture_mode(void);

/* What the fake driver holds: allocations, streams, modules, primary retains, pushed contexts. */
typedef struct live_counts {
    long mem, streams, modules, primary, stack;
} live_counts;
live_counts live_now(void);

/* Everything gridsync acquired from the driver since `before` has been given back. */
#define CHECK_RELEASED(before)                                  \
    do {                                                        \
        live_counts now_ = live_now();                          \
        CHECK_INT(now_.mem, (before).mem);                      \
        CHECK_INT(now_.streams, (before).streams);              \
        CHECK_INT(now_.modules, (before).modules);              \
        CHECK_INT(now_.primary, (before).primary);              \
        CHECK_INT(now_.stack, (before).stack);                  \
    } while (0)

#endif
