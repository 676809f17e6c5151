/* Facts about gs_dtype and gs_op shared by the core and the backends (header-only, so
 * backends need not link anything). */
#ifndef GS_INTERNAL_DTYPE_H
#define GS_INTERNAL_DTYPE_H

#include <stddef.h>

#include "gridsync.h"

#define GS_DTYPE_COUNT 10
#define GS_OP_COUNT 9

static inline int gs_dtype_valid(int d) { return d >= 0 && d < GS_DTYPE_COUNT; }
static inline int gs_op_valid(int o) { return o >= 0 && o < GS_OP_COUNT; }

static inline size_t gs_dtype_size(gs_dtype d)
{
    static const unsigned char size[GS_DTYPE_COUNT] = {4, 4, 8, 8, 4, 8, 2, 2, 1, 1};
    return gs_dtype_valid((int)d) ? size[d] : 0;
}

static inline int gs_dtype_is_float(gs_dtype d)
{
    return d == GS_FLOAT32 || d == GS_FLOAT64 || d == GS_FLOAT16 || d == GS_BFLOAT16;
}

/* Short names used in kernel names, traces and the command line ("f32", "i32", ...). */
static inline const char *gs_dtype_name(gs_dtype d)
{
    static const char *const name[GS_DTYPE_COUNT] = {"i32", "u32", "i64", "u64", "f32",
                                                     "f64", "f16", "bf16", "i8", "u8"};
    return gs_dtype_valid((int)d) ? name[d] : "?";
}

static inline const char *gs_op_name(gs_op o)
{
    static const char *const name[GS_OP_COUNT] = {"sum", "prod", "min", "max", "argmin",
                                                  "argmax", "and", "or", "xor"};
    return gs_op_valid((int)o) ? name[o] : "?";
}

/* Whether the pair makes sense at all (bitwise operations need an integer type). Whether
 * a backend implements it is a separate question (gs_backend_ops.query_reduce). */
static inline int gs_op_defined(gs_dtype d, gs_op o)
{
    if (o == GS_OP_BIT_AND || o == GS_OP_BIT_OR || o == GS_OP_BIT_XOR)
        return !gs_dtype_is_float(d);
    return 1;
}

/* gs_reduce's output type: an int64 index for ARGMIN/ARGMAX, else the input type. */
static inline gs_dtype gs_default_out(gs_dtype d, gs_op o)
{
    return (o == GS_OP_ARGMIN || o == GS_OP_ARGMAX) ? GS_INT64 : d;
}

#endif
