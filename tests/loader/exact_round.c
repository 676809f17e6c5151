/* loader cases: gs_exact_round_device (GRIDSYNC_1.3) -- what the core hands a backend's 1.3
 * exact_round op (the good fake records it), what it refuses before calling it, and
 * count == 0. Older backends' UNSUPPORTED is in calls.c (older_backend). */
#include "fixture.h"

#include "gridsync_backend.h"

#define ACC_BYTES sizeof(gs_exact_acc)

static gs_status round_at(gs_context *ctx, CUdeviceptr acc, uint64_t count, gs_dtype out_dtype, CUdeviceptr out,
                          gs_stream stream)
{
    return gs_exact_round_device(ctx, (const gs_exact_acc *)(uintptr_t)acc, count, out_dtype, (void *)(uintptr_t)out,
                                 stream);
}

/* The line the good fake writes for one call. */
typedef struct line_buf {
    char text[256];
} line_buf;
static line_buf round_line(int out_dtype, uint64_t count, CUdeviceptr acc, CUdeviceptr out, CUstream stream)
{
    line_buf line;
    snprintf(line.text, sizeof line.text,
             "fake_good: exact_round out=%d count=%llu acc=0x%llx out=0x%llx struct_size=%u stream=%p current=1",
             out_dtype, (unsigned long long)count, (unsigned long long)acc, (unsigned long long)out,
             (unsigned)sizeof(gs_backend_exact_round_args), (void *)stream);
    return line;
}

/* Each call reaches the backend once, in order, with its own arguments, the context
 * current; no workspace is made for it. */
static int exact_round_args(void)
{
    app_init(1);
    CUdeviceptr acc = app_alloc(10 * ACC_BYTES), out = app_alloc(80);
    CUstream s = app_stream();
    gs_context *ctx = create_context("fake_good", NULL);
    if (!ctx)
        return 0;
    const long mem_before = app.live("mem");
    CHECK_STATUS(round_at(ctx, acc, 10, GS_FLOAT64, out, NULL), GS_SUCCESS);
    CHECK_STATUS(round_at(ctx, acc, 1, GS_FLOAT32, out + 4, s), GS_SUCCESS);
    CHECK_STATUS(round_at(ctx, acc + ACC_BYTES, 9, GS_FLOAT16, out + 2, s), GS_SUCCESS);
    CHECK_INT(app.live("mem"), mem_before); /* no workspace, and none for the new stream */
    CHECK_STATUS(round_at(NULL, acc + 8, 3, GS_BFLOAT16, out + 74, NULL), GS_SUCCESS); /* the default context */
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);

    char *log = backend_log();
    const line_buf want[] = {
        round_line(GS_FLOAT64, 10, acc, out, NULL),
        round_line(GS_FLOAT32, 1, acc, out + 4, s),
        round_line(GS_FLOAT16, 9, acc + ACC_BYTES, out + 2, s),
        round_line(GS_BFLOAT16, 3, acc + 8, out + 74, NULL),
    };
    const int calls = (int)(sizeof want / sizeof want[0]);
    CHECK_INT(count_lines(log, "fake_good: exact_round "), calls);
    int at = 1;
    for (int i = 0; i < calls; i++) {
        const int line = line_number(log, want[i].text, at);
        if (!line) {
            CHECK_FAIL("call %d: no line \"%s\" after line %d in:\n%s", i, want[i].text, at, log);
            break;
        }
        at = line + 1;
    }
    CHECK_INT(count_lines(log, "fake_good: reduce "), 0);
    free(log);
    APP(app.stream_destroy(s)); /* the application's own stream: not gridsync's to free */
    return 0;
}

/* Every argument gridsync.h refuses, refused with its status and a message naming it; the
 * backend's exact_round is never called. */
