/* loader cases: what the core asks of a backend (the good fake logs every call), what it
 * refuses before asking, and gs_context_get_info's struct_size contract. */
#include "fixture.h"

#include <stddef.h>

#include "gridsync_backend.h"

static int good_call_log(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8);
    gs_context *ctx = create_context("fake_good", NULL);
    CHECK_STATUS(reduce_f32(ctx, in, 1000, out, NULL), GS_SUCCESS);
    CHECK_STATUS(gs_reduce(ctx, (const void *)(uintptr_t)in, 7, GS_INT32, GS_OP_MAX, (void *)(uintptr_t)out, NULL),
                 GS_SUCCESS);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);

    /* Every call but query_reduce, exactly and in order; the entry point learns the
     * core's backend ABI version. */
    char expected[2048];
    snprintf(expected, sizeof expected,
             "fake_good: entry abi=%d.%d\n"
             "fake_good: open device=0 cc=9.0 sms=4 current=1\n"
             "fake_good: workspace_size current=1\n"
             "fake_good: reduce dtype=4 op=0 out=4 n=1000 in=0x%llx out=0x%llx stream=%p ws=#0 new zeroed "
             "bytes=enough current=1\n"
             "fake_good: reduce dtype=0 op=3 out=0 n=7 in=0x%llx out=0x%llx stream=%p ws=#0 kept "
             "bytes=enough current=1\n"
             "fake_good: close current=1\n",
             GS_BACKEND_ABI_MAJOR, GS_BACKEND_ABI_MINOR, (unsigned long long)in, (unsigned long long)out,
             (void *)NULL, (unsigned long long)in, (unsigned long long)out, (void *)NULL);
    char *log = backend_log();
    char *calls = calloc(1, strlen(log) + 1);
    size_t len = 0;
    for (const char *line = log; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
        if (strncmp(line, "fake_good: query_reduce ", 24) != 0) {
            memcpy(calls + len, line, n);
            len += n;
        }
        line += n;
    }
    calls[len] = '\0';
    CHECK_STR(calls, expected);

    /* query_reduce: after open, before the first reduction, with the context current, at
     * most once per triple, never for a pair that is undefined (bitwise ops on floats),
     * and for both pairs used. */
    int open = line_number(log, "fake_good: open ", 1), reduce = line_number(log, "fake_good: reduce ", 1);
    int first_query = line_number(log, "fake_good: query_reduce ", 1);
    CHECK(open && first_query > open && reduce > first_query);
    CHECK_INT(line_number(log, "fake_good: query_reduce ", reduce), 0);
    CHECK_INT(count_lines(log, "current=0"), 0);
    CHECK_INT(count_lines(log, "current=-1"), 0);
    static const int floats[] = {GS_FLOAT32, GS_FLOAT64, GS_FLOAT16, GS_BFLOAT16};
    char q[128];
    for (int d = 0; d < 10; d++)
        for (int o = 0; o < 9; o++)
            for (int r = 0; r < 10; r++) {
                snprintf(q, sizeof q, "query_reduce dtype=%d op=%d out=%d ", d, o, r);
                int times = count_lines(log, q);
                CHECK(times <= 1);
                for (size_t f = 0; f < 4; f++)
                    if (d == floats[f] && o >= GS_OP_BIT_AND && times)
                        CHECK_FAIL("the core asked about %s, which is undefined", q);
            }
    CHECK_INT(count_lines(log, "query_reduce dtype=4 op=0 out=4 "), 1);
    CHECK_INT(count_lines(log, "query_reduce dtype=0 op=3 out=0 "), 1);
    free(calls);
    free(log);
    return 0;
}

static int stream_other_context(void)
{
    /* A stream of device 1's context handed to a context of device 0: gridsync.h promises
     * GS_ERROR_INVALID_CONTEXT ("context/stream mismatch"), before anything is queued or
     * allocated. */
    app_init(2);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8);
    CUstream other = app_stream_of(1);
    gs_context *ctx = create_context("fake_good", NULL);
    live_counts before = live_now();
    CHECK_STATUS(reduce_f32(ctx, in, 10, out, (gs_stream)other), GS_ERROR_INVALID_CONTEXT);
    CHECK_HAS(gs_last_error_message(), "stream");
    CHECK_INT(app.live("mem"), before.mem); /* no workspace made for it */
    CHECK_INT(backend_log_lines("fake_good: reduce "), 0);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    APP(app.stream_destroy(other)); /* the application's own stream: not gridsync's to free */
    return 0;
}

