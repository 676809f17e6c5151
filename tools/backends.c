/*
 * What `gridsync info` says about backends with or without a driver: the directories the
 * library searches, in core/loader.c's order, and for each gridsync-*.so in them its name
 * and backend ABI, or why the library would reject it. Each file is tried the way the
 * core tries it (dlopen, the versioned entry point, the ABI major, the required members)
 * so the answer holds on a machine without a GPU; the host table carries no driver,
 * which no entry point uses (they only record the table).
 */
#define _GNU_SOURCE /* dladdr */

#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "dir_id.h"
#include "gridsync_backend.h"

#ifndef GS_TOOL_BACKEND_DIR
#  error "GS_TOOL_BACKEND_DIR (the configured backend directory) must be defined by the build"
#endif

#define MAX_DIRS 32

typedef struct dir_entry {
    char path[4096];
    const char *source;
    gs_dir_id id;
} dir_entry;

/* Searched once, where it first appears: under the same name, or under another name of
 * the same directory (on a merged-/usr system /lib is /usr/lib). */
static int add_dir(dir_entry *dirs, int n, const char *path, size_t len, const char *source)
{
    if (len == 0 || len >= sizeof dirs[0].path || n >= MAX_DIRS)
        return n;
    for (int i = 0; i < n; i++)
        if (strlen(dirs[i].path) == len && strncmp(dirs[i].path, path, len) == 0)
            return n;
    memcpy(dirs[n].path, path, len);
    dirs[n].path[len] = '\0';
    dirs[n].id = gs_dir_id_of(dirs[n].path);
    for (int i = 0; i < n; i++)
        if (gs_dir_id_same(dirs[i].id, dirs[n].id))
            return n;
    dirs[n].source = source;
    return n + 1;
}

static int search_dirs(dir_entry *dirs)
{
    int n = 0;
    const char *env = getenv("GRIDSYNC_BACKEND_PATH");
    for (const char *p = env ? env : ""; *p;) {
        size_t len = strcspn(p, ":");
        n = add_dir(dirs, n, p, len, "GRIDSYNC_BACKEND_PATH");
        p += len + (p[len] == ':');
    }
    Dl_info info;
    if (dladdr((void *)gs_version, &info) && info.dli_fname && info.dli_fname[0] == '/') {
        char buf[4096];
        const char *slash = strrchr(info.dli_fname, '/');
        int len = snprintf(buf, sizeof buf, "%.*s/gridsync", (int)(slash - info.dli_fname), info.dli_fname);
        if (len > 0 && (size_t)len < sizeof buf)
            n = add_dir(dirs, n, buf, (size_t)len, "next to libgridsync");
    }
    return add_dir(dirs, n, GS_TOOL_BACKEND_DIR, strlen(GS_TOOL_BACKEND_DIR), "configured");
}

static char g_entry_error[512];

static void probe_log(int level, const char *fmt, ...)
{
    (void)level;
    (void)fmt;
}

static void probe_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_entry_error, sizeof g_entry_error, fmt, ap);
    va_end(ap);
}

/* 1 and the backend's name and ABI, or 0 and why the core would refuse the file. */
static int probe(const char *path, char *name, size_t name_len, uint32_t *abi, char *why, size_t why_len)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, why_len, "cannot load: %s", dlerror());
        return 0;
    }
    gs_backend_entry_v1_fn entry = (gs_backend_entry_v1_fn)dlsym(h, GS_BACKEND_ENTRY_V1_NAME);
    static gs_backend_host host; /* zero: no driver entry points */
    host.struct_size = sizeof host;
    host.abi_version = GS_BACKEND_ABI_VERSION;
    host.log = probe_log;
    host.set_error = probe_set_error;
    const gs_backend_ops *ops = NULL;
    gs_status st = GS_SUCCESS;
    g_entry_error[0] = '\0';
    if (entry)
        st = entry(GS_BACKEND_ABI_VERSION, &host, &ops);
    int ok = 0;
    if (!entry)
        snprintf(why, why_len, "not a gridsync backend: no symbol %s", GS_BACKEND_ENTRY_V1_NAME);
    else if (st != GS_SUCCESS)
        snprintf(why, why_len, "%s returned %s%s%s", GS_BACKEND_ENTRY_V1_NAME, gs_status_string(st),
                 g_entry_error[0] ? ": " : "", g_entry_error);
    else if (!ops)
        snprintf(why, why_len, "%s returned no ops table", GS_BACKEND_ENTRY_V1_NAME);
    else if (GS_BACKEND_ABI_VERSION_MAJOR(ops->abi_version) != GS_BACKEND_ABI_MAJOR)
        snprintf(why, why_len, "backend ABI %u.%u, but this gridsync speaks %u.%u (the major must match)",
                 (unsigned)GS_BACKEND_ABI_VERSION_MAJOR(ops->abi_version), (unsigned)(ops->abi_version & 0xffffu),
                 (unsigned)GS_BACKEND_ABI_MAJOR, (unsigned)GS_BACKEND_ABI_MINOR);
    else if (ops->struct_size < sizeof(gs_backend_ops_v1_0) || !ops->name || !ops->name[0] || !ops->open ||
             !ops->close || !ops->query_reduce || !ops->workspace_size || !ops->reduce) /* 1.0's members */
        snprintf(why, why_len, "incomplete: a required member of its ops table is missing");
    else {
        snprintf(name, name_len, "%s", ops->name);
        *abi = ops->abi_version;
        ok = 1;
    }
    dlclose(h);
    return ok;
}

static int is_backend_file(const struct dirent *e)
{
    size_t len = strlen(e->d_name);
    return strncmp(e->d_name, "gridsync-", 9) == 0 && len > 12 && strcmp(e->d_name + len - 3, ".so") == 0;
}

int print_backends(void)
{
    dir_entry dirs[MAX_DIRS];
    const int ndirs = search_dirs(dirs);
    int found = 0;
    say("backend directories, in search order:\n");
    json_open("backend_directories", '[');
    for (int i = 0; i < ndirs; i++) {
        DIR *d = opendir(dirs[i].path);
        say("  %s (%s)%s\n", dirs[i].path, dirs[i].source, d ? "" : ": absent");
        json_open(NULL, '{');
        json_str("path", dirs[i].path);
        json_str("source", dirs[i].source);
        json_bool("exists", d != NULL);
        json_close();
        if (d)
            closedir(d);
    }
    json_close();
    say("backend files:\n");
    json_open("backends", '[');
    for (int i = 0; i < ndirs; i++) {
        struct dirent **names;
        int count = scandir(dirs[i].path, &names, is_backend_file, alphasort);
        for (int k = 0; k < count; k++) {
            char path[8192], name[128], why[1024];
            uint32_t abi = 0;
            const int len = snprintf(path, sizeof path, "%s/%s", dirs[i].path, names[k]->d_name);
            free(names[k]);
            if (len < 0 || (size_t)len >= sizeof path)
                continue;
            const int ok = probe(path, name, sizeof name, &abi, why, sizeof why);
            json_open(NULL, '{');
            json_str("file", path);
            if (ok) {
                char version[32];
                snprintf(version, sizeof version, "%u.%u", (unsigned)(abi >> 16), (unsigned)(abi & 0xffffu));
                say("  %s: %s, backend ABI %s\n", path, name, version);
                json_str("name", name);
                json_str("abi_version", version);
            } else {
                say("  %s: rejected: %s\n", path, why);
                json_str("rejected", why);
            }
            json_close();
            found++;
        }
        if (count >= 0)
            free(names);
    }
    json_close();
    if (!found)
        say("  none\n");
    return found;
}
