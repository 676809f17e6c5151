/* gridsync.h must compile cleanly on its own as C99 (and later), needing no CUDA header,
 * and survive a second inclusion. Compiled by the abi suite with -Wall -Wextra -pedantic
 * -Werror -Wstrict-prototypes; never linked. */
#include "gridsync.h"
#include "gridsync.h"

int gs_header_use(void);

int gs_header_use(void)
{
    gs_context *ctx = 0;
    gs_context_info info = {0};
    gs_reduce_options opts = {0};
    gs_scan_options scan = {0};
    gs_exact_acc total;
    gs_stream stream = (gs_stream)0;
    int n = 0, v = 0;
    info.struct_size = sizeof info;
    opts.struct_size = sizeof opts;
    opts.out_dtype = GS_OUT_DEFAULT;
    scan.struct_size = sizeof scan;
    scan.out_dtype = GS_OUT_DEFAULT;
    scan.flags = GS_SCAN_EXCLUSIVE | GS_SCAN_EXACT;
    scan.carry_in = 0;
    scan.carry_in_count = 0;
    scan.total = &total;
    return (int)gs_version() + (int)GS_VERSION + (gs_version_string()[0] != 0) +
           (gs_status_string(GS_ERROR_INTERNAL)[0] != 0) + (gs_last_error_message()[0] != 0) +
           (int)gs_driver_version(&v) + (int)gs_device_count(&n) + (int)gs_context_create(0, &ctx) +
           (int)gs_context_get_info(ctx, &info) + (int)gs_context_destroy(ctx) +
           (int)gs_reduce(ctx, 0, 0, GS_FLOAT32, GS_OP_SUM, 0, stream) +
           (int)gs_reduce_ex(ctx, 0, 0, GS_BFLOAT16, GS_OP_ARGMAX, 0, stream, &opts) +
           (int)gs_scan(ctx, 0, 0, GS_INT8, GS_OP_SUM, 0, stream, &scan) +
           (int)gs_exact_round_device(ctx, 0, 0, GS_FLOAT32, 0, stream);
}
