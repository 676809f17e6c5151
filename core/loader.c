#define _GNU_SOURCE
#include "loader.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dir_id.h"
#include "driver.h"
#include "error.h"

#ifndef GS_BACKEND_DIR
#  error "GS_BACKEND_DIR (the configured backend directory) must be defined by the build"
#endif

/* ---- the host table ------------------------------------------------------------------- */

static void host_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gs_logv(level, fmt, ap);
    va_end(ap);
}

static void host_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gs_set_errorv(fmt, ap);
    va_end(ap);
}

static pthread_once_t g_host_once = PTHREAD_ONCE_INIT;
static gs_backend_host g_host;

static void fill_host(void)
{
    gs_status st;
    const gs_driver *d = gs_driver_get(&st);
    g_host.struct_size = sizeof g_host;
    g_host.abi_version = GS_BACKEND_ABI_VERSION;
    g_host.log = host_log;
    g_host.set_error = host_set_error;
    if (!d)
        return; /* backends are only loaded once a device exists, so this is not reached */
    g_host.cuGetErrorName = d->cuGetErrorName;
    g_host.cuDeviceGetAttribute = d->cuDeviceGetAttribute;
    g_host.cuModuleLoadData = d->cuModuleLoadData;
    g_host.cuModuleUnload = d->cuModuleUnload;
    g_host.cuModuleGetFunction = d->cuModuleGetFunction;
    g_host.cuFuncGetAttribute = d->cuFuncGetAttribute;
    g_host.cuFuncSetAttribute = d->cuFuncSetAttribute;
    g_host.cuOccupancyMaxActiveBlocksPerMultiprocessor = d->cuOccupancyMaxActiveBlocksPerMultiprocessor;
    g_host.cuLaunchKernel = d->cuLaunchKernel;
    g_host.cuGetProcAddress = d->cuGetProcAddress;
}

const gs_backend_host *gs_backend_host_table(void)
{
    pthread_once(&g_host_once, fill_host);
    return &g_host;
}

/* ---- loading one file ----------------------------------------------------------------- */

/* Remembered outcome of loading one path (sticky, as NCCL does with plugins). */
typedef struct loaded_entry {
    struct loaded_entry *next;
    gs_backend_file file; /* file.ops points to `ops` */
    gs_backend_ops ops;   /* the backend's table, lifted into the current struct */
    gs_status status;
    char *message;
} loaded_entry;

static pthread_mutex_t g_loaded_lock = PTHREAD_MUTEX_INITIALIZER;
static loaded_entry *g_loaded;

/* ---- the one adapter: any 1.x backend's ops as the current struct ---------------------- */

/* Every minor only appended to the ops of the one before, so a table of minor m is the
 * current struct's first sizeof(gs_backend_ops_v1_m) bytes. */
#define GS_SAME_PLACE(old, member)                                                              \
    _Static_assert(offsetof(old, member) == offsetof(gs_backend_ops, member) &&                 \
                       sizeof(((old *)0)->member) == sizeof(((gs_backend_ops *)0)->member),    \
                   #old "." #member " is not where the current ops have it")
GS_SAME_PLACE(gs_backend_ops_v1_0, reduce);
GS_SAME_PLACE(gs_backend_ops_v1_1, segmented_reduce);
GS_SAME_PLACE(gs_backend_ops_v1_2, query_reduce_flags);
GS_SAME_PLACE(gs_backend_ops_v1_3, exact_round);
_Static_assert(sizeof(gs_backend_ops) == sizeof(gs_backend_ops_v1_3),
               "a new backend ABI minor: add its frozen ops to lift_ops");
#undef GS_SAME_PLACE

/*
 * Lifts the table a backend returned into `out`, the current struct: the members of the
 * newest released minor that its struct_size covers are copied, and every member after
 * them (the optional functions of later minors) is NULL. The rest of core/ reads the
 * lifted table only, never a struct_size: a member is there when it is non-NULL. `out`
 * keeps the backend's abi_version (for messages) and says sizeof(gs_backend_ops).
 * Returns 0 when the table is smaller than 1.0's, which had no optional member.
 */
static int lift_ops(const gs_backend_ops *ops, gs_backend_ops *out)
{
    size_t covered;
    if (ops->struct_size >= sizeof(gs_backend_ops_v1_3))
        covered = sizeof(gs_backend_ops_v1_3);
    else if (ops->struct_size >= sizeof(gs_backend_ops_v1_2))
        covered = sizeof(gs_backend_ops_v1_2);
    else if (ops->struct_size >= sizeof(gs_backend_ops_v1_1))
        covered = sizeof(gs_backend_ops_v1_1);
    else if (ops->struct_size >= sizeof(gs_backend_ops_v1_0))
        covered = sizeof(gs_backend_ops_v1_0);
    else
        return 0;
    memset(out, 0, sizeof *out);
    memcpy(out, ops, covered);
    out->struct_size = sizeof *out;
    return 1;
}

/* Checks a backend file before dlopen, which would otherwise do harm with two kinds of
 * file; returns 0 when dlopen may go ahead (it then says in its own words why a file is no
 * shared object), else writes the reason to `why`:
 *  - not a regular file: dlopen's open() of a FIFO blocks until someone writes to it (for
 *    ever, in gs_context_create), and a directory, a device or a socket is no backend
 *    either. So the path is stat()ed first (a device is refused without being opened),
 *    then opened with O_NONBLOCK, which opens a FIFO without waiting and changes nothing
 *    for a regular file, and what was opened is refused unless fstat says it is regular.
 *    (A path swapped for a FIFO between this check and dlopen's own open() still blocks:
 *    whoever can do that can also put any code there, so this guards against mistakes,
 *    not against attacks.)
 *  - truncated: glibc's dlopen maps the segments a file declares without checking that the
 *    file holds them, and the process dies of SIGBUS touching the missing part of a
 *    truncated copy (a half-written package, a full disk). Every PT_LOAD/PT_DYNAMIC segment
 *    must lie inside the file. */
static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "of an unknown type";
}

