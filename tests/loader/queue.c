/* loader cases: the work queue's host functions (GRIDSYNC_1.1). The fake's device memory is
 * host memory, so what a fill left there can be read directly; fresh fake memory is 0xcd,
 * so a missing fill shows. */
#include "fixture.h"

static int all_bytes(const void *p, unsigned char value, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (((const unsigned char *)p)[i] != value)
            return 0;
    return 1;
}

static int queue_lifecycle(void)
{
    app_init(1);
    live_counts before = live_now();
    gs_context *ctx = create_context("fake_good", NULL);
    CUstream s1 = app_stream();
    live_counts after_setup = live_now();

    /* create: 16 bytes of device memory, zero-filled on the context's private stream and
     * waited for before the call returns. */
    void *q = NULL;
    CHECK_STATUS(gs_queue_create(ctx, &q), GS_SUCCESS);
    CHECK(q != NULL);
    CHECK_INT((uintptr_t)q % 8, 0);
    CHECK_INT(app.live("mem"), after_setup.mem + 1);
    if (!q)
        return 1;
    CHECK(all_bytes(q, 0, GS_QUEUE_BYTES));
    char needle[128];
    char *log = cuda_log();
    CHECK_INT(count_lines(log, "cuMemAlloc bytes=16"), 1);
    snprintf(needle, sizeof needle, "cuMemsetD8Async 0x%llx value=0 bytes=16 stream=", (unsigned long long)(uintptr_t)q);
    int fill = line_number(log, needle, 1);
    CHECK(fill > 0);
    /* ... on a stream that is then synchronised: its id ends the memset line */
    const char *fill_line = find_line(log, needle, 0);
    const char *id = strrchr(fill_line, '=');
    char sync_needle[96];
    snprintf(sync_needle, sizeof sync_needle, "cuStreamSynchronize stream%s", id ? id : "=?");
    CHECK(line_number(log, sync_needle, fill + 1) > fill);
    free(log);
    CHECK_INT(app_capture_mode(), CU_STREAM_CAPTURE_MODE_GLOBAL); /* relaxed, and given back */
    CHECK_INT(app.live("stack"), 0);

    /* reset: one 16-byte memset queued on the stream it is given, nothing waited for. */
    const struct {
        gs_stream stream;
        CUstream id_of;
    } resets[] = {{(gs_stream)s1, s1},
                  {NULL, CU_STREAM_LEGACY},
                  {(gs_stream)CU_STREAM_LEGACY, CU_STREAM_LEGACY},
                  {(gs_stream)CU_STREAM_PER_THREAD, CU_STREAM_PER_THREAD}};
    for (size_t i = 0; i < sizeof resets / sizeof resets[0]; i++) {
        memset(q, 0xab, GS_QUEUE_BYTES); /* what an unfinished launch leaves, say */
        int syncs = cuda_log_lines("cuStreamSynchronize");
        CHECK_STATUS(gs_queue_reset(ctx, q, resets[i].stream), GS_SUCCESS);
        CHECK(all_bytes(q, 0, GS_QUEUE_BYTES));
        snprintf(needle, sizeof needle, "cuMemsetD8Async 0x%llx value=0 bytes=16 stream=%llu\n",
                 (unsigned long long)(uintptr_t)q, app_stream_id(resets[i].id_of));
        log = cuda_log();
        if (!strstr(log, needle))
            CHECK_FAIL("reset %zu: no \"%.*s\" in the driver log", i, (int)strlen(needle) - 1, needle);
        free(log);
        CHECK_INT(cuda_log_lines("cuStreamSynchronize"), syncs);
        CHECK_INT(app.live("stack"), 0);
    }
    /* A queue in memory the application allocated itself (any offset that leaves 16 bytes). */
    CUdeviceptr own = app_alloc(64);
    memset((void *)(uintptr_t)own, 0xab, 64);
    CHECK_STATUS(gs_queue_reset(ctx, (void *)(uintptr_t)(own + 48), (gs_stream)s1), GS_SUCCESS);
    CHECK(all_bytes((void *)(uintptr_t)own, 0xab, 48));
    CHECK(all_bytes((void *)(uintptr_t)(own + 48), 0, 16));
    app_free(own);

    /* destroy frees exactly the queue; NULL does nothing. */
    CHECK_STATUS(gs_queue_destroy(ctx, q), GS_SUCCESS);
    snprintf(needle, sizeof needle, "cuMemFree 0x%llx", (unsigned long long)(uintptr_t)q);
    CHECK_INT(cuda_log_lines(needle), 1);
    CHECK_INT(app.live("mem"), after_setup.mem);
    CHECK_STATUS(gs_queue_destroy(ctx, NULL), GS_SUCCESS);
    CHECK_INT(app.live("stack"), 0);
    APP(app.stream_destroy(s1));
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    CHECK_RELEASED(before); /* the queue and the zeroing stream included */

    /* ctx NULL: the default context (device 0's primary, there being no current context). */
    void *dq = NULL;
    CHECK_STATUS(gs_queue_create(NULL, &dq), GS_SUCCESS);
    CHECK(dq != NULL && all_bytes(dq, 0, GS_QUEUE_BYTES));
    long mem = app.live("mem"); /* the queue, and whatever the default context holds */
    if (dq)
        memset(dq, 0xab, GS_QUEUE_BYTES);
    CHECK_STATUS(gs_queue_reset(NULL, dq, NULL), GS_SUCCESS);
    CHECK(dq != NULL && all_bytes(dq, 0, GS_QUEUE_BYTES));
    CHECK_STATUS(gs_queue_destroy(NULL, dq), GS_SUCCESS);
    CHECK_INT(app.live("mem"), mem - 1);
    CHECK_INT(app.live("stack"), 0);
    return 0;
}

