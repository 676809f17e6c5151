/*
 * loader suite: driver loading, backend discovery, loading, validation and fallback, the
 * calls the core makes into a backend, and per-stream workspaces -- all against the fake
 * CUDA driver (tests/fake/fake_cuda.c) and fake or real backends, on any machine.
 *
 * Library state is per process (the driver is loaded once, a backend load is remembered
 * forever, GRIDSYNC_DEBUG is read once, and the dynamic loader reads LD_LIBRARY_PATH only
 * at start), so every case runs in a fresh process:
 *
 *   test_loader                 runs every case, each in a child, and summarises
 *   test_loader CASE            runs CASE in a child (what meson's test() per case calls)
 *   test_loader --child CASE    the child: the environment is already set up; runs CASE here
 *   test_loader --list          prints the case names
 *   test_loader --expect-cases NAMES...   fails unless NAMES are exactly the cases (so the
 *                               list in meson.build cannot drift from the table below)
 *
 * The parent gives the child a clean environment: every GRIDSYNC_* and FAKE_* variable
 * removed, LD_LIBRARY_PATH set to the fake driver's directory (or to the too-old fake
 * driver's, or to an empty directory), FAKE_CUDA_LOG and FAKE_BACKEND_LOG pointing into a
 * fresh temporary directory (GS_TEST_TMPDIR), and then the case's own variables.
 *
 * Exit status: 0 pass, 1 fail, 77 skipped (meson's convention).
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* ---- small helpers -------------------------------------------------------------------- */

static const char *tmpdir(void)
{
    const char *t = getenv("GS_TEST_TMPDIR");
    if (!t) {
        fprintf(stderr, "GS_TEST_TMPDIR is not set: run a case as 'test_loader CASE', not with --child\n");
        exit(1);
    }
    return t;
}

/* A path in the case's temporary directory (static storage, a few at a time). */
static const char *tmp_path(const char *name)
{
    static char buf[4][PATH_MAX];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, PATH_MAX, "%s/%s", tmpdir(), name);
    return p;
}

/* The whole file as a string ("" when it does not exist). Free it. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return strdup("");
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    size_t got;
    while (s && (got = fread(s + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len < 2) {
            char *bigger = realloc(s, cap *= 2);
            if (!bigger)
                free(s);
            s = bigger;
        }
    }
    fclose(f);
    if (!s) {
        fprintf(stderr, "out of memory reading %s\n", path);
        exit(1);
    }
    s[len] = '\0';
    return s;
}

static char *cuda_log(void) { return slurp(getenv("FAKE_CUDA_LOG")); }
static char *backend_log(void) { return slurp(getenv("FAKE_BACKEND_LOG")); }

/* Lines of `text` that contain `needle`. */
static int count_lines(const char *text, const char *needle)
{
    int n = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, needle);
        if (hit && hit < line + len)
            n++;
        line += len + (end != NULL);
    }
    return n;
}

/* The last (or first) line of `text` containing `needle`, or "" (static storage). */
static const char *find_line(const char *text, const char *needle, int last)
{
    static char buf[2048];
    buf[0] = '\0';
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, needle);
        if (hit && hit < line + len) {
            snprintf(buf, sizeof buf, "%.*s", (int)len, line);
            if (!last)
                break;
        }
        line += len + (end != NULL);
    }
    return buf;
}

/* `msg` with every occurrence of `remove` blanked out, so a reason can be looked for
 * without matching the file name it follows (static storage). */
static const char *without(const char *msg, const char *remove)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s", msg);
    size_t n = strlen(remove);
    for (char *p = buf; n && (p = strstr(p, remove)) != NULL; p += n)
        memset(p, '_', n);
    return buf;
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

/* The error dlopen itself gives for `path` (static storage); "" if it loads. */
static const char *dlopen_error(const char *path)
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

/* A copy of a gs_context_info, full size. */
static gs_status get_info(const gs_context *ctx, gs_context_info *info)
{
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    return gs_context_get_info(ctx, info);
}

/* ---- the application's side of the fake driver ---------------------------------------- */

/* What an application does with the driver (allocate, make streams, make a context
 * current), through the same libcuda.so.1 that gridsync loads: the fake. */
static struct {
    PFN_cuInit_v2000 init;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain;
    PFN_cuDevicePrimaryCtxRelease_v11000 release;
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemFree_v3020 free;
    PFN_cuStreamCreate_v2000 stream_create;
    PFN_cuStreamDestroy_v4000 stream_destroy;
    PFN_cuThreadExchangeStreamCaptureMode_v10010 exchange_capture_mode;
    long (*live)(const char *kind);
    CUcontext ctx[2]; /* primary contexts of devices 0 and 1, retained as the runtime would */
} app;

static void app_fatal(const char *what, CUresult rc)
{
    fprintf(stderr, "FATAL: the application's %s failed: CUresult %d\n", what, (int)rc);
    exit(1);
}

#define APP(call)                        \
    do {                                 \
        CUresult rc_ = (call);           \
        if (rc_ != CUDA_SUCCESS)         \
            app_fatal(#call, rc_);       \
    } while (0)

/* Loads the fake driver for the application and retains the primary contexts of the
 * first `devices` devices (1 or 2), as the runtime would. Refuses to go on with a real
 * driver: these tests must never touch a GPU. */
static void app_init(int devices)
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
    APP_RESOLVE(release, cuDevicePrimaryCtxRelease, 11000);
    APP_RESOLVE(push, cuCtxPushCurrent, 4000);
    APP_RESOLVE(pop, cuCtxPopCurrent, 4000);
    APP_RESOLVE(alloc, cuMemAlloc, 3020);
    APP_RESOLVE(free, cuMemFree, 3020);
    APP_RESOLVE(stream_create, cuStreamCreate, 2000);
    APP_RESOLVE(stream_destroy, cuStreamDestroy, 4000);
    APP_RESOLVE(exchange_capture_mode, cuThreadExchangeStreamCaptureMode, 10010);
#undef APP_RESOLVE
    APP(app.init(0));
    for (int d = 0; d < devices; d++)
        APP(app.retain(&app.ctx[d], d));
}

static CUdeviceptr app_alloc(size_t bytes)
{
    CUdeviceptr p;
    CUcontext popped;
    APP(app.push(app.ctx[0]));
    APP(app.alloc(&p, bytes));
    APP(app.pop(&popped));
    return p;
}

static void app_free(CUdeviceptr p)
{
    CUcontext popped;
    APP(app.push(app.ctx[0]));
    APP(app.free(p));
    APP(app.pop(&popped));
}

static CUstream app_stream(void)
{
    CUstream s;
    CUcontext popped;
    APP(app.push(app.ctx[0]));
    APP(app.stream_create(&s, CU_STREAM_NON_BLOCKING));
    APP(app.pop(&popped));
    return s;
}

/* The thread's stream capture mode, which gridsync relaxes while it allocates and must
 * give back. */
static int app_capture_mode(void)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    APP(app.exchange_capture_mode(&mode));
    CUstreamCaptureMode back = mode;
    APP(app.exchange_capture_mode(&back));
    return (int)mode;
}

typedef struct live_counts {
    long mem, streams, modules, primary, stack;
} live_counts;

static live_counts live_now(void)
{
    return (live_counts){app.live("mem"), app.live("streams"), app.live("modules"), app.live("primary"),
                         app.live("stack")};
}

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

/* ---- cases: the driver ---------------------------------------------------------------- */

static int case_no_driver(void)
{
    /* Only meaningful where no libcuda.so.1 is reachable without the fake's directory. */
    void *real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (real) {
        printf("skipped: this machine has a libcuda.so.1 outside LD_LIBRARY_PATH, so 'no driver' "
               "cannot be arranged\n");
        return SKIP;
    }
    gs_context *ctx = (gs_context *)&ctx; /* must be reset to NULL */
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_NO_DRIVER);
    CHECK(ctx == NULL);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    int n = -1, v = -1;
    CHECK_STATUS(gs_device_count(&n), GS_ERROR_NO_DRIVER);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    CHECK_INT(n, 0);
    CHECK_STATUS(gs_driver_version(&v), GS_ERROR_NO_DRIVER);
    CHECK_INT(v, 0);
    /* Valid-looking arguments get past the cheap checks to the missing driver. */
    CHECK_STATUS(gs_reduce(NULL, (const void *)(uintptr_t)0x10000, 10, GS_FLOAT32, GS_OP_SUM,
                           (void *)(uintptr_t)0x20000, NULL),
                 GS_ERROR_NO_DRIVER);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    /* The outcome is remembered: the same answer again. */
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_NO_DRIVER);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    return 0;
}

static int case_old_driver(void)
{
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_NO_DRIVER);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    CHECK_HAS(gs_last_error_message(), "cuGetProcAddress_v2");
    CHECK_HAS(gs_last_error_message(), "12.0");
    return 0;
}