static int exact_round_refused(void)
{
    app_init(1);
    /* The spacer keeps the ranges that run past the end of acc (or out) clear of the other
     * allocation, so that what is refused there is the range, not an overlap. */
    CUdeviceptr out = app_alloc(64), spacer = app_alloc(8192), acc = app_alloc(4 * ACC_BYTES);
    gs_context *ctx = create_context("fake_good", NULL);
    if (!ctx)
        return 0;
    /* out_dtype: not a gs_dtype, or not a float type */
    CHECK_STATUS(round_at(ctx, acc, 4, (gs_dtype)10, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "gs_exact_round_device: out_dtype 10 is not a float type");
    CHECK_STATUS(round_at(ctx, acc, 4, (gs_dtype)-1, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(round_at(ctx, acc, 4, GS_INT64, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "out_dtype");
    CHECK_STATUS(round_at(ctx, acc, 4, GS_INT32, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(round_at(ctx, acc, 4, GS_UINT8, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    /* NULL with count > 0 */
    CHECK_STATUS(round_at(ctx, 0, 4, GS_FLOAT32, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "acc is NULL but count is 4");
    CHECK_STATUS(round_at(ctx, acc, 1, GS_FLOAT32, 0, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "out is NULL but count is 1");
    /* misaligned: acc to 8 bytes, out to its result's size */
    CHECK_STATUS(round_at(ctx, acc + 4, 1, GS_FLOAT32, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "acc = ");
    CHECK_HAS(gs_last_error_message(), "not aligned to 8 bytes");
    CHECK_STATUS(round_at(ctx, acc + 1, 1, GS_FLOAT16, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(round_at(ctx, acc, 1, GS_FLOAT64, out + 4, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "out = ");
    CHECK_HAS(gs_last_error_message(), "not aligned to its f64 results");
    CHECK_STATUS(round_at(ctx, acc, 1, GS_FLOAT32, out + 2, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(round_at(ctx, acc, 1, GS_BFLOAT16, out + 1, NULL), GS_ERROR_INVALID_ARGUMENT);
    /* counts whose bytes overflow, or whose ranges wrap around memory */
    CHECK_STATUS(round_at(ctx, acc, UINT64_MAX, GS_FLOAT16, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "wrap around memory");
    CHECK_STATUS(round_at(ctx, acc, UINT64_MAX / ACC_BYTES + 1, GS_FLOAT16, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "accumulators");
    CHECK_STATUS(round_at(ctx, 8, UINT64_MAX / ACC_BYTES - 1, GS_FLOAT64, UINT64_MAX - 15, NULL),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "results of f64");
    /* out overlapping the accumulators, even by one byte */
    CHECK_STATUS(round_at(ctx, acc, 4, GS_FLOAT64, acc, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "overlap");
    CHECK_STATUS(round_at(ctx, acc, 2, GS_FLOAT16, acc + 2 * ACC_BYTES - 2, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(round_at(ctx, acc + ACC_BYTES, 1, GS_FLOAT64, acc + ACC_BYTES - 8, NULL), GS_SUCCESS);
    /* past the end of an allocation, and host memory */
    CHECK_STATUS(round_at(ctx, acc, 5, GS_FLOAT32, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "acc = ");
    CHECK_HAS(gs_last_error_message(), "past the end");
    CHECK_STATUS(round_at(ctx, acc, 4, GS_FLOAT64, out + 40, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "out = ");
    CHECK_HAS(gs_last_error_message(), "past the end");
    static gs_exact_acc host_acc[2];
    CHECK_STATUS(gs_exact_round_device(ctx, host_acc, 2, GS_FLOAT32, (void *)(uintptr_t)out, NULL),
                 GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "acc = ");
    double host_out[2];
    CHECK_STATUS(gs_exact_round_device(ctx, (const gs_exact_acc *)(uintptr_t)acc, 2, GS_FLOAT64, host_out, NULL),
                 GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "out = ");

    CHECK_INT(backend_log_lines("fake_good: exact_round "), 1); /* the one valid call above */
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    app_free(spacer);
    return 0;
}

/* A stream of device 1's context handed to a context of device 0: GS_ERROR_INVALID_CONTEXT,
 * nothing queued (the check a workspace's first use makes elsewhere). */
static int exact_round_other_stream(void)
{
    app_init(2);
    CUdeviceptr acc = app_alloc(ACC_BYTES), out = app_alloc(8);
    CUstream other = app_stream_of(1);
    gs_context *ctx = create_context("fake_good", NULL);
    if (!ctx)
        return 0;
    CHECK_STATUS(round_at(ctx, acc, 1, GS_FLOAT64, out, (gs_stream)other), GS_ERROR_INVALID_CONTEXT);
    CHECK_HAS(gs_last_error_message(), "stream");
    CHECK_INT(backend_log_lines("fake_good: exact_round "), 0);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    APP(app.stream_destroy(other));
    return 0;
}

/* count == 0 queues nothing and succeeds with NULL pointers once out_dtype passes; it needs
 * no context, so no driver either (the NO_DRIVER case). */
static int exact_round_empty(const test_case *c)
{
    const int with_driver = c->arg[0] == 'y';
    gs_context *ctx = NULL;
    if (with_driver) {
        app_init(1);
        ctx = create_context("fake_good", NULL);
        if (!ctx)
            return 0;
    }
    CHECK_STATUS(gs_exact_round_device(ctx, NULL, 0, GS_FLOAT32, NULL, NULL), GS_SUCCESS);
    CHECK_STATUS(gs_exact_round_device(NULL, NULL, 0, GS_FLOAT16, NULL, NULL), GS_SUCCESS);
    /* misaligned pointers are not looked at either */
    CHECK_STATUS(gs_exact_round_device(ctx, (const gs_exact_acc *)(uintptr_t)3, 0, GS_FLOAT64, (void *)(uintptr_t)1,
                                       NULL),
                 GS_SUCCESS);
    CHECK_STATUS(gs_exact_round_device(ctx, NULL, 0, GS_INT32, NULL, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(gs_exact_round_device(ctx, NULL, 0, (gs_dtype)99, NULL, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_INT(backend_log_lines("exact_round "), 0);
    if (with_driver)
        CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    else
        CHECK_INT(backend_log_lines(""), 0); /* no backend was even loaded */
    return 0;
}

const test_case exact_round_cases[] = {
    CASE("exact-round-args", exact_round_args, USE_GOOD),
    CASE("exact-round-refused", exact_round_refused, USE_GOOD),
    CASE("exact-round-other-stream", exact_round_other_stream, "FAKE_CUDA_DEVICES=2", USE_GOOD),
    CASE_WITH("exact-round-empty", exact_round_empty, GS_SUCCESS, "yes", USE_GOOD),
    CASE_WITH("exact-round-empty-no-driver", exact_round_empty, GS_SUCCESS, "no", NO_DRIVER, USE_GOOD),
    END_OF_CASES,
};