static int unloadable_file(const char *path, char *why, size_t len)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        snprintf(why, len, "not a regular file (it is %s)", file_kind(sb.st_mode));
        return 1;
    }
    int fd;
    do
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return 0; /* dlopen fails too, and says why */
    Elf64_Ehdr eh;
    int bad = 0;
    if (fstat(fd, &sb) != 0) {
        snprintf(why, len, "cannot check the file: fstat: %s", strerror(errno));
        bad = 1;
    } else if (!S_ISREG(sb.st_mode)) {
        snprintf(why, len, "not a regular file (it is %s)", file_kind(sb.st_mode));
        bad = 1;
    } else if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
               eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
        for (unsigned i = 0; i < eh.e_phnum && !bad; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) != (ssize_t)sizeof ph) {
                snprintf(why, len, "truncated file: program header %u lies past the end of the file", i);
                bad = 1;
            } else if ((ph.p_type == PT_LOAD || ph.p_type == PT_DYNAMIC) &&
                       ph.p_offset + ph.p_filesz > (uint64_t)sb.st_size) {
                snprintf(why, len, "truncated file: segment %u ends at byte %llu, but the file has %lld bytes", i,
                         (unsigned long long)(ph.p_offset + ph.p_filesz), (long long)sb.st_size);
                bad = 1;
            }
        }
    }
    close(fd);
    return bad;
}

