/*
 * What the programs that run the library against the fakes (the loader suite, the secure
 * test, the fuzz_env harness) share to set up their file system and environment: a fresh
 * temporary directory and its removal, whole files read and copied, the program's own
 * path, and an environment without the variables that steer the library and the fakes.
 * The functions return -1 (or NULL) with errno set and leave reporting to the caller,
 * which fails in its own way (a check, a fuzz abort).
 */
#ifndef GS_TEST_SANDBOX_H
#define GS_TEST_SANDBOX_H

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static inline int sandbox_remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* rm -rf `dir`, without following links out of it. */
static inline void sandbox_remove(const char *dir)
{
    nftw(dir, sandbox_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A new directory $TMPDIR/<prefix>-XXXXXX (or under /tmp) in `buf`. */
static inline int sandbox_make(char *buf, size_t len, const char *prefix)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, len, "%s/%s-XXXXXX", base && *base ? base : "/tmp", prefix);
    return mkdtemp(buf) ? 0 : -1;
}

/* Everything `fd` holds from its start, NUL-terminated; free it. NULL when out of memory. */
static inline char *sandbox_read_fd(int fd)
{
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    ssize_t got;
    lseek(fd, 0, SEEK_SET);
    while (s && (got = read(fd, s + len, cap - len - 1)) > 0) {
        len += (size_t)got;
        if (cap - len < 2) {
            char *bigger = realloc(s, cap *= 2);
            if (!bigger)
                free(s);
            s = bigger;
        }
    }
    if (s)
        s[len] = '\0';
    return s;
}

/* The whole file `path` ("" when it does not exist); free it. NULL when out of memory. */
static inline char *sandbox_read_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return strdup("");
    char *s = sandbox_read_fd(fd);
    close(fd);
    return s;
}

/* Copies the first `limit` bytes of `from` (SIZE_MAX: all) to a new file `to` of `mode`. */
static inline int sandbox_copy(const char *from, const char *to, size_t limit, mode_t mode)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) {
        close(in);
        return -1;
    }
    char buf[65536];
    ssize_t got = 0;
    size_t done = 0;
    int rc = 0;
    while (done < limit && (got = read(in, buf, sizeof buf)) > 0) {
        size_t k = (size_t)got < limit - done ? (size_t)got : limit - done;
        if (write(out, buf, k) != (ssize_t)k) {
            rc = -1;
            break;
        }
        done += k;
    }
    if (got < 0)
        rc = -1;
    close(in);
    if (close(out) != 0)
        rc = -1;
    /* The mode comes last: the file is never open to others while it is written. */
    if (rc == 0 && chmod(to, mode) != 0)
        rc = -1;
    return rc;
}

/* The running program's absolute path in `buf`. */
static inline int sandbox_self(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return 0;
}

/* Removes every GRIDSYNC_* and FAKE_* variable, so that a developer's shell cannot change
 * what the library or the fakes do. */
static inline void sandbox_clean_environment(void)
{
    extern char **environ;
    for (;;) {
        char *name = NULL;
        for (char **e = environ; e && *e && !name; e++)
            if (strncmp(*e, "GRIDSYNC_", 9) == 0 || strncmp(*e, "FAKE_", 5) == 0)
                name = strndup(*e, strcspn(*e, "="));
        if (!name)
            return;
        unsetenv(name);
        free(name);
    }
}

#endif
