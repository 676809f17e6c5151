/* loader cases: the real backends of the build tree on the fake driver -- which backend a
 * compute capability gets, the one kernel each call launches, what is refused before a
 * launch, and a driver that fails the launch or has no binary for the device. */
#include "fixture.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gridsync_backend.h"

/* A context with the build tree's backend `want` on device 0 of compute capability
 * FAKE_CUDA_CC (9.0 when unset), checked; NULL when it could not be made. */
static gs_context *real_context(const char *want)
{
    int cc_major = 9, cc_minor = 0;
    const char *cc = getenv("FAKE_CUDA_CC");
    if (cc && sscanf(cc, "%d.%d", &cc_major, &cc_minor) != 2)
        CHECK_FAIL("FAKE_CUDA_CC=%s is not MAJOR.MINOR", cc);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/gridsync-%s.so", REAL_BACKEND_DIR, want);
    gs_context *ctx = create_context(want, path);
    if (!ctx)
        return NULL;
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    CHECK_INT(info.device, 0);
    CHECK_INT(info.cc_major, cc_major);
    CHECK_INT(info.cc_minor, cc_minor);
    CHECK_INT(info.multiprocessor_count, 4);
    CHECK_STR(info.device_name, "Fake CUDA Device 0");
    CHECK_HAS(find_line(info.selection_log, path, 1), "chosen");
    return ctx;
}

/* One reduction with a real backend: it must launch exactly one kernel, the one named
 * `kernel`, with 256 threads per block; returns its grid size (0 if none launched). */
static unsigned launch(gs_context *ctx, CUdeviceptr in, uint64_t n, gs_dtype dt, gs_op op, int out_dtype,
                       CUdeviceptr out, gs_stream stream, const char *kernel)
{
    int launches_before = cuda_log_lines("cuLaunchKernel ");
    CHECK_STATUS(reduce_as(ctx, in, n, dt, op, out_dtype, out, stream), GS_SUCCESS);
    CHECK_INT(cuda_log_lines("cuLaunchKernel ") - launches_before, 1);
    char *log = cuda_log();
    const char *line = find_line(log, "cuLaunchKernel ", 1);
    char want[256];
    snprintf(want, sizeof want, "cuLaunchKernel %s grid=", kernel);
    CHECK_HAS(line, want);
    CHECK_HAS(line, " block=256 ");
    const char *g = strstr(line, "grid=");
    unsigned grid = g ? (unsigned)strtoul(g + 5, NULL, 10) : 0;
    free(log);
    return grid;
}

/* The case's backend (`arg`) is chosen for the fake's compute capability, launches, and
 * gives back everything it took. */
static int real_backend(const test_case *c)
{
    app_init(1);
    live_counts before = live_now();
    CUdeviceptr in = app_alloc(4096), out = app_alloc(16);
    live_counts with_buffers = live_now();
    gs_context *ctx = real_context(c->arg);
    if (!ctx)
        return 0;
    CHECK(launch(ctx, in, 1000, GS_FLOAT32, GS_OP_SUM, GS_OUT_DEFAULT, out, NULL, "gs_reduce_f32_sum_f32") == 1);
    CUstream s = app_stream();
    launch(ctx, in, 1000, GS_INT32, GS_OP_MAX, GS_OUT_DEFAULT, out, s, "gs_reduce_i32_max_i32");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    APP(app.stream_destroy(s));
    CHECK_RELEASED(with_buffers); /* module, workspaces, zeroing stream, primary context */
    /* What was embedded is a real fatbin. */
    CHECK(cuda_log_lines("cuModuleLoadData fatbin") > 0);
    app_free(in);
    app_free(out);
    CHECK_RELEASED(before);
    return 0;
}

