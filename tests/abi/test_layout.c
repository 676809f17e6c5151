/*
 * The layout of every public struct as released (released_layouts.h has the offsets, the
 * frozen backend headers the sizes), on LP64 targets, against the current headers. Members
 * may only be appended: an inserted, removed, resized or reordered member moves an offset
 * here, and programs or backends built against the older header would read the wrong
 * field. Exits 77 (skipped) on other data models.
 */
#include <stddef.h>
#include <stdio.h>

#include "check.h"
#include "gridsync.h"
#include "gridsync_backend.h"
#include "gridsync_backend_v1_2.h"
#include "gridsync_backend_v1_3.h"
#include "released_layouts.h"

/* Every member of `list` at its released offset in `type`, and `type` no smaller than it
 * was released (a struct may grow at its end, never shrink). */
#define CHECK_OFFSET(type, member, want) CHECK_INT(offsetof(type, member), want);
#define CHECK_LAYOUT(type, list, size)                                                            \
    do {                                                                                          \
        list(CHECK_OFFSET, type)                                                                  \
        if (sizeof(type) < (size))                                                                \
            CHECK_FAIL("sizeof(%s) is %zu, smaller than released (%d)", #type, sizeof(type), (int)(size)); \
    } while (0)
/* A frozen header's struct: the released members at their offsets, and exactly the
 * released size (the header's GS_BACKEND_*_V1_<minor>_SIZE). */
#define CHECK_FROZEN(type, list, size)                                                            \
    do {                                                                                          \
        list(CHECK_OFFSET, type)                                                                  \
        CHECK_INT(sizeof(type), size);                                                            \
    } while (0)

int main(void)
{
    if (sizeof(void *) != 8 || sizeof(long) != 8 || sizeof(int) != 4) {
        printf("skipped: the recorded layouts are for LP64\n");
        return 77;
    }
    CHECK_INT(sizeof(gs_status), 4);
    CHECK_INT(sizeof(gs_dtype), 4);
    CHECK_INT(sizeof(gs_op), 4);

    CHECK_LAYOUT(gs_context_info, CONTEXT_INFO_1_0, CONTEXT_INFO_1_0_SIZE);
    CHECK_LAYOUT(gs_reduce_options, REDUCE_OPTIONS_1_2, REDUCE_OPTIONS_1_2_SIZE);
    CHECK_LAYOUT(gs_scan_options, SCAN_OPTIONS_1_3, SCAN_OPTIONS_1_3_SIZE);
    CHECK_LAYOUT(gs_backend_host, BACKEND_HOST_1_0, GS_BACKEND_HOST_V1_0_SIZE);
    CHECK_LAYOUT(gs_backend_device, BACKEND_DEVICE_1_0, GS_BACKEND_DEVICE_V1_0_SIZE);
    CHECK_LAYOUT(gs_backend_reduce_args, BACKEND_REDUCE_ARGS_1_2, GS_BACKEND_REDUCE_ARGS_V1_3_SIZE);
    CHECK_LAYOUT(gs_backend_segmented_args, BACKEND_SEGMENTED_ARGS_1_2, GS_BACKEND_SEGMENTED_ARGS_V1_3_SIZE);
    CHECK_LAYOUT(gs_backend_scan_args, BACKEND_SCAN_ARGS_1_3, GS_BACKEND_SCAN_ARGS_V1_3_SIZE);
    CHECK_LAYOUT(gs_backend_exact_round_args, BACKEND_EXACT_ROUND_ARGS_1_3, GS_BACKEND_EXACT_ROUND_ARGS_V1_3_SIZE);
    CHECK_LAYOUT(gs_backend_ops, BACKEND_OPS_1_3, GS_BACKEND_OPS_V1_3_SIZE);

    /* The frozen headers, one per released minor. */
    CHECK_FROZEN(gs_backend_host_v1_0, BACKEND_HOST_1_0, GS_BACKEND_HOST_V1_0_SIZE);
    CHECK_FROZEN(gs_backend_device_v1_0, BACKEND_DEVICE_1_0, GS_BACKEND_DEVICE_V1_0_SIZE);
    CHECK_FROZEN(gs_backend_reduce_args_v1_0, BACKEND_REDUCE_ARGS_1_0, GS_BACKEND_REDUCE_ARGS_V1_0_SIZE);
    CHECK_FROZEN(gs_backend_ops_v1_0, BACKEND_OPS_1_0, GS_BACKEND_OPS_V1_0_SIZE);
    CHECK_FROZEN(gs_backend_host_v1_1, BACKEND_HOST_1_0, GS_BACKEND_HOST_V1_1_SIZE);
    CHECK_FROZEN(gs_backend_device_v1_1, BACKEND_DEVICE_1_0, GS_BACKEND_DEVICE_V1_1_SIZE);
    CHECK_FROZEN(gs_backend_reduce_args_v1_1, BACKEND_REDUCE_ARGS_1_0, GS_BACKEND_REDUCE_ARGS_V1_1_SIZE);
    CHECK_FROZEN(gs_backend_segmented_args_v1_1, BACKEND_SEGMENTED_ARGS_1_1, GS_BACKEND_SEGMENTED_ARGS_V1_1_SIZE);
    CHECK_FROZEN(gs_backend_ops_v1_1, BACKEND_OPS_1_1, GS_BACKEND_OPS_V1_1_SIZE);
    CHECK_FROZEN(gs_backend_host_v1_2, BACKEND_HOST_1_0, GS_BACKEND_HOST_V1_2_SIZE);
    CHECK_FROZEN(gs_backend_device_v1_2, BACKEND_DEVICE_1_0, GS_BACKEND_DEVICE_V1_2_SIZE);
    CHECK_FROZEN(gs_backend_reduce_args_v1_2, BACKEND_REDUCE_ARGS_1_2, GS_BACKEND_REDUCE_ARGS_V1_2_SIZE);
    CHECK_FROZEN(gs_backend_segmented_args_v1_2, BACKEND_SEGMENTED_ARGS_1_2, GS_BACKEND_SEGMENTED_ARGS_V1_2_SIZE);
    CHECK_FROZEN(gs_backend_ops_v1_2, BACKEND_OPS_1_2, GS_BACKEND_OPS_V1_2_SIZE);
    CHECK_FROZEN(gs_backend_host_v1_3, BACKEND_HOST_1_0, GS_BACKEND_HOST_V1_3_SIZE);
    CHECK_FROZEN(gs_backend_device_v1_3, BACKEND_DEVICE_1_0, GS_BACKEND_DEVICE_V1_3_SIZE);
    CHECK_FROZEN(gs_backend_reduce_args_v1_3, BACKEND_REDUCE_ARGS_1_2, GS_BACKEND_REDUCE_ARGS_V1_3_SIZE);
    CHECK_FROZEN(gs_backend_segmented_args_v1_3, BACKEND_SEGMENTED_ARGS_1_2, GS_BACKEND_SEGMENTED_ARGS_V1_3_SIZE);
    CHECK_FROZEN(gs_backend_scan_args_v1_3, BACKEND_SCAN_ARGS_1_3, GS_BACKEND_SCAN_ARGS_V1_3_SIZE);
    CHECK_FROZEN(gs_backend_exact_round_args_v1_3, BACKEND_EXACT_ROUND_ARGS_1_3,
                 GS_BACKEND_EXACT_ROUND_ARGS_V1_3_SIZE);
    CHECK_FROZEN(gs_backend_ops_v1_3, BACKEND_OPS_1_3, GS_BACKEND_OPS_V1_3_SIZE);

    /* The ABI version a 1.0 backend was built with must still be what this header says
     * is compatible: same major. */
    CHECK_INT(GS_BACKEND_ABI_MAJOR, 1);
    CHECK_STR(GS_BACKEND_ENTRY_V1_NAME, "gridsync_backend_entry_v1");
    return check_exit_code();
}