static int queue_errors(void)
{
    app_init(2);
    gs_context *ctx = create_context("fake_good", NULL);
    CUdeviceptr small = app_alloc(8), room = app_alloc(24), gone = app_alloc(64), q = app_alloc(16);
    app_free(gone);
    long long host[4] = {0};

    /* Memory the device cannot reach, or too little of it: refused before any fill. */
    CHECK_STATUS(gs_queue_reset(ctx, host, NULL), GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "gs_queue_reset");
    CHECK_HAS(gs_last_error_message(), "queue");
    CHECK_STATUS(gs_queue_reset(ctx, (void *)(uintptr_t)gone, NULL), GS_ERROR_INVALID_POINTER);
    CHECK_STATUS(gs_queue_reset(ctx, (void *)(uintptr_t)small, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "past the end");
    CHECK_STATUS(gs_queue_reset(ctx, (void *)(uintptr_t)(room + 16), NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(gs_queue_reset(ctx, (void *)(uintptr_t)(room + 8), NULL), GS_SUCCESS);
    /* A stream of another CUDA context (device 1's primary context). */
    CUstream other = app_stream_of(1);
    CHECK_STATUS(gs_queue_reset(ctx, (void *)(uintptr_t)q, (gs_stream)other), GS_ERROR_INVALID_CONTEXT);
    CHECK_HAS(gs_last_error_message(), "stream");
    APP(app.stream_destroy(other)); /* the application's own stream: not gridsync's to free */
    CHECK_INT(cuda_log_lines("cuMemsetD8Async 0x"), 1); /* only the accepted reset filled */
    CHECK_INT(app.live("stack"), 0);

    /* destroy: only the start of a device allocation is a queue. */
    CHECK_STATUS(gs_queue_destroy(ctx, host), GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "gs_queue_destroy");
    CHECK_STATUS(gs_queue_destroy(ctx, (void *)(uintptr_t)(room + 8)), GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "start");
    CHECK_STATUS(gs_queue_destroy(ctx, (void *)(uintptr_t)gone), GS_ERROR_INVALID_POINTER);
    CHECK_INT(cuda_log_lines("cuMemFree 0x"), 1); /* the application's own free of `gone` */

    /* Driver failures: named, nothing leaked, the thread left as it was. */
    live_counts before = live_now();
    void *nq = (void *)&nq;
    setenv("FAKE_CUDA_FAIL", "cuMemAlloc:2", 1); /* CUDA_ERROR_OUT_OF_MEMORY */
    CHECK_STATUS(gs_queue_create(ctx, &nq), GS_ERROR_OUT_OF_MEMORY);
    CHECK(nq == NULL);
    CHECK_HAS(gs_last_error_message(), "cuMemAlloc");
    CHECK_HAS(gs_last_error_message(), "CUDA_ERROR_OUT_OF_MEMORY");
    setenv("FAKE_CUDA_FAIL", "cuMemsetD8Async:1", 1); /* CUDA_ERROR_INVALID_VALUE */
    nq = (void *)&nq;
    CHECK_STATUS(gs_queue_create(ctx, &nq), GS_ERROR_CUDA);
    CHECK(nq == NULL);
    CHECK_HAS(gs_last_error_message(), "zero-filling");
    CHECK_HAS(gs_last_error_message(), "CUDA_ERROR_INVALID_VALUE");
    CHECK_STATUS(gs_queue_reset(ctx, (void *)(uintptr_t)q, NULL), GS_ERROR_CUDA);
    CHECK_HAS(gs_last_error_message(), "cuMemsetD8Async");
    unsetenv("FAKE_CUDA_FAIL");
    live_counts after = live_now();
    CHECK_INT(after.mem, before.mem); /* the failed fill's allocation was freed */
    CHECK_INT(after.stack, 0);
    CHECK_INT(app_capture_mode(), CU_STREAM_CAPTURE_MODE_GLOBAL);
    /* Not remembered: the same calls work now. */
    CHECK_STATUS(gs_queue_create(ctx, &nq), GS_SUCCESS);
    setenv("FAKE_CUDA_FAIL", "cuMemFree:1", 1);
    CHECK_STATUS(gs_queue_destroy(ctx, nq), GS_ERROR_CUDA);
    CHECK_HAS(gs_last_error_message(), "cuMemFree");
    unsetenv("FAKE_CUDA_FAIL");
    CHECK_STATUS(gs_queue_destroy(ctx, nq), GS_SUCCESS);
    CHECK_INT(app.live("mem"), before.mem);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

const test_case queue_cases[] = {
    CASE("queue-lifecycle", queue_lifecycle, USE_GOOD),
    CASE("queue-errors", queue_errors, "FAKE_CUDA_DEVICES=2", USE_GOOD),
    END_OF_CASES,
};