static int case_driver_lacks_function(void)
{
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_NO_DRIVER);
    CHECK_HAS(gs_last_error_message(), "cuStreamGetId");
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    int n = -1;
    CHECK_STATUS(gs_device_count(&n), GS_ERROR_NO_DRIVER);
    return 0;
}

static int case_init_error(void)
{
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_NO_DRIVER);
    CHECK_HAS(gs_last_error_message(), "cuInit");
    CHECK_HAS(gs_last_error_message(), "CUDA_ERROR_UNKNOWN");
    int n = -1;
    CHECK_STATUS(gs_device_count(&n), GS_ERROR_NO_DRIVER);
    /* The driver library is there and knows its version even though cuInit failed. */
    int v = 0;
    CHECK_STATUS(gs_driver_version(&v), GS_SUCCESS);
    CHECK_INT(v, 12080); /* FAKE_CUDA_VERSION */
    return 0;
}

static int case_no_device(void)
{
    int n = -1, v = 0;
    CHECK_STATUS(gs_device_count(&n), GS_SUCCESS); /* zero devices is an answer */
    CHECK_INT(n, 0);
    CHECK_STATUS(gs_driver_version(&v), GS_SUCCESS);
    CHECK_INT(v, 13000);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_NO_DEVICE);
    CHECK_HAS(gs_last_error_message(), "CUDA_ERROR_NO_DEVICE");
    CHECK_STATUS(gs_reduce(NULL, (const void *)(uintptr_t)0x10000, 10, GS_FLOAT32, GS_OP_SUM,
                           (void *)(uintptr_t)0x20000, NULL),
                 GS_ERROR_NO_DEVICE);
    return 0;
}

static int case_device_ordinal(void)
{
    app_init(1);
    live_counts before = live_now();
    int n = -1;
    CHECK_STATUS(gs_device_count(&n), GS_SUCCESS);
    CHECK_INT(n, 2);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(2, &ctx), GS_ERROR_NO_DEVICE);
    CHECK_HAS(gs_last_error_message(), "device 2");
    CHECK_HAS(gs_last_error_message(), "2 CUDA devices");
    CHECK_STATUS(gs_context_create(-1, &ctx), GS_ERROR_NO_DEVICE);
    CHECK_HAS(gs_last_error_message(), "device -1");
    CHECK(ctx == NULL);
    CHECK_STATUS(gs_context_create(1, &ctx), GS_SUCCESS);
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    CHECK_INT(info.device, 1);
    CHECK_STR(info.device_name, "Fake CUDA Device 1");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    char *log = backend_log();
    CHECK_INT(count_lines(log, "fake_good: open device=1 "), 1);
    CHECK_INT(count_lines(log, "fake_good: open "), 1);
    free(log);
    CHECK_RELEASED(before);
    return 0;
}

/* ---- cases: forcing a backend --------------------------------------------------------- */

/* GRIDSYNC_BACKEND names a broken fake by absolute path: context creation must fail with
 * exactly `want`, and the message must name the file and say why. */
static void expect_forced_failure(gs_status want, const char *reason)
{
    const char *path = getenv("GRIDSYNC_BACKEND");
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), want);
    CHECK(ctx == NULL);
    const char *msg = gs_last_error_message();
    CHECK_HAS(msg, path);
    CHECK_HAS(without(msg, path), reason);
}

static int case_forced_wrong_abi_major(void)
{
    expect_forced_failure(GS_ERROR_BACKEND_ABI_MISMATCH, "ABI 2.0");
    return 0;
}

static int case_forced_entry_refuses(void)
{
    /* The backend's own explanation must reach the user. */
    expect_forced_failure(GS_ERROR_BACKEND_ABI_MISMATCH, "built for backend ABI 2.0 only (on purpose)");
    return 0;
}

static int case_forced_no_entry(void)
{
    expect_forced_failure(GS_ERROR_BACKEND_INCOMPLETE, "gridsync_backend_entry_v1");
    return 0;
}

static int case_forced_entry_fails(void)
{
    expect_forced_failure(GS_ERROR_BACKEND_INIT_FAILED, "the entry point failed (on purpose)");
    return 0;
}

static int case_forced_no_reduce(void)
{
    expect_forced_failure(GS_ERROR_BACKEND_INCOMPLETE, "reduce");
    return 0;
}

static int case_forced_small_struct(void)
{
    expect_forced_failure(GS_ERROR_BACKEND_INCOMPLETE, "too small");
    return 0;
}

static int case_forced_open_no_image(void)
{
    expect_forced_failure(GS_ERROR_NO_KERNEL_IMAGE, "no kernel image for compute capability 9.0 (on purpose)");
    /* open() failed, so there is nothing to close. */
    char *log = backend_log();
    CHECK_INT(count_lines(log, "fake_open_no_image: open "), 1);
    CHECK_INT(count_lines(log, "fake_open_no_image: close"), 0);
    free(log);
    return 0;
}

static int case_failed_load_is_sticky(void)
{
    const char *path = getenv("GRIDSYNC_BACKEND");
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_BACKEND_INIT_FAILED);
    char first[1024];
    snprintf(first, sizeof first, "%s", gs_last_error_message());
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_BACKEND_INIT_FAILED);
    CHECK_STR(gs_last_error_message(), first); /* the same answer, */
    CHECK_HAS(first, path);
    CHECK_HAS(first, "(on purpose)");
    /* remembered, not retried: the entry point ran once. */
    char *log = backend_log();
    CHECK_INT(count_lines(log, "fake_entry_fails: entry "), 1);
    free(log);
    return 0;
}

static int case_forced_good_path(void)
{
    app_init(1);
    live_counts before = live_now();
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    CHECK_STR(info.backend_name, "fake_good");
    CHECK_STR(info.backend_path, FAKE_BACKEND_DIR "/gridsync-fake_good.so");
    CHECK_HAS(info.selection_log, "GRIDSYNC_BACKEND");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    CHECK_RELEASED(before);
    return 0;
}

static int case_forced_good_name(void)
{
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    CHECK_STR(info.backend_name, "fake_good");
    CHECK_STR(info.backend_path, FAKE_BACKEND_DIR "/gridsync-fake_good.so");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

static int case_forced_bogus_name(void)
{
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_BACKEND_NOT_FOUND);
    CHECK_HAS(gs_last_error_message(), "gridsync-bogus.so");
    CHECK_HAS(gs_last_error_message(), "GRIDSYNC_BACKEND");
    return 0;
}

static int case_forced_relative_path(void)
{
    /* Each of these would find a good backend if it were taken relative to the working
     * directory; a relative path must never be loaded (it depends on where the program
     * happens to run). */
    static const char *const values[] = {
        "./gridsync-fake_good.so",          /* from FAKE_BACKEND_DIR */
        "backends/gridsync-fake_good.so",   /* from its parent */
        "gridsync-fake_good.so",            /* not a name: names have no '.' */
    };
    static const char *const cwds[] = {FAKE_BACKEND_DIR, FAKE_BACKEND_DIR "/..", FAKE_BACKEND_DIR};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        if (chdir(cwds[i]) != 0) {
            CHECK_FAIL("chdir(%s): %s", cwds[i], strerror(errno));
            continue;
        }
        struct stat sb;
        CHECK(stat(values[i], &sb) == 0); /* the file really is there, relative to cwd */
        setenv("GRIDSYNC_BACKEND", values[i], 1);
        gs_context *ctx = NULL;
        CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_BACKEND_NOT_FOUND);
        CHECK_HAS(gs_last_error_message(), values[i]);
        CHECK_HAS(gs_last_error_message(), "absolute");
    }
    char *log = backend_log();
    CHECK_STR(log, ""); /* nothing was loaded */
    free(log);
    return 0;
}

static int case_forced_not_elf(void)
{
    const char *path = tmp_path("gridsync-notelf.so");
    const char text[] = "this is a text file, not a shared object\n";
    write_file(path, text, sizeof text - 1);
    const char *why = dlopen_error(path);
    CHECK(why[0] != '\0');
    char reason[1024];
    snprintf(reason, sizeof reason, "%s", why);
    setenv("GRIDSYNC_BACKEND", path, 1);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), STATUS_UNLOADABLE_FILE);
    CHECK_HAS(gs_last_error_message(), path);
    CHECK_HAS(gs_last_error_message(), reason); /* dlerror()'s own words */
    return 0;
}

/* Whether a file of `size` bytes starting with `image` is an ELF file whose loadable
 * segments reach past its end (what a partial copy of a shared object looks like). */
static int cuts_a_segment(const unsigned char *image, size_t size)
{
    Elf64_Ehdr eh;
    if (size < sizeof eh)
        return 0;
    memcpy(&eh, image, sizeof eh);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > size)
        return 0;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, image + eh.e_phoff + i * sizeof ph, sizeof ph);
        if ((ph.p_type == PT_LOAD || ph.p_type == PT_DYNAMIC) && ph.p_offset + ph.p_filesz > size)
            return 1;
    }
    return 0;
}

