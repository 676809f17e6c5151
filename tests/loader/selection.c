/* loader cases: choosing a backend without GRIDSYNC_BACKEND -- the preference by compute
 * capability, fallback past a backend that fails, GRIDSYNC_BACKEND_PATH's order and what it
 * ignores, and the GRIDSYNC_DEBUG trace of those decisions. */
#include "fixture.h"

#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

static int backend_dir_missing(void)
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

/* The fallback directory's cuda_sm11_compat is chosen: returns the selection log's line
 * about `skipped` (static storage). */
static const char *expect_fallback(const char *skipped)
{
    static char line[2048];
    gs_context *ctx = create_context("cuda_sm11_compat", FALLBACK_SM11_PATH);
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    const char *log = info.selection_log ? info.selection_log : "";
    CHECK_HAS(find_line(log, "gridsync-cuda_sm11_compat.so", 1), "chosen");
    /* The log names the skipped file, with its reason, before the chosen one. */
    const char *a = strstr(log, skipped), *b = strstr(log, "cuda_sm11_compat.so");
    CHECK(a && b && a < b);
    snprintf(line, sizeof line, "%s", find_line(log, skipped, 0));
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    return line;
}

static int fallback_open_fails(void)
{
    CHECK_HAS(expect_fallback(FAKE_FALLBACK_DIR "/gridsync-cuda_sm20.so"),
              "no kernel image for compute capability 9.0 (on purpose)");
    /* cuda_sm20 was offered the device first; its failed open() needs no close(). */
    char *log = backend_log();
    const char *open20 = strstr(log, "cuda_sm20: open "), *open11 = strstr(log, "cuda_sm11_compat: open ");
    CHECK(open20 && open11 && open20 < open11);
    free(log);
    CHECK_INT(backend_log_lines("cuda_sm20: close"), 0);
    CHECK_INT(backend_log_lines("cuda_sm11_compat: close"), 1);
    return 0;
}

/* The path of a cuda_sm20 in a new directory searched before the fallback directory (the
 * caller makes the file; static storage). */
static const char *sm20_before_fallback(const char *dir_name)
{
    static char file[PATH_MAX];
    const char *dir = tmp_path(dir_name);
    mkdir(dir, 0700);
    snprintf(file, sizeof file, "%s/gridsync-cuda_sm20.so", dir);
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s:%s", dir, FAKE_FALLBACK_DIR);
    setenv("GRIDSYNC_BACKEND_PATH", path, 1);
    return file;
}

static int fallback_load_fails(void)
{
    /* A cuda_sm20 that does not load at all: skipped with dlopen's reason. */
    const char *broken = sm20_before_fallback("broken");
    write_file(broken, "garbage", 7);
    char reason[1024];
    snprintf(reason, sizeof reason, "%s", dlopen_error(broken));
    CHECK_HAS(expect_fallback(broken), reason);
    return 0;
}

static int fallback_fifo(void)
{
    /* A FIFO named like the preferred backend: it is skipped with the reason, without
     * blocking in open(), and the next backend is chosen. */
    const char *fifo = make_fifo(sm20_before_fallback("fifo"));
    watchdog("gs_context_create with a FIFO as gridsync-cuda_sm20.so in GRIDSYNC_BACKEND_PATH");
    const char *line = expect_fallback(fifo);
    watchdog(NULL);
    CHECK_HAS(line, "skipped");
    CHECK_HAS(line, "not a regular file (it is a FIFO)");
    CHECK_INT(backend_log_lines("cuda_sm20:"), 0); /* the fallback dir's sm20 was not reached */
    return 0;
}

static int cc11_skips_sm20(void)
{
    gs_context *ctx = create_context("cuda_sm11_compat", NULL);
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    CHECK_INT(info.cc_major, 1);
    CHECK_INT(info.cc_minor, 1);
    CHECK_HAS_NOT(info.selection_log, "gridsync-cuda_sm20.so");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    /* __syncthreads_or needs 2.0: cuda_sm20 must not even be loaded on 1.1. */
    CHECK_INT(backend_log_lines("cuda_sm20:"), 0);
    return 0;
}

static int cc10_too_old(void)
{
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_NO_KERNEL_IMAGE);
    CHECK_HAS(gs_last_error_message(), "compute capability 1.0");
    return 0;
}

static int path_order(void)
{
    /* The first directory of GRIDSYNC_BACKEND_PATH that has a file wins. */
    setenv("GRIDSYNC_BACKEND_PATH", REAL_BACKEND_DIR ":" FAKE_FALLBACK_DIR, 1);
    CHECK_STATUS(gs_context_destroy(create_context(NULL, REAL_BACKEND_DIR "/gridsync-cuda_sm20.so")), GS_SUCCESS);
    setenv("GRIDSYNC_BACKEND_PATH", FAKE_FALLBACK_DIR ":" REAL_BACKEND_DIR, 1);
    CHECK_STATUS(gs_context_destroy(create_context(NULL, FALLBACK_SM11_PATH)), GS_SUCCESS);
    return 0;
}