static int real_kernels(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc((size_t)64 << 20), out = app_alloc(16);
    gs_context *ctx = real_context("cuda_sm20");
    if (!ctx)
        return 0;
    static const struct {
        gs_dtype dt;
        gs_op op;
        int out;
        const char *kernel;
    } k[] = {
        {GS_FLOAT32, GS_OP_SUM, GS_OUT_DEFAULT, "gs_reduce_f32_sum_f32"},
        {GS_FLOAT64, GS_OP_MIN, GS_OUT_DEFAULT, "gs_reduce_f64_min_f64"},
        {GS_INT8, GS_OP_ARGMAX, GS_OUT_DEFAULT, "gs_reduce_i8_argmax_i64"},
        {GS_BFLOAT16, GS_OP_ARGMIN, GS_OUT_DEFAULT, "gs_reduce_bf16_argmin_i64"},
        {GS_UINT64, GS_OP_BIT_XOR, GS_OUT_DEFAULT, "gs_reduce_u64_xor_u64"},
        {GS_UINT8, GS_OP_PROD, GS_OUT_DEFAULT, "gs_reduce_u8_prod_u8"},
        {GS_INT32, GS_OP_SUM, GS_INT64, "gs_reduce_i32_sum_i64"},
        {GS_FLOAT32, GS_OP_SUM, GS_FLOAT64, "gs_reduce_f32_sum_f64"},
        {GS_FLOAT16, GS_OP_MAX, GS_FLOAT32, "gs_reduce_f16_max_f32"},
        {GS_FLOAT16, GS_OP_SUM, GS_OUT_DEFAULT, "gs_reduce_f16_sum_f16"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        launch(ctx, in, 1000, k[i].dt, k[i].op, k[i].out, out, NULL, k[i].kernel);
    /* Empty input: still one launch (it writes the identity), of one block. */
    CHECK_INT(launch(ctx, 0, 0, GS_FLOAT32, GS_OP_SUM, GS_OUT_DEFAULT, out, NULL, "gs_reduce_f32_sum_f32"), 1);
    /* A large input: several blocks, but never more than fit on the device at once
     * (4 multiprocessors x 2048 / 256 threads = 32 on the fake). */
    unsigned grid = launch(ctx, in, (uint64_t)16 << 20, GS_FLOAT32, GS_OP_SUM, GS_OUT_DEFAULT, out, NULL,
                           "gs_reduce_f32_sum_f32");
    CHECK(grid > 1 && grid <= 32);
    /* Pairs no kernel exists for are refused before any launch. */
    CHECK_STATUS(reduce_as(ctx, in, 10, GS_FLOAT64, GS_OP_SUM, GS_FLOAT32, out, NULL), GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "cuda_sm20");
    CHECK_STATUS(reduce_as(ctx, in, 10, GS_INT32, GS_OP_MIN, GS_INT64, out, NULL), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

static int real_no_binary(void)
{
    app_init(1);
    live_counts before = live_now();
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_NO_KERNEL_IMAGE);
    const char *msg = gs_last_error_message();
    /* Both backends were tried; the message names each file and its reason. */
    CHECK_HAS(msg, REAL_BACKEND_DIR "/gridsync-cuda_sm20.so");
    CHECK_HAS(msg, REAL_BACKEND_DIR "/gridsync-cuda_sm11_compat.so");
    CHECK_HAS(msg, "CUDA_ERROR_NO_BINARY_FOR_GPU");
    CHECK_RELEASED(before); /* the failed creation gave the primary context back */
    return 0;
}

static int real_launch_error(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4096), out = app_alloc(16);
    gs_context *ctx = real_context("cuda_sm20");
    if (!ctx)
        return 0;
    setenv("FAKE_CUDA_FAIL", "cuLaunchKernel:700", 1);
    CHECK_STATUS(reduce_f32(ctx, in, 100, out, NULL), GS_ERROR_CUDA);
    CHECK_HAS(gs_last_error_message(), "cuLaunchKernel");
    CHECK_HAS(gs_last_error_message(), "gs_reduce_f32_sum_f32");
    CHECK_HAS(gs_last_error_message(), "CUDA_ERROR_ILLEGAL_ADDRESS");
    CHECK_INT(app.live("stack"), 0); /* the context pushed for the call was popped */
    unsetenv("FAKE_CUDA_FAIL");
    CHECK_STATUS(reduce_f32(ctx, in, 100, out, NULL), GS_SUCCESS);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

/* gs_segmented_reduce on `ctx` and the legacy stream, device addresses given as integers. */
#define SEG(in, n, dtype, op, offsets, segments, out, flags)                                          \
    gs_segmented_reduce(ctx, (const void *)(uintptr_t)(in), n, dtype, op, (const int64_t *)(offsets), \
                        segments, (void *)(uintptr_t)(out), NULL, flags)

/* What is refused before a launch, and the one launch of what is accepted. The fake's
 * device memory is host memory, so the offsets are written directly. */
static int real_segmented(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), offs = app_alloc(8 * 11), out = app_alloc(80), out8 = app_alloc(8);
    gs_context *ctx = real_context("cuda_sm20");
    if (!ctx)
        return 0;
    int64_t *o = (int64_t *)(uintptr_t)offs;
    for (int j = 0; j <= 10; j++)
        o[j] = 100 * j; /* 10 segments of 100 elements */
    int64_t host_offs[11] = {0};

    int l0 = cuda_log_lines("cuLaunchKernel ");
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_SUM, o, 10, out, 0), GS_SUCCESS);
    CHECK_STATUS(SEG(in, 4000, GS_INT8, GS_OP_ARGMAX, o, 10, out, 0), GS_SUCCESS);
    CHECK_INT(cuda_log_lines("cuLaunchKernel ") - l0, 2);
    char *log = cuda_log();
    CHECK_HAS(find_line(log, "cuLaunchKernel ", 1), "cuLaunchKernel gs_segreduce_i8_argmax_i64 grid=");
    CHECK_HAS(find_line(log, "cuLaunchKernel ", 1), " block=256 ");
    free(log);

    /* Refused before anything is queued. */
    l0 = cuda_log_lines("cuLaunchKernel ");
    CHECK_STATUS(SEG(in, 1000, (gs_dtype)99, GS_OP_SUM, o, 10, out, 0), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, (gs_op)42, o, 10, out, 0), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_BIT_XOR, o, 10, out, 0), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_SUM, o, 10, out, 4), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "flags");
    /* exact sums are float SUMs */
    CHECK_STATUS(SEG(in, 1000, GS_INT32, GS_OP_SUM, o, 10, out, GS_SEGMENTED_EXACT), GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "GS_SEGMENTED_EXACT");
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_MAX, o, 10, out, GS_SEGMENTED_EXACT), GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "not max over f32");
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_SUM, NULL, 10, out, 0), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "offsets");
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_SUM, o, 10, 0, 0), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "out");
    CHECK_STATUS(SEG(0, 1000, GS_FLOAT32, GS_OP_SUM, o, 10, out, 0), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_SUM, (const char *)o + 4, 9, out, 0), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "aligned");
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_SUM, host_offs, 10, out, 0), GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "offsets");
    /* ranges: 10 float sums need 40 bytes (8 given); 11 segments need 96 bytes of offsets
     * (88 given); 1001 floats need more than the 4000-byte input */
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_SUM, o, 10, out8, 0), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "past the end");
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_SUM, o, 11, out, 0), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(SEG(in, 1001, GS_FLOAT32, GS_OP_SUM, o, 10, out, 0), GS_ERROR_INVALID_ARGUMENT);
    /* offsets checked on request: the first bad one is named, nothing is launched */
    static const struct {
        int index;
        int64_t bad, good;
        const char *says;
    } bad[] = {
        {5, 50, 500, "offsets[4] = 400, offsets[5] = 50"},
        {0, -1, 0, "negative"},
        {10, 1001, 1000, "beyond n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o[bad[i].index] = bad[i].bad;
        CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_SUM, o, 10, out, GS_SEGMENTED_CHECK_OFFSETS),
                     GS_ERROR_INVALID_ARGUMENT);
        CHECK_HAS(gs_last_error_message(), bad[i].says);
        o[bad[i].index] = bad[i].good;
    }
    CHECK_INT(cuda_log_lines("cuLaunchKernel ") - l0, 0);
    /* unchecked, bad offsets are the kernel's business: one launch */
    o[10] = 1001;
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_SUM, o, 10, out, 0), GS_SUCCESS);
    o[10] = 1000;
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_SUM, o, 10, out, GS_SEGMENTED_CHECK_OFFSETS), GS_SUCCESS);
    /* no segments: nothing to do, nothing launched, no pointer needed */
    CHECK_STATUS(SEG(0, 0, GS_FLOAT32, GS_OP_SUM, NULL, 0, 0, 0), GS_SUCCESS);
    CHECK_INT(cuda_log_lines("cuLaunchKernel ") - l0, 2);
    /* the exact sums' kernel, from the exact-sum module, with the offsets checked too */
    CHECK_STATUS(SEG(in, 500, GS_FLOAT64, GS_OP_SUM, o, 5, out, GS_SEGMENTED_EXACT | GS_SEGMENTED_CHECK_OFFSETS),
                 GS_SUCCESS);
    CHECK_INT(cuda_log_lines("cuLaunchKernel ") - l0, 3);
    log = cuda_log();
    CHECK_HAS(find_line(log, "cuLaunchKernel ", 1), "cuLaunchKernel gs_segexact_f64 grid=");
    free(log);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

