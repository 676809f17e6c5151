/* gridsync info: the library, the driver, the backend files, each device and the backend
 * chosen for it. Without a driver (or a device) it still says what it can: a packager or
 * a user debugging an install needs the versions and the backends most then. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char k_usage_info[] =
    "usage: gridsync info [--backend NAME] [--json]\n"
    "\n"
    "Prints the library version, the CUDA driver version, the backend directories and the\n"
    "backend files in them (name and backend ABI, or why each would be rejected), and for\n"
    "every CUDA device its name, compute capability, the backend gridsync chooses (name and\n"
    "file) and why the others were not chosen. Without a driver or a device it prints all\n"
    "but the devices, and a hint, and exits 3 or 4.\n"
    "\n"
    "  --backend NAME   force a backend (sets GRIDSYNC_BACKEND): a name such as cuda_sm20\n"
    "                   or cuda_sm11_compat, or an absolute path to a backend file\n"
    "  --json           one JSON object on stdout instead of the text\n";

static void print_library(void)
{
    say("gridsync %s (library), built against %d.%d.%d\n", gs_version_string(), GS_VERSION_MAJOR, GS_VERSION_MINOR,
        GS_VERSION_PATCH);
    json_str("library_version", gs_version_string());
    char built[32];
    snprintf(built, sizeof built, "%d.%d.%d", GS_VERSION_MAJOR, GS_VERSION_MINOR, GS_VERSION_PATCH);
    json_str("built_against", built);
    const char *env[] = {"GRIDSYNC_BACKEND", "GRIDSYNC_BACKEND_PATH"};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(env[i]);
        if (v)
            say("%s=%s\n", env[i], v);
        json_str(env[i], v);
    }
}

/* One device: its context's info, or the error creating it. Returns 0 or EXIT_FAIL. */
static int print_device(int d)
{
    gs_context *ctx = NULL;
    say("\ndevice %d:\n", d);
    json_open(NULL, '{');
    json_int("device", d);
    gs_status st = gs_context_create(d, &ctx);
    if (st != GS_SUCCESS) {
        say("  error: %s: %s\n", gs_status_string(st), gs_last_error_message());
        json_str("error", gs_last_error_message());
        json_str("status", gs_status_string(st));
        json_close();
        return EXIT_FAIL;
    }
    int rc = 0;
    gs_context_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    st = gs_context_get_info(ctx, &info);
    if (st != GS_SUCCESS) {
        say("  error: gs_context_get_info: %s: %s\n", gs_status_string(st), gs_last_error_message());
        json_str("error", gs_last_error_message());
        rc = EXIT_FAIL;
    } else {
        say("  name:               %s\n", info.device_name ? info.device_name : "?");
        say("  compute capability: %d.%d\n", info.cc_major, info.cc_minor);
        say("  multiprocessors:    %d\n", info.multiprocessor_count);
        say("  backend:            %s\n", info.backend_name ? info.backend_name : "?");
        say("  backend file:       %s\n", info.backend_path ? info.backend_path : "?");
        say("  selection:\n");
        json_context_info(&info);
        const char *log = info.selection_log ? info.selection_log : "";
        json_str("selection", log);
        while (*log) {
            size_t len = strcspn(log, "\n");
            say("    %.*s\n", (int)len, log);
            log += len + (log[len] == '\n');
        }
    }
    if ((st = gs_context_destroy(ctx)) != GS_SUCCESS) {
        say("  error: gs_context_destroy: %s: %s\n", gs_status_string(st), gs_last_error_message());
        rc = EXIT_FAIL;
    }
    json_close();
    return rc;
}

int cmd_info(int argc, char **argv)
{
    common_opts c;
    if (parse_command_line(argc, argv, k_usage_info, 0, &c, NULL, NULL))
        return EXIT_OK;
    json_str("command", "info");

    int driver = 0, count = 0;
    gs_status st = gs_driver_version(&driver);
    int rc = st != GS_SUCCESS ? report_gs("gs_driver_version", st) : EXIT_OK;
    if (!rc && (st = gs_device_count(&count)) != GS_SUCCESS)
        rc = report_gs("gs_device_count", st);
    if (!rc && count == 0) {
        fail("no CUDA device: the CUDA driver (version %d.%d) sees none", driver / 1000, (driver % 1000) / 10);
        rc = EXIT_NO_DEVICE;
    }

    print_library();
    if (rc != EXIT_NO_DRIVER) {
        say("CUDA driver %d.%d (%d)\n", driver / 1000, (driver % 1000) / 10, driver);
        json_int("driver_version", driver);
    }
    const int backends = print_backends();
    if (rc == EXIT_NO_DRIVER || rc == EXIT_NO_DEVICE || !backends) {
        const char *hint = rc == EXIT_NO_DRIVER
                               ? "gridsync needs the NVIDIA driver's libcuda.so.1 (CUDA 12.0 or newer): install the "
                                 "driver, or check that 'ldconfig -p' lists libcuda.so.1"
                           : rc == EXIT_NO_DEVICE ? "the driver sees no GPU: check nvidia-smi and CUDA_VISIBLE_DEVICES"
                                                  : "no backend files: set GRIDSYNC_BACKEND_PATH to the directory of "
                                                    "gridsync-*.so, or reinstall libgridsync's backends";
        say("hint: %s\n", hint);
        json_str("hint", hint);
    }
    if (rc)
        return rc;

    say("%d CUDA device%s\n", count, count == 1 ? "" : "s");
    json_open("devices", '[');
    for (int d = 0; d < count; d++) {
        fflush(stdout);
        rc = print_device(d) ? EXIT_FAIL : rc;
    }
    json_close();
    return rc;
}
