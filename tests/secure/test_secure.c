/*
 * secure (in suite unit): in a secure-execution process (AT_SECURE: setuid or setgid),
 * libgridsync ignores GRIDSYNC_BACKEND, GRIDSYNC_BACKEND_PATH and GRIDSYNC_DEBUG, so a
 * privileged program cannot be made to dlopen a file its user chose, nor to trace to a
 * stderr its user reads (core/error.c reads them with secure_getenv; docs/design.md).
 *
 *   test_secure LIBGRIDSYNC FAKE_LIBCUDA FAKE_BACKEND   what meson runs, as root
 *   test_secure --child DIR                             one probe (see below)
 *
 * As root, the test copies itself, libgridsync.so.1, the fake driver and a good fake
 * backend into a fresh directory readable by everyone, chowns the copy of itself to
 * `nobody` and makes it setuid: run by root, it has euid != ruid, and the kernel marks it
 * AT_SECURE. The dynamic loader then ignores LD_LIBRARY_PATH and $ORIGIN rpaths, so the
 * probe takes nothing from the environment: it dlopens the fake driver and libgridsync by
 * absolute path (libgridsync's own dlopen("libcuda.so.1") then finds the fake by its
 * SONAME), creates a context on device 0 and prints what happened: the status, the backend
 * file, the selection log and the detail message, one "key=value" line each.
 *
 * The probes:
 *   plain, variables set      (root, not setuid) the variables work: the forced backend is
 *                             chosen, GRIDSYNC_BACKEND_PATH is searched, the trace is
 *                             printed -- without this the other probes would prove nothing;
 *   setuid, variables unset   the baseline: it finds the good fake, as cuda_sm11_compat,
 *                             next to its libgridsync (<dir>/gridsync/), so every variable
 *                             below would change the outcome if it were honoured;
 *   setuid, variables set     GRIDSYNC_DEBUG=1 and one of GRIDSYNC_BACKEND=<abs path>,
 *                             GRIDSYNC_BACKEND=<name> + GRIDSYNC_BACKEND_PATH,
 *                             GRIDSYNC_BACKEND_PATH, GRIDSYNC_BACKEND=bogus: the outcome
 *                             must be the baseline's, word for word, and stderr empty.
 *
 * Exit status: 0 pass, 1 fail, 77 skipped: not root, or no directory where a setuid
 * program runs in secure mode (nosuid mounts, no_new_privs, a debugger or valgrind that
 * follows children).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gridsync.h"
#include "sandbox.h"

#define SKIP 77

static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures++;
}

/* ---- the probe ------------------------------------------------------------------------ */

/* Prints `s` on one line: newlines as "\n", backslashes doubled. */
static void print_escaped(const char *key, const char *s)
{
    printf("%s=", key);
    for (; s && *s; s++) {
        if (*s == '\n')
            fputs("\\n", stdout);
        else if (*s == '\\')
            fputs("\\\\", stdout);
        else
            putchar(*s);
    }
    putchar('\n');
}

/* Ends the probe with _exit: a leak checker's atexit hook (LeakSanitizer) cannot ptrace a
 * setuid process, and the probe frees what it made anyway. */
static void probe_exit(int code)
{
    fflush(stdout);
    fflush(stderr);
    _exit(code);
}

static int probe(const char *dir)
{
    printf("secure=%lu\n", getauxval(AT_SECURE));
    printf("euid-differs=%d\n", geteuid() != getuid());
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/libcuda.so.1", dir);
    void *cuda = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!cuda || !dlsym(cuda, "fake_cuda_live")) {
        printf("error=cannot load the fake driver %s: %s\n", path, cuda ? "no fake_cuda_live" : dlerror());
        probe_exit(1);
    }
    snprintf(path, sizeof path, "%s/libgridsync.so.1", dir);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("error=cannot load %s: %s\n", path, dlerror());
        probe_exit(1);
    }
    gs_status (*create)(int, gs_context **) = (gs_status(*)(int, gs_context **))dlsym(lib, "gs_context_create");
    gs_status (*destroy)(gs_context *) = (gs_status(*)(gs_context *))dlsym(lib, "gs_context_destroy");
    gs_status (*get_info)(const gs_context *, gs_context_info *) =
        (gs_status(*)(const gs_context *, gs_context_info *))dlsym(lib, "gs_context_get_info");
    const char *(*last_error)(void) = (const char *(*)(void))dlsym(lib, "gs_last_error_message");
    if (!create || !destroy || !get_info || !last_error) {
        printf("error=%s lacks a gs_ function\n", path);
        probe_exit(1);
    }
    gs_context *ctx = NULL;
    gs_status st = create(0, &ctx);
    printf("status=%d\n", (int)st);
    print_escaped("message", last_error());
    if (st == GS_SUCCESS) {
        gs_context_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        if (get_info(ctx, &info) != GS_SUCCESS) {
            printf("error=gs_context_get_info failed: %s\n", last_error());
            probe_exit(1);
        }
        print_escaped("backend", info.backend_path);
        print_escaped("log", info.selection_log);
        destroy(ctx);
    }
    probe_exit(0);
    return 0;
}

