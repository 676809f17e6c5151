#define _GNU_SOURCE
#include "error.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridsync_backend.h"

static _Thread_local char t_message[1024];

void gs_set_errorv(const char *fmt, va_list ap)
{
    vsnprintf(t_message, sizeof t_message, fmt, ap);
    gs_trace("error: %s", t_message);
}

void gs_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gs_set_errorv(fmt, ap);
    va_end(ap);
}

gs_status gs_fail(gs_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gs_set_errorv(fmt, ap);
    va_end(ap);
    return status;
}

void gs_clear_error(void)
{
    t_message[0] = '\0';
}

GS_API const char *gs_last_error_message(void)
{
    return t_message;
}

const char *gs_getenv(const char *name)
{
    /* NULL when the process runs setuid/setgid (AT_SECURE): a privileged program must
     * not be made to dlopen a file its user chose. */
    return secure_getenv(name);
}

static pthread_once_t g_debug_once = PTHREAD_ONCE_INIT;
static int g_debug;

static void read_debug(void)
{
    const char *v = gs_getenv("GRIDSYNC_DEBUG");
    g_debug = v && *v && strcmp(v, "0") != 0;
}

int gs_debug_enabled(void)
{
    pthread_once(&g_debug_once, read_debug);
    return g_debug;
}

void gs_logv(int level, const char *fmt, va_list ap)
{
    if (level == GS_LOG_DEBUG && !gs_debug_enabled())
        return;
    /* One fprintf per line so lines from several threads do not interleave. */
    char line[1200];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "gridsync: %s\n", line);
}

void gs_trace(const char *fmt, ...)
{
    if (!gs_debug_enabled())
        return;
    va_list ap;
    va_start(ap, fmt);
    gs_logv(GS_LOG_DEBUG, fmt, ap);
    va_end(ap);
}

GS_API const char *gs_status_string(gs_status status)
{
    switch (status) {
    case GS_SUCCESS: return "GS_SUCCESS: success";
    case GS_ERROR_INVALID_ARGUMENT: return "GS_ERROR_INVALID_ARGUMENT: invalid argument";
    case GS_ERROR_UNSUPPORTED: return "GS_ERROR_UNSUPPORTED: unsupported dtype/op combination";
    case GS_ERROR_NO_DRIVER: return "GS_ERROR_NO_DRIVER: no usable CUDA driver";
    case GS_ERROR_NO_DEVICE: return "GS_ERROR_NO_DEVICE: no such CUDA device";
    case GS_ERROR_BACKEND_NOT_FOUND: return "GS_ERROR_BACKEND_NOT_FOUND: no backend found";
    case GS_ERROR_BACKEND_ABI_MISMATCH: return "GS_ERROR_BACKEND_ABI_MISMATCH: backend ABI version mismatch";
    case GS_ERROR_BACKEND_INCOMPLETE: return "GS_ERROR_BACKEND_INCOMPLETE: backend lacks a required function";
    case GS_ERROR_BACKEND_INIT_FAILED: return "GS_ERROR_BACKEND_INIT_FAILED: backend initialisation failed";
    case GS_ERROR_NO_KERNEL_IMAGE: return "GS_ERROR_NO_KERNEL_IMAGE: backend has no code for this device";
    case GS_ERROR_OUT_OF_MEMORY: return "GS_ERROR_OUT_OF_MEMORY: out of memory";
    case GS_ERROR_CUDA: return "GS_ERROR_CUDA: CUDA driver error";
    case GS_ERROR_INVALID_POINTER: return "GS_ERROR_INVALID_POINTER: pointer not accessible by the device";
    case GS_ERROR_INVALID_CONTEXT: return "GS_ERROR_INVALID_CONTEXT: invalid context";
    case GS_ERROR_INTERNAL: return "GS_ERROR_INTERNAL: internal error";
    }
    return "unknown gridsync status";
}

/* The selection log grows line by line; a failed allocation only shortens it. */
void gs_strbuf_appendf(gs_strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0)
        return;
    if (b->len + (size_t)need + 2 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 256);
        while (cap < b->len + (size_t)need + 2)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p)
            return; /* the log is diagnostics only */
        b->data = p;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)need;
    b->data[b->len++] = '\n';
    b->data[b->len] = '\0';
}
