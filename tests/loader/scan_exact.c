/* loader cases: gs_scan with GS_SCAN_EXACT (GRIDSYNC_1.3) -- carry_in and total handed to
 * the backend's scan args, every refusal of them with its status, and n == 0, which
 * launches when a total is asked for. A 1.2 backend's refusal is in calls.c (older_backend). */
#include "fixture.h"

#include "gridsync_backend.h"

#define ACC_BYTES sizeof(gs_exact_acc)

/* gs_scan with the whole current options struct. */
static gs_status exact_scan(gs_context *ctx, CUdeviceptr in, uint64_t n, gs_dtype dt, gs_op op, int32_t out_dtype,
                            uint32_t flags, CUdeviceptr out, CUdeviceptr carry_in, uint64_t carry_in_count,
                            CUdeviceptr total, gs_stream stream)
{
    const gs_scan_options opts = {.struct_size = sizeof opts, .out_dtype = out_dtype, .flags = flags,
                                  .carry_in = (const gs_exact_acc *)(uintptr_t)carry_in,
                                  .carry_in_count = carry_in_count, .total = (gs_exact_acc *)(uintptr_t)total};
    return gs_scan(ctx, (const void *)(uintptr_t)in, n, dt, op, (void *)(uintptr_t)out, stream, &opts);
}

/* The line the good fake writes for an exact scan on the first workspace. */
typedef struct line_buf {
    char text[512];
} line_buf;
static line_buf exact_line(int dt, int out_dtype, uint64_t n, CUdeviceptr in, CUdeviceptr out, unsigned flags,
                           CUdeviceptr carry_in, uint64_t carry_in_count, CUdeviceptr total, const char *ws)
{
    line_buf line;
    snprintf(line.text, sizeof line.text,
             "fake_good: scan dtype=%d op=0 out=%d n=%llu in=0x%llx out=0x%llx flags=%u carry_in=0x%llx "
             "carry_in_count=%llu total=0x%llx struct_size=%u stream=(nil) ws=#0 %s bytes=enough current=1",
             dt, out_dtype, (unsigned long long)n, (unsigned long long)in, (unsigned long long)out, flags,
             (unsigned long long)carry_in, (unsigned long long)carry_in_count, (unsigned long long)total,
             (unsigned)sizeof(gs_backend_scan_args), ws);
    return line;
}

/* Each call's line, in order, in the good fake's log, each right after its query_scan. */
static void check_lines(const line_buf *want, int calls)
{
    char *log = backend_log();
    CHECK_INT(count_lines(log, "fake_good: scan "), calls);
    int at = 1;
    for (int i = 0; i < calls; i++) {
        const int line = line_number(log, want[i].text, at);
        if (!line) {
            CHECK_FAIL("call %d: no line \"%s\" after line %d in:\n%s", i, want[i].text, at, log);
            break;
        }
        CHECK_INT(line_number(log, "fake_good: query_scan ", at), line - 1);
        at = line + 1;
    }
    free(log);
}

/* carry_in, carry_in_count and total reach the backend as given, with
 * GS_BACKEND_SCAN_EXACT (and EXCLUSIVE) in the args' flags and in query_scan's. */
static int scan_exact_args(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(8000), out = app_alloc(16000), acc = app_alloc(8 * ACC_BYTES);
    gs_context *ctx = create_context("fake_good", NULL);
    if (!ctx)
        return 0;
    const int D = GS_OUT_DEFAULT;
    const uint32_t X = GS_SCAN_EXACT, XE = GS_SCAN_EXACT | GS_SCAN_EXCLUSIVE;
    const CUdeviceptr total = acc + 7 * ACC_BYTES;
    CHECK_STATUS(exact_scan(ctx, in, 1000, GS_FLOAT32, GS_OP_SUM, D, X, out, 0, 0, 0, NULL), GS_SUCCESS);
    CHECK_STATUS(exact_scan(ctx, in, 1000, GS_FLOAT32, GS_OP_SUM, GS_FLOAT64, XE, out, acc, 7, total, NULL),
                 GS_SUCCESS);
    CHECK_STATUS(exact_scan(ctx, in, 999, GS_FLOAT64, GS_OP_SUM, D, X, out + 8, acc + 8, 1, 0, NULL), GS_SUCCESS);
    CHECK_STATUS(exact_scan(ctx, in, 1000, GS_FLOAT64, GS_OP_SUM, D, X, in, 0, 0, acc, NULL), GS_SUCCESS);
    CHECK_INT(backend_log_lines("fake_good: query_scan dtype=4 op=0 out=5 flags=3"), 1);
    CHECK_INT(backend_log_lines("fake_good: query_scan dtype=5 op=0 out=5 flags=2"), 2);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    const line_buf want[] = {
        exact_line(GS_FLOAT32, GS_FLOAT32, 1000, in, out, 2, 0, 0, 0, "new zeroed"),
        exact_line(GS_FLOAT32, GS_FLOAT64, 1000, in, out, 3, acc, 7, total, "kept"),
        exact_line(GS_FLOAT64, GS_FLOAT64, 999, in, out + 8, 2, acc + 8, 1, 0, "kept"),
        exact_line(GS_FLOAT64, GS_FLOAT64, 1000, in, in, 2, 0, 0, acc, "kept"),
    };
    check_lines(want, (int)(sizeof want / sizeof want[0]));
    return 0;
}

