/* loader cases: gs_scan (GRIDSYNC_1.3) -- what the core hands a backend's 1.3 scan op (the
 * good fake records it), what it refuses before asking, and n == 0. Older backends' answers
 * are in calls.c (older_backend). */
#include "fixture.h"

#include <stddef.h>

#include "gridsync_backend.h"

static gs_status scan_as(gs_context *ctx, CUdeviceptr in, uint64_t n, gs_dtype dt, gs_op op, int32_t out_dtype,
                         uint32_t flags, CUdeviceptr out, gs_stream stream)
{
    const gs_scan_options opts = {.struct_size = sizeof opts, .out_dtype = out_dtype, .flags = flags};
    return gs_scan(ctx, (const void *)(uintptr_t)in, n, dt, op, (void *)(uintptr_t)out, stream, &opts);
}

/* The line the good fake writes for a scan; `ws` is its workspace's number and state. */
typedef struct line_buf {
    char text[512];
} line_buf;
static line_buf scan_line(int dt, int op, int out_dtype, uint64_t n, CUdeviceptr in, CUdeviceptr out, unsigned flags,
                          CUstream stream, const char *ws)
{
    line_buf line;
    snprintf(line.text, sizeof line.text,
             "fake_good: scan dtype=%d op=%d out=%d n=%llu in=0x%llx out=0x%llx flags=%u carry_in=0x0 "
             "carry_in_count=0 total=0x0 struct_size=%u stream=%p ws=%s bytes=enough current=1",
             dt, op, out_dtype, (unsigned long long)n, (unsigned long long)in, (unsigned long long)out, flags,
             (unsigned)sizeof(gs_backend_scan_args), (void *)stream, ws);
    return line;
}

/* Every call that reaches the backend, with the args resolved as gridsync.h says: the
 * output type (default, wider), the flags, n, the pointers, the stream's workspace; and
 * query_scan asked with the same triple right before each scan. */