/* A truncated copy of a real backend: `keep` bytes of it, forced by absolute path. It
 * must be refused with a message that names the file and says it is cut short -- and
 * the process must survive: the dynamic loader itself does not check that the segments
 * are all there (glibc dies of SIGBUS touching the missing part), so the check is
 * gridsync's to make before dlopen. */
static void forced_truncated(size_t keep, const char *name)
{
    const char *real = REAL_BACKEND_DIR "/gridsync-cuda_sm20.so";
    struct stat sb;
    if (stat(real, &sb) != 0 || (size_t)sb.st_size < 4096) {
        CHECK_FAIL("the real backend %s is missing", real);
        return;
    }
    if (!keep)
        keep = (size_t)sb.st_size / 2;
    char *image = slurp(real);
    const char *path = tmp_path(name);
    write_file(path, image, keep);
    int cut_segment = cuts_a_segment((const unsigned char *)image, keep);
    free(image);
    setenv("GRIDSYNC_BACKEND", path, 1);
    fflush(NULL);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), STATUS_UNLOADABLE_FILE);
    const char *msg = gs_last_error_message();
    CHECK_HAS(msg, path);
    if (!cut_segment) {
        /* The header is cut: dlopen itself notices and says so. */
        CHECK_HAS(without(msg, path), "file too short");
    } else {
        const char *rest = without(msg, path);
        if (!strstr(rest, "truncated") && !strstr(rest, "too short") && !strstr(rest, "past the end") &&
            !strstr(rest, "past end"))
            CHECK_FAIL("the message does not say the file is cut short: \"%s\"", msg);
    }
}

static int case_forced_truncated_header(void)
{
    forced_truncated(40, "gridsync-header-only.so");
    return 0;
}

static int case_forced_truncated(void)
{
    forced_truncated(0, "gridsync-truncated.so");
    return 0;
}

/* A backend path that names something other than a regular file. dlopen's own open() of a
 * FIFO blocks until a writer comes, so gs_context_create would never return: a watchdog
 * turns a hang into a failure with a message (well before meson's timeout). */
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

static void watchdog(const char *what)
{
    watchdog_what = what;
    signal(SIGALRM, watchdog_fired);
    alarm(what ? 10 : 0);
}

static const char *make_fifo(const char *path)
{
    if (mkfifo(path, 0644) != 0) {
        fprintf(stderr, "mkfifo(%s): %s\n", path, strerror(errno));
        exit(1);
    }
    return path;
}

static void expect_not_regular(const char *path, const char *kind)
{
    setenv("GRIDSYNC_BACKEND", path, 1);
    gs_context *ctx = NULL;
    watchdog("gs_context_create with GRIDSYNC_BACKEND naming a FIFO or a directory");
    CHECK_STATUS(gs_context_create(0, &ctx), STATUS_UNLOADABLE_FILE);
    watchdog(NULL);
    CHECK(ctx == NULL);
    const char *msg = gs_last_error_message();
    CHECK_HAS(msg, path);
    CHECK_HAS(without(msg, path), "not a regular file");
    CHECK_HAS(without(msg, path), kind);
    /* And again: the outcome is remembered, the answer the same, still without blocking. */
    char first[2048];
    snprintf(first, sizeof first, "%s", msg);
    watchdog("the second gs_context_create with the same path");
    CHECK_STATUS(gs_context_create(0, &ctx), STATUS_UNLOADABLE_FILE);
    watchdog(NULL);
    CHECK_STR(gs_last_error_message(), first);
}

static int case_forced_not_regular(void)
{
    expect_not_regular(make_fifo(tmp_path("gridsync-fifo.so")), "FIFO");
    const char *dir = tmp_path("gridsync-dir.so");
    if (mkdir(dir, 0755) != 0) {
        CHECK_FAIL("mkdir(%s): %s", dir, strerror(errno));
        return 0;
    }
    expect_not_regular(dir, "directory");
    char *log = backend_log();
    CHECK_STR(log, ""); /* nothing was loaded */
    free(log);
    return 0;
}

static int case_fallback_fifo(void)
{
    /* A FIFO named like the preferred backend, first in the search path: it is skipped with
     * the reason, and the next backend is chosen. */
    const char *dir = tmp_path("fifo");
    mkdir(dir, 0700);
    char fifo[PATH_MAX];
    snprintf(fifo, sizeof fifo, "%s/gridsync-cuda_sm20.so", dir);
    make_fifo(fifo);
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s:%s", dir, FAKE_FALLBACK_DIR);
    setenv("GRIDSYNC_BACKEND_PATH", path, 1);

    gs_context *ctx = NULL;
    watchdog("gs_context_create with a FIFO as gridsync-cuda_sm20.so in GRIDSYNC_BACKEND_PATH");
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    watchdog(NULL);
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    CHECK_STR(info.backend_name, "cuda_sm11_compat");
    CHECK_STR(info.backend_path, FAKE_FALLBACK_DIR "/gridsync-cuda_sm11_compat.so");
    const char *line = find_line(info.selection_log, fifo, 0);
    CHECK_HAS(line, "skipped");
    CHECK_HAS(line, "not a regular file (it is a FIFO)");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    char *log = backend_log();
    CHECK_INT(count_lines(log, "cuda_sm20:"), 0); /* the fallback dir's sm20 was not reached */
    free(log);
    return 0;
}

/* ---- cases: choosing a backend -------------------------------------------------------- */

static int case_backend_dir_missing(void)
{
    /* Only meaningful if the other places gridsync looks are empty too. */
    const char *others[] = {CONFIGURED_BACKEND_DIR "/gridsync-cuda_sm20.so",
                            CONFIGURED_BACKEND_DIR "/gridsync-cuda_sm11_compat.so"};
    for (size_t i = 0; i < 2; i++)
        if (access(others[i], F_OK) == 0) {
            printf("skipped: %s exists (gridsync is installed here)\n", others[i]);
            return SKIP;
        }
    const char *missing = tmp_path("no-such-dir");
    setenv("GRIDSYNC_BACKEND_PATH", missing, 1);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_BACKEND_NOT_FOUND);
    const char *msg = gs_last_error_message();
    /* Which files were looked for, and where. */
    CHECK_HAS(msg, "gridsync-cuda_sm20.so");
    CHECK_HAS(msg, "gridsync-cuda_sm11_compat.so");
    CHECK_HAS(msg, missing);
    return 0;
}

static int case_fallback_open_fails(void)
{
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    CHECK_STR(info.backend_name, "cuda_sm11_compat");
    CHECK_STR(info.backend_path, FAKE_FALLBACK_DIR "/gridsync-cuda_sm11_compat.so");
    /* The log names the skipped file, with its reason, before the chosen one. */
    const char *sel = info.selection_log;
    const char *sm20 = find_line(sel, FAKE_FALLBACK_DIR "/gridsync-cuda_sm20.so", 0);
    CHECK_HAS(sm20, "no kernel image for compute capability 9.0 (on purpose)");
    const char *a = strstr(sel, "gridsync-cuda_sm20.so"), *b = strstr(sel, "gridsync-cuda_sm11_compat.so");
    CHECK(a && b && a < b);
    CHECK_HAS(find_line(sel, "gridsync-cuda_sm11_compat.so", 1), "chosen");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    /* cuda_sm20 was offered the device first; its failed open() needs no close(). */
    char *log = backend_log();
    const char *open20 = strstr(log, "cuda_sm20: open "), *open11 = strstr(log, "cuda_sm11_compat: open ");
    CHECK(open20 && open11 && open20 < open11);
    CHECK_INT(count_lines(log, "cuda_sm20: close"), 0);
    CHECK_INT(count_lines(log, "cuda_sm11_compat: close"), 1);
    free(log);
    return 0;
}

static int case_fallback_load_fails(void)
{
    /* A cuda_sm20 that does not load at all, in the first search directory. */
    const char *dir = tmp_path("broken");
    mkdir(dir, 0700);
    char broken[PATH_MAX];
    snprintf(broken, sizeof broken, "%s/gridsync-cuda_sm20.so", dir);
    write_file(broken, "garbage", 7);
    char reason[1024];
    snprintf(reason, sizeof reason, "%s", dlopen_error(broken));
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s:%s", dir, FAKE_FALLBACK_DIR);
    setenv("GRIDSYNC_BACKEND_PATH", path, 1);

    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    CHECK_STR(info.backend_name, "cuda_sm11_compat");
    CHECK_STR(info.backend_path, FAKE_FALLBACK_DIR "/gridsync-cuda_sm11_compat.so");
    CHECK_HAS(find_line(info.selection_log, broken, 0), reason);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

static int case_cc11_skips_sm20(void)
{
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    CHECK_INT(info.cc_major, 1);
    CHECK_INT(info.cc_minor, 1);
    CHECK_STR(info.backend_name, "cuda_sm11_compat");
    CHECK_HAS_NOT(info.selection_log, "gridsync-cuda_sm20.so");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    /* __syncthreads_or needs 2.0: cuda_sm20 must not even be loaded on 1.1. */
    char *log = backend_log();
    CHECK_INT(count_lines(log, "cuda_sm20:"), 0);
    free(log);
    return 0;
}

static int case_cc10_too_old(void)
{
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_NO_KERNEL_IMAGE);
    CHECK_HAS(gs_last_error_message(), "compute capability 1.0");
    return 0;
}

