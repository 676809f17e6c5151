/* A search directory's identity, shared by core/loader.c (the backend search) and
 * tools/backends.c (`gridsync info`'s listing), so both search a directory once whatever
 * names it has: on a merged-/usr system /lib is /usr/lib. Two names are the same directory
 * when stat() succeeds for both and gives the same (st_dev, st_ino); a directory stat()
 * cannot see matches nothing. Header-only. */
#ifndef GS_INTERNAL_DIR_ID_H
#define GS_INTERNAL_DIR_ID_H

#include <sys/stat.h>

typedef struct gs_dir_id {
    dev_t dev;
    ino_t ino;
    int known; /* stat() succeeded */
} gs_dir_id;

static inline gs_dir_id gs_dir_id_of(const char *path)
{
    struct stat sb;
    gs_dir_id id = {0, 0, 0};
    if (stat(path, &sb) == 0) {
        id.dev = sb.st_dev;
        id.ino = sb.st_ino;
        id.known = 1;
    }
    return id;
}

static inline int gs_dir_id_same(gs_dir_id a, gs_dir_id b)
{
    return a.known && b.known && a.dev == b.dev && a.ino == b.ino;
}

#endif
