/* The loader suite's helpers (fixture.h says what each is for). */
#include "fixture.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox.h"

int check_failures;
app_driver app;

/* ---- files and logs ------------------------------------------------------------------- */

static const char *tmpdir(void)
{
    const char *t = getenv("GS_TEST_TMPDIR");
    if (!t) {
        fprintf(stderr, "GS_TEST_TMPDIR is not set: run a case as 'test_loader CASE', not with --child\n");
        exit(1);
    }
    return t;
}

const char *tmp_path(const char *name)
{
    static char buf[4][PATH_MAX];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, PATH_MAX, "%s/%s", tmpdir(), name);
    return p;
}

char *slurp(const char *path)
{
    char *s = sandbox_read_file(path);
    if (!s) {
        fprintf(stderr, "out of memory reading %s\n", path);
        exit(1);
    }
    return s;
}

void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

const char *dlopen_error(const char *path)
{
    static char buf[1024];
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h) {
        dlclose(h);
        return "";
    }
    snprintf(buf, sizeof buf, "%s", dlerror());
    return buf;
}

char *cuda_log(void) { return slurp(getenv("FAKE_CUDA_LOG")); }
char *backend_log(void) { return slurp(getenv("FAKE_BACKEND_LOG")); }

/* Calls fn(line, its length, arg, its 1-based number) for each line of `text` that contains
 * `needle`, until fn returns nonzero; returns that value (0 when it never did). */
static int each_line(const char *text, const char *needle, int (*fn)(const char *, size_t, void *, int), void *arg)
{
    int number = 1;
    for (const char *line = text ? text : ""; *line; number++) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, needle);
        if (hit && hit < line + len) {
            int stop = fn(line, len, arg, number);
            if (stop)
                return stop;
        }
        line += len + (end != NULL);
    }
    return 0;
}

static int count_one(const char *line, size_t len, void *n, int number)
{
    (void)line, (void)len, (void)number;
    ++*(int *)n;
    return 0;
}

int count_lines(const char *text, const char *needle)
{
    int n = 0;
    each_line(text, needle, count_one, &n);
    return n;
}

static int log_lines(char *log, const char *needle)
{
    int n = count_lines(log, needle);
    free(log);
    return n;
}

int cuda_log_lines(const char *needle) { return log_lines(cuda_log(), needle); }
int backend_log_lines(const char *needle) { return log_lines(backend_log(), needle); }

typedef struct found_line {
    char text[2048];
    int last, from;
} found_line;

static int keep_line(const char *line, size_t len, void *arg, int number)
{
    found_line *f = arg;
    if (number < f->from)
        return 0;
    snprintf(f->text, sizeof f->text, "%.*s", (int)len, line);
    return f->last ? 0 : number;
}

const char *find_line(const char *text, const char *needle, int last)
{
    static found_line f;
    f.text[0] = '\0';
    f.last = last;
    f.from = 1;
    each_line(text, needle, keep_line, &f);
    return f.text;
}

int line_number(const char *text, const char *needle, int from)
{
    found_line f = {.last = 0, .from = from};
    return each_line(text, needle, keep_line, &f);
}

const char *without(const char *msg, const char *remove)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s", msg);
    size_t n = strlen(remove);
    for (char *p = buf; n && (p = strstr(p, remove)) != NULL; p += n)
        memset(p, '_', n);
    return buf;
}

const char *make_fifo(const char *path)
{
    if (mkfifo(path, 0644) != 0) {
        fprintf(stderr, "mkfifo(%s): %s\n", path, strerror(errno));
        exit(1);
    }
    return path;
}

static const char *watchdog_what = "";

static void watchdog_fired(int sig)
{
    (void)sig;
    static const char a[] = "FAIL: blocked for 10 s: ";
    ssize_t ignored = write(2, a, sizeof a - 1);
    ignored = write(2, watchdog_what, strlen(watchdog_what));
    ignored = write(2, "\n", 1);
    (void)ignored;
    _exit(1);
}

void watchdog(const char *what)
{
    watchdog_what = what;
    signal(SIGALRM, watchdog_fired);
    alarm(what ? 10 : 0);
}