static int case_path_order(void)
{
    /* The first directory of GRIDSYNC_BACKEND_PATH that has a file wins. */
    gs_context *ctx = NULL;
    gs_context_info info;
    setenv("GRIDSYNC_BACKEND_PATH", REAL_BACKEND_DIR ":" FAKE_FALLBACK_DIR, 1);
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    CHECK_STR(info.backend_path, REAL_BACKEND_DIR "/gridsync-cuda_sm20.so");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);

    setenv("GRIDSYNC_BACKEND_PATH", FAKE_FALLBACK_DIR ":" REAL_BACKEND_DIR, 1);
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    CHECK_STR(info.backend_path, FAKE_FALLBACK_DIR "/gridsync-cuda_sm11_compat.so");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

static int case_path_relative_ignored(void)
{
    /* Run from the real backends' parent directory, with their directory named relatively
     * first: it must be ignored (it depends on the working directory), so the fallback
     * directory's cuda_sm11_compat is chosen instead of the real cuda_sm20. */
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", REAL_BACKEND_DIR);
    char *slash = strrchr(parent, '/');
    if (!slash) {
        CHECK_FAIL("REAL_BACKEND_DIR %s is not absolute", REAL_BACKEND_DIR);
        return 0;
    }
    *slash = '\0';
    const char *base = slash + 1;
    if (chdir(parent) != 0) {
        CHECK_FAIL("chdir(%s): %s", parent, strerror(errno));
        return 0;
    }
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/gridsync-cuda_sm20.so", base);
    CHECK(access(rel, F_OK) == 0); /* the relative directory really holds a backend */
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s:%s", base, FAKE_FALLBACK_DIR);
    setenv("GRIDSYNC_BACKEND_PATH", path, 1);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    CHECK_STR(info.backend_path, FAKE_FALLBACK_DIR "/gridsync-cuda_sm11_compat.so");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

/* ---- cases: the real backends on the fake driver -------------------------------------- */

/* Creates a context with the build tree's backends and checks the choice. */
static gs_context *real_context(const char *want_backend, int cc_major, int cc_minor)
{
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    if (!ctx)
        return NULL;
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/gridsync-%s.so", REAL_BACKEND_DIR, want_backend);
    CHECK_STR(info.backend_name, want_backend);
    CHECK_STR(info.backend_path, path);
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
    char *before = cuda_log();
    int launches_before = count_lines(before, "cuLaunchKernel ");
    free(before);
    gs_reduce_options opts = {.struct_size = sizeof opts, .out_dtype = out_dtype};
    CHECK_STATUS(gs_reduce_ex(ctx, (const void *)(uintptr_t)in, n, dt, op, (void *)(uintptr_t)out, stream, &opts),
                 GS_SUCCESS);
    char *log = cuda_log();
    CHECK_INT(count_lines(log, "cuLaunchKernel ") - launches_before, 1);
    const char *line = find_line(log, "cuLaunchKernel ", 1);
    char want[256];
    snprintf(want, sizeof want, "cuLaunchKernel %s grid=", kernel);
    CHECK_HAS(line, want);
    CHECK_HAS(line, " block=256 ");
    unsigned grid = 0;
    const char *g = strstr(line, "grid=");
    if (g)
        grid = (unsigned)strtoul(g + 5, NULL, 10);
    free(log);
    return grid;
}

static int real_backend_case(const char *want, int cc_major, int cc_minor)
{
    app_init(1);
    live_counts before = live_now();
    CUdeviceptr in = app_alloc(4096), out = app_alloc(16);
    live_counts with_buffers = live_now();
    gs_context *ctx = real_context(want, cc_major, cc_minor);
    if (!ctx)
        return 0;
    CHECK(launch(ctx, in, 1000, GS_FLOAT32, GS_OP_SUM, GS_OUT_DEFAULT, out, NULL, "gs_reduce_f32_sum_f32") == 1);
    CUstream s = app_stream();
    launch(ctx, in, 1000, GS_INT32, GS_OP_MAX, GS_OUT_DEFAULT, out, s, "gs_reduce_i32_max_i32");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    APP(app.stream_destroy(s));
    CHECK_RELEASED(with_buffers); /* module, workspaces, zeroing stream, primary context */
    char *log = cuda_log();
    /* What was embedded is a real fatbin. */
    CHECK_HAS(log, "cuModuleLoadData fatbin");
    free(log);
    app_free(in);
    app_free(out);
    CHECK_RELEASED(before);
    return 0;
}

static int case_real_cc90(void) { return real_backend_case("cuda_sm20", 9, 0); }
static int case_real_cc20(void) { return real_backend_case("cuda_sm20", 2, 0); }
static int case_real_cc13(void) { return real_backend_case("cuda_sm11_compat", 1, 3); }

static int case_real_kernels(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc((size_t)64 << 20), out = app_alloc(16);
    gs_context *ctx = real_context("cuda_sm20", 9, 0);
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
    gs_reduce_options narrow = {.struct_size = sizeof narrow, .out_dtype = GS_FLOAT32};
    CHECK_STATUS(gs_reduce_ex(ctx, (const void *)(uintptr_t)in, 10, GS_FLOAT64, GS_OP_SUM, (void *)(uintptr_t)out,
                              NULL, &narrow),
                 GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "cuda_sm20");
    gs_reduce_options wide_min = {.struct_size = sizeof wide_min, .out_dtype = GS_INT64};
    CHECK_STATUS(gs_reduce_ex(ctx, (const void *)(uintptr_t)in, 10, GS_INT32, GS_OP_MIN, (void *)(uintptr_t)out,
                              NULL, &wide_min),
                 GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

static int case_real_no_binary(void)
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

static int case_real_launch_error(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4096), out = app_alloc(16);
    gs_context *ctx = real_context("cuda_sm20", 9, 0);
    if (!ctx)
        return 0;
    setenv("FAKE_CUDA_FAIL", "cuLaunchKernel:700", 1);
    CHECK_STATUS(gs_reduce(ctx, (const void *)(uintptr_t)in, 100, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out, NULL),
                 GS_ERROR_CUDA);
    CHECK_HAS(gs_last_error_message(), "cuLaunchKernel");
    CHECK_HAS(gs_last_error_message(), "gs_reduce_f32_sum_f32");
    CHECK_HAS(gs_last_error_message(), "CUDA_ERROR_ILLEGAL_ADDRESS");
    CHECK_INT(app.live("stack"), 0); /* the context pushed for the call was popped */
    unsetenv("FAKE_CUDA_FAIL");
    CHECK_STATUS(gs_reduce(ctx, (const void *)(uintptr_t)in, 100, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out, NULL),
                 GS_SUCCESS);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

/* ---- cases: what a backend is asked to do (the good fake) ----------------------------- */

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

static int case_good_call_log(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    CHECK_STATUS(gs_reduce(ctx, (const void *)(uintptr_t)in, 1000, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out, NULL),
                 GS_SUCCESS);
    CHECK_STATUS(gs_reduce(ctx, (const void *)(uintptr_t)in, 7, GS_INT32, GS_OP_MAX, (void *)(uintptr_t)out, NULL),
                 GS_SUCCESS);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);

    /* Every call but query_reduce, exactly and in order. */
    char expected[2048];
    snprintf(expected, sizeof expected,
             "fake_good: entry abi=1.1\n"
             "fake_good: open device=0 cc=9.0 sms=4 current=1\n"
             "fake_good: workspace_size current=1\n"
             "fake_good: reduce dtype=4 op=0 out=4 n=1000 in=0x%llx out=0x%llx stream=%p ws=#0 new zeroed "
             "bytes=enough current=1\n"
             "fake_good: reduce dtype=0 op=3 out=0 n=7 in=0x%llx out=0x%llx stream=%p ws=#0 kept "
             "bytes=enough current=1\n"
             "fake_good: close current=1\n",
             (unsigned long long)in, (unsigned long long)out, (void *)NULL, (unsigned long long)in,
             (unsigned long long)out, (void *)NULL);
    char *log = backend_log();
    char *calls = calloc(1, strlen(log) + 1);
    size_t len = 0;
    const char *first_query = NULL, *last_query = NULL;
    for (const char *line = log; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
        if (strncmp(line, "fake_good: query_reduce ", 24) == 0) {
            if (!first_query)
                first_query = line;
            last_query = line;
        } else {
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
    const char *open = strstr(log, "fake_good: open "), *reduce = strstr(log, "fake_good: reduce ");
    CHECK(first_query && open && reduce && open < first_query && last_query < reduce);
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
        job->status = gs_reduce(job->ctx, (const void *)(uintptr_t)job->in, 100, GS_FLOAT32, GS_OP_SUM,
                                (void *)(uintptr_t)job->out, s);
    }
    if (own)
        APP(app.stream_destroy(own));
    return NULL;
}

static int case_workspace_per_stream(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8);
    live_counts before = live_now();
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    CUstream s1 = app_stream(), s2 = app_stream();
    /* One workspace per stream, zero-filled when new and kept as the backend left it. The
     * legacy stream has two names (NULL and CU_STREAM_LEGACY): one stream, one workspace. */
    const gs_stream order[] = {NULL, NULL, (gs_stream)s1, (gs_stream)s2, (gs_stream)s1,
                               (gs_stream)CU_STREAM_PER_THREAD, (gs_stream)CU_STREAM_LEGACY};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        CHECK_STATUS(gs_reduce(ctx, (const void *)(uintptr_t)in, 10, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out,
                               order[i]),
                     GS_SUCCESS);
    /* A new stream that gets a destroyed stream's handle is still a new stream. */
    APP(app.stream_destroy(s1));
    CUstream s3 = app_stream();
    CHECK(s3 == s1); /* the fake reuses handles, so this case tests what it means to */
    CHECK_STATUS(gs_reduce(ctx, (const void *)(uintptr_t)in, 10, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out,
                           (gs_stream)s3),
                 GS_SUCCESS);
    /* Another thread's per-thread default stream is another stream. */
    thread_job job = {ctx, in, out, (gs_stream)CU_STREAM_PER_THREAD, 1, GS_ERROR_INTERNAL};
    pthread_t t;
    pthread_create(&t, NULL, reduce_in_thread, &job);
    pthread_join(t, NULL);
    CHECK_STATUS(job.status, GS_SUCCESS);

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

static int case_workspace_threads(void)
{
    enum { THREADS = 8, REPS = 40 };
    app_init(1);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8);
    live_counts before = live_now();
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
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

static int case_workspace_oom(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    live_counts before = live_now();
    setenv("FAKE_CUDA_FAIL", "cuMemAlloc:2", 1); /* CUDA_ERROR_OUT_OF_MEMORY */
    CHECK_STATUS(gs_reduce(ctx, (const void *)(uintptr_t)in, 10, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out, NULL),
                 GS_ERROR_OUT_OF_MEMORY);
    CHECK_HAS(gs_last_error_message(), "cuMemAlloc");
    CHECK_HAS(gs_last_error_message(), "CUDA_ERROR_OUT_OF_MEMORY");
    unsetenv("FAKE_CUDA_FAIL");
    live_counts after = live_now();
    CHECK_INT(after.mem, before.mem);
    CHECK_INT(after.stack, 0);
    CHECK_INT(app_capture_mode(), CU_STREAM_CAPTURE_MODE_GLOBAL);
    char *log = backend_log();
    CHECK_INT(count_lines(log, "fake_good: reduce "), 0); /* the backend was not called */
    free(log);
    /* Not remembered: with memory back, the same call works. */
    CHECK_STATUS(gs_reduce(ctx, (const void *)(uintptr_t)in, 10, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out, NULL),
                 GS_SUCCESS);
    char *trace = workspace_trace();
    CHECK_STR(trace, "ws=#0 new zeroed\n");
    free(trace);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

static int case_workspace_size_invalid(void)
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
            CHECK_HAS(gs_last_error_message(), FAKE_BACKEND_DIR "/gridsync-fake_good.so");
        }
        CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    }
    /* Every instance opened was closed, the refused ones included. */
    char *log = backend_log();
    CHECK_INT(count_lines(log, "fake_good: open "), 3);
    CHECK_INT(count_lines(log, "fake_good: close "), 3);
    free(log);
    return 0;
}

static int case_default_context(void)
{
    app_init(2);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8);
    const void *pin = (const void *)(uintptr_t)in;
    void *pout = (void *)(uintptr_t)out;
    CUcontext popped;

    /* No current context: device 0's primary context, made once. */
    CHECK_STATUS(gs_reduce(NULL, pin, 10, GS_FLOAT32, GS_OP_SUM, pout, NULL), GS_SUCCESS);
    CHECK_STATUS(gs_reduce(NULL, pin, 10, GS_FLOAT32, GS_OP_SUM, pout, NULL), GS_SUCCESS);
    char *log = backend_log();
    CHECK_INT(count_lines(log, "fake_good: open device=0 "), 1);
    CHECK_INT(count_lines(log, "fake_good: reduce "), 2);
    CHECK_INT(count_lines(log, "current=0"), 0);
    free(log);
    CHECK_INT(app.live("stack"), 0);

    /* The thread's current context decides: device 1's gets a default context of its own. */
    APP(app.push(app.ctx[1]));
    CHECK_STATUS(gs_reduce(NULL, pin, 10, GS_FLOAT32, GS_OP_SUM, pout, NULL), GS_SUCCESS);
    CHECK_STATUS(gs_reduce(NULL, pin, 10, GS_FLOAT32, GS_OP_SUM, pout, NULL), GS_SUCCESS);
    APP(app.pop(&popped));
    /* Device 0's primary context made current is the one already served. */
    APP(app.push(app.ctx[0]));
    CHECK_STATUS(gs_reduce(NULL, pin, 10, GS_FLOAT32, GS_OP_SUM, pout, NULL), GS_SUCCESS);
    APP(app.pop(&popped));
    /* And another thread without a current context shares device 0's. */
    thread_job job = {NULL, in, out, (gs_stream)CU_STREAM_LEGACY, 1, GS_ERROR_INTERNAL};
    pthread_t t;
    pthread_create(&t, NULL, reduce_in_thread, &job);
    pthread_join(t, NULL);
    CHECK_STATUS(job.status, GS_SUCCESS);

    log = backend_log();
    CHECK_INT(count_lines(log, "fake_good: open device=1 "), 1);
    CHECK_INT(count_lines(log, "fake_good: open "), 2);
    CHECK_INT(count_lines(log, "fake_good: reduce "), 6);
    CHECK_INT(count_lines(log, "current=0"), 0);
    free(log);
    CHECK_INT(app.live("stack"), 0);
    return 0;
}