/* Only gs_reduce's float32 module is loaded at open; the others (gs_reduce's other float
 * types' and integer types', the segmented and the exact-sum kernels') at the first call
 * of one of their kernels, and each kernel is looked up at its own (backends/common/
 * modules.h): a failure there is the call's status and message, nothing is launched, and
 * the next call tries again. */
static int real_lazy(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4096), offs = app_alloc(8 * 11), out = app_alloc(80);
    live_counts with_buffers = live_now();
    int loads = cuda_log_lines("cuModuleLoadData fatbin"), lookups = cuda_log_lines("cuModuleGetFunction gs_");
    gs_context *ctx = real_context("cuda_sm20");
    if (!ctx)
        return 0;
    CHECK_INT(cuda_log_lines("cuModuleLoadData fatbin") - loads, 1); /* gs_reduce's float32 module alone */
    CHECK_INT(cuda_log_lines("cuModuleGetFunction gs_") - lookups, 0);
    CHECK_STATUS(reduce_f32(ctx, in, 100, out, NULL), GS_SUCCESS);
    CHECK_STATUS(reduce_f32(ctx, in, 100, out, NULL), GS_SUCCESS);
    CHECK_INT(cuda_log_lines("cuModuleGetFunction gs_reduce_f32_sum_f32") - lookups, 1); /* once */
    CHECK_INT(cuda_log_lines("cuModuleLoadData fatbin") - loads, 1);
    /* the integer types' and the other float types' modules at the first of their calls,
     * once each (loads: the modules loaded since before the context, after the call) */
    static const struct {
        gs_dtype dtype;
        gs_op op;
        int loads;
    } firsts[] = {{GS_INT32, GS_OP_MAX, 2}, {GS_UINT8, GS_OP_SUM, 2}, {GS_FLOAT64, GS_OP_MIN, 3}, {GS_BFLOAT16, GS_OP_SUM, 3}};
    for (size_t i = 0; i < sizeof firsts / sizeof firsts[0]; i++) {
        CHECK_STATUS(gs_reduce(ctx, (const void *)(uintptr_t)in, 100, firsts[i].dtype, firsts[i].op,
                               (void *)(uintptr_t)out, NULL),
                     GS_SUCCESS);
        CHECK_INT(cuda_log_lines("cuModuleLoadData fatbin") - loads, firsts[i].loads);
    }
    CHECK_INT(cuda_log_lines("cuModuleGetFunction gs_reduce_i32_max_i32") - lookups, 1);
    int64_t *o = (int64_t *)(uintptr_t)offs;
    for (int j = 0; j <= 10; j++)
        o[j] = 100 * j;
    const int launches = cuda_log_lines("cuLaunchKernel ");
    setenv("FAKE_CUDA_FAIL", "cuModuleLoadData:2", 1); /* CUDA_ERROR_OUT_OF_MEMORY */
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_SUM, o, 10, out, 0), GS_ERROR_OUT_OF_MEMORY);
    CHECK_HAS(gs_last_error_message(), "cuda_sm20 backend: loading its segmented kernels' fatbin");
    CHECK_HAS(gs_last_error_message(), "CUDA_ERROR_OUT_OF_MEMORY");
    CHECK_INT(app.live("stack"), 0);
    unsetenv("FAKE_CUDA_FAIL");
    CHECK_STATUS(SEG(in, 1000, GS_FLOAT32, GS_OP_SUM, o, 10, out, 0), GS_SUCCESS);
    setenv("FAKE_CUDA_FAIL", "cuModuleGetFunction:500", 1); /* CUDA_ERROR_NOT_FOUND */
    gs_reduce_options opt = {.struct_size = sizeof opt, .out_dtype = GS_OUT_DEFAULT, .flags = GS_REDUCE_EXACT};
    CHECK_STATUS(gs_reduce_ex(ctx, (const void *)(uintptr_t)in, 100, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out,
                              NULL, &opt),
                 GS_ERROR_CUDA);
    CHECK_HAS(gs_last_error_message(), "setting up kernel gs_exact_f32");
    CHECK_HAS(gs_last_error_message(), "CUDA_ERROR_NOT_FOUND");
    unsetenv("FAKE_CUDA_FAIL");
    CHECK_INT(cuda_log_lines("cuLaunchKernel ") - launches, 1); /* the segmented one alone */
    CHECK_STATUS(gs_reduce_ex(ctx, (const void *)(uintptr_t)in, 100, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out,
                              NULL, &opt),
                 GS_SUCCESS);
    CHECK_INT(cuda_log_lines("cuModuleLoadData fatbin") - loads, 6); /* f32, floats, ints, segmented twice, exact */
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    CHECK_RELEASED(with_buffers); /* all five modules unloaded */
    return 0;
}