/* Every refusal of the exact options, with its status; the backend's scan is never called. */
static int scan_exact_refused(void)
{
    app_init(1);
    /* The spacer keeps ranges that run past the end of acc clear of the other allocations,
     * so that what is refused there is the range, not an overlap. */
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8000), acc = app_alloc(4 * ACC_BYTES),
                spacer = app_alloc(8192);
    gs_context *ctx = create_context("fake_good", NULL);
    if (!ctx)
        return 0;
    const int D = GS_OUT_DEFAULT;
    const uint32_t X = GS_SCAN_EXACT;
    const gs_status INVALID = GS_ERROR_INVALID_ARGUMENT;
#define EXACT(in_, n, dt, op, odt, flags, out_, c, count, t) \
    exact_scan(ctx, in_, n, dt, op, odt, flags, out_, c, count, t, NULL)
    /* flags */
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X | 8u, out, 0, 0, 0), INVALID);
    CHECK_HAS(gs_last_error_message(), "reserved flags 0x8");
    /* carry_in, carry_in_count and total without GS_SCAN_EXACT */
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, 0, out, acc, 1, 0), INVALID);
    CHECK_HAS(gs_last_error_message(), "without GS_SCAN_EXACT");
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, GS_SCAN_EXCLUSIVE, out, 0, 1, 0), INVALID);
    CHECK_HAS(gs_last_error_message(), "without GS_SCAN_EXACT");
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, 0, out, 0, 0, acc), INVALID);
    CHECK_HAS(gs_last_error_message(), "without GS_SCAN_EXACT");
    CHECK_STATUS(EXACT(in, 10, GS_INT32, GS_OP_MIN, D, 0, out, 0, 0, acc), INVALID);
    /* carry_in and its count: NULL with 0 and only with 0 */
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, 0, 3, 0), INVALID);
    CHECK_HAS(gs_last_error_message(), "carry_in = (nil) with carry_in_count = 3");
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, acc, 0, 0), INVALID);
    CHECK_HAS(gs_last_error_message(), "carry_in_count = 0");
    /* what exact scans are: float SUMs into the input's type or a wider float */
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_MAX, D, X, out, 0, 0, 0), GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "GS_SCAN_EXACT scans are float SUMs");
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT64, GS_OP_PROD, D, X, out, 0, 0, acc), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(EXACT(in, 10, GS_INT32, GS_OP_SUM, D, X, out, 0, 0, 0), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(EXACT(in, 10, GS_INT32, GS_OP_SUM, GS_INT64, X, out, 0, 0, 0), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(EXACT(in, 10, GS_UINT8, GS_OP_SUM, D, X, out, 0, 0, 0), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT64, GS_OP_SUM, GS_FLOAT32, X, out, 0, 0, 0), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT16, GS_OP_MIN, GS_FLOAT32, X, out, 0, 0, 0), GS_ERROR_UNSUPPORTED);
    CHECK_INT(backend_log_lines("fake_good: query_scan "), 0); /* none of these asked the backend */
    /* the backend's answer: the fake has no exact scan of float16 (or of bfloat16 at all),
     * though it scans float16 otherwise */
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT16, GS_OP_SUM, GS_FLOAT32, X, out, 0, 0, 0), GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "fake_good does not offer exact scans of sum over f16 into f32");
    CHECK_INT(backend_log_lines("fake_good: query_scan dtype=6 op=0 out=4 flags=2"), 1);
    CHECK_STATUS(EXACT(in, 10, GS_BFLOAT16, GS_OP_SUM, D, X | GS_SCAN_EXCLUSIVE, out, 0, 0, 0), GS_ERROR_UNSUPPORTED);
    CHECK_INT(backend_log_lines("fake_good: query_scan dtype=7 op=0 out=7 flags=3"), 1);
    /* misaligned accumulators */
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, acc + 4, 1, 0), INVALID);
    CHECK_HAS(gs_last_error_message(), "carry_in = ");
    CHECK_HAS(gs_last_error_message(), "not aligned to 8 bytes");
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, 0, 0, acc + 1), INVALID);
    CHECK_HAS(gs_last_error_message(), "total = ");
    CHECK_HAS(gs_last_error_message(), "not aligned to 8 bytes");
    /* counts whose bytes overflow or wrap around memory */
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, acc, UINT64_MAX, 0), INVALID);
    CHECK_HAS(gs_last_error_message(), "wraps around memory");
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, acc, UINT64_MAX / ACC_BYTES + 1, 0), INVALID);
    CHECK_HAS(gs_last_error_message(), "carry_in = ");
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, 0, 0, UINT64_MAX - 7), INVALID);
    CHECK_HAS(gs_last_error_message(), "total = 0xfffffffffffffff8 + 1 accumulators");
    /* no overlap among in, out, carry_in and total, even by one byte (in == out aside) */
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, in + 32, 1, 0), INVALID);
    CHECK_HAS(gs_last_error_message(), "in = ");
    CHECK_HAS(gs_last_error_message(), "carry_in = ");
    CHECK_HAS(gs_last_error_message(), "overlap");
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, out + 40 - 8, 1, 0), INVALID);
    CHECK_HAS(gs_last_error_message(), "out = ");
    CHECK_STATUS(EXACT(acc + 2 * ACC_BYTES, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, acc, 3, 0), INVALID);
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, 0, 0, in), INVALID);
    CHECK_HAS(gs_last_error_message(), "total = ");
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, GS_FLOAT64, X, out, 0, 0, out + 72), INVALID);
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, in, 0, 0, in + 8), INVALID); /* in place */
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, acc, 2, acc + ACC_BYTES), INVALID);
    CHECK_HAS(gs_last_error_message(), "carry_in = ");
    CHECK_HAS(gs_last_error_message(), "total = ");
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, acc + 8, 1, acc), INVALID);
    /* memory the device cannot reach, and ranges past the end of their allocation */
    static gs_exact_acc host_acc[2];
    const CUdeviceptr host = (CUdeviceptr)(uintptr_t)host_acc;
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, host, 2, 0), GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "carry_in = ");
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, 0, 0, host), GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "total = ");
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, acc, 5, 0), INVALID);
    CHECK_HAS(gs_last_error_message(), "carry_in = ");
    CHECK_HAS(gs_last_error_message(), "past the end");
    CHECK_STATUS(EXACT(in, 10, GS_FLOAT32, GS_OP_SUM, D, X, out, acc, 1, acc + 3 * ACC_BYTES + 8), INVALID);
    CHECK_HAS(gs_last_error_message(), "total = ");
    CHECK_HAS(gs_last_error_message(), "past the end");
