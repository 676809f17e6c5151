/* Thread-local error detail and tracing. */
#ifndef GS_CORE_ERROR_H
#define GS_CORE_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#include "gridsync.h"

/* Records the detail message for this thread and returns `status`, so error paths read
 * `return gs_fail(GS_ERROR_..., "what and why", ...);`. */
gs_status gs_fail(gs_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gs_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gs_set_errorv(const char *fmt, va_list ap);
/* Clears the message at the start of each public call. */
void gs_clear_error(void);

/* GRIDSYNC_DEBUG tracing: gs_trace prints only when it is enabled; gs_logv at any level. */
int gs_debug_enabled(void);
void gs_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gs_logv(int level, const char *fmt, va_list ap);

/* A growing text buffer for the per-context selection log (core/loader.c). */
typedef struct gs_strbuf {
    char *data;
    size_t len, cap;
} gs_strbuf;
void gs_strbuf_appendf(gs_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The environment, read with secure_getenv: NULL in setuid/setgid processes. */
const char *gs_getenv(const char *name);

#endif