/* ---- a core of an older minor, played by the test -------------------------------------- */

static void older_core_log(int level, const char *fmt, ...)
{
    (void)level;
    (void)fmt;
}

static char g_older_core_error[512];

static void older_core_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_older_core_error, sizeof g_older_core_error, fmt, ap);
    va_end(ap);
}

/* `size` bytes that end where an unreadable page begins: a read past them is a SIGSEGV. */
static void *before_unreadable_page(size_t size)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || mprotect(p + page, page, PROT_NONE) != 0) {
        fprintf(stderr, "FATAL: mmap/mprotect: %s\n", strerror(errno));
        exit(1);
    }
    return p + page - size;
}

/* The last kernel launched, as the fake driver logged it (static storage). */
static const char *last_launch(void)
{
    static char line[512];
    char *log = cuda_log();
    snprintf(line, sizeof line, "%s", find_line(log, "cuLaunchKernel ", 1));
    free(log);
    return line;
}

/*
 * The real backend called by a core of backend ABI 1.1 (gridsync 0.2.0), which this test
 * plays with the frozen 1.1 header: its own host table, args of 1.1's size that end where
 * an unreadable page begins, and no flags. The backend takes the core's minor from its
 * entry point and reads nothing past 1.1's args: a plain reduction and a plain segmented
 * reduction. Then the same backend, called by a 1.2 core, does the exact sums the flags
 * ask for.
 */