static int case_stream_other_context(void)
{
    /* A stream of device 1's context handed to a context of device 0: gridsync.h promises
     * GS_ERROR_INVALID_CONTEXT ("context/stream mismatch"), before anything is queued or
     * allocated. */
    app_init(2);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8);
    CUstream other;
    CUcontext popped;
    APP(app.push(app.ctx[1]));
    APP(app.stream_create(&other, CU_STREAM_NON_BLOCKING));
    APP(app.pop(&popped));
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    live_counts before = live_now();
    CHECK_STATUS(gs_reduce(ctx, (const void *)(uintptr_t)in, 10, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out,
                           (gs_stream)other),
                 GS_ERROR_INVALID_CONTEXT);
    CHECK_HAS(gs_last_error_message(), "stream");
    CHECK_INT(app.live("mem"), before.mem); /* no workspace made for it */
    char *log = backend_log();
    CHECK_INT(count_lines(log, "fake_good: reduce "), 0);
    free(log);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    APP(app.stream_destroy(other)); /* the application's own stream: not gridsync's to free */
    return 0;
}

static int case_context_info(void)
{
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
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
    static const size_t ends[] = {
        offsetof(gs_context_info, device) + sizeof info.device,
        offsetof(gs_context_info, cc_major) + sizeof info.cc_major,
        offsetof(gs_context_info, cc_minor) + sizeof info.cc_minor,
        offsetof(gs_context_info, multiprocessor_count) + sizeof info.multiprocessor_count,
        offsetof(gs_context_info, device_name) + sizeof info.device_name,
        offsetof(gs_context_info, backend_name) + sizeof info.backend_name,
        offsetof(gs_context_info, backend_path) + sizeof info.backend_path,
    };
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
    CHECK_STR(big.info.backend_path, FAKE_BACKEND_DIR "/gridsync-fake_good.so");
    CHECK_HAS(big.info.selection_log, "chosen");
    for (size_t i = 0; i < sizeof big.future; i++)
        if (big.future[i] != 0x55) {
            CHECK_FAIL("byte %zu past gs_context_info was written", i);
            break;
        }
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

static int case_pointer_checks(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8), out4 = app_alloc(4), gone = app_alloc(64);
    app_free(gone);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    float host[16] = {0};
    double host_out;
    const void *pin = (const void *)(uintptr_t)in;
    void *pout = (void *)(uintptr_t)out;

    /* Memory the device cannot reach: host memory, freed memory. */
    CHECK_STATUS(gs_reduce(ctx, host, 16, GS_FLOAT32, GS_OP_SUM, pout, NULL), GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "in");
    CHECK_STATUS(gs_reduce(ctx, pin, 16, GS_FLOAT32, GS_OP_SUM, &host_out, NULL), GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "out");
    CHECK_STATUS(gs_reduce(ctx, (const void *)(uintptr_t)gone, 16, GS_FLOAT32, GS_OP_SUM, pout, NULL),
                 GS_ERROR_INVALID_POINTER);
    /* 4000 bytes hold 1000 floats or 500 doubles: one more runs past the allocation, also
     * from an offset into it. */
    CHECK_STATUS(gs_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, pout, NULL), GS_SUCCESS);
    CHECK_STATUS(gs_reduce(ctx, pin, 1001, GS_FLOAT32, GS_OP_SUM, pout, NULL), GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "past the end");
    CHECK_STATUS(gs_reduce(ctx, (const float *)pin + 1, 999, GS_FLOAT32, GS_OP_SUM, pout, NULL), GS_SUCCESS);
    CHECK_STATUS(gs_reduce(ctx, (const float *)pin + 1, 1000, GS_FLOAT32, GS_OP_SUM, pout, NULL),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(gs_reduce(ctx, pin, 500, GS_FLOAT64, GS_OP_SUM, pout, NULL), GS_SUCCESS);
    CHECK_STATUS(gs_reduce(ctx, pin, 501, GS_FLOAT64, GS_OP_SUM, pout, NULL), GS_ERROR_INVALID_ARGUMENT);
    /* The result needs room too: ARGMIN writes an 8-byte index, which a 4-byte buffer
     * cannot hold even for a float input. */
    CHECK_STATUS(gs_reduce(ctx, pin, 10, GS_FLOAT32, GS_OP_ARGMIN, pout, NULL), GS_SUCCESS);
    CHECK_STATUS(gs_reduce(ctx, pin, 10, GS_FLOAT32, GS_OP_ARGMIN, (void *)(uintptr_t)out4, NULL),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "out");
    /* n == 0 needs no input at all. */
    CHECK_STATUS(gs_reduce(ctx, NULL, 0, GS_FLOAT32, GS_OP_SUM, pout, NULL), GS_SUCCESS);

    char *log = backend_log();
    CHECK_INT(count_lines(log, "fake_good: reduce "), 5); /* only the accepted calls arrived */
    CHECK_INT(count_lines(log, "n=0 in=0x0 "), 1);
    free(log);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

static int case_unsupported_by_backend(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), out = app_alloc(8);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    /* The good fake offers only the default output types. */
    gs_reduce_options wide = {.struct_size = sizeof wide, .out_dtype = GS_FLOAT64};
    CHECK_STATUS(gs_reduce_ex(ctx, (const void *)(uintptr_t)in, 10, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out,
                              NULL, &wide),
                 GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "fake_good");
    gs_reduce_options dflt = {.struct_size = sizeof dflt, .out_dtype = GS_OUT_DEFAULT};
    CHECK_STATUS(gs_reduce_ex(ctx, (const void *)(uintptr_t)in, 10, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)out,
                              NULL, &dflt),
                 GS_SUCCESS);
    char *log = backend_log();
    CHECK_INT(count_lines(log, "fake_good: reduce "), 1);
    free(log);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