/* ---- the test ------------------------------------------------------------------------- */

static int copy_file(const char *from, const char *to, mode_t mode)
{
    if (sandbox_copy(from, to, SIZE_MAX, mode) == 0)
        return 0;
    fail("copy %s to %s: %s", from, to, strerror(errno));
    return -1;
}

static char *slurp_fd(int fd)
{
    char *s = sandbox_read_fd(fd);
    if (!s) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return s;
}

typedef struct result {
    int exit_code; /* -1: killed */
    char *out, *err;
} result;

static void free_result(result *r)
{
    free(r->out);
    free(r->err);
}

/* The value of "key=" in the probe's output ("" when absent). Static storage, one at a time. */
static const char *field(const result *r, const char *key)
{
    static char value[8192];
    size_t klen = strlen(key);
    value[0] = '\0';
    for (const char *line = r->out; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > klen && strncmp(line, key, klen) == 0 && line[klen] == '=') {
            snprintf(value, sizeof value, "%.*s", (int)(len - klen - 1), line + klen + 1);
            break;
        }
        line += len + (end ? 1 : 0);
    }
    return value;
}

/* Runs `exe --child dir` with exactly the environment `env` (NULL-terminated). */
static result run_probe(const char *exe, const char *dir, char *const env[])
{
    result r = {-1, NULL, NULL};
    FILE *out = tmpfile(), *err = tmpfile();
    if (!out || !err) {
        fprintf(stderr, "tmpfile: %s\n", strerror(errno));
        exit(1);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "fork: %s\n", strerror(errno));
        exit(1);
    }
    if (pid == 0) {
        dup2(fileno(out), 1);
        dup2(fileno(err), 2);
        char *argv[] = {(char *)exe, (char *)"--child", (char *)dir, NULL};
        execve(exe, argv, env);
        fprintf(stderr, "exec %s: %s\n", exe, strerror(errno));
        _exit(126);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp_fd(fileno(out));
    r.err = slurp_fd(fileno(err));
    fclose(out);
    fclose(err);
    return r;
}

static void show(const char *what, const result *r)
{
    fprintf(stderr, "--- %s: exit %d\n--- stdout:\n%s--- stderr:\n%s---\n", what, r->exit_code, r->out, r->err);
}

/* A directory everyone may enter, holding the setuid copy and the libraries; "" when
 * none of the candidates gives a secure-mode process. */
