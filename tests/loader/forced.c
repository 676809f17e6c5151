/* loader cases: GRIDSYNC_BACKEND -- the ABI checks on broken fake backends it forces, the
 * sticky failure, and what it accepts as a name or a path. */
#include "fixture.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

/* GRIDSYNC_BACKEND names a broken fake by absolute path: context creation must fail with
 * exactly the case's `want`, and the message must name the file and say why (`arg`). */
static int forced_failure(const test_case *c)
{
    const char *path = getenv("GRIDSYNC_BACKEND");
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), c->want);
    CHECK(ctx == NULL);
    const char *msg = gs_last_error_message();
    CHECK_HAS(msg, path);
    CHECK_HAS(without(msg, path), c->arg);
    return 0;
}

static int forced_open_no_image(const test_case *c)
{
    forced_failure(c);
    /* open() failed, so there is nothing to close. */
    CHECK_INT(backend_log_lines("fake_open_no_image: open "), 1);
    CHECK_INT(backend_log_lines("fake_open_no_image: close"), 0);
    return 0;
}

static int failed_load_is_sticky(const test_case *c)
{
    forced_failure(c);
    char first[1024];
    snprintf(first, sizeof first, "%s", gs_last_error_message());
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), c->want);
    CHECK_STR(gs_last_error_message(), first); /* the same answer, */
    /* remembered, not retried: the entry point ran once. */
    CHECK_INT(backend_log_lines("fake_entry_fails: entry "), 1);
    return 0;
}

static int forced_good(void)
{
    app_init(1);
    live_counts before = live_now();
    gs_context *ctx = create_context("fake_good", FAKE_GOOD_PATH);
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    CHECK_HAS(info.selection_log, "GRIDSYNC_BACKEND");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    CHECK_RELEASED(before);
    return 0;
}

static int forced_bogus_name(void)
{
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_BACKEND_NOT_FOUND);
    CHECK_HAS(gs_last_error_message(), "gridsync-bogus.so");
    CHECK_HAS(gs_last_error_message(), "GRIDSYNC_BACKEND");
    return 0;
}

static int forced_relative_path(void)
{
    /* Each of these would find a good backend if it were taken relative to the working
     * directory; a relative path must never be loaded (it depends on where the program
     * happens to run). */
    static const struct {
        const char *value, *cwd;
    } v[] = {
        {"./gridsync-fake_good.so", FAKE_BACKEND_DIR},               /* from the fake backends' directory */
        {"backends/gridsync-fake_good.so", FAKE_BACKEND_DIR "/.."},  /* from its parent */
        {"gridsync-fake_good.so", FAKE_BACKEND_DIR},                 /* not a name: names have no '.' */
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        if (chdir(v[i].cwd) != 0) {
            CHECK_FAIL("chdir(%s): %s", v[i].cwd, strerror(errno));
            continue;
        }
        struct stat sb;
        CHECK(stat(v[i].value, &sb) == 0); /* the file really is there, relative to cwd */
        setenv("GRIDSYNC_BACKEND", v[i].value, 1);
        gs_context *ctx = NULL;
        CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_BACKEND_NOT_FOUND);
        CHECK_HAS(gs_last_error_message(), v[i].value);
        CHECK_HAS(gs_last_error_message(), "absolute");
    }
    char *log = backend_log();
    CHECK_STR(log, ""); /* nothing was loaded */
    free(log);
    return 0;
}

/* A broken fake forced by path is refused with `want`, and the message says `says` (the
 * backend's own explanation, where it gives one). */
#define CASE_FORCED(name, fake, want, says) CASE_WITH(name, forced_failure, want, says, FORCE(fake))

const test_case forced_cases[] = {
    CASE_FORCED("forced-wrong-abi-major", fake_wrong_abi_major, GS_ERROR_BACKEND_ABI_MISMATCH, "ABI 2.0"),
    CASE_FORCED("forced-entry-refuses", fake_entry_refuses, GS_ERROR_BACKEND_ABI_MISMATCH,
                   "built for backend ABI 2.0 only (on purpose)"),
    CASE_FORCED("forced-no-entry", fake_no_entry, GS_ERROR_BACKEND_INCOMPLETE, "gridsync_backend_entry_v1"),
    CASE_FORCED("forced-entry-fails", fake_entry_fails, GS_ERROR_BACKEND_INIT_FAILED,
                   "the entry point failed (on purpose)"),
    CASE_FORCED("forced-no-reduce", fake_no_reduce, GS_ERROR_BACKEND_INCOMPLETE, "reduce"),
    CASE_FORCED("forced-small-struct", fake_small_struct, GS_ERROR_BACKEND_INCOMPLETE, "too small"),
    CASE_WITH("forced-open-no-image", forced_open_no_image, GS_ERROR_NO_KERNEL_IMAGE,
              "no kernel image for compute capability 9.0 (on purpose)", FORCE(fake_open_no_image)),
    CASE_WITH("failed-load-is-sticky", failed_load_is_sticky, GS_ERROR_BACKEND_INIT_FAILED, "(on purpose)",
              FORCE(fake_entry_fails)),
    /* By absolute path (with a search path that would find others) and by name. */
    CASE("forced-good-path", forced_good, FORCE(fake_good), REAL_PATH),
    CASE("forced-good-name", forced_good, USE_GOOD),
    CASE("forced-bogus-name", forced_bogus_name, "GRIDSYNC_BACKEND=bogus", REAL_PATH),
    CASE("forced-relative-path", forced_relative_path, REAL_PATH),
    END_OF_CASES,
};
