/*
 * loader suite: driver loading, backend discovery, loading, validation and fallback, the
 * calls the core makes into a backend, per-stream workspaces and the work queue's host
 * functions -- all against the fake CUDA driver (tests/fake/fake_cuda.c) and fake or real
 * backends, on any machine. The cases are in one file per area (driver.c, forced.c,
 * files.c, selection.c, real.c, calls.c, scan.c, scan_exact.c, workspace.c, queue.c,
 * exact_round.c), each with its table; this file runs them:
 *
 *   test_loader                 runs every case, each in a child, and summarises
 *   test_loader CASE            runs CASE in a child (what meson's test() per case calls)
 *   test_loader --child CASE    the child: the environment is already set up; runs CASE here
 *   test_loader --list          prints the case names
 *   test_loader --expect-cases NAMES...   fails unless NAMES are exactly the cases (meson
 *                               reads the names off the area files; this checks it read
 *                               every one and nothing else)
 *
 * The parent gives the child a clean environment: every GRIDSYNC_* and FAKE_* variable
 * removed, LD_LIBRARY_PATH set to the fake driver's directory, FAKE_CUDA_LOG and
 * FAKE_BACKEND_LOG pointing into a fresh temporary directory (GS_TEST_TMPDIR), and then the
 * case's own variables (which may name another driver's directory, or none).
 *
 * Exit status: 0 pass, 1 fail, 77 skipped (meson's convention).
 */
#include "fixture.h"

#include <errno.h>
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"

static const test_case *const areas[] = {driver_cases,     forced_cases,    files_cases, selection_cases,
                                         real_cases,       calls_cases,     scan_cases,  scan_exact_cases,
                                         workspace_cases,  queue_cases,     exact_round_cases};

#define FOR_EACH_CASE(c)                                                           \
    for (size_t area_ = 0; area_ < sizeof areas / sizeof areas[0]; area_++)        \
        for (const test_case *c = areas[area_]; c->name; c++)

static const test_case *find_case(const char *name)
{
    FOR_EACH_CASE(c) {
        if (strcmp(c->name, name) == 0)
            return c;
    }
    return NULL;
}

/* In the child: the environment test_case `c` asks for, then the case run in a fresh
 * process image (so the dynamic loader sees the new LD_LIBRARY_PATH). */
static void exec_child(const test_case *c, const char *self, const char *dir)
{
    sandbox_clean_environment();
    char buf[PATH_MAX + 64];
    setenv("LD_LIBRARY_PATH", FAKE_DRIVER_DIR, 1);
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

static int run_in_child(const test_case *c, const char *self)
{
    char dir[PATH_MAX];
    if (sandbox_make(dir, sizeof dir, "gridsync-loader") != 0) {
        fprintf(stderr, "mkdtemp(%s): %s\n", dir, strerror(errno));
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0)
        exec_child(c, self, dir);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    const char *keep = getenv("GS_TEST_KEEP");
    if (keep && *keep && strcmp(keep, "0") != 0)
        fprintf(stderr, "kept %s\n", dir);
    else
        sandbox_remove(dir);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "FAIL %s: killed by signal %d\n", c->name, WTERMSIG(status));
        return 1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* Whether `names` are exactly the cases of the tables. */
static int expect_cases(int n, char **names)
{
    int bad = 0, cases = 0;
    for (int i = 0; i < n; i++)
        if (!find_case(names[i])) {
            fprintf(stderr, "FAIL: meson.build registers %s, which no case table has\n", names[i]);
            bad = 1;
        }
    FOR_EACH_CASE(c) {
        int listed = 0;
        for (int j = 0; j < n; j++)
            listed += strcmp(names[j], c->name) == 0;
        if (listed != 1) {
            fprintf(stderr, "FAIL: case %s is registered %d times by tests/loader/meson.build\n", c->name, listed);
            bad = 1;
        }
        cases++;
    }
    return bad || cases != n;
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
        int rc = c->run ? c->run() : c->run_with(c);
        return rc == SKIP && !check_failures ? SKIP : check_exit_code();
    }
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        FOR_EACH_CASE(c) {
            printf("%s\n", c->name);
        }
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "--expect-cases") == 0)
        return expect_cases(argc - 2, argv + 2);

    char self[PATH_MAX];
    if (sandbox_self(self, sizeof self) != 0) {
        fprintf(stderr, "readlink(/proc/self/exe): %s\n", strerror(errno));
        return 1;
    }
    if (argc == 2) {
        const test_case *c = find_case(argv[1]);
        if (!c) {
            fprintf(stderr, "no case %s (--list shows them)\n", argv[1]);
            return 1;
        }
        return run_in_child(c, self);
    }
    int failed = 0, skipped = 0, total = 0;
    FOR_EACH_CASE(c) {
        int rc = run_in_child(c, self);
        printf("%-28s %s\n", c->name, rc == 0 ? "ok" : rc == SKIP ? "skipped" : "FAILED");
        failed += rc != 0 && rc != SKIP;
        skipped += rc == SKIP;
        total++;
    }
    printf("%d cases: %d failed, %d skipped\n", total, failed, skipped);
    return failed ? 1 : 0;
}
