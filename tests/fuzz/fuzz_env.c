/*
 * libFuzzer harness: the environment variables gridsync parses -- GRIDSYNC_BACKEND,
 * GRIDSYNC_BACKEND_PATH, GRIDSYNC_DEBUG -- set from the input, then gs_context_create
 * against the fake driver and fake backends, gs_context_get_info, gs_context_destroy.
 *
 * Input:
 *   byte 0        bit 0: set GRIDSYNC_BACKEND, bit 1: GRIDSYNC_BACKEND_PATH, bit 2:
 *                 GRIDSYNC_DEBUG (unset otherwise); bits 3-4: the device ordinal (0, 1,
 *                 2 = one past the last, -1); bits 5-7: the compute capability of the fake
 *                 devices (9.0 2.0 1.3 1.1 1.0 8.6 0.0 -1.5)
 *   then          the three values, NUL-separated, in that order
 *
 * The file system is a sandbox: an absolute path in GRIDSYNC_BACKEND, and each absolute
 * directory in GRIDSYNC_BACKEND_PATH, is taken relative to a fresh temporary directory
 * made at start-up ("/good/gridsync-fake_good.so" is <sandbox>/good/gridsync-fake_good.so),
 * and ".." becomes "._", so no input makes the harness dlopen a file of the system. The
 * sandbox holds:
 *   good/   gridsync-fake_good.so, gridsync-cuda_sm20.so, gridsync-cuda_sm11_compat.so
 *           (copies of the good fake backend)
 *   bad/    gridsync-fake_<variant>.so for every broken variant; gridsync-cuda_sm20.so
 *           (open() has no kernel image), gridsync-cuda_sm11_compat.so (the entry point
 *           fails); gridsync-notelf.so (text), gridsync-truncated.so (half an ELF file),
 *           gridsync-empty.so (0 bytes), gridsync-dir.so/ (a directory), and
 *           gridsync-fifo.so (a FIFO; FUZZ_SANDBOX_FIFO=0 leaves it out)
 *   empty/
 * Besides, the harness's "next to libgridsync" directory (<dir of the harness>/gridsync)
 * and the configured backend directory (GS_BACKEND_DIR) are set up by ci-fuzz.sh.
 *
 * Checked for every input, besides what AddressSanitizer/UBSan see:
 *   - the status is a gs_status; on failure *ctx is NULL and the message says something;
 *   - on success, gs_context_get_info works and the backend chosen lies in the sandbox,
 *     next to the library or in GS_BACKEND_DIR (relative directories are never searched);
 *   - after gs_context_destroy, every driver object gridsync took is given back
 *     (primary context retains, device memory, streams, modules, the context stack).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>

#include "fuzz_common.h"

#ifndef GS_BACKEND_DIR
#  error "GS_BACKEND_DIR (the configured backend directory the core was built with) must be defined"
#endif

void fuzz_reset_debug(void); /* fuzz_core_error.c */

static fuzz_driver drv;
static char sandbox[PATH_MAX];
static char next_to_lib[PATH_MAX];

static void put(const char *rel, const char *variant, size_t limit)
{
    char from[PATH_MAX], to[PATH_MAX];
    snprintf(from, sizeof from, "%s/gridsync-%s.so", FUZZ_FAKE_DIR, variant);
    snprintf(to, sizeof to, "%s/%s", sandbox, rel);
    if (sandbox_copy(from, to, limit, 0644) != 0) {
        fprintf(stderr, "copy %s to %s: %s\n", from, to, strerror(errno));
        abort();
    }
}

static void write_text(const char *rel, const char *text)
{
    char to[PATH_MAX];
    snprintf(to, sizeof to, "%s/%s", sandbox, rel);
    FILE *f = fopen(to, "w");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
}

static void make_dir(const char *rel)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", sandbox, rel);
    if (mkdir(p, 0755) != 0)
        abort();
}

static void remove_sandbox(void) { sandbox_remove(sandbox); }

static void make_sandbox(void)
{
    if (sandbox_make(sandbox, sizeof sandbox, "gridsync-fuzz-env") != 0)
        abort();
    atexit(remove_sandbox);
    make_dir("good");
    make_dir("bad");
    make_dir("empty");
    make_dir("bad/gridsync-dir.so");
    put("good/gridsync-fake_good.so", "fake_good", SIZE_MAX);
    put("good/gridsync-cuda_sm20.so", "fake_good", SIZE_MAX);
    put("good/gridsync-cuda_sm11_compat.so", "fake_good", SIZE_MAX);
    static const char *const bad[] = {"fake_wrong_abi_major", "fake_entry_refuses", "fake_no_entry",
                                      "fake_entry_fails",     "fake_no_reduce",     "fake_small_struct",
                                      "fake_open_no_image"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "bad/gridsync-%s.so", bad[i]);
        put(rel, bad[i], SIZE_MAX);
    }
    put("bad/gridsync-cuda_sm20.so", "fake_open_no_image", SIZE_MAX);
    put("bad/gridsync-cuda_sm11_compat.so", "fake_entry_fails", SIZE_MAX);
    struct stat sb;
    char good[PATH_MAX];
    snprintf(good, sizeof good, "%s/gridsync-fake_good.so", FUZZ_FAKE_DIR);
    if (stat(good, &sb) != 0)
        abort();
    put("bad/gridsync-truncated.so", "fake_good", (size_t)sb.st_size / 2);
    write_text("bad/gridsync-notelf.so", "not an ELF file\n");
    write_text("bad/gridsync-empty.so", "");
    /* A FIFO blocks open() and dlopen() until someone writes to it: the loader must refuse
     * it without opening it blockingly (a hang is a libFuzzer timeout, a failure). The seed
     * forced-bad-fifo reaches it. FUZZ_SANDBOX_FIFO=0 leaves it out. */
    const char *fifo = getenv("FUZZ_SANDBOX_FIFO");
    if (!fifo || strcmp(fifo, "0") != 0) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/bad/gridsync-fifo.so", sandbox);
        if (mkfifo(p, 0644) != 0)
            abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_setup(&drv);
    make_sandbox();
    char exe[PATH_MAX];
    if (sandbox_self(exe, sizeof exe) != 0)
        abort();
    *strrchr(exe, '/') = '\0';
    snprintf(next_to_lib, sizeof next_to_lib, "%s/gridsync/", exe);
    return 0;
}

