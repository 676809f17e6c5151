/* Backend discovery and loading. */
#ifndef GS_CORE_LOADER_H
#define GS_CORE_LOADER_H

#include "gridsync_backend.h"

#include "error.h"

/* A backend file loaded into the process. Loaded once per path and kept for the life of
 * the process (contexts on other devices may use it); a failed load is remembered and
 * never retried. */
typedef struct gs_backend_file {
    char *path;
    /* The backend's ops lifted into the current struct (loader.c: lift_ops), whatever
     * minor it was built for: an optional member it lacks is NULL. */
    const gs_backend_ops *ops;
} gs_backend_file;

/* Called by the loader for every backend file it loaded, in preference order, until it
 * returns GS_SUCCESS (the device accepted the backend). Any other status is logged as the
 * reason the backend was skipped (its detail message is the thread's error message). */
typedef gs_status (*gs_backend_try_fn)(const gs_backend_file *file, void *user);

/*
 * Walks the candidates for a device of compute capability cc_major.cc_minor (or the one
 * GRIDSYNC_BACKEND forces), loads each, and offers it to try(). Every decision goes to
 * `log` (one line each) and to the GRIDSYNC_DEBUG trace. Returns GS_SUCCESS once try()
 * accepted one, else the most relevant failure with a message naming files and reasons.
 */
gs_status gs_select_backend(int cc_major, int cc_minor, gs_backend_try_fn try_fn, void *user,
                            gs_strbuf *log);

/* The host table handed to every backend. */
const gs_backend_host *gs_backend_host_table(void);

#endif