static int context_info(void)
{
    gs_context *ctx = create_context("fake_good", FAKE_GOOD_PATH);
    CHECK_STATUS(gs_context_get_info(ctx, NULL), GS_ERROR_INVALID_ARGUMENT);
    gs_context_info info;
    memset(&info, 0x77, sizeof info);
    info.struct_size = 0;
    CHECK_STATUS(gs_context_get_info(ctx, &info), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "struct_size");
    info.struct_size = offsetof(gs_context_info, device) + 2; /* device only half inside */
    CHECK_STATUS(gs_context_get_info(ctx, &info), GS_ERROR_INVALID_ARGUMENT);

    /* A caller built against an older, shorter struct: at every member boundary, what
     * fits is written and not one byte past struct_size. */
#define END_OF(member) (offsetof(gs_context_info, member) + sizeof info.member)
    static const size_t ends[] = {
        END_OF(device),      END_OF(cc_major),     END_OF(cc_minor),     END_OF(multiprocessor_count),
        END_OF(device_name), END_OF(backend_name), END_OF(backend_path),
    };
#undef END_OF
    for (size_t e = 0; e < sizeof ends / sizeof ends[0]; e++) {
        memset(&info, 0x77, sizeof info);
        info.struct_size = (uint32_t)ends[e];
        CHECK_STATUS(gs_context_get_info(ctx, &info), GS_SUCCESS);
        CHECK_INT(info.device, 0);
        if (ends[e] > offsetof(gs_context_info, cc_major))
            CHECK_INT(info.cc_major, 9);
        const unsigned char *bytes = (const unsigned char *)&info;
        for (size_t i = ends[e]; i < sizeof info; i++)
            if (bytes[i] != 0x77) {
                CHECK_FAIL("with struct_size %zu, byte %zu was written", ends[e], i);
                break;
            }
    }

    /* A caller built against a newer, longer struct: the rest stays untouched. */
    struct {
        gs_context_info info;
        unsigned char future[32];
    } big;
    memset(&big, 0x55, sizeof big);
    big.info.struct_size = sizeof big;
    CHECK_STATUS(gs_context_get_info(ctx, &big.info), GS_SUCCESS);
    CHECK_STR(big.info.backend_name, "fake_good");
    CHECK_STR(big.info.device_name, "Fake CUDA Device 0");
    CHECK_STR(big.info.backend_path, FAKE_GOOD_PATH);
    CHECK_HAS(big.info.selection_log, "chosen");
    for (size_t i = 0; i < sizeof big.future; i++)
        if (big.future[i] != 0x55) {
            CHECK_FAIL("byte %zu past gs_context_info was written", i);
            break;
        }
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

static int pointer_checks(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8), out4 = app_alloc(4), gone = app_alloc(64);
    app_free(gone);
    gs_context *ctx = create_context("fake_good", NULL);
    float host[16] = {0};
    double host_out;
    const void *pin = (const void *)(uintptr_t)in;
    void *pout = (void *)(uintptr_t)out;

    /* Memory the device cannot reach: host memory, freed memory. */
    CHECK_STATUS(gs_reduce(ctx, host, 16, GS_FLOAT32, GS_OP_SUM, pout, NULL), GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "in");
    CHECK_STATUS(gs_reduce(ctx, pin, 16, GS_FLOAT32, GS_OP_SUM, &host_out, NULL), GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "out");
    CHECK_STATUS(reduce_f32(ctx, gone, 16, out, NULL), GS_ERROR_INVALID_POINTER);
    /* 4000 bytes hold 1000 floats or 500 doubles: one more runs past the allocation, also
     * from an offset into it. */
    CHECK_STATUS(reduce_f32(ctx, in, 1000, out, NULL), GS_SUCCESS);
    CHECK_STATUS(reduce_f32(ctx, in, 1001, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "past the end");
    CHECK_STATUS(reduce_f32(ctx, in + 4, 999, out, NULL), GS_SUCCESS);
    CHECK_STATUS(reduce_f32(ctx, in + 4, 1000, out, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(gs_reduce(ctx, pin, 500, GS_FLOAT64, GS_OP_SUM, pout, NULL), GS_SUCCESS);
    CHECK_STATUS(gs_reduce(ctx, pin, 501, GS_FLOAT64, GS_OP_SUM, pout, NULL), GS_ERROR_INVALID_ARGUMENT);
    /* The result needs room too: ARGMIN writes an 8-byte index, which a 4-byte buffer
     * cannot hold even for a float input. */
    CHECK_STATUS(gs_reduce(ctx, pin, 10, GS_FLOAT32, GS_OP_ARGMIN, pout, NULL), GS_SUCCESS);
    CHECK_STATUS(gs_reduce(ctx, pin, 10, GS_FLOAT32, GS_OP_ARGMIN, (void *)(uintptr_t)out4, NULL),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "out");
    /* n == 0 needs no input at all. */
    CHECK_STATUS(reduce_f32(ctx, 0, 0, out, NULL), GS_SUCCESS);

    CHECK_INT(backend_log_lines("fake_good: reduce "), 5); /* only the accepted calls arrived */
    CHECK_INT(backend_log_lines("n=0 in=0x0 "), 1);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

static int unsupported_by_backend(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8);
    gs_context *ctx = create_context("fake_good", NULL);
    /* The good fake offers only the default output types. */
    CHECK_STATUS(reduce_as(ctx, in, 10, GS_FLOAT32, GS_OP_SUM, GS_FLOAT64, out, NULL), GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "fake_good");
    CHECK_STATUS(reduce_as(ctx, in, 10, GS_FLOAT32, GS_OP_SUM, GS_OUT_DEFAULT, out, NULL), GS_SUCCESS);
    CHECK_INT(backend_log_lines("fake_good: reduce "), 1);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

/* A backend without the ABI 1.1 function (the good fake) cannot do it: UNSUPPORTED, named. */
static int segmented_old_backend(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), offs = app_alloc(16), out = app_alloc(8);
    gs_context *ctx = create_context("fake_good", NULL);
    CHECK_STATUS(gs_segmented_reduce(ctx, (const void *)(uintptr_t)in, 10, GS_FLOAT32, GS_OP_SUM,
                                     (const int64_t *)(uintptr_t)offs, 1, (void *)(uintptr_t)out, NULL, 0),
                 GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "fake_good");
    CHECK_HAS(gs_last_error_message(), "no segmented reduction");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

/* gs_segmented_reduce of one segment of 10 floats, with `flags`. */
static gs_status segment_of_ten(gs_context *ctx, CUdeviceptr in, CUdeviceptr offs, CUdeviceptr out, uint32_t flags)
{
    int64_t *o = (int64_t *)(uintptr_t)offs; /* the fake's device memory is host memory */
    o[0] = 0;
    o[1] = 10;
    return gs_segmented_reduce(ctx, (const void *)(uintptr_t)in, 10, GS_FLOAT32, GS_OP_SUM, (const int64_t *)o, 1,
                               (void *)(uintptr_t)out, NULL, flags);
}

/* A backend built for an older minor (`arg`: "1.0", "1.1" or "1.2", the fakes fake_abi_1_0,
 * fake_abi_1_1 and fake_abi_1_2) does what its minor has; what it lacks is UNSUPPORTED, named with its
 * version. The functions in memory past its struct_size are never called: the core lifts
 * its table into the current struct once, at load (core/loader.c), and reads nothing else. */
static int older_backend(const test_case *c)
{
    const int minor = c->arg[2] - '0';
    char name[32], version[32];
    snprintf(name, sizeof name, "fake_abi_1_%d", minor);
    snprintf(version, sizeof version, "backend ABI %s", c->arg);
    app_init(1);
    CUdeviceptr in = app_alloc(4000), offs = app_alloc(16), out = app_alloc(8);
    gs_context *ctx = create_context(name, NULL);
    if (!ctx)
        return 0;
    CHECK_STATUS(reduce_f32(ctx, in, 1000, out, NULL), GS_SUCCESS);
    if (minor >= 1) {
        CHECK_STATUS(segment_of_ten(ctx, in, offs, out, 0), GS_SUCCESS);
        CHECK_INT(backend_log_lines("segmented_reduce dtype=4 op=0 out=4 n=10 segments=1 "), 1);
    } else {
        CHECK_STATUS(segment_of_ten(ctx, in, offs, out, 0), GS_ERROR_UNSUPPORTED);
        CHECK_HAS(gs_last_error_message(), "no segmented reduction");
        CHECK_HAS(gs_last_error_message(), version);
    }
    /* Exact sums need query_reduce_flags (1.2's), which none of these fakes has: refused by
     * the core, never sent. */
    const gs_reduce_options exact = {.struct_size = sizeof exact, .out_dtype = GS_OUT_DEFAULT, .flags = GS_REDUCE_EXACT};
    CHECK_STATUS(gs_reduce_ex(ctx, (const void *)(uintptr_t)in, 10, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out,
                              NULL, &exact),
                 GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "does not offer exact sums");
    CHECK_HAS(gs_last_error_message(), version);
    CHECK_STATUS(segment_of_ten(ctx, in, offs, out, GS_SEGMENTED_EXACT), GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), minor >= 1 ? "does not offer exact sums" : "no segmented reduction");
    /* Scans are 1.3's: refused by the core, named, never sent. */
    CHECK_STATUS(gs_scan(ctx, (const void *)(uintptr_t)in, 10, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out, NULL,
                         NULL),
                 GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "has no scan");
    CHECK_HAS(gs_last_error_message(), version);
    /* An exact scan too, and one of n == 0 that asks only for its total (which launches on a
     * 1.3 backend). */
    const gs_scan_options total_only = {.struct_size = sizeof total_only, .out_dtype = GS_OUT_DEFAULT,
                                        .flags = GS_SCAN_EXACT, .total = (gs_exact_acc *)(uintptr_t)(in + 2048)};
    CHECK_STATUS(gs_scan(ctx, NULL, 0, GS_FLOAT32, GS_OP_SUM, NULL, NULL, &total_only), GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "has no scan");
    CHECK_HAS(gs_last_error_message(), version);
    CHECK_STATUS(gs_scan(ctx, (const void *)(uintptr_t)in, 10, GS_FLOAT64, GS_OP_SUM, (void *)(uintptr_t)out, NULL,
                         &total_only),
                 GS_ERROR_UNSUPPORTED);
    /* So is rounding accumulators on the device. */
    CHECK_STATUS(gs_exact_round_device(ctx, (const gs_exact_acc *)(uintptr_t)in, 1, GS_FLOAT32,
                                       (void *)(uintptr_t)out, NULL),
                 GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "has no device rounding of exact accumulators");
    CHECK_HAS(gs_last_error_message(), name);
    CHECK_HAS(gs_last_error_message(), version);
    CHECK_INT(backend_log_lines("PAST_STRUCT_SIZE"), 0);
    char reduce_line[64];
    snprintf(reduce_line, sizeof reduce_line, "%s: reduce ", name);
    CHECK_INT(backend_log_lines(reduce_line), 1); /* the float32 sum alone */
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

const test_case calls_cases[] = {
    CASE("good-call-log", good_call_log, USE_GOOD),
    CASE("stream-other-context", stream_other_context, "FAKE_CUDA_DEVICES=2", USE_GOOD),
    CASE("context-info", context_info, USE_GOOD),
    CASE("pointer-checks", pointer_checks, USE_GOOD),
    CASE("unsupported-by-backend", unsupported_by_backend, USE_GOOD),
    CASE("segmented-old-backend", segmented_old_backend, USE_GOOD),
    CASE_WITH("abi-1.0-backend", older_backend, GS_SUCCESS, "1.0", FORCE(fake_abi_1_0)),
    CASE_WITH("abi-1.1-backend", older_backend, GS_SUCCESS, "1.1", FORCE(fake_abi_1_1)),
    CASE_WITH("abi-1.2-backend", older_backend, GS_SUCCESS, "1.2", FORCE(fake_abi_1_2)),
    END_OF_CASES,
};