static int prepare(char *dir, size_t len, const char *base, const char *self, const char *libgridsync,
                   const char *libcuda, const char *backend, uid_t nobody)
{
    snprintf(dir, len, "%s/gridsync-secure-XXXXXX", base);
    if (!mkdtemp(dir))
        return -1;
    char path[PATH_MAX];
    int rc = chmod(dir, 0755);
    int saved = failures;
    const char *const from[] = {libgridsync, libcuda, backend, self};
    /* The copies are root's and read-only for others: nobody may read them, not replace them. */
    static const struct {
        const char *to;
        int from;
        mode_t mode;
    } copies[] = {
        {"libgridsync.so.1", 0, 0644},
        {"libcuda.so.1", 1, 0644},
        {"gridsync-fake_good.so", 2, 0644},
        /* Next to libgridsync, where it looks without any variable: the baseline finds it. */
        {"gridsync/gridsync-cuda_sm11_compat.so", 2, 0644},
        /* The same fake under the preferred backend's name, for GRIDSYNC_BACKEND_PATH. */
        {"backends/gridsync-cuda_sm20.so", 2, 0644},
        {"probe", 3, 0755},
    };
    static const char *const subdirs[] = {"backends", "gridsync"};
    for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, subdirs[i]);
        rc |= mkdir(path, 0755);
    }
    for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, copies[i].to);
        rc |= copy_file(from[copies[i].from], path, copies[i].mode);
    }
    /* chown clears the set-user-ID bit, so the mode comes after it. */
    snprintf(path, sizeof path, "%s/probe", dir);
    if (rc == 0 && (chown(path, nobody, (gid_t)-1) != 0 || chmod(path, 04755) != 0)) {
        fail("chown/chmod %s: %s", path, strerror(errno));
        rc = -1;
    }
    if (rc != 0) {
        sandbox_remove(dir);
        failures = saved; /* a candidate that does not work is not a failure yet */
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return probe(argv[2]);
    if (argc != 4) {
        fprintf(stderr, "usage: %s LIBGRIDSYNC FAKE_LIBCUDA FAKE_BACKEND\n", argv[0]);
        return 1;
    }
    if (geteuid() != 0) {
        printf("not root: skipped (the test makes a setuid copy of itself, owned by nobody)\n");
        return SKIP;
    }
    struct passwd *pw = getpwnam("nobody");
    if (!pw || pw->pw_uid == 0) {
        printf("no user 'nobody': skipped\n");
        return SKIP;
    }
    uid_t nobody = pw->pw_uid;
    char self[PATH_MAX];
    if (sandbox_self(self, sizeof self) != 0) {
        fprintf(stderr, "readlink /proc/self/exe: %s\n", strerror(errno));
        return 1;
    }
    char libs[3][PATH_MAX];
    for (int i = 0; i < 3; i++)
        if (!realpath(argv[i + 1], libs[i])) {
            fprintf(stderr, "%s: %s\n", argv[i + 1], strerror(errno));
            return 1;
        }

    /* Every candidate: a directory whose mount honours setuid and where the copy really
     * runs in secure mode. */
    const char *tmp = getenv("TMPDIR");
    const char *bases[] = {tmp && *tmp ? tmp : "/tmp", "/tmp", "/var/tmp", "/dev/shm"};
    char dir[PATH_MAX] = "", probe_exe[PATH_MAX + 16] = "";
    char env_dir[PATH_MAX + 32];
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
        if (prepare(dir, sizeof dir, bases[i], self, libs[0], libs[1], libs[2], nobody) != 0) {
            dir[0] = '\0';
            continue;
        }
        snprintf(probe_exe, sizeof probe_exe, "%s/probe", dir);
        char *env[] = {NULL};
        result r = run_probe(probe_exe, dir, env);
        int secure = r.exit_code == 0 && strcmp(field(&r, "secure"), "1") == 0;
        if (!secure)
            fprintf(stderr, "%s: the setuid probe did not run in secure mode (exit %d, secure=%s, euid-differs=%s)\n",
                    bases[i], r.exit_code, field(&r, "secure"), field(&r, "euid-differs"));
        free_result(&r);
        if (secure)
            break;
        sandbox_remove(dir);
        dir[0] = '\0';
    }
    if (!dir[0]) {
        printf("no directory where a setuid program runs in secure mode (nosuid mounts, no_new_privs, or "
               "valgrind following children): skipped\n");
        return failures ? 1 : SKIP;
    }
    printf("setuid probe: %s (owner nobody, run by root: AT_SECURE)\n", probe_exe);

    char forced_path[PATH_MAX + 64], backend_path[PATH_MAX + 64], forced_name_path[PATH_MAX + 64];
    snprintf(forced_path, sizeof forced_path, "GRIDSYNC_BACKEND=%s/gridsync-fake_good.so", dir);
    snprintf(backend_path, sizeof backend_path, "GRIDSYNC_BACKEND_PATH=%s/backends:%s", dir, dir);
    snprintf(forced_name_path, sizeof forced_name_path, "%s/backends/gridsync-cuda_sm20.so", dir);
    snprintf(env_dir, sizeof env_dir, "LD_LIBRARY_PATH=%s", dir);

    /* 1. Not setuid: the variables must have their effect, or the rest proves nothing. */
    {
        char *env[] = {(char *)"GRIDSYNC_DEBUG=1", forced_path, NULL};
        result r = run_probe(self, dir, env);
        char want[PATH_MAX + 64];
        snprintf(want, sizeof want, "%s/gridsync-fake_good.so", dir);
        if (r.exit_code != 0 || strcmp(field(&r, "secure"), "0") != 0 || strcmp(field(&r, "status"), "0") != 0 ||
            strcmp(field(&r, "backend"), want) != 0 || !strstr(r.err, "gridsync: ")) {
            fail("without setuid, GRIDSYNC_BACKEND=<path> and GRIDSYNC_DEBUG=1 must choose %s and trace to stderr",
                 want);
            show("plain probe, GRIDSYNC_BACKEND and GRIDSYNC_DEBUG set", &r);
        }
        free_result(&r);
        char *env2[] = {backend_path, NULL};
        r = run_probe(self, dir, env2);
        if (r.exit_code != 0 || strcmp(field(&r, "backend"), forced_name_path) != 0 || r.err[0]) {
            fail("without setuid, GRIDSYNC_BACKEND_PATH must find %s (and print nothing)", forced_name_path);
            show("plain probe, GRIDSYNC_BACKEND_PATH set", &r);
        }
        free_result(&r);
    }

    /* 2. Setuid, no variables: the baseline. */
    char *clean[] = {NULL};
    result base = run_probe(probe_exe, dir, clean);
    if (base.exit_code != 0 || strcmp(field(&base, "secure"), "1") != 0 || strcmp(field(&base, "status"), "0") != 0) {
        fail("the setuid probe without variables must find the backend next to its libgridsync");
        show("setuid probe, no variables", &base);
    } else {
        printf("baseline (setuid, no variables): status %s, ", field(&base, "status"));
        printf("backend '%s'\n", field(&base, "backend"));
    }

    /* 3. Setuid with the variables: the baseline's outcome, word for word, and no trace. */
    struct {
        const char *what;
        char *env[5];
    } cases[] = {
        {"GRIDSYNC_BACKEND=<path of a good backend>", {(char *)"GRIDSYNC_DEBUG=1", forced_path, env_dir, NULL}},
        {"GRIDSYNC_BACKEND=cuda_sm20 + GRIDSYNC_BACKEND_PATH",
         {(char *)"GRIDSYNC_DEBUG=1", (char *)"GRIDSYNC_BACKEND=cuda_sm20", backend_path, NULL}},
        {"GRIDSYNC_BACKEND_PATH", {(char *)"GRIDSYNC_DEBUG=1", backend_path, NULL}},
        {"GRIDSYNC_BACKEND=bogus", {(char *)"GRIDSYNC_DEBUG=1", (char *)"GRIDSYNC_BACKEND=bogus", NULL}},
        {"GRIDSYNC_DEBUG=yes", {(char *)"GRIDSYNC_DEBUG=yes", NULL}},
    };
    static const char *const keys[] = {"secure", "status", "message", "backend", "log"};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        result r = run_probe(probe_exe, dir, cases[c].env);
        int bad = r.exit_code != 0 || r.err[0] != '\0';
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            char want[8192];
            snprintf(want, sizeof want, "%s", field(&base, keys[k]));
            if (strcmp(field(&r, keys[k]), want) != 0) {
                fail("setuid with %s: %s is '%s', without the variables '%s'", cases[c].what, keys[k],
                     field(&r, keys[k]), want);
                bad = 1;
            }
        }
        if (r.err[0])
            fail("setuid with %s and GRIDSYNC_DEBUG: the probe wrote to stderr", cases[c].what);
        if (bad)
            show(cases[c].what, &r);
        else
            printf("setuid with %s: ignored\n", cases[c].what);
        free_result(&r);
    }
    free_result(&base);

    const char *keep = getenv("GS_TEST_KEEP");
    if (keep && *keep && strcmp(keep, "0") != 0)
        fprintf(stderr, "kept %s\n", dir);
    else
        sandbox_remove(dir);
    if (failures)
        fprintf(stderr, "%d check%s failed\n", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