static int path_relative_ignored(void)
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
    CHECK_STATUS(gs_context_destroy(create_context(NULL, FALLBACK_SM11_PATH)), GS_SUCCESS);
    return 0;
}

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

static int debug_trace(void)
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
    CHECK_HAS(find_line(out, "chosen", 0), FALLBACK_SM11_PATH);
    printf("trace:\n%s", out);
    free(out);
    return 0;
}

/* A merged-/usr system: lib is a link to usr/lib, so one directory has two names, both in
 * the search path (there, the one next to libgridsync and the configured one). It is
 * searched once, under the name that comes first. */
static int path_same_directory(void)
{
    char root[PATH_MAX - 64], usr[PATH_MAX], lib[PATH_MAX], dir[PATH_MAX], file[PATH_MAX], path[2 * PATH_MAX + 2];
    snprintf(root, sizeof root, "%s", tmp_path("root"));
    snprintf(usr, sizeof usr, "%s/usr", root);
    snprintf(dir, sizeof dir, "%s/usr/lib", root);
    snprintf(lib, sizeof lib, "%s/lib", root);
    snprintf(file, sizeof file, "%s/usr/lib/gridsync", root);
    const char *made[] = {root, usr, dir, file};
    for (size_t i = 0; i < 4; i++)
        if (mkdir(made[i], 0755) != 0) {
            CHECK_FAIL("mkdir(%s): %s", made[i], strerror(errno));
            return 0;
        }
    snprintf(file, sizeof file, "%s/usr/lib/gridsync/gridsync-cuda_sm11_compat.so", root);
    if (symlink("usr/lib", lib) != 0 || symlink(FALLBACK_SM11_PATH, file) != 0) {
        CHECK_FAIL("symlink: %s", strerror(errno));
        return 0;
    }
    snprintf(lib, sizeof lib, "%s/lib/gridsync", root);
    snprintf(usr, sizeof usr, "%s/usr/lib/gridsync", root);
    snprintf(path, sizeof path, "%s:%s", lib, usr);
    setenv("GRIDSYNC_BACKEND_PATH", path, 1);
    char *out = stderr_of_create();
    int as_lib = 0, as_usr = 0;
    for (const char *line = out; *line;) {
        const char *end = strchr(line, '\n');
        const size_t len = end ? (size_t)(end - line) : strlen(line);
        char text[PATH_MAX + 128];
        snprintf(text, sizeof text, "%.*s", (int)len, line);
        if (strstr(text, "loader: search directory ")) {
            as_lib += strstr(text, lib) != NULL;
            as_usr += strstr(text, usr) != NULL;
        }
        line += len + (end != NULL);
    }
    CHECK_INT(as_lib, 1);
    CHECK_INT(as_usr, 0);
    CHECK_HAS(find_line(out, usr, 0), "is the same directory as");
    printf("trace:\n%s", out);
    free(out);
    return 0;
}

static int debug_off(void)
{
    /* Without GRIDSYNC_DEBUG (or with GRIDSYNC_DEBUG=0), a skipped backend is no reason
     * to print anything. */
    char *out = stderr_of_create();
    CHECK_STR(out, "");
    free(out);
    return 0;
}

const test_case selection_cases[] = {
    /* GRIDSYNC_BACKEND_PATH: searched in order, relative entries ignored; nothing found. */
    CASE("path-order", path_order, NO_ENV),
    CASE("path-relative-ignored", path_relative_ignored, NO_ENV),
    CASE("backend-dir-missing", backend_dir_missing, NO_ENV),
    CASE("path-same-directory", path_same_directory, "GRIDSYNC_DEBUG=1"),
    /* Past a preferred backend that fails to open, fails to load, or is no file. */
    CASE("fallback-open-fails", fallback_open_fails, FALLBACK_PATH),
    CASE("fallback-load-fails", fallback_load_fails, NO_ENV),
    CASE("fallback-fifo", fallback_fifo, NO_ENV),
    /* The compute capability's preference. */
    CASE("cc11-skips-sm20", cc11_skips_sm20, "FAKE_CUDA_CC=1.1", FALLBACK_PATH),
    CASE("cc10-too-old", cc10_too_old, "FAKE_CUDA_CC=1.0", REAL_PATH),
    /* GRIDSYNC_DEBUG traces those decisions, and nothing is printed without it. */
    CASE("debug-trace", debug_trace, "GRIDSYNC_DEBUG=1", FALLBACK_PATH),
    CASE("debug-off", debug_off, FALLBACK_PATH),
    CASE("debug-zero", debug_off, "GRIDSYNC_DEBUG=0", FALLBACK_PATH),
    END_OF_CASES,
};
