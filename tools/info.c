/* gridsync info: the library, the driver, each device and the backend chosen for it. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char k_usage_info[] =
    "usage: gridsync info [--backend NAME]\n"
    "\n"
    "Prints the library version, the CUDA driver version, and for every CUDA device its name,\n"
    "compute capability, the backend gridsync chooses (name and file) and why the others were\n"
    "not chosen.\n"
    "\n"
    "  --backend NAME   force a backend (sets GRIDSYNC_BACKEND): a name such as cuda_sm20\n"
    "                   or cuda_sm11_compat, or an absolute path to a backend file\n";


int cmd_info(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (is_help(argv[i])) {
            fputs(k_usage_info, stdout);
            return EXIT_OK;
        } else if (take_opt(argc, argv, &i, "--backend", &v)) {
            set_backend(v);
        } else {
            usage_error("info: unknown option '%s'", argv[i]);
        }
    }

    int driver = 0, count = 0;
    gs_status st = gs_driver_version(&driver);
    if (st != GS_SUCCESS)
        return report_gs("gs_driver_version", st);
    if ((st = gs_device_count(&count)) != GS_SUCCESS)
        return report_gs("gs_device_count", st);
    if (count == 0) {
        fprintf(stderr, "gridsync: no CUDA device: the CUDA driver (version %d.%d) sees none\n", driver / 1000,
                (driver % 1000) / 10);
        return EXIT_NO_DEVICE;
    }

    printf("gridsync %s (library), built against %d.%d.%d\n", gs_version_string(), GS_VERSION_MAJOR,
           GS_VERSION_MINOR, GS_VERSION_PATCH);
    printf("CUDA driver %d.%d (%d)\n", driver / 1000, (driver % 1000) / 10, driver);
    const char *env_backend = getenv("GRIDSYNC_BACKEND"), *env_path = getenv("GRIDSYNC_BACKEND_PATH");
    if (env_backend)
        printf("GRIDSYNC_BACKEND=%s\n", env_backend);
    if (env_path)
        printf("GRIDSYNC_BACKEND_PATH=%s\n", env_path);
    printf("%d CUDA device%s\n", count, count == 1 ? "" : "s");

    int rc = EXIT_OK;
    for (int d = 0; d < count; d++) {
        gs_context *ctx = NULL;
        printf("\ndevice %d:\n", d);
        st = gs_context_create(d, &ctx);
        if (st != GS_SUCCESS) {
            printf("  error: %s: %s\n", gs_status_string(st), gs_last_error_message());
            fflush(stdout);
            rc = EXIT_FAIL;
            continue;
        }
        gs_context_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        st = gs_context_get_info(ctx, &info);
        if (st != GS_SUCCESS) {
            printf("  error: gs_context_get_info: %s: %s\n", gs_status_string(st), gs_last_error_message());
            rc = EXIT_FAIL;
        } else {
            printf("  name:               %s\n", info.device_name ? info.device_name : "?");
            printf("  compute capability: %d.%d\n", info.cc_major, info.cc_minor);
            printf("  multiprocessors:    %d\n", info.multiprocessor_count);
            printf("  backend:            %s\n", info.backend_name ? info.backend_name : "?");
            printf("  backend file:       %s\n", info.backend_path ? info.backend_path : "?");
            printf("  selection:\n");
            const char *log = info.selection_log ? info.selection_log : "";
            while (*log) {
                size_t len = strcspn(log, "\n");
                printf("    %.*s\n", (int)len, log);
                log += len + (log[len] == '\n');
            }
        }
        if ((st = gs_context_destroy(ctx)) != GS_SUCCESS) {
            printf("  error: gs_context_destroy: %s: %s\n", gs_status_string(st), gs_last_error_message());
            rc = EXIT_FAIL;
        }
    }
    return rc;
}

