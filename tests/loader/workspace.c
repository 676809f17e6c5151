/* loader cases: per-stream workspaces (which stream gets which, threads, allocation
 * failure, a backend's workspace size) and the default contexts of gs_reduce(NULL, ...). */
#include "fixture.h"

#include <pthread.h>

/* The "ws=#k state" part of the backend's reduce lines, in order, one per line. */
static char *workspace_trace(void)
{
    char *log = backend_log();
    size_t cap = strlen(log) + 1, len = 0;
    char *out = calloc(1, cap);
    for (const char *line = log; out && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        const char *reduce = strstr(line, ": reduce "), *ws = strstr(line, " ws=#");
        if (reduce && ws && reduce < ws && ws < line + n) {
            const char *stop = strstr(ws, " bytes=");
            len += (size_t)snprintf(out + len, cap - len, "%.*s\n", (int)(stop ? stop - ws - 1 : 0), ws + 1);
        }
        line += n + (end != NULL);
    }
    free(log);
    return out;
}

typedef struct thread_job {
    gs_context *ctx;
    CUdeviceptr in, out;
    gs_stream stream; /* NULL: make one, in the thread */
    int reps;
    gs_status status;
} thread_job;

static void *reduce_in_thread(void *arg)
{
    thread_job *job = arg;
    job->status = GS_SUCCESS;
    CUstream own = NULL;
    if (!job->stream)
        own = app_stream();
    for (int i = 0; i < job->reps && job->status == GS_SUCCESS; i++) {
        gs_stream s = own ? (gs_stream)own : job->stream;
        if (own && (i & 1))
            s = (gs_stream)CU_STREAM_PER_THREAD;
        job->status = reduce_f32(job->ctx, job->in, 100, job->out, s);
    }
    if (own)
        APP(app.stream_destroy(own));
    return NULL;
}

/* Runs `job` in a new thread and checks that its reductions succeeded. */
static void run_in_thread(thread_job job)
{
    pthread_t t;
    pthread_create(&t, NULL, reduce_in_thread, &job);
    pthread_join(t, NULL);
    CHECK_STATUS(job.status, GS_SUCCESS);
}

static int workspace_per_stream(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8);
    live_counts before = live_now();
    gs_context *ctx = create_context("fake_good", NULL);
    CUstream s1 = app_stream(), s2 = app_stream();
    /* One workspace per stream, zero-filled when new and kept as the backend left it. The
     * legacy stream has two names (NULL and CU_STREAM_LEGACY): one stream, one workspace. */
    const gs_stream order[] = {NULL, NULL, (gs_stream)s1, (gs_stream)s2, (gs_stream)s1,
                               (gs_stream)CU_STREAM_PER_THREAD, (gs_stream)CU_STREAM_LEGACY};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        CHECK_STATUS(reduce_f32(ctx, in, 10, out, order[i]), GS_SUCCESS);
    /* A new stream that gets a destroyed stream's handle is still a new stream. */
    APP(app.stream_destroy(s1));
    CUstream s3 = app_stream();
    CHECK(s3 == s1); /* the fake reuses handles, so this case tests what it means to */
    CHECK_STATUS(reduce_f32(ctx, in, 10, out, (gs_stream)s3), GS_SUCCESS);
    /* Another thread's per-thread default stream is another stream. */
    run_in_thread((thread_job){ctx, in, out, (gs_stream)CU_STREAM_PER_THREAD, 1, GS_ERROR_INTERNAL});

    char *trace = workspace_trace();
    CHECK_STR(trace, "ws=#0 new zeroed\n"
                     "ws=#0 kept\n"
                     "ws=#1 new zeroed\n"
                     "ws=#2 new zeroed\n"
                     "ws=#1 kept\n"
                     "ws=#3 new zeroed\n"
                     "ws=#0 kept\n"
                     "ws=#4 new zeroed\n"
                     "ws=#5 new zeroed\n");
    free(trace);
    CHECK_INT(app_capture_mode(), CU_STREAM_CAPTURE_MODE_GLOBAL); /* given back after relaxing it */
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    APP(app.stream_destroy(s2));
    APP(app.stream_destroy(s3));
    CHECK_RELEASED(before); /* all six workspaces and the zeroing stream */
    return 0;
}