/* ---- the library ---------------------------------------------------------------------- */

gs_status get_info(const gs_context *ctx, gs_context_info *info)
{
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    return gs_context_get_info(ctx, info);
}

gs_context *create_context(const char *name, const char *path)
{
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    if (!ctx)
        return NULL;
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    if (name)
        CHECK_STR(info.backend_name, name);
    if (path)
        CHECK_STR(info.backend_path, path);
    return ctx;
}

gs_status reduce_f32(gs_context *ctx, CUdeviceptr in, uint64_t n, CUdeviceptr out, gs_stream stream)
{
    return gs_reduce(ctx, (const void *)(uintptr_t)in, n, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out, stream);
}

gs_status reduce_as(gs_context *ctx, CUdeviceptr in, uint64_t n, gs_dtype dt, gs_op op, int32_t out_dtype,
                    CUdeviceptr out, gs_stream stream)
{
    const gs_reduce_options opts = {.struct_size = sizeof opts, .out_dtype = out_dtype};
    return gs_reduce_ex(ctx, (const void *)(uintptr_t)in, n, dt, op, (void *)(uintptr_t)out, stream, &opts);
}

/* ---- the application's side of the fake driver ---------------------------------------- */

void app_fatal(const char *what, CUresult rc)
{
    fprintf(stderr, "FATAL: the application's %s failed: CUresult %d\n", what, (int)rc);
    exit(1);
}

void app_init(int devices)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib || !(app.live = (long (*)(const char *))dlsym(lib, "fake_cuda_live"))) {
        fprintf(stderr, "FATAL: libcuda.so.1 is not the fake driver (LD_LIBRARY_PATH=%s)\n",
                getenv("LD_LIBRARY_PATH"));
        exit(1);
    }
    PFN_cuGetProcAddress_v12000 gpa = (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
#define APP_RESOLVE(member, name, version) \
    APP(gpa(#name, (void **)&app.member, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, NULL))
    APP_RESOLVE(init, cuInit, 2000);
    APP_RESOLVE(retain, cuDevicePrimaryCtxRetain, 7000);
    APP_RESOLVE(push, cuCtxPushCurrent, 4000);
    APP_RESOLVE(pop, cuCtxPopCurrent, 4000);
    APP_RESOLVE(alloc, cuMemAlloc, 3020);
    APP_RESOLVE(free, cuMemFree, 3020);
    APP_RESOLVE(stream_create, cuStreamCreate, 2000);
    APP_RESOLVE(stream_destroy, cuStreamDestroy, 4000);
    APP_RESOLVE(stream_get_id, cuStreamGetId, 12000);
    APP_RESOLVE(exchange_capture_mode, cuThreadExchangeStreamCaptureMode, 10010);
#undef APP_RESOLVE
    APP(app.init(0));
    for (int d = 0; d < devices; d++)
        APP(app.retain(&app.ctx[d], d));
}

/* The application makes device `device`'s primary context current for one driver call. */
#define APP_IN(device, call)                \
    do {                                    \
        CUcontext popped_;                  \
        APP(app.push(app.ctx[(device)]));   \
        APP(call);                          \
        APP(app.pop(&popped_));             \
    } while (0)

CUdeviceptr app_alloc(size_t bytes)
{
    CUdeviceptr p;
    APP_IN(0, app.alloc(&p, bytes));
    return p;
}

void app_free(CUdeviceptr p) { APP_IN(0, app.free(p)); }

CUstream app_stream_of(int device)
{
    CUstream s;
    APP_IN(device, app.stream_create(&s, CU_STREAM_NON_BLOCKING));
    return s;
}

unsigned long long app_stream_id(CUstream s)
{
    unsigned long long id = 0;
    APP_IN(0, app.stream_get_id(s, &id));
    return id;
}

int app_capture_mode(void)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    APP(app.exchange_capture_mode(&mode));
    CUstreamCaptureMode back = mode;
    APP(app.exchange_capture_mode(&back));
    return (int)mode;
}

live_counts live_now(void)
{
    return (live_counts){app.live("mem"), app.live("streams"), app.live("modules"), app.live("primary"),
                         app.live("stack")};
}