/* ---- cases: the work queue's host functions (GRIDSYNC_1.1) ----------------------------
 * The fake's device memory is host memory, so what a fill left there can be read directly;
 * fresh fake memory is 0xcd, so a missing fill shows. */

/* The driver's id of stream `s` (of device 0's context), as it appears in the call log. */
static unsigned long long app_stream_id(CUstream s)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    PFN_cuGetProcAddress_v12000 gpa = lib ? (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2") : NULL;
    PFN_cuStreamGetId_v12000 get_id = NULL;
    if (!gpa)
        app_fatal("dlsym(cuGetProcAddress_v2)", CUDA_ERROR_NOT_FOUND);
    APP(gpa("cuStreamGetId", (void **)&get_id, 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, NULL));
    unsigned long long id = 0;
    CUcontext popped;
    APP(app.push(app.ctx[0]));
    APP(get_id(s, &id));
    APP(app.pop(&popped));
    if (lib)
        dlclose(lib);
    return id;
}

static int all_bytes(const void *p, unsigned char value, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (((const unsigned char *)p)[i] != value)
            return 0;
    return 1;
}

/* The 1-based number of the first line of `text` at or after line `from` that contains
 * `needle`; 0 if none. */
static int line_number(const char *text, const char *needle, int from)
{
    int n = 1;
    for (const char *line = text; *line; n++) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, needle);
        if (n >= from && hit && hit < line + len)
            return n;
        line += len + (end != NULL);
    }
    return 0;
}

