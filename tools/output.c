/*
 * The gridsync command's output: lines for people (say), failures on stderr (fail), and
 * with --json one JSON object on stdout instead of the lines. The object is built in
 * memory as a command runs and printed once at its end (json_finish), so a command that
 * fails halfway still prints one complete object, with its exit status and first error.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int g_json;

static FILE *g_buf;
static char *g_data;
static size_t g_size;
static int g_depth;
static int g_first[32]; /* per open object/array: nothing written in it yet */
static char g_closer[32]; /* per open object/array: '}' or ']' */
static char g_error[1024];

void say(const char *fmt, ...)
{
    if (g_json)
        return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[sizeof g_error];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gridsync: %s\n", msg);
    if (!g_error[0])
        snprintf(g_error, sizeof g_error, "%s", msg);
}

void fail_traced(const char *head, const char *full)
{
    fprintf(stderr, "gridsync: %s (the reason is libgridsync's 'error:' line above)\n", head);
    if (!g_error[0])
        snprintf(g_error, sizeof g_error, "%s", full);
}

/* Opens the object on first use; 0 when there is no JSON to write. */
static int started(void)
{
    if (!g_json)
        return 0;
    if (!g_buf) {
        g_buf = open_memstream(&g_data, &g_size);
        if (!g_buf) {
            g_json = 0; /* no memory for the object: the lines are better than nothing */
            return 0;
        }
        fputc('{', g_buf);
        g_first[0] = 1;
    }
    return 1;
}

/* Length of the valid UTF-8 sequence at s, or 0 (a string from a file name or a driver
 * message may hold any bytes, and JSON must be UTF-8). */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

static void put_string(const char *s)
{
    fputc('"', g_buf);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        if (*p == '"' || *p == '\\') {
            fputc('\\', g_buf);
            fputc(*p++, g_buf);
        } else if (*p == '\n') {
            fputs("\\n", g_buf);
            p++;
        } else if (*p < 0x20 || *p == 0x7f) {
            fprintf(g_buf, "\\u%04x", *p++);
        } else if (*p < 0x80) {
            fputc(*p++, g_buf);
        } else {
            int n = utf8_len(p);
            if (n) {
                fwrite(p, 1, (size_t)n, g_buf);
                p += n;
            } else {
                fputs("\\ufffd", g_buf);
                p++;
            }
        }
    }
    fputc('"', g_buf);
}

/* The separator and the key of the next member (key NULL inside arrays). */
static void member(const char *key)
{
    if (!g_first[g_depth])
        fputc(',', g_buf);
    g_first[g_depth] = 0;
    if (key) {
        put_string(key);
        fputc(':', g_buf);
    }
}

void json_str(const char *key, const char *v)
{
    if (!started())
        return;
    member(key);
    if (v)
        put_string(v);
    else
        fputs("null", g_buf);
}

void json_int(const char *key, int64_t v)
{
    if (!started())
        return;
    member(key);
    fprintf(g_buf, "%" PRId64, v);
}

void json_uint(const char *key, uint64_t v)
{
    if (!started())
        return;
    member(key);
    fprintf(g_buf, "%" PRIu64, v);
}

void json_num(const char *key, double v)
{
    if (!started())
        return;
    member(key);
    if (isfinite(v))
        fprintf(g_buf, "%.17g", v);
    else
        fputs("null", g_buf); /* JSON has no NaN or infinity */
}

void json_bool(const char *key, int v)
{
    if (!started())
        return;
    member(key);
    fputs(v ? "true" : "false", g_buf);
}

void json_open(const char *key, char bracket)
{
    if (!started() || g_depth + 1 >= (int)(sizeof g_first / sizeof g_first[0]))
        return;
    member(key);
    fputc(bracket, g_buf);
    g_first[++g_depth] = 1;
    g_closer[g_depth] = bracket == '[' ? ']' : '}';
}

void json_close(void)
{
    if (!started() || g_depth == 0)
        return;
    fputc(g_closer[g_depth--], g_buf);
}

int json_finish(int rc)
{
    if (!started())
        return rc;
    while (g_depth > 0) /* a command that failed inside an object or array */
        json_close();
    json_int("exit_status", rc);
    json_str("error", g_error[0] ? g_error : NULL);
    fputs("}\n", g_buf);
    fclose(g_buf);
    g_buf = NULL;
    fwrite(g_data, 1, g_size, stdout);
    fflush(stdout);
    free(g_data);
    return rc;
}