/* `value` with ".." defused and, if it is an absolute path, moved into the sandbox. */
static char *sandboxed(const char *value, int is_path_list)
{
    size_t len = strlen(value), cap = len + 1;
    /* Every ':'-element may gain the sandbox prefix. */
    size_t elements = 1;
    for (const char *c = value; *c; c++)
        elements += *c == ':';
    if (is_path_list)
        cap += elements * strlen(sandbox);
    else
        cap += strlen(sandbox);
    char *out = malloc(cap);
    if (!out)
        abort();
    size_t o = 0;
    int at_start = 1;
    for (size_t i = 0; i < len; i++) {
        if (at_start && value[i] == '/') {
            memcpy(out + o, sandbox, strlen(sandbox));
            o += strlen(sandbox);
        }
        at_start = is_path_list && value[i] == ':';
        out[o++] = value[i] == '.' && i > 0 && value[i - 1] == '.' ? '_' : value[i];
    }
    out[o] = '\0';
    return out;
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int devices[] = {0, 1, 2, -1};
    static const char *const ccs[] = {"9.0", "2.0", "1.3", "1.1", "1.0", "8.6", "0.0", "-1.5"};
    fuzz_input in = {data, size};
    uint8_t flags = fuzz_u8(&in);
    char *backend = fuzz_cstr(&in), *path = fuzz_cstr(&in), *debug = fuzz_cstr(&in);
    char *backend_s = sandboxed(backend, 0), *path_s = sandboxed(path, 1);

    fuzz_reset_debug();
    if (flags & 1)
        setenv("GRIDSYNC_BACKEND", backend_s, 1);
    else
        unsetenv("GRIDSYNC_BACKEND");
    if (flags & 2)
        setenv("GRIDSYNC_BACKEND_PATH", path_s, 1);
    else
        unsetenv("GRIDSYNC_BACKEND_PATH");
    if (flags & 4)
        setenv("GRIDSYNC_DEBUG", debug, 1);
    else
        unsetenv("GRIDSYNC_DEBUG");
    setenv("FAKE_CUDA_CC", ccs[flags >> 5], 1);
    int device = devices[(flags >> 3) & 3];

    long before_primary = drv.live("primary"), before_mem = drv.live("mem"), before_streams = drv.live("streams"),
         before_modules = drv.live("modules");
    gs_context *ctx = (gs_context *)(uintptr_t)0x1; /* must be overwritten */
    gs_status st = gs_context_create(device, &ctx);
    fuzz_check_message();
    FUZZ_CHECK((int)st >= GS_SUCCESS && (int)st <= GS_ERROR_INTERNAL, "gs_context_create returned %d", (int)st);
    if (st != GS_SUCCESS) {
        FUZZ_CHECK(ctx == NULL, "*ctx is %p after a failure", (void *)ctx);
        FUZZ_CHECK(gs_last_error_message()[0] != '\0', "failure %d without a message", (int)st);
        FUZZ_CHECK(st != GS_ERROR_INTERNAL, "GS_ERROR_INTERNAL from gs_context_create");
    } else {
        FUZZ_CHECK(ctx != NULL, "success without a context");
        FUZZ_CHECK(device == 0 || device == 1, "a context for device %d", device);
        gs_context_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        FUZZ_CHECK(gs_context_get_info(ctx, &info) == GS_SUCCESS, "gs_context_get_info failed");
        FUZZ_CHECK(info.device == device, "info.device %d, created for %d", info.device, device);
        FUZZ_CHECK(info.backend_name && info.backend_path && info.selection_log && info.device_name,
                   "a NULL string in gs_context_info");
        int allowed = (starts_with(info.backend_path, sandbox) && info.backend_path[strlen(sandbox)] == '/') ||
                      starts_with(info.backend_path, next_to_lib) ||
                      starts_with(info.backend_path, GS_BACKEND_DIR "/");
        FUZZ_CHECK(allowed, "backend %s is outside the sandbox, %s and %s", info.backend_path, next_to_lib,
                   GS_BACKEND_DIR);
        FUZZ_CHECK(gs_context_destroy(ctx) == GS_SUCCESS, "gs_context_destroy failed");
    }
    FUZZ_CHECK(drv.live("primary") == before_primary, "primary context retains %ld, were %ld", drv.live("primary"),
               before_primary);
    FUZZ_CHECK(drv.live("mem") == before_mem, "device allocations %ld, were %ld", drv.live("mem"), before_mem);
    FUZZ_CHECK(drv.live("streams") == before_streams, "streams %ld, were %ld", drv.live("streams"), before_streams);
    FUZZ_CHECK(drv.live("modules") == before_modules, "modules %ld, were %ld", drv.live("modules"),
               before_modules);
    FUZZ_CHECK(drv.live("stack") == 0, "%ld contexts left pushed", drv.live("stack"));

    free(backend);
    free(path);
    free(debug);
    free(backend_s);
    free(path_s);
    return 0;
}