static gs_status load_file_uncached(const char *path, gs_backend_ops *lifted)
{
    /* A file that cannot be loaded at all is not a backend: BACKEND_NOT_FOUND (the
     * header's contract); INIT_FAILED is for a backend that loaded and then failed. */
    char why[256];
    if (unloadable_file(path, why, sizeof why))
        return gs_fail(GS_ERROR_BACKEND_NOT_FOUND, "%s: cannot load: %s", path, why);
    /* RTLD_LOCAL: backends' own symbols never interpose on the application's. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return gs_fail(GS_ERROR_BACKEND_NOT_FOUND, "%s: cannot load: %s", path, dlerror());
    gs_backend_entry_v1_fn entry = (gs_backend_entry_v1_fn)dlsym(h, GS_BACKEND_ENTRY_V1_NAME);
    if (!entry) {
        dlclose(h);
        return gs_fail(GS_ERROR_BACKEND_INCOMPLETE, "%s: not a gridsync backend: no symbol %s", path,
                       GS_BACKEND_ENTRY_V1_NAME);
    }
    const gs_backend_ops *ops = NULL;
    gs_clear_error();
    gs_status st = entry(GS_BACKEND_ABI_VERSION, gs_backend_host_table(), &ops);
    if (st != GS_SUCCESS) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", gs_last_error_message());
        dlclose(h);
        if (st == GS_ERROR_BACKEND_ABI_MISMATCH)
            return gs_fail(st, "%s: the backend refused backend ABI %u.%u%s%s", path, GS_BACKEND_ABI_MAJOR,
                           GS_BACKEND_ABI_MINOR, detail[0] ? ": " : "", detail);
        return gs_fail(GS_ERROR_BACKEND_INIT_FAILED, "%s: %s returned %s%s%s", path, GS_BACKEND_ENTRY_V1_NAME,
                       gs_status_string(st), detail[0] ? ": " : "", detail);
    }
    if (!ops) {
        dlclose(h);
        return gs_fail(GS_ERROR_BACKEND_INCOMPLETE, "%s: %s succeeded but returned no ops table", path,
                       GS_BACKEND_ENTRY_V1_NAME);
    }
    if (GS_BACKEND_ABI_VERSION_MAJOR(ops->abi_version) != GS_BACKEND_ABI_MAJOR) {
        unsigned maj = GS_BACKEND_ABI_VERSION_MAJOR(ops->abi_version), min = ops->abi_version & 0xffffu;
        dlclose(h);
        return gs_fail(GS_ERROR_BACKEND_ABI_MISMATCH,
                       "%s: backend ABI %u.%u, but this libgridsync speaks %u.%u (the major must match)", path,
                       maj, min, GS_BACKEND_ABI_MAJOR, GS_BACKEND_ABI_MINOR);
    }
    const char *missing = NULL;
    if (!lift_ops(ops, lifted))
        missing = "(ops table too small for ABI 1.0)";
    else if (!lifted->name || !lifted->name[0])
        missing = "name";
    else if (!lifted->open)
        missing = "open";
    else if (!lifted->close)
        missing = "close";
    else if (!lifted->query_reduce)
        missing = "query_reduce";
    else if (!lifted->workspace_size)
        missing = "workspace_size";
    else if (!lifted->reduce)
        missing = "reduce";
    if (missing) {
        dlclose(h);
        return gs_fail(GS_ERROR_BACKEND_INCOMPLETE, "%s: backend lacks required member %s", path, missing);
    }
    return GS_SUCCESS; /* the handle stays open: the lifted ops point into it */
}

static gs_status load_file(const char *path, const gs_backend_file **out)
{
    pthread_mutex_lock(&g_loaded_lock);
    loaded_entry *e;
    for (e = g_loaded; e; e = e->next)
        if (strcmp(e->file.path, path) == 0)
            break;
    if (!e) {
        e = calloc(1, sizeof *e);
        char *p = strdup(path);
        if (!e || !p) {
            free(e);
            free(p);
            pthread_mutex_unlock(&g_loaded_lock);
            return gs_fail(GS_ERROR_OUT_OF_MEMORY, "out of host memory loading %s", path);
        }
        e->file.path = p;
        e->status = load_file_uncached(path, &e->ops);
        e->file.ops = e->status == GS_SUCCESS ? &e->ops : NULL;
        if (e->status != GS_SUCCESS)
            e->message = strdup(gs_last_error_message());
        e->next = g_loaded;
        g_loaded = e;
    } else if (e->status != GS_SUCCESS) {
        gs_set_error("%s", e->message ? e->message : path);
    }
    pthread_mutex_unlock(&g_loaded_lock);
    *out = &e->file;
    return e->status;
}

/* ---- search directories --------------------------------------------------------------- */

#define MAX_DIRS 32

typedef struct dir_list {
    char *dirs[MAX_DIRS];
    gs_dir_id id[MAX_DIRS]; /* one directory may have several names */
    int n;
} dir_list;

/* Appends a directory unless it is already listed, under the same name or another one. */
static void add_dir(dir_list *l, const char *dir, size_t len, const char *origin)
{
    if (len == 0)
        return;
    if (dir[0] != '/') {
        gs_trace("loader: ignoring relative directory '%.*s' from %s", (int)len, dir, origin);
        return;
    }
    for (int i = 0; i < l->n; i++)
        if (strlen(l->dirs[i]) == len && memcmp(l->dirs[i], dir, len) == 0)
            return;
    if (l->n == MAX_DIRS)
        return;
    char *d = strndup(dir, len);
    if (!d)
        return;
    const gs_dir_id id = gs_dir_id_of(d);
    for (int i = 0; i < l->n; i++)
        if (gs_dir_id_same(l->id[i], id)) {
            gs_trace("loader: %s (from %s) is the same directory as %s: searched once", d, origin, l->dirs[i]);
            free(d);
            return;
        }
    l->id[l->n] = id;
    l->dirs[l->n++] = d;
}

static void free_dirs(dir_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->dirs[i]);
    l->n = 0;
}

