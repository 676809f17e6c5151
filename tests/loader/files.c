/* loader cases: GRIDSYNC_BACKEND naming a file that is not a loadable shared object --
 * text, a truncated copy of a real backend, a FIFO, a directory. */
#include "fixture.h"

#include <elf.h>
#include <errno.h>
#include <sys/stat.h>

static int forced_not_elf(void)
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

/* A truncated copy of a real backend: `arg` bytes of it ("half": half of it), forced by
 * absolute path. It must be refused with a message that names the file and says it is cut
 * short -- and the process must survive: the dynamic loader itself does not check that the
 * segments are all there (glibc dies of SIGBUS touching the missing part), so the check is
 * gridsync's to make before dlopen. */
static int forced_truncated(const test_case *c)
{
    const char *real = REAL_BACKEND_DIR "/gridsync-cuda_sm20.so";
    struct stat sb;
    if (stat(real, &sb) != 0 || (size_t)sb.st_size < 4096) {
        CHECK_FAIL("the real backend %s is missing", real);
        return 0;
    }
    size_t keep = strcmp(c->arg, "half") == 0 ? (size_t)sb.st_size / 2 : (size_t)strtoul(c->arg, NULL, 10);
    char *image = slurp(real);
    const char *path = tmp_path("gridsync-truncated.so");
    write_file(path, image, keep);
    int cut_segment = cuts_a_segment((const unsigned char *)image, keep);
    free(image);
    setenv("GRIDSYNC_BACKEND", path, 1);
    fflush(NULL);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), c->want);
    const char *msg = gs_last_error_message();
    CHECK_HAS(msg, path);
    const char *rest = without(msg, path);
    if (!cut_segment) {
        /* The header is cut: dlopen itself notices and says so. */
        CHECK_HAS(rest, "file too short");
    } else if (!strstr(rest, "truncated") && !strstr(rest, "too short") && !strstr(rest, "past the end") &&
               !strstr(rest, "past end")) {
        CHECK_FAIL("the message does not say the file is cut short: \"%s\"", msg);
    }
    return 0;
}

/* A backend path that names something other than a regular file. dlopen's own open() of a
 * FIFO blocks until a writer comes, so gs_context_create would never return: the watchdog
 * turns a hang into a failure with a message (well before meson's timeout). */
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

static int forced_not_regular(void)
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

const test_case files_cases[] = {
    CASE("forced-not-elf", forced_not_elf, REAL_PATH),
    CASE_WITH("forced-truncated-header", forced_truncated, STATUS_UNLOADABLE_FILE, "40", REAL_PATH),
    CASE_WITH("forced-truncated", forced_truncated, STATUS_UNLOADABLE_FILE, "half", REAL_PATH),
    CASE("forced-not-regular", forced_not_regular, REAL_PATH),
    END_OF_CASES,
};