static int scan_args(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(8000), out = app_alloc(16000);
    CUstream s = app_stream();
    gs_context *ctx = create_context("fake_good", NULL);
    if (!ctx)
        return 0;
    const void *pin = (const void *)(uintptr_t)in;
    void *pout = (void *)(uintptr_t)out;

    CHECK_STATUS(gs_scan(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, pout, NULL, NULL), GS_SUCCESS);
    CHECK_STATUS(scan_as(ctx, in, 1000, GS_INT32, GS_OP_SUM, GS_INT64, GS_SCAN_EXCLUSIVE, out, NULL), GS_SUCCESS);
    CHECK_STATUS(scan_as(ctx, in, 999, GS_FLOAT16, GS_OP_MAX, GS_FLOAT32, 0, out + 4, NULL), GS_SUCCESS);
    CHECK_STATUS(scan_as(ctx, in, 7, GS_UINT8, GS_OP_BIT_XOR, GS_OUT_DEFAULT, GS_SCAN_EXCLUSIVE, out, s), GS_SUCCESS);
    /* In place, and the two ranges touching without overlapping. */
    CHECK_STATUS(gs_scan(ctx, pin, 1000, GS_FLOAT64, GS_OP_PROD, (void *)(uintptr_t)in, NULL, NULL), GS_SUCCESS);
    CHECK_STATUS(scan_as(ctx, in, 1000, GS_INT32, GS_OP_MIN, GS_OUT_DEFAULT, 0, in + 4000, NULL), GS_SUCCESS);

    /* A caller built before flags existed (struct_size 8): flags is not read, whatever
     * lies there; one built before carry_in existed (12): neither are carry_in,
     * carry_in_count and total; one built against a longer struct: the rest is ignored. */
    struct {
        gs_scan_options o;
        uint32_t future[4];
    } big;
    memset(&big, 0xff, sizeof big);
    big.o.struct_size = offsetof(gs_scan_options, flags);
    big.o.out_dtype = GS_OUT_DEFAULT;
    CHECK_STATUS(gs_scan(ctx, pin, 10, GS_INT64, GS_OP_MAX, pout, NULL, &big.o), GS_SUCCESS);
    big.o.struct_size = offsetof(gs_scan_options, flags) + sizeof big.o.flags;
    big.o.flags = GS_SCAN_EXCLUSIVE;
    CHECK_STATUS(gs_scan(ctx, pin, 12, GS_INT64, GS_OP_MAX, pout, NULL, &big.o), GS_SUCCESS);
    big.o.struct_size = sizeof big;
    big.o.carry_in = NULL;
    big.o.carry_in_count = 0;
    big.o.total = NULL;
    CHECK_STATUS(gs_scan(ctx, pin, 11, GS_INT64, GS_OP_MAX, pout, NULL, &big.o), GS_SUCCESS);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);

    char *log = backend_log();
    const line_buf want[] = {
        scan_line(GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, 1000, in, out, 0, NULL, "#0 new zeroed"),
        scan_line(GS_INT32, GS_OP_SUM, GS_INT64, 1000, in, out, 1, NULL, "#0 kept"),
        scan_line(GS_FLOAT16, GS_OP_MAX, GS_FLOAT32, 999, in, out + 4, 0, NULL, "#0 kept"),
        scan_line(GS_UINT8, GS_OP_BIT_XOR, GS_UINT8, 7, in, out, 1, s, "#1 new zeroed"),
        scan_line(GS_FLOAT64, GS_OP_PROD, GS_FLOAT64, 1000, in, in, 0, NULL, "#0 kept"),
        scan_line(GS_INT32, GS_OP_MIN, GS_INT32, 1000, in, in + 4000, 0, NULL, "#0 kept"),
        scan_line(GS_INT64, GS_OP_MAX, GS_INT64, 10, in, out, 0, NULL, "#0 kept"),
        scan_line(GS_INT64, GS_OP_MAX, GS_INT64, 12, in, out, 1, NULL, "#0 kept"),
        scan_line(GS_INT64, GS_OP_MAX, GS_INT64, 11, in, out, 1, NULL, "#0 kept"),
    };
    const int calls = (int)(sizeof want / sizeof want[0]);
    CHECK_INT(count_lines(log, "fake_good: scan "), calls);
    CHECK_INT(count_lines(log, "fake_good: query_scan "), calls);
    int at = 1;
    for (int i = 0; i < calls; i++) {
        /* in order, each whole line as expected ... */
        const int line = line_number(log, want[i].text, at);
        if (!line) {
            CHECK_FAIL("call %d: no line \"%s\" after line %d in:\n%s", i, want[i].text, at, log);
            break;
        }
        /* ... right after query_scan of its triple and flags */
        char q[128];
        const char *dt = strstr(want[i].text, "dtype="), *end = strstr(want[i].text, " n=");
        const char *flags = strstr(want[i].text, " flags="), *flags_end = strstr(want[i].text, " carry_in=");
        snprintf(q, sizeof q, "fake_good: query_scan %.*s%.*s", (int)(end - dt), dt, (int)(flags_end - flags), flags);
        CHECK_INT(line_number(log, q, at), line - 1);
        at = line + 1;
    }
    CHECK_INT(count_lines(log, "current=0"), 0);
    free(log);
    APP(app.stream_destroy(s)); /* the application's own stream: not gridsync's to free */
    return 0;
}

/* Every argument gridsync.h refuses, refused with its status; the backend's scan is never
 * called. (query_scan is asked once the checks that need no driver pass, before the
 * pointer queries, as query_reduce's answers are consulted for gs_reduce.) */