static int case_queue_lifecycle(void)
{
    app_init(1);
    live_counts before = live_now();
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
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
        log = cuda_log();
        int syncs = count_lines(log, "cuStreamSynchronize");
        free(log);
        CHECK_STATUS(gs_queue_reset(ctx, q, resets[i].stream), GS_SUCCESS);
        CHECK(all_bytes(q, 0, GS_QUEUE_BYTES));
        snprintf(needle, sizeof needle, "cuMemsetD8Async 0x%llx value=0 bytes=16 stream=%llu\n",
                 (unsigned long long)(uintptr_t)q, app_stream_id(resets[i].id_of));
        log = cuda_log();
        if (!strstr(log, needle))
            CHECK_FAIL("reset %zu: no \"%.*s\" in the driver log", i, (int)strlen(needle) - 1, needle);
        CHECK_INT(count_lines(log, "cuStreamSynchronize"), syncs);
        free(log);
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
    log = cuda_log();
    snprintf(needle, sizeof needle, "cuMemFree 0x%llx", (unsigned long long)(uintptr_t)q);
    CHECK_INT(count_lines(log, needle), 1);
    free(log);
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

static int case_queue_errors(void)
{
    app_init(2);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    CUdeviceptr small = app_alloc(8), room = app_alloc(24), gone = app_alloc(64), q = app_alloc(16);
    app_free(gone);
    long long host[4] = {0};
    char *log;

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
    CUstream other;
    CUcontext popped;
    APP(app.push(app.ctx[1]));
    APP(app.stream_create(&other, CU_STREAM_NON_BLOCKING));
    APP(app.pop(&popped));
    CHECK_STATUS(gs_queue_reset(ctx, (void *)(uintptr_t)q, (gs_stream)other), GS_ERROR_INVALID_CONTEXT);
    CHECK_HAS(gs_last_error_message(), "stream");
    APP(app.stream_destroy(other)); /* the application's own stream: not gridsync's to free */
    log = cuda_log();
    CHECK_INT(count_lines(log, "cuMemsetD8Async 0x"), 1); /* only the accepted reset filled */
    free(log);
    CHECK_INT(app.live("stack"), 0);

    /* destroy: only the start of a device allocation is a queue. */
    CHECK_STATUS(gs_queue_destroy(ctx, host), GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "gs_queue_destroy");
    CHECK_STATUS(gs_queue_destroy(ctx, (void *)(uintptr_t)(room + 8)), GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "start");
    CHECK_STATUS(gs_queue_destroy(ctx, (void *)(uintptr_t)gone), GS_ERROR_INVALID_POINTER);
    log = cuda_log();
    CHECK_INT(count_lines(log, "cuMemFree 0x"), 1); /* the application's own free of `gone` */
    free(log);

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

/* ---- cases: GRIDSYNC_DEBUG ------------------------------------------------------------ */

/* Runs create + destroy with stderr going to a file; returns what was printed. */
static char *stderr_of_create(void)
{
    const char *path = tmp_path("stderr.txt");
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(path, "w");
    if (saved < 0 || !f || dup2(fileno(f), 2) < 0) {
        fprintf(stderr, "cannot redirect stderr\n");
        exit(1);
    }
    fclose(f);
    gs_context *ctx = NULL;
    gs_status st = gs_context_create(0, &ctx);
    gs_context_destroy(ctx);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    CHECK_STATUS(st, GS_SUCCESS);
    return slurp(path);
}

static int case_debug_trace(void)
{
    char *out = stderr_of_create();
    CHECK(out[0] != '\0');
    /* Every line is gridsync's, and the decisions are all there: the driver, the search
     * directories, the skipped backend with its reason, the chosen file. */
    for (const char *line = out; *line;) {
        const char *end = strchr(line, '\n');
        if (strncmp(line, "gridsync: ", 10) != 0) {
            CHECK_FAIL("trace line without the 'gridsync: ' prefix: %.*s", (int)(end ? end - line : 200), line);
            break;
        }
        line = end ? end + 1 : line + strlen(line);
    }
    CHECK_HAS(out, "libcuda.so.1");
    CHECK_HAS(out, FAKE_FALLBACK_DIR);
    CHECK_HAS(find_line(out, "cuda_sm20", 1), "(on purpose)");
    CHECK_HAS(find_line(out, "chosen", 0), FAKE_FALLBACK_DIR "/gridsync-cuda_sm11_compat.so");
    printf("trace:\n%s", out);
    free(out);
    return 0;
}

static int case_debug_off(void)
{
    /* Without GRIDSYNC_DEBUG (or with GRIDSYNC_DEBUG=0), a skipped backend is no reason
     * to print anything. */
    char *out = stderr_of_create();
    CHECK_STR(out, "");
    free(out);
    return 0;
}

/* ---- cases: gs_segmented_reduce (GRIDSYNC_1.1) ----------------------------------------
 * With the real cuda_sm20 backend on the fake driver: what is refused before any launch,
 * and the one launch of what is accepted. The fake's device memory is host memory, so the
 * offsets are written directly. */
static int seg_launches(void)
{
    char *log = cuda_log();
    int n = count_lines(log, "cuLaunchKernel ");
    free(log);
    return n;
}

static int case_real_segmented(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), offs = app_alloc(8 * 11), out = app_alloc(80), out8 = app_alloc(8);
    gs_context *ctx = real_context("cuda_sm20", 9, 0);
    if (!ctx)
        return 0;
    int64_t *o = (int64_t *)(uintptr_t)offs;
    for (int j = 0; j <= 10; j++)
        o[j] = 100 * j; /* 10 segments of 100 elements */
    const void *pin = (const void *)(uintptr_t)in;
    const int64_t *po = (const int64_t *)(uintptr_t)offs;
    void *pout = (void *)(uintptr_t)out, *pout8 = (void *)(uintptr_t)out8;
    int64_t host_offs[11] = {0};

    int l0 = seg_launches();
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, po, 10, pout, NULL, 0), GS_SUCCESS);
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 4000, GS_INT8, GS_OP_ARGMAX, po, 10, pout, NULL, 0), GS_SUCCESS);
    CHECK_INT(seg_launches() - l0, 2);
    char *log = cuda_log();
    CHECK_HAS(find_line(log, "cuLaunchKernel ", 1), "cuLaunchKernel gs_segreduce_i8_argmax_i64 grid=");
    CHECK_HAS(find_line(log, "cuLaunchKernel ", 1), " block=256 ");
    free(log);

    /* Refused before anything is queued. */
    l0 = seg_launches();
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, (gs_dtype)99, GS_OP_SUM, po, 10, pout, NULL, 0),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, (gs_op)42, po, 10, pout, NULL, 0),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_BIT_XOR, po, 10, pout, NULL, 0),
                 GS_ERROR_UNSUPPORTED);
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, po, 10, pout, NULL, 2),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "flags");
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, NULL, 10, pout, NULL, 0),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "offsets");
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, po, 10, NULL, NULL, 0),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "out");
    CHECK_STATUS(gs_segmented_reduce(ctx, NULL, 1000, GS_FLOAT32, GS_OP_SUM, po, 10, pout, NULL, 0),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, (const int64_t *)((const char *)po + 4), 9,
                                     pout, NULL, 0),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "aligned");
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, host_offs, 10, pout, NULL, 0),
                 GS_ERROR_INVALID_POINTER);
    CHECK_HAS(gs_last_error_message(), "offsets");
    /* ranges: 10 float sums need 40 bytes (8 given); 11 segments need 96 bytes of offsets
     * (88 given); 1001 floats need more than the 4000-byte input */
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, po, 10, pout8, NULL, 0),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "past the end");
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, po, 11, pout, NULL, 0),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1001, GS_FLOAT32, GS_OP_SUM, po, 10, pout, NULL, 0),
                 GS_ERROR_INVALID_ARGUMENT);
    /* offsets checked on request: the first bad one is named, nothing is launched */
    o[5] = 50;
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, po, 10, pout, NULL,
                                     GS_SEGMENTED_CHECK_OFFSETS),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "offsets[4] = 400, offsets[5] = 50");
    o[5] = 500;
    o[0] = -1;
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, po, 10, pout, NULL,
                                     GS_SEGMENTED_CHECK_OFFSETS),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "negative");
    o[0] = 0;
    o[10] = 1001;
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, po, 10, pout, NULL,
                                     GS_SEGMENTED_CHECK_OFFSETS),
                 GS_ERROR_INVALID_ARGUMENT);
    CHECK_HAS(gs_last_error_message(), "beyond n");
    CHECK_INT(seg_launches() - l0, 0);
    /* unchecked, bad offsets are the kernel's business: one launch */
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, po, 10, pout, NULL, 0), GS_SUCCESS);
    o[10] = 1000;
    CHECK_STATUS(gs_segmented_reduce(ctx, pin, 1000, GS_FLOAT32, GS_OP_SUM, po, 10, pout, NULL,
                                     GS_SEGMENTED_CHECK_OFFSETS),
                 GS_SUCCESS);
    /* no segments: nothing to do, nothing launched, no pointer needed */
    CHECK_STATUS(gs_segmented_reduce(ctx, NULL, 0, GS_FLOAT32, GS_OP_SUM, NULL, 0, NULL, NULL, 0), GS_SUCCESS);
    CHECK_INT(seg_launches() - l0, 2);
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

/* A backend without the ABI 1.1 function (the good fake) cannot do it: UNSUPPORTED, named. */
static int case_segmented_old_backend(void)
{
    app_init(1);
    CUdeviceptr in = app_alloc(4000), offs = app_alloc(16), out = app_alloc(8);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_SUCCESS);
    CHECK_STATUS(gs_segmented_reduce(ctx, (const void *)(uintptr_t)in, 10, GS_FLOAT32, GS_OP_SUM,
                                     (const int64_t *)(uintptr_t)offs, 1, (void *)(uintptr_t)out, NULL, 0),
                 GS_ERROR_UNSUPPORTED);
    CHECK_HAS(gs_last_error_message(), "fake_good");
    CHECK_HAS(gs_last_error_message(), "no segmented reduction");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return 0;
}

/* ---- the case table ------------------------------------------------------------------- */

typedef enum { DRIVER_FAKE, DRIVER_TOO_OLD, DRIVER_NONE } driver_kind;

typedef struct test_case {
    const char *name;
    int (*run)(void);
    driver_kind driver;
    const char *env[6]; /* NAME=VALUE, on top of the clean environment */
} test_case;

#define FORCE(variant) "GRIDSYNC_BACKEND=" FAKE_BACKEND_DIR "/gridsync-" variant ".so"
#define USE_GOOD "GRIDSYNC_BACKEND=fake_good", "GRIDSYNC_BACKEND_PATH=" FAKE_BACKEND_DIR
#define REAL_PATH "GRIDSYNC_BACKEND_PATH=" REAL_BACKEND_DIR
#define FALLBACK_PATH "GRIDSYNC_BACKEND_PATH=" FAKE_FALLBACK_DIR

