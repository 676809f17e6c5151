/*
 * The checks shared by backend_v1_check.c and backend_v1_1_check.c: a frozen backend ABI
 * header (gridsync_backend_v1_<minor>.h) against the current one (gridsync_backend.h),
 * both included in one program. Every frozen member sits at the same offset with the same
 * size in the current structs (a new minor may only append), and the current major is
 * still 1. Checked when the including file compiles; running it prints the sizes.
 *
 * The including file defines, before including both headers and this one:
 *   FROZEN_MINOR    the frozen minor (0, 1, ...)
 *   FROZEN_VERSION  it as a string ("1.0")
 *   FROZEN_SUFFIX   the frozen names' suffix in lower case (v1_0: gs_backend_host_v1_0)
 *   FROZEN_SUFFIX_U the same in upper case (V1_0: GS_BACKEND_ENTRY_V1_0_NAME)
 * then lists its members with SAME, SAME_MEMBER and COVERS.
 */
#ifndef FROZEN_BACKEND_CHECK_H
#define FROZEN_BACKEND_CHECK_H

#include <stddef.h>
#include <stdio.h>

#define FROZEN_PASTE2(a, b) a##b
#define FROZEN_PASTE(a, b) FROZEN_PASTE2(a, b)
/* The frozen struct or macro of a current name: FROZEN(gs_backend_host_) is gs_backend_host_v1_0. */
#define FROZEN(name) FROZEN_PASTE(name, FROZEN_SUFFIX)
#define FROZEN_U(prefix, rest) FROZEN_PASTE(FROZEN_PASTE(prefix, FROZEN_SUFFIX_U), rest)

#define SAME_MEMBER(cur, old, m)                                                                 \
    _Static_assert(offsetof(cur, m) == offsetof(old, m) &&                                       \
                       sizeof(((cur *)0)->m) == sizeof(((old *)0)->m),                           \
                   #cur "." #m " moved or changed size since backend ABI " FROZEN_VERSION)
/* Members whose types do not involve the versioned structs must have the very same type. */
#if defined(__GNUC__)
#define SAME_TYPE(cur, old, m)                                                                   \
    _Static_assert(__builtin_types_compatible_p(__typeof__(((cur *)0)->m), __typeof__(((old *)0)->m)), \
                   #cur "." #m " changed type since backend ABI " FROZEN_VERSION)
#else
#define SAME_TYPE(cur, old, m) _Static_assert(1, "")
#endif
#define SAME(cur, old, m) SAME_MEMBER(cur, old, m); SAME_TYPE(cur, old, m)
/* The current struct holds all of the frozen one, and exactly it while the minor is the
 * frozen one. */
#define COVERS(cur, old, size)                                                                   \
    _Static_assert(sizeof(old) == (size) || sizeof(void *) != 8, #old " is not its " FROZEN_VERSION " size"); \
    _Static_assert(GS_BACKEND_ABI_MINOR != FROZEN_MINOR ? sizeof(cur) >= sizeof(old) : sizeof(cur) == sizeof(old), \
                   #cur " does not cover backend ABI " FROZEN_VERSION)

_Static_assert(GS_BACKEND_ABI_MAJOR == 1, "a new backend ABI major: give it its own frozen header");
_Static_assert(GS_BACKEND_ABI_VERSION_MAJOR(GS_BACKEND_ABI_VERSION) ==
                   GS_BACKEND_ABI_VERSION_MAJOR(FROZEN_U(GS_BACKEND_ABI_VERSION_, )),
               "major differs");
_Static_assert(GS_LOG_DEBUG == FROZEN_U(GS_LOG_DEBUG_, ) && GS_LOG_ERROR == FROZEN_U(GS_LOG_ERROR_, ),
               "log levels changed");

int main(void)
{
    /* The entry point's name never changes within a major. */
    const char cur[] = GS_BACKEND_ENTRY_V1_NAME, old[] = FROZEN_U(GS_BACKEND_ENTRY_, _NAME);
    _Static_assert(sizeof cur == sizeof old, "entry point name changed");
    for (size_t i = 0; i < sizeof cur; i++)
        if (cur[i] != old[i]) {
            fprintf(stderr, "FAIL: GS_BACKEND_ENTRY_V1_NAME is %s, " FROZEN_VERSION " had %s\n", cur, old);
            return 1;
        }
    printf("backend ABI %u.%u covers " FROZEN_VERSION ": host %zu >= %zu, device %zu >= %zu, reduce_args %zu >= %zu, "
           "ops %zu >= %zu bytes\n",
           (unsigned)GS_BACKEND_ABI_MAJOR, (unsigned)GS_BACKEND_ABI_MINOR, sizeof(gs_backend_host),
           sizeof(FROZEN(gs_backend_host_)), sizeof(gs_backend_device), sizeof(FROZEN(gs_backend_device_)),
           sizeof(gs_backend_reduce_args), sizeof(FROZEN(gs_backend_reduce_args_)), sizeof(gs_backend_ops),
           sizeof(FROZEN(gs_backend_ops_)));
    return 0;
}

#endif