static int scan_refused(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(4000), small = app_alloc(16);
    gs_context *ctx = create_context("fake_good", NULL);
    if (!ctx)
        return 0;
    const void *pin = (const void *)(uintptr_t)in;
    void *pout = (void *)(uintptr_t)out;
    const int D = GS_OUT_DEFAULT;

    /* ops and types */
    CHECK_STATUS(gs_scan(ctx, pin, 10, GS_FLOAT32, GS_OP_ARGMIN, pout, NULL, NULL), GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "gs_scan: ARGMIN/ARGMAX have no scan");
    CHECK_STATUS(gs_scan(ctx, pin, 10, GS_INT32, GS_OP_ARGMAX, pout, NULL, NULL), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(gs_scan(ctx, pin, 10, GS_FLOAT32, GS_OP_BIT_AND, pout, NULL, NULL), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(gs_scan(ctx, pin, 10, GS_BFLOAT16, GS_OP_BIT_XOR, pout, NULL, NULL), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(gs_scan(ctx, pin, 10, (gs_dtype)10, GS_OP_SUM, pout, NULL, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "dtype");
    CHECK_STATUS(gs_scan(ctx, pin, 10, (gs_dtype)-1, GS_OP_SUM, pout, NULL, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(gs_scan(ctx, pin, 10, GS_INT32, (gs_op)9, pout, NULL, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "op");
    CHECK_STATUS(scan_as(ctx, in, 10, GS_INT32, GS_OP_SUM, 10, 0, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "out_dtype");
    /* outputs beyond the table: a wider MIN of int32, a narrower float64 SUM, int8 -> int32 */
    CHECK_STATUS(scan_as(ctx, in, 10, GS_INT32, GS_OP_MIN, GS_INT64, 0, out, NULL), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(scan_as(ctx, in, 10, GS_FLOAT64, GS_OP_SUM, GS_FLOAT32, 0, out, NULL), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(scan_as(ctx, in, 10, GS_INT8, GS_OP_SUM, GS_INT32, 0, out, NULL), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(scan_as(ctx, in, 10, GS_UINT32, GS_OP_BIT_OR, GS_UINT64, 0, out, NULL), GS_ERROR_UNSUPPORTED);
    /* the options */
    gs_scan_options o = {.struct_size = 0, .out_dtype = D, .flags = 0};
    for (uint32_t size = 0; size < offsetof(gs_scan_options, flags); size++) {
        o.struct_size = size;
        CHECK_STATUS(gs_scan(ctx, pin, 10, GS_FLOAT32, GS_OP_SUM, pout, NULL, &o), GS_ERROR_INVALID_ARGUMENT);
    }
    CHECK_HAS(gs_last_error_message(), "struct_size");
    CHECK_STATUS(scan_as(ctx, in, 10, GS_FLOAT32, GS_OP_SUM, D, 4u, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "reserved flags 0x4");
    CHECK_STATUS(scan_as(ctx, in, 10, GS_FLOAT32, GS_OP_SUM, D, 0x80000001u, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    /* pointers: NULL, misaligned, overlapping, wrapping, past the allocation, host memory */
    CHECK_STATUS(gs_scan(ctx, pin, 10, GS_FLOAT32, GS_OP_SUM, NULL, NULL, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "out is NULL");
    CHECK_STATUS(gs_scan(ctx, NULL, 10, GS_FLOAT32, GS_OP_SUM, pout, NULL, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "in is NULL");
    CHECK_STATUS(scan_as(ctx, in + 2, 10, GS_FLOAT32, GS_OP_SUM, D, 0, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "in = ");
    CHECK_STATUS(scan_as(ctx, in, 10, GS_FLOAT32, GS_OP_SUM, D, 0, out + 2, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "out = ");
    CHECK_STATUS(scan_as(ctx, in, 10, GS_INT32, GS_OP_SUM, GS_INT64, 0, out + 4, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(scan_as(ctx, in, 10, GS_FLOAT32, GS_OP_SUM, D, 0, in + 4, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "overlap");
    CHECK_STATUS(scan_as(ctx, in + 4, 10, GS_FLOAT32, GS_OP_SUM, D, 0, in, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(scan_as(ctx, in, 10, GS_INT32, GS_OP_SUM, GS_INT64, 0, in + 32, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(scan_as(ctx, in, 10, GS_INT32, GS_OP_SUM, GS_INT64, 0, in, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "in place");
    CHECK_STATUS(scan_as(ctx, in, 1ull << 62, GS_FLOAT32, GS_OP_SUM, D, 0, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "wrap");
    CHECK_STATUS(scan_as(ctx, in, UINT64_MAX, GS_UINT8, GS_OP_SUM, D, 0, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(scan_as(ctx, in, UINT64_MAX / 8, GS_UINT8, GS_OP_SUM, GS_UINT64, 0, out, NULL),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(scan_as(ctx, in, 1001, GS_FLOAT32, GS_OP_SUM, D, 0, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "past the end");
    CHECK_STATUS(scan_as(ctx, in, 4, GS_INT32, GS_OP_SUM, GS_INT64, 0, small, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "out = ");
    float host[10] = {0};
    CHECK_STATUS(gs_scan(ctx, host, 10, GS_FLOAT32, GS_OP_SUM, pout, NULL, NULL), GS_ERROR_INVALID_POINTER);
    /* valid, but the backend's query_scan refuses it (the fake refuses bfloat16) */
    CHECK_STATUS(scan_as(ctx, in, 10, GS_BFLOAT16, GS_OP_SUM, GS_FLOAT32, 0, out, NULL), GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "fake_good does not offer scans of sum over bf16 into f32");
    CHECK_INT(backend_log_lines("fake_good: query_scan dtype=7 op=0 out=4 flags=0"), 1);

    CHECK_INT(backend_log_lines("fake_good: scan "), 0);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

/* n == 0 queues nothing and succeeds with NULL pointers once dtype, op and the options pass;
 * it needs no context, so no driver either (the NO_DRIVER case). */
static int scan_empty(const test_case *c)
{
    const int with_driver = c->arg[0] == 'y';
    gs_context *ctx = NULL;
    if (with_driver) {
        app_init(1);
        ctx = create_context("fake_good", NULL);
        if (!ctx)
            return 0;
    }
    const gs_scan_options excl = {.struct_size = sizeof excl, .out_dtype = GS_INT64, .flags = GS_SCAN_EXCLUSIVE};
    CHECK_STATUS(gs_scan(ctx, NULL, 0, GS_FLOAT32, GS_OP_SUM, NULL, NULL, NULL), GS_SUCCESS);
    CHECK_STATUS(gs_scan(NULL, NULL, 0, GS_INT32, GS_OP_SUM, NULL, NULL, &excl), GS_SUCCESS);
    CHECK_STATUS(gs_scan(ctx, NULL, 0, GS_BFLOAT16, GS_OP_MIN, NULL, NULL, NULL), GS_SUCCESS);
    CHECK_STATUS(gs_scan(ctx, NULL, 0, GS_FLOAT32, GS_OP_ARGMIN, NULL, NULL, NULL), GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(gs_scan(ctx, NULL, 0, GS_FLOAT32, (gs_op)42, NULL, NULL, NULL), GS_ERROR_INVALID_ARGUMENT);
    const gs_scan_options bad_size = {.struct_size = 4, .out_dtype = GS_OUT_DEFAULT};
    CHECK_STATUS(gs_scan(ctx, NULL, 0, GS_FLOAT32, GS_OP_SUM, NULL, NULL, &bad_size), GS_ERROR_INVALID_ARGUMENT);
    const gs_scan_options bad_flags = {.struct_size = sizeof bad_flags, .out_dtype = GS_OUT_DEFAULT, .flags = 4};
    CHECK_STATUS(gs_scan(ctx, NULL, 0, GS_FLOAT32, GS_OP_SUM, NULL, NULL, &bad_flags), GS_ERROR_INVALID_ARGUMENT);
    const gs_scan_options narrow = {.struct_size = sizeof narrow, .out_dtype = GS_FLOAT16};
    CHECK_STATUS(gs_scan(ctx, NULL, 0, GS_FLOAT32, GS_OP_SUM, NULL, NULL, &narrow), GS_ERROR_UNSUPPORTED);
    CHECK_INT(backend_log_lines("scan "), 0);
    if (with_driver)
        CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    else
        CHECK_INT(backend_log_lines(""), 0); /* no backend was even loaded */
    return 0;
}

const test_case scan_cases[] = {
    CASE("scan-args", scan_args, USE_GOOD),
    CASE("scan-refused", scan_refused, USE_GOOD),
    CASE_WITH("scan-empty", scan_empty, GS_SUCCESS, "yes", USE_GOOD),
    CASE_WITH("scan-empty-no-driver", scan_empty, GS_SUCCESS, "no", NO_DRIVER, USE_GOOD),
    END_OF_CASES,
};