static int workspace_threads(void)
{
    enum { THREADS = 8, REPS = 40 };
    app_init(1);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8);
    live_counts before = live_now();
    gs_context *ctx = create_context("fake_good", NULL);
    thread_job jobs[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (thread_job){ctx, in, out, NULL, REPS, GS_ERROR_INTERNAL};
        pthread_create(&t[i], NULL, reduce_in_thread, &jobs[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK_STATUS(jobs[i].status, GS_SUCCESS);
    }
    /* Each thread used its own stream and its per-thread stream: 16 streams, 16
     * workspaces, each new once and kept every other time. */
    char *trace = workspace_trace();
    CHECK_INT(count_lines(trace, " new zeroed"), 2 * THREADS);
    CHECK_INT(count_lines(trace, " kept"), THREADS * REPS - 2 * THREADS);
    free(trace);
    CHECK_INT(app.live("mem") - before.mem, 2 * THREADS);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    CHECK_RELEASED(before);
    return 0;
}

static int workspace_oom(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8);
    gs_context *ctx = create_context("fake_good", NULL);
    live_counts before = live_now();
    setenv("FAKE_CUDA_FAIL", "cuMemAlloc:2", 1); /* CUDA_ERROR_OUT_OF_MEMORY */
    CHECK_STATUS(reduce_f32(ctx, in, 10, out, NULL), GS_ERROR_OUT_OF_MEMORY);
    CHECK_HAS(gs_last_error_message(), "cuMemAlloc");
    CHECK_HAS(gs_last_error_message(), "CUDA_ERROR_OUT_OF_MEMORY");
    unsetenv("FAKE_CUDA_FAIL");
    live_counts after = live_now();
    CHECK_INT(after.mem, before.mem);
    CHECK_INT(after.stack, 0);
    CHECK_INT(app_capture_mode(), CU_STREAM_CAPTURE_MODE_GLOBAL);
    CHECK_INT(backend_log_lines("fake_good: reduce "), 0); /* the backend was not called */
    /* Not remembered: with memory back, the same call works. */
    CHECK_STATUS(reduce_f32(ctx, in, 10, out, NULL), GS_SUCCESS);
    char *trace = workspace_trace();
    CHECK_STR(trace, "ws=#0 new zeroed\n");
    free(trace);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

static int workspace_size_invalid(void)
{
    /* A backend asking for no workspace or for more than 64 KiB is refused. */
    static const struct {
        const char *bytes;
        gs_status want;
    } v[] = {{"0", GS_ERROR_BACKEND_INIT_FAILED}, {"65537", GS_ERROR_BACKEND_INIT_FAILED}, {"65536", GS_SUCCESS}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        setenv("FAKE_BACKEND_WORKSPACE", v[i].bytes, 1);
        gs_context *ctx = NULL;
        CHECK_STATUS(gs_context_create(0, &ctx), v[i].want);
        if (v[i].want != GS_SUCCESS) {
            char bytes[64];
            snprintf(bytes, sizeof bytes, "%s bytes", v[i].bytes);
            CHECK_HAS(gs_last_error_message(), bytes);
            CHECK_HAS(gs_last_error_message(), FAKE_GOOD_PATH);
        }
        CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    }
    /* Every instance opened was closed, the refused ones included. */
    CHECK_INT(backend_log_lines("fake_good: open "), 3);
    CHECK_INT(backend_log_lines("fake_good: close "), 3);
    return 0;
}

/* Two reductions on the default context of the calling thread's current CUDA context. */
static void reduce_twice_without_context(CUdeviceptr in, CUdeviceptr out)
{
    CHECK_STATUS(reduce_f32(NULL, in, 10, out, NULL), GS_SUCCESS);
    CHECK_STATUS(reduce_f32(NULL, in, 10, out, NULL), GS_SUCCESS);
}

static int default_context(void)
{
    app_init(2);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8);
    CUcontext popped;

    /* No current context: device 0's primary context, made once. */
    reduce_twice_without_context(in, out);
    CHECK_INT(backend_log_lines("fake_good: open device=0 "), 1);
    CHECK_INT(backend_log_lines("fake_good: reduce "), 2);
    CHECK_INT(backend_log_lines("current=0"), 0);
    CHECK_INT(app.live("stack"), 0);

    /* The thread's current context decides: device 1's gets a default context of its own. */
    APP(app.push(app.ctx[1]));
    reduce_twice_without_context(in, out);
    APP(app.pop(&popped));
    /* Device 0's primary context made current is the one already served. */
    APP(app.push(app.ctx[0]));
    CHECK_STATUS(reduce_f32(NULL, in, 10, out, NULL), GS_SUCCESS);
    APP(app.pop(&popped));
    /* And another thread without a current context shares device 0's. */
    run_in_thread((thread_job){NULL, in, out, (gs_stream)CU_STREAM_LEGACY, 1, GS_ERROR_INTERNAL});

    CHECK_INT(backend_log_lines("fake_good: open device=1 "), 1);
    CHECK_INT(backend_log_lines("fake_good: open "), 2);
    CHECK_INT(backend_log_lines("fake_good: reduce "), 6);
    CHECK_INT(backend_log_lines("current=0"), 0);
    CHECK_INT(app.live("stack"), 0);
    return 0;
}

const test_case workspace_cases[] = {
    CASE("workspace-per-stream", workspace_per_stream, USE_GOOD),
    CASE("workspace-threads", workspace_threads, USE_GOOD),
    CASE("workspace-oom", workspace_oom, USE_GOOD),
    CASE("workspace-size-invalid", workspace_size_invalid, USE_GOOD),
    CASE("default-context", default_context, "FAKE_CUDA_DEVICES=2", USE_GOOD),
    END_OF_CASES,
};