static void search_dirs(dir_list *l)
{
    l->n = 0;
    const char *path = gs_getenv("GRIDSYNC_BACKEND_PATH");
    if (path) {
        const char *p = path;
        while (*p) {
            const char *colon = strchr(p, ':');
            size_t len = colon ? (size_t)(colon - p) : strlen(p);
            add_dir(l, p, len, "GRIDSYNC_BACKEND_PATH");
            p += len;
            if (*p == ':')
                p++;
        }
    }
    /* Next to the loaded libgridsync: <dir of libgridsync.so.1>/gridsync, so an installed
     * tree moved to another prefix keeps finding its backends. */
    Dl_info info;
    if (dladdr((void *)gs_select_backend, &info) && info.dli_fname && info.dli_fname[0] == '/') {
        const char *slash = strrchr(info.dli_fname, '/');
        char buf[PATH_MAX];
        int len = snprintf(buf, sizeof buf, "%.*s/gridsync", (int)(slash - info.dli_fname), info.dli_fname);
        if (len > 0 && (size_t)len < sizeof buf)
            add_dir(l, buf, (size_t)len, "the location of libgridsync");
    }
    add_dir(l, GS_BACKEND_DIR, strlen(GS_BACKEND_DIR), "the configured backend directory");
}

static int valid_backend_name(const char *name)
{
    if (!*name || strlen(name) > 64)
        return 0;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-')
            return 0;
    return 1;
}

/* Finds gridsync-<name>.so in the search directories; NULL (with a log line) if absent. */
static char *find_backend(const dir_list *dirs, const char *name, gs_strbuf *log)
{
    for (int i = 0; i < dirs->n; i++) {
        char path[PATH_MAX];
        int len = snprintf(path, sizeof path, "%s/gridsync-%s.so", dirs->dirs[i], name);
        if (len < 0 || (size_t)len >= sizeof path)
            continue;
        struct stat sb;
        if (stat(path, &sb) == 0) {
            gs_trace("loader: %s: found %s", name, path);
            return strdup(path);
        }
        gs_trace("loader: %s: not in %s (%s)", name, dirs->dirs[i], strerror(errno));
    }
    gs_strbuf_appendf(log, "%s: not found: no gridsync-%s.so in any search directory", name, name);
    return NULL;
}

typedef struct attempt {
    gs_status first_status; /* of the most preferred backend whose file existed */
    int any_found;
    gs_strbuf reasons;      /* "label (path): reason; ..." for the final message */
} attempt;

