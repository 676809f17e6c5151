/*
 * A frozen backend ABI header (gridsync_backend_v1.h for 1.0, gridsync_backend_v1_<minor>.h
 * after it) against the current one (gridsync_backend.h), both included in one program.
 * Built once per released minor, with -DFROZEN_MINOR=<minor> (tests/consumer/meson.build).
 * Every member a release had sits at the same offset with the same size in the frozen and
 * the current struct, at its released LP64 offset (tests/abi/released_layouts.h lists them),
 * and, where its type names no versioned struct, with the very same type; the current
 * structs cover the frozen ones; the major, the log levels and the entry point's name are
 * unchanged. Checked when this file compiles; running it prints the sizes.
 */
#include <stddef.h>
#include <stdio.h>

#include "gridsync_backend.h"
#include "released_layouts.h"

#if FROZEN_MINOR == 0
#  include "gridsync_backend_v1.h"
#  define FROZEN_VERSION "1.0"
#  define FROZEN_SUFFIX _v1_0
#  define FROZEN_SUFFIX_U V1_0
#elif FROZEN_MINOR == 1
#  include "gridsync_backend_v1_1.h"
#  define FROZEN_VERSION "1.1"
#  define FROZEN_SUFFIX _v1_1
#  define FROZEN_SUFFIX_U V1_1
#elif FROZEN_MINOR == 2
#  include "gridsync_backend_v1_2.h"
#  define FROZEN_VERSION "1.2"
#  define FROZEN_SUFFIX _v1_2
#  define FROZEN_SUFFIX_U V1_2
#elif FROZEN_MINOR == 3
#  include "gridsync_backend_v1_3.h"
#  define FROZEN_VERSION "1.3"
#  define FROZEN_SUFFIX _v1_3
#  define FROZEN_SUFFIX_U V1_3
#else
#  error "FROZEN_MINOR must name a released backend ABI minor"
#endif

#define PASTE2(a, b) a##b
#define PASTE(a, b) PASTE2(a, b)
/* The frozen struct of a current one: FROZEN(gs_backend_host) is gs_backend_host_v1_0. */
#define FROZEN(type) PASTE(type, FROZEN_SUFFIX)
/* A frozen macro: FROZEN_U(GS_BACKEND_HOST_, _SIZE) is GS_BACKEND_HOST_V1_0_SIZE. */
#define FROZEN_U(prefix, rest) PASTE(PASTE(prefix, FROZEN_SUFFIX_U), rest)

/* Same offset and size in the current and the frozen struct, and the released offset. */
#define SAME_PLACE(type, m, off)                                                                  \
    _Static_assert(offsetof(type, m) == offsetof(FROZEN(type), m) &&                              \
                       sizeof(((type *)0)->m) == sizeof(((FROZEN(type) *)0)->m),                  \
                   #type "." #m " moved or changed size since backend ABI " FROZEN_VERSION);       \
    _Static_assert(offsetof(type, m) == (off) || sizeof(void *) != 8, #type "." #m " is not at its released offset");
/* Members whose types name no versioned struct (all but the ops' functions) keep their type. */
#define SAME(type, m, off)                                                                        \
    SAME_PLACE(type, m, off)                                                                      \
    _Static_assert(__builtin_types_compatible_p(__typeof__(((type *)0)->m), __typeof__(((FROZEN(type) *)0)->m)), \
                   #type "." #m " changed type since backend ABI " FROZEN_VERSION);
/* The current struct holds all of the frozen one, exactly it while the minor is the frozen one. */
#define COVERS(type, size)                                                                        \
    _Static_assert(sizeof(FROZEN(type)) == (size) || sizeof(void *) != 8,                         \
                   "the " FROZEN_VERSION " " #type " is not its released size");                             \
    _Static_assert(GS_BACKEND_ABI_MINOR != FROZEN_MINOR ? sizeof(type) >= sizeof(FROZEN(type))    \
                                                        : sizeof(type) == sizeof(FROZEN(type)),   \
                   #type " does not cover backend ABI " FROZEN_VERSION);

COVERS(gs_backend_host, FROZEN_U(GS_BACKEND_HOST_, _SIZE))
BACKEND_HOST_1_0(SAME, gs_backend_host)
COVERS(gs_backend_device, FROZEN_U(GS_BACKEND_DEVICE_, _SIZE))
BACKEND_DEVICE_1_0(SAME, gs_backend_device)
COVERS(gs_backend_reduce_args, FROZEN_U(GS_BACKEND_REDUCE_ARGS_, _SIZE))
COVERS(gs_backend_ops, FROZEN_U(GS_BACKEND_OPS_, _SIZE))
#if FROZEN_MINOR == 0
BACKEND_REDUCE_ARGS_1_0(SAME, gs_backend_reduce_args)
BACKEND_OPS_1_0(SAME_PLACE, gs_backend_ops)
#elif FROZEN_MINOR == 1
BACKEND_REDUCE_ARGS_1_0(SAME, gs_backend_reduce_args)
BACKEND_OPS_1_1(SAME_PLACE, gs_backend_ops)
#elif FROZEN_MINOR == 2
BACKEND_REDUCE_ARGS_1_2(SAME, gs_backend_reduce_args)
BACKEND_OPS_1_2(SAME_PLACE, gs_backend_ops)
#else
BACKEND_REDUCE_ARGS_1_2(SAME, gs_backend_reduce_args)
BACKEND_OPS_1_3(SAME_PLACE, gs_backend_ops)
#endif
#if FROZEN_MINOR >= 1
COVERS(gs_backend_segmented_args, FROZEN_U(GS_BACKEND_SEGMENTED_ARGS_, _SIZE))
#endif
#if FROZEN_MINOR == 1
BACKEND_SEGMENTED_ARGS_1_1(SAME, gs_backend_segmented_args)
#elif FROZEN_MINOR >= 2
BACKEND_SEGMENTED_ARGS_1_2(SAME, gs_backend_segmented_args)
#endif
#if FROZEN_MINOR >= 3
COVERS(gs_backend_scan_args, FROZEN_U(GS_BACKEND_SCAN_ARGS_, _SIZE))
BACKEND_SCAN_ARGS_1_3(SAME, gs_backend_scan_args)
COVERS(gs_backend_exact_round_args, FROZEN_U(GS_BACKEND_EXACT_ROUND_ARGS_, _SIZE))
BACKEND_EXACT_ROUND_ARGS_1_3(SAME, gs_backend_exact_round_args)
#endif

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
           sizeof(FROZEN(gs_backend_host)), sizeof(gs_backend_device), sizeof(FROZEN(gs_backend_device)),
           sizeof(gs_backend_reduce_args), sizeof(FROZEN(gs_backend_reduce_args)), sizeof(gs_backend_ops),
           sizeof(FROZEN(gs_backend_ops)));
    return 0;
}
