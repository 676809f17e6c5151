/*
 * gridsync — the command-line tool: what gridsync runs on (info), one reduction checked and
 * timed (reduce), one segmented reduction checked and timed (segmented), one scan checked
 * bit for bit against the host model of its order and timed (scan), and every dtype x op
 * checked on several sizes (selftest).
 *
 * It acts as an application would: libgridsync for the reductions, device memory, copies,
 * streams and events through the dlopen-based CUDA shim (tools/cudashim.h), so it builds
 * and runs, and says "no CUDA driver", on machines without CUDA.
 *
 * Checking. Inputs are fresh random data from a seed (printed; --seed replays it), chosen
 * per operation so the reference is meaningful (see make_input). The reference and the
 * check are hostref's (hostref/hostref.h) with its rigorous tolerance: integers and
 * MIN/MAX/ARGMIN/ARGMAX exact; float SUM and PROD within n * eps * sum|x| (|prod|) of the
 * exact value plus the final rounding of float16/bfloat16, and exact when every partial
 * sum provably is.
 *
 * The tool never assumes which dtype/op pairs the library implements: a pair it answers
 * GS_ERROR_UNSUPPORTED for is reported (reduce) or counted and skipped (selftest).
 *
 * Exit status: 0 success, 1 failure (wrong result, or a gridsync/CUDA error),
 * 2 usage error, 3 no CUDA driver, 4 no CUDA device (or no such device).
 *
 * This file dispatches; each command is a file of its own (info.c, reduce.c, segmented.c,
 * scan.c, selftest.c), and what they share is in cli.h.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char k_usage[] =
    "usage: gridsync [--help] [--version] COMMAND [OPTIONS]\n"
    "\n"
    "Commands:\n"
    "  info       library and driver versions, devices, and the backend chosen for each\n"
    "  reduce     one gs_reduce on fresh random data: checked against a host reference, timed\n"
    "  segmented  one gs_segmented_reduce over a segment layout: every segment checked, timed\n"
    "  scan       one gs_scan on fresh random data: every result checked bit for bit, timed\n"
    "  selftest   every dtype x op on several sizes, checked against a host reference\n"
    "\n"
    "'gridsync COMMAND --help' describes a command's options; each takes --json for one JSON\n"
    "object on stdout instead of text. See also gridsync(1).\n"
    "\n"
    "Exit status: 0 success, 1 failure (wrong result or error), 2 usage error,\n"
    "             3 no CUDA driver, 4 no CUDA device.\n";

static const struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
} k_commands[] = {
    {"info", cmd_info, k_usage_info},
    {"reduce", cmd_reduce, k_usage_reduce},
    {"segmented", cmd_segmented, k_usage_segmented},
    {"scan", cmd_scan, k_usage_scan},
    {"selftest", cmd_selftest, k_usage_selftest},
};
#define NCOMMANDS (sizeof k_commands / sizeof k_commands[0])

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(name, k_commands[i].name) == 0)
            return &k_commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    /* k_dtypes is indexed by gs_dtype */
    for (int i = 0; i < NDTYPES; i++)
        if ((int)k_dtypes[i].id != i) {
            fprintf(stderr, "gridsync: internal error: dtype table out of order\n");
            return EXIT_FAIL;
        }

    if (argc < 2) {
        fputs(k_usage, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 && argc > 2) {
        const struct command *c = find_command(argv[2]);
        if (!c)
            usage_error("help: unknown command '%s'", argv[2]);
        fputs(c->usage, stdout);
        return EXIT_OK;
    }
    if (is_help(cmd) || strcmp(cmd, "help") == 0) {
        fputs(k_usage, stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("gridsync %d.%d.%d (libgridsync %s)\n", GS_VERSION_MAJOR, GS_VERSION_MINOR, GS_VERSION_PATCH,
               gs_version_string());
        return EXIT_OK;
    }
    const struct command *c = find_command(cmd);
    if (c) {
        g_cmd = c->name;
        return json_finish(c->run(argc - 2, argv + 2));
    }
    if (cmd[0] == '-')
        usage_error("unknown option '%s'", cmd);
    usage_error("unknown command '%s' (info, reduce, segmented, scan, selftest)", cmd);
}