/* Appends one "; "-separated item to the one-line reason list. */
static void add_reason(attempt *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_reason(attempt *a, const char *fmt, ...)
{
    char item[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(item, sizeof item, fmt, ap);
    va_end(ap);
    if (a->reasons.len) {
        a->reasons.data[--a->reasons.len] = '\0'; /* drop the strbuf's newline */
        gs_strbuf_appendf(&a->reasons, "; %s", item);
    } else {
        gs_strbuf_appendf(&a->reasons, "%s", item);
    }
}

/* Loads `path` and offers it to the device. Returns GS_SUCCESS when accepted. */
static gs_status try_path(const char *label, const char *path, gs_backend_try_fn try_fn, void *user,
                          gs_strbuf *log, attempt *a)
{
    const gs_backend_file *file = NULL;
    gs_status st = load_file(path, &file);
    if (st == GS_SUCCESS) {
        gs_clear_error();
        st = try_fn(file, user);
        if (st == GS_SUCCESS) {
            gs_strbuf_appendf(log, "%s: %s: chosen", label, path);
            gs_trace("loader: %s: %s: chosen", label, path);
            return GS_SUCCESS;
        }
    }
    const char *why = gs_last_error_message();
    gs_strbuf_appendf(log, "%s: %s: skipped: %s: %s", label, path, gs_status_string(st), why);
    gs_trace("loader: %s: skipped: %s", label, why);
    if (!a->any_found)
        a->first_status = st;
    a->any_found = 1;
    size_t plen = strlen(path);
    if (strcmp(label, path) != 0)
        add_reason(a, "%s (%s): %s", label, path, why);
    else if (strncmp(why, path, plen) == 0 && why[plen] == ':' && why[plen + 1] == ' ')
        add_reason(a, "%s", why); /* already "path: reason" */
    else
        add_reason(a, "%s: %s", path, why);
    return st;
}

static gs_status finish(attempt *a, gs_status fallback_status, const char *what)
{
    gs_status st = a->any_found ? a->first_status : fallback_status;
    if (a->reasons.len)
        a->reasons.data[--a->reasons.len] = '\0';
    gs_fail(st, "%s%s%s", what, a->reasons.len ? ": " : "", a->reasons.len ? a->reasons.data : "");
    free(a->reasons.data);
    return st;
}

gs_status gs_select_backend(int cc_major, int cc_minor, gs_backend_try_fn try_fn, void *user, gs_strbuf *log)
{
    attempt a = {0};
    const char *forced = gs_getenv("GRIDSYNC_BACKEND");
    if (forced && *forced) {
        gs_strbuf_appendf(log, "GRIDSYNC_BACKEND=%s forces the backend", forced);
        if (forced[0] == '/') {
            if (try_path(forced, forced, try_fn, user, log, &a) == GS_SUCCESS)
                return GS_SUCCESS;
            return finish(&a, GS_ERROR_BACKEND_NOT_FOUND, "the backend forced by GRIDSYNC_BACKEND failed");
        }
        if (strchr(forced, '/') || !valid_backend_name(forced)) {
            gs_strbuf_appendf(log, "GRIDSYNC_BACKEND=%s: neither a backend name nor an absolute path", forced);
            return gs_fail(GS_ERROR_BACKEND_NOT_FOUND,
                           "GRIDSYNC_BACKEND=%s is neither a backend name ([A-Za-z0-9_-]) nor an absolute "
                           "path to a backend file",
                           forced);
        }
        dir_list dirs;
        search_dirs(&dirs);
        char *path = find_backend(&dirs, forced, log);
        free_dirs(&dirs);
        if (!path)
            return gs_fail(GS_ERROR_BACKEND_NOT_FOUND,
                           "GRIDSYNC_BACKEND=%s: no file gridsync-%s.so in GRIDSYNC_BACKEND_PATH, next to "
                           "libgridsync, or in %s",
                           forced, forced, GS_BACKEND_DIR);
        gs_status st = try_path(forced, path, try_fn, user, log, &a);
        free(path);
        if (st == GS_SUCCESS)
            return GS_SUCCESS;
        return finish(&a, GS_ERROR_BACKEND_NOT_FOUND, "the backend forced by GRIDSYNC_BACKEND failed");
    }

    /* The preference list. 1.1 is the oldest generation with global atomics, which the
     * last-block guard needs; __syncthreads_or arrived with 2.0. */
    const char *prefs[2];
    int nprefs = 0;
    if (cc_major >= 2)
        prefs[nprefs++] = "cuda_sm20";
    if (cc_major >= 2 || (cc_major == 1 && cc_minor >= 1))
        prefs[nprefs++] = "cuda_sm11_compat";
    gs_strbuf_appendf(log, "compute capability %d.%d: trying %s%s%s", cc_major, cc_minor,
                      nprefs ? prefs[0] : "(none: the device lacks global atomics)", nprefs > 1 ? ", then " : "",
                      nprefs > 1 ? prefs[1] : "");
    if (!nprefs)
        return gs_fail(GS_ERROR_NO_KERNEL_IMAGE,
                       "compute capability %d.%d is too old: gridsync needs 1.1 or newer", cc_major, cc_minor);

    dir_list dirs;
    search_dirs(&dirs);
    for (int i = 0; i < dirs.n; i++)
        gs_trace("loader: search directory %d: %s", i, dirs.dirs[i]);
    for (int i = 0; i < nprefs; i++) {
        char *path = find_backend(&dirs, prefs[i], log);
        if (!path) {
            gs_strbuf where = {0};
            for (int d = 0; d < dirs.n; d++)
                gs_strbuf_appendf(&where, "%s", dirs.dirs[d]);
            for (size_t k = 0; k < where.len; k++) /* one line, ':'-separated like a PATH */
                if (where.data[k] == '\n')
                    where.data[k] = k + 1 == where.len ? '\0' : ':';
            add_reason(&a, "%s: no gridsync-%s.so in %s", prefs[i], prefs[i],
                       where.data ? where.data : "(no search directory)");
            free(where.data);
            continue;
        }
        gs_status st = try_path(prefs[i], path, try_fn, user, log, &a);
        free(path);
        if (st == GS_SUCCESS) {
            free_dirs(&dirs);
            free(a.reasons.data);
            return GS_SUCCESS;
        }
    }
    free_dirs(&dirs);
    return finish(&a, GS_ERROR_BACKEND_NOT_FOUND, "no usable gridsync backend");
}