static int real_older_core(void)
{
    app_init(1);
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    PFN_cuGetProcAddress_v12000 gpa = cuda ? (PFN_cuGetProcAddress_v12000)dlsym(cuda, "cuGetProcAddress_v2") : NULL;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/gridsync-cuda_sm20.so", REAL_BACKEND_DIR);
    void *be = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!gpa || !be) {
        CHECK_FAIL("cannot load the fake driver or %s: %s", path, dlerror());
        return 0;
    }
    static gs_backend_host_v1_1 host = {.struct_size = sizeof host, .abi_version = GS_BACKEND_ABI_VERSION_V1_1,
                                        .log = older_core_log, .set_error = older_core_set_error};
#define RESOLVE(name, version) APP(gpa(#name, (void **)&host.name, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, NULL))
    RESOLVE(cuGetErrorName, 6000);
    RESOLVE(cuDeviceGetAttribute, 2000);
    RESOLVE(cuModuleLoadData, 2000);
    RESOLVE(cuModuleUnload, 2000);
    RESOLVE(cuModuleGetFunction, 2000);
    RESOLVE(cuFuncGetAttribute, 2020);
    RESOLVE(cuFuncSetAttribute, 9000);
    RESOLVE(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050);
    RESOLVE(cuLaunchKernel, 4000);