#undef EXACT
    CHECK_INT(backend_log_lines("fake_good: scan "), 0);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    app_free(spacer);
    return 0;
}

/* n == 0 with a total launches (the backend writes the empty accumulator; in and out reach
 * it as 0 whatever was passed), after every check a launch has; without a total it queues
 * nothing and needs no context, so no driver either (the NO_DRIVER case). */
static int scan_exact_empty(const test_case *c)
{
    const int with_driver = c->arg[0] == 'y';
    gs_context *ctx = NULL;
    CUdeviceptr acc = 0;
    if (with_driver) {
        app_init(1);
        acc = app_alloc(4 * ACC_BYTES);
        ctx = create_context("fake_good", NULL);
        if (!ctx)
            return 0;
    }
    const uint32_t X = GS_SCAN_EXACT;
    const int D = GS_OUT_DEFAULT;
    /* no total: nothing queued, no pointer looked at (a carry_in is checked for its count) */
    CHECK_STATUS(exact_scan(ctx, 0, 0, GS_FLOAT32, GS_OP_SUM, D, X, 0, 0, 0, 0, NULL), GS_SUCCESS);
    CHECK_STATUS(exact_scan(ctx, 3, 0, GS_FLOAT64, GS_OP_SUM, D, X, 5, 12, 2, 0, NULL), GS_SUCCESS);
    CHECK_STATUS(exact_scan(NULL, 0, 0, GS_FLOAT16, GS_OP_SUM, GS_FLOAT32, X, 0, 0, 0, 0, NULL), GS_SUCCESS);
    CHECK_STATUS(exact_scan(ctx, 0, 0, GS_FLOAT32, GS_OP_SUM, D, X, 0, 8, 0, 0, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(exact_scan(ctx, 0, 0, GS_FLOAT32, GS_OP_SUM, D, 0, 0, 0, 0, 8, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(exact_scan(ctx, 0, 0, GS_INT32, GS_OP_SUM, D, X, 0, 0, 0, 8, NULL), GS_ERROR_UNSUPPORTED);
    CHECK_INT(backend_log_lines("scan "), 0);
    if (!with_driver) {
        /* a total needs the launch, so the driver: its absence is the answer */
        CHECK_STATUS(exact_scan(NULL, 0, 0, GS_FLOAT32, GS_OP_SUM, D, X, 0, 0, 0, 4096, NULL), GS_ERROR_NO_DRIVER);
        CHECK_INT(backend_log_lines(""), 0); /* no backend was even loaded */
        return 0;
    }
    const CUdeviceptr total = acc + 3 * ACC_BYTES;
    CHECK_STATUS(exact_scan(ctx, 0, 0, GS_FLOAT32, GS_OP_SUM, D, X, 0, 0, 0, total, NULL), GS_SUCCESS);
    CHECK_STATUS(exact_scan(ctx, 3, 0, GS_FLOAT32, GS_OP_SUM, GS_FLOAT64, X | GS_SCAN_EXCLUSIVE, 5, acc, 3, total,
                            NULL),
                 GS_SUCCESS);
    /* the launch's checks: the accumulators' alignment and memory, the backend's answer */
    CHECK_STATUS(exact_scan(ctx, 0, 0, GS_FLOAT32, GS_OP_SUM, D, X, 0, 0, 0, total + 4, NULL),
                 GS_ERROR_INVALID_ARGUMENT);
    static gs_exact_acc host_total;
    CHECK_STATUS(exact_scan(ctx, 0, 0, GS_FLOAT64, GS_OP_SUM, D, X, 0, 0, 0, (CUdeviceptr)(uintptr_t)&host_total,
                            NULL),
                 GS_ERROR_INVALID_POINTER);
    CHECK_STATUS(exact_scan(ctx, 0, 0, GS_FLOAT32, GS_OP_SUM, D, X, 0, acc, 3, acc + 2 * ACC_BYTES, NULL),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "overlap");
    CHECK_STATUS(exact_scan(ctx, 0, 0, GS_FLOAT16, GS_OP_SUM, D, X, 0, 0, 0, total, NULL), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    const line_buf want[] = {
        exact_line(GS_FLOAT32, GS_FLOAT32, 0, 0, 0, 2, 0, 0, total, "new zeroed"),
        exact_line(GS_FLOAT32, GS_FLOAT64, 0, 0, 0, 3, acc, 3, total, "kept"),
    };
    check_lines(want, (int)(sizeof want / sizeof want[0]));
    return 0;
}

/* n == 0 with a total, on a stream of device 1's context handed to a context of device 0:
 * GS_ERROR_INVALID_CONTEXT, as for any launch, nothing queued. */
static int scan_exact_empty_other_stream(void)
{
    app_init(2);
    CUdeviceptr total = app_alloc(ACC_BYTES);
    CUstream other = app_stream_of(1);
    gs_context *ctx = create_context("fake_good", NULL);
    if (!ctx)
        return 0;
    CHECK_STATUS(exact_scan(ctx, 0, 0, GS_FLOAT64, GS_OP_SUM, GS_OUT_DEFAULT, GS_SCAN_EXACT, 0, 0, 0, total,
                            (gs_stream)other),
                 GS_ERROR_INVALID_CONTEXT);
    CHECK_HAS(gs_last_error_message(), "stream");
    CHECK_INT(backend_log_lines("fake_good: scan "), 0);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    APP(app.stream_destroy(other));
    return 0;
}

const test_case scan_exact_cases[] = {
    CASE("scan-exact-args", scan_exact_args, USE_GOOD),
    CASE("scan-exact-refused", scan_exact_refused, USE_GOOD),
    CASE_WITH("scan-exact-empty", scan_exact_empty, GS_SUCCESS, "yes", USE_GOOD),
    CASE_WITH("scan-exact-empty-no-driver", scan_exact_empty, GS_SUCCESS, "no", NO_DRIVER, USE_GOOD),
    CASE("scan-exact-empty-other-stream", scan_exact_empty_other_stream, "FAKE_CUDA_DEVICES=2", USE_GOOD),
    END_OF_CASES,
};