static const test_case cases[] = {
    {"no-driver", case_no_driver, DRIVER_NONE, {REAL_PATH}},
    {"old-driver", case_old_driver, DRIVER_TOO_OLD, {REAL_PATH}},
    {"driver-lacks-function", case_driver_lacks_function, DRIVER_FAKE, {"FAKE_CUDA_MISSING=cuStreamGetId", REAL_PATH}},
    {"init-error", case_init_error, DRIVER_FAKE, {"FAKE_CUDA_INIT_ERROR=999", "FAKE_CUDA_VERSION=12080", REAL_PATH}},
    {"no-device", case_no_device, DRIVER_FAKE, {"FAKE_CUDA_DEVICES=0", REAL_PATH}},
    {"device-ordinal", case_device_ordinal, DRIVER_FAKE, {"FAKE_CUDA_DEVICES=2", USE_GOOD}},
    {"forced-wrong-abi-major", case_forced_wrong_abi_major, DRIVER_FAKE, {FORCE("fake_wrong_abi_major")}},
    {"forced-entry-refuses", case_forced_entry_refuses, DRIVER_FAKE, {FORCE("fake_entry_refuses")}},
    {"forced-no-entry", case_forced_no_entry, DRIVER_FAKE, {FORCE("fake_no_entry")}},
    {"forced-entry-fails", case_forced_entry_fails, DRIVER_FAKE, {FORCE("fake_entry_fails")}},
    {"forced-no-reduce", case_forced_no_reduce, DRIVER_FAKE, {FORCE("fake_no_reduce")}},
    {"forced-small-struct", case_forced_small_struct, DRIVER_FAKE, {FORCE("fake_small_struct")}},
    {"forced-open-no-image", case_forced_open_no_image, DRIVER_FAKE, {FORCE("fake_open_no_image")}},
    {"failed-load-is-sticky", case_failed_load_is_sticky, DRIVER_FAKE, {FORCE("fake_entry_fails")}},
    {"forced-good-path", case_forced_good_path, DRIVER_FAKE, {FORCE("fake_good"), REAL_PATH}},
    {"forced-good-name", case_forced_good_name, DRIVER_FAKE, {USE_GOOD}},
    {"forced-bogus-name", case_forced_bogus_name, DRIVER_FAKE, {"GRIDSYNC_BACKEND=bogus", REAL_PATH}},
    {"forced-relative-path", case_forced_relative_path, DRIVER_FAKE, {REAL_PATH}},
    {"forced-not-elf", case_forced_not_elf, DRIVER_FAKE, {REAL_PATH}},
    {"forced-truncated-header", case_forced_truncated_header, DRIVER_FAKE, {REAL_PATH}},
    {"forced-truncated", case_forced_truncated, DRIVER_FAKE, {REAL_PATH}},
    {"forced-not-regular", case_forced_not_regular, DRIVER_FAKE, {REAL_PATH}},
    {"fallback-fifo", case_fallback_fifo, DRIVER_FAKE, {NULL}},
    {"backend-dir-missing", case_backend_dir_missing, DRIVER_FAKE, {NULL}},
    {"fallback-open-fails", case_fallback_open_fails, DRIVER_FAKE, {FALLBACK_PATH}},
    {"fallback-load-fails", case_fallback_load_fails, DRIVER_FAKE, {NULL}},
    {"cc11-skips-sm20", case_cc11_skips_sm20, DRIVER_FAKE, {"FAKE_CUDA_CC=1.1", FALLBACK_PATH}},
    {"cc10-too-old", case_cc10_too_old, DRIVER_FAKE, {"FAKE_CUDA_CC=1.0", REAL_PATH}},
    {"path-order", case_path_order, DRIVER_FAKE, {NULL}},
    {"path-relative-ignored", case_path_relative_ignored, DRIVER_FAKE, {NULL}},
    {"real-cc90", case_real_cc90, DRIVER_FAKE, {"FAKE_CUDA_CC=9.0", REAL_PATH}},
    {"real-cc20", case_real_cc20, DRIVER_FAKE, {"FAKE_CUDA_CC=2.0", REAL_PATH}},
    {"real-cc13", case_real_cc13, DRIVER_FAKE, {"FAKE_CUDA_CC=1.3", REAL_PATH}},
    {"real-kernels", case_real_kernels, DRIVER_FAKE, {REAL_PATH}},
    {"real-no-binary", case_real_no_binary, DRIVER_FAKE, {"FAKE_CUDA_NO_BINARY=1", REAL_PATH}},
    {"real-launch-error", case_real_launch_error, DRIVER_FAKE, {REAL_PATH}},
    {"good-call-log", case_good_call_log, DRIVER_FAKE, {USE_GOOD}},
    {"workspace-per-stream", case_workspace_per_stream, DRIVER_FAKE, {USE_GOOD}},
    {"workspace-threads", case_workspace_threads, DRIVER_FAKE, {USE_GOOD}},
    {"workspace-oom", case_workspace_oom, DRIVER_FAKE, {USE_GOOD}},
    {"workspace-size-invalid", case_workspace_size_invalid, DRIVER_FAKE, {USE_GOOD}},
    {"default-context", case_default_context, DRIVER_FAKE, {"FAKE_CUDA_DEVICES=2", USE_GOOD}},
    {"stream-other-context", case_stream_other_context, DRIVER_FAKE, {"FAKE_CUDA_DEVICES=2", USE_GOOD}},
    {"context-info", case_context_info, DRIVER_FAKE, {USE_GOOD}},
    {"pointer-checks", case_pointer_checks, DRIVER_FAKE, {USE_GOOD}},
    {"unsupported-by-backend", case_unsupported_by_backend, DRIVER_FAKE, {USE_GOOD}},
    {"real-segmented", case_real_segmented, DRIVER_FAKE, {REAL_PATH}},
    {"segmented-old-backend", case_segmented_old_backend, DRIVER_FAKE, {USE_GOOD}},
    {"queue-lifecycle", case_queue_lifecycle, DRIVER_FAKE, {USE_GOOD}},
    {"queue-errors", case_queue_errors, DRIVER_FAKE, {"FAKE_CUDA_DEVICES=2", USE_GOOD}},
    {"debug-trace", case_debug_trace, DRIVER_FAKE, {"GRIDSYNC_DEBUG=1", FALLBACK_PATH}},
    {"debug-off", case_debug_off, DRIVER_FAKE, {FALLBACK_PATH}},
    {"debug-zero", case_debug_off, DRIVER_FAKE, {"GRIDSYNC_DEBUG=0", FALLBACK_PATH}},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

static const test_case *find_case(const char *name)
{
    for (int i = 0; i < NCASES; i++)
        if (strcmp(cases[i].name, name) == 0)
            return &cases[i];
    return NULL;
}

/* ---- the parent: one clean child process per case ------------------------------------ */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Removes every GRIDSYNC_* and FAKE_* variable (and LD_LIBRARY_PATH) from the environment. */
static void clean_environment(void)
{
    extern char **environ;
    for (;;) {
        char name[256] = "";
        for (char **e = environ; e && *e; e++)
            if (strncmp(*e, "GRIDSYNC_", 9) == 0 || strncmp(*e, "FAKE_", 5) == 0 ||
                strncmp(*e, "LD_LIBRARY_PATH=", 16) == 0) {
                snprintf(name, sizeof name, "%.*s", (int)strcspn(*e, "="), *e);
                break;
            }
        if (!name[0])
            return;
        unsetenv(name);
    }
}

static int run_in_child(const test_case *c, const char *self)
{
    const char *base = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/gridsync-loader-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "mkdtemp(%s): %s\n", dir, strerror(errno));
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        clean_environment();
        char buf[PATH_MAX + 64];
        const char *libdir = FAKE_DRIVER_DIR;
        if (c->driver == DRIVER_TOO_OLD)
            libdir = FAKE_OLD_DRIVER_DIR;
        if (c->driver == DRIVER_NONE) {
            snprintf(buf, sizeof buf, "%s/empty", dir);
            mkdir(buf, 0700);
            libdir = buf;
        }
        setenv("LD_LIBRARY_PATH", libdir, 1);
        setenv("GS_TEST_TMPDIR", dir, 1);
        snprintf(buf, sizeof buf, "%s/cuda.log", dir);
        setenv("FAKE_CUDA_LOG", buf, 1);
        snprintf(buf, sizeof buf, "%s/backend.log", dir);
        setenv("FAKE_BACKEND_LOG", buf, 1);
        for (int i = 0; c->env[i]; i++)
            putenv((char *)c->env[i]);
        execl(self, self, "--child", c->name, (char *)NULL);
        fprintf(stderr, "exec %s: %s\n", self, strerror(errno));
        _exit(1);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    const char *keep = getenv("GS_TEST_KEEP");
    if (keep && *keep && strcmp(keep, "0") != 0)
        fprintf(stderr, "kept %s\n", dir);
    else
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "FAIL %s: killed by signal %d\n", c->name, WTERMSIG(status));
        return 1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        const test_case *c = find_case(argv[2]);
        if (!c) {
            fprintf(stderr, "no case %s\n", argv[2]);
            return 1;
        }
        setvbuf(stdout, NULL, _IONBF, 0);
        int rc = c->run();
        return rc == SKIP && !check_failures ? SKIP : check_exit_code();
    }
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < NCASES; i++)
            printf("%s\n", cases[i].name);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "--expect-cases") == 0) {
        int bad = argc - 2 != NCASES;
        for (int i = 2; i < argc; i++)
            if (!find_case(argv[i])) {
                fprintf(stderr, "FAIL: meson.build lists %s, which test_loader.c does not have\n", argv[i]);
                bad = 1;
            }
        for (int i = 0; i < NCASES; i++) {
            int listed = 0;
            for (int j = 2; j < argc; j++)
                listed |= strcmp(argv[j], cases[i].name) == 0;
            if (!listed) {
                fprintf(stderr, "FAIL: case %s is not registered in tests/loader/meson.build\n", cases[i].name);
                bad = 1;
            }
        }
        return bad;
    }

    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "readlink(/proc/self/exe): %s\n", strerror(errno));
        return 1;
    }
    self[len] = '\0';
    if (argc == 2) {
        const test_case *c = find_case(argv[1]);
        if (!c) {
            fprintf(stderr, "no case %s (--list shows them)\n", argv[1]);
            return 1;
        }
        return run_in_child(c, self);
    }
    int failed = 0, skipped = 0;
    for (int i = 0; i < NCASES; i++) {
        int rc = run_in_child(&cases[i], self);
        printf("%-28s %s\n", cases[i].name, rc == 0 ? "ok" : rc == SKIP ? "skipped" : "FAILED");
        failed += rc != 0 && rc != SKIP;
        skipped += rc == SKIP;
    }
    printf("%d cases: %d failed, %d skipped\n", NCASES, failed, skipped);
    return failed ? 1 : 0;
}