#undef RESOLVE
    host.cuGetProcAddress = gpa;

    gs_backend_entry_v1_1_fn entry = (gs_backend_entry_v1_1_fn)dlsym(be, GS_BACKEND_ENTRY_V1_1_NAME);
    const gs_backend_ops_v1_1 *ops = NULL;
    CHECK_STATUS(entry(GS_BACKEND_ABI_VERSION_V1_1, &host, &ops), GS_SUCCESS);
    if (!ops)
        return 0;
    APP(app.push(app.ctx[0]));
    const gs_backend_device_v1_1 dev = {.struct_size = sizeof dev, .device = 0, .context = app.ctx[0], .cc_major = 9,
                                        .cc_minor = 0, .multiprocessor_count = 4,
                                        .max_threads_per_multiprocessor = 2048};
    gs_backend_instance *inst = NULL;
    CHECK_STATUS(ops->open(&dev, &inst), GS_SUCCESS);
    if (!inst)
        return 0;
    const uint64_t ws_bytes = ops->workspace_size(inst);
    CUdeviceptr in = app_alloc(4000), offs = app_alloc(8 * 2), out = app_alloc(80), ws = app_alloc(ws_bytes);
    memset((void *)(uintptr_t)ws, 0, ws_bytes);
    int64_t *o = (int64_t *)(uintptr_t)offs;
    o[0] = 0;
    o[1] = 500;

    gs_backend_reduce_args_v1_1 *r = before_unreadable_page(sizeof *r);
    *r = (gs_backend_reduce_args_v1_1){.struct_size = sizeof *r, .dtype = GS_FLOAT32, .op = GS_OP_SUM,
                                       .out_dtype = GS_FLOAT32, .in = in, .n = 1000, .out = out, .stream = NULL,
                                       .workspace = ws, .workspace_bytes = ws_bytes};
    CHECK_STATUS(ops->reduce(inst, r), GS_SUCCESS);
    CHECK_HAS(last_launch(), "cuLaunchKernel gs_reduce_f32_sum_f32 grid=");
    gs_backend_segmented_args_v1_1 *sa = before_unreadable_page(sizeof *sa);
    *sa = (gs_backend_segmented_args_v1_1){.struct_size = sizeof *sa, .dtype = GS_FLOAT64, .op = GS_OP_SUM,
                                           .out_dtype = GS_FLOAT64, .in = in, .n = 500, .offsets = offs,
                                           .num_segments = 1, .out = out, .stream = NULL, .workspace = ws,
                                           .workspace_bytes = ws_bytes};
    CHECK_STATUS(ops->segmented_reduce(inst, sa), GS_SUCCESS);
    CHECK_HAS(last_launch(), "cuLaunchKernel gs_segreduce_f64_sum_f64 grid=");

    /* A 1.2 core: the flags are read, and asked for exact sums. */
    gs_backend_entry_v1_2_fn entry_1_2 = (gs_backend_entry_v1_2_fn)dlsym(be, GS_BACKEND_ENTRY_V1_2_NAME);
    gs_backend_host_v1_2 host_1_2;
    _Static_assert(sizeof host_1_2 == sizeof host, "1.2 kept 1.1's host table");
    memcpy(&host_1_2, &host, sizeof host);
    host_1_2.abi_version = GS_BACKEND_ABI_VERSION_V1_2;
    const gs_backend_ops_v1_2 *ops_1_2 = NULL;
    CHECK_STATUS(entry_1_2(GS_BACKEND_ABI_VERSION_V1_2, &host_1_2, &ops_1_2), GS_SUCCESS);
    CHECK(ops_1_2 && ops_1_2->query_reduce_flags &&
          ops_1_2->query_reduce_flags(inst, GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, GS_BACKEND_REDUCE_EXACT) == GS_SUCCESS);
    const gs_backend_reduce_args_v1_2 r2 = {.struct_size = sizeof r2, .dtype = GS_FLOAT32, .op = GS_OP_SUM,
                                            .out_dtype = GS_FLOAT32, .in = in, .n = 1000, .out = out, .stream = NULL,
                                            .workspace = ws, .workspace_bytes = ws_bytes,
                                            .flags = GS_BACKEND_REDUCE_EXACT};
    CHECK_STATUS(ops_1_2->reduce(inst, &r2), GS_SUCCESS);
    CHECK_HAS(last_launch(), "cuLaunchKernel gs_exact_f32 grid=");
    const gs_backend_segmented_args_v1_2 s2 = {.struct_size = sizeof s2, .dtype = GS_FLOAT64, .op = GS_OP_SUM,
                                               .out_dtype = GS_FLOAT64, .in = in, .n = 500, .offsets = offs,
                                               .num_segments = 1, .out = out, .stream = NULL, .workspace = ws,
                                               .workspace_bytes = ws_bytes, .flags = GS_BACKEND_SEGMENTED_EXACT};
    CHECK_STATUS(ops_1_2->segmented_reduce(inst, &s2), GS_SUCCESS);
    CHECK_HAS(last_launch(), "cuLaunchKernel gs_segexact_f64 grid=");
    ops->close(inst);
    CUcontext popped = NULL;
    APP(app.pop(&popped));
    return 0;
}

const test_case real_cases[] = {
    CASE_WITH("real-cc90", real_backend, GS_SUCCESS, "cuda_sm20", "FAKE_CUDA_CC=9.0", REAL_PATH),
    CASE_WITH("real-cc20", real_backend, GS_SUCCESS, "cuda_sm20", "FAKE_CUDA_CC=2.0", REAL_PATH),
    CASE_WITH("real-cc13", real_backend, GS_SUCCESS, "cuda_sm11_compat", "FAKE_CUDA_CC=1.3", REAL_PATH),
    CASE("real-kernels", real_kernels, REAL_PATH),
    CASE("real-no-binary", real_no_binary, "FAKE_CUDA_NO_BINARY=1", REAL_PATH),
    CASE("real-launch-error", real_launch_error, REAL_PATH),
    CASE("real-segmented", real_segmented, REAL_PATH),
    CASE("real-lazy", real_lazy, REAL_PATH),
    CASE("real-older-core", real_older_core, REAL_PATH),
    END_OF_CASES,
};
