/*
 * hostref: a model of gs_scan's association order (issue 45). The scan's device results
 * must equal it bit for bit, for every dtype; so this comment is the order's contract, and
 * the code below follows it step by step.
 *
 * Tiles. T = threads * items (threads a multiple of 32). Tile j is [j*T, min((j+1)*T, n));
 * thread t of a tile owns the `items` consecutive elements from j*T + t*items (fewer, or
 * none, in the last tile). Warp w = t / 32, lane l = t % 32. "a op b": a is the left operand.
 * Elements are lifted to the op's accumulator (as in reduce.c: integers in the output's
 * width, float16/bfloat16 in float32, float32 into a float64 output in float64) and every
 * float op rounds there, once.
 *  1. Thread aggregate A_t = ((x0 op x1) op x2) ... op x_last, the thread's elements in
 *     order. A thread with no element has no aggregate; in steps 2 and 3 only, its lane
 *     holds the op's padding identity (below), so every lane has a value.
 *  2. Warp scan, inclusive Kogge-Stone: v_l = A_l; for d = 1, 2, 4, 8, 16: v_l = v_{l-d} op
 *     v_l for every l >= d, all from the previous step's values.
 *  3. Warp totals W_w = v of lane 31, scanned by the same Kogge-Stone over the warps
 *     (d = 1, 2, 4, ... < threads / 32). WP_w = the scanned W_{w-1}; none for w = 0.
 *  4. Thread inclusive I_t = WP_w op v_t (v_t alone in warp 0); thread exclusive prefix
 *     P_t = I_{t-1}, none for t = 0. The tile's aggregate AGG_j = I_{threads-1}.
 *  5. Tile carry, the tiles taken in groups of `group` (group g: tiles g*group ..
 *     (g+1)*group - 1). L_j = AGG_{g*group} op ... op AGG_{j-1}, a left fold over the
 *     group's tiles before j (none for its first). The group's total GT_g is the left fold
 *     of all its AGG. B_g = GT_0 op GT_1 op ... op GT_{g-1}, a left fold over the earlier
 *     groups (none for g = 0). C_j = B_g op L_j, or whichever exists, or none (j = 0).
 *     (The device's look-back folds forward from the nearest group with its B_{h+1}
 *     published, which is the same left fold; its carry chain is one op per group, not
 *     per tile.)
 *  6. Thread carry T_t = C_j op P_t when both exist, else whichever exists, else none.
 *  7. Outputs: r = T_t; for each element x of the thread, in order:
 *       inclusive: r = r ? r op x : x, then out = r;
 *       exclusive: out = r ? r : the op's identity (an empty scan's value: SUM +0.0 as
 *                  gs_reduce's empty sum, docs/semantics.md §3), then r = r ? r op x : x.
 *     out is r converted once to the output type: float16/bfloat16 rounded to nearest
 *     even from the float32 r (never fed back), integers keep their low bits.
 *
 * The ops are reduce.c's (hostref_merge): integer SUM and PROD wrap in the output's width;
 * MIN (MAX) gives b if b < a (b > a), else a, and a NaN operand wins (the left one if both
 * are). So a float MIN/MAX keeps the leftmost extreme, zeros' signs and NaN included,
 * whatever the order: the same bits as a sequential scan. Float SUM and PROD round each
 * step in float32 or float64 arithmetic; a NaN result is a NaN (x86 and CUDA make
 * different NaNs from inf - inf: its sign and payload are not part of the contract).
 *
 * Padding identities: SUM -0.0 for floats (x + -0.0 == x for every x, a zero's sign kept;
 * +0.0 would turn -0.0 into +0.0), 0 for integers; PROD 1; MIN +inf (integers: the type's
 * largest), MAX -inf (the smallest); AND all ones; OR, XOR 0. Combining with one is exact.
 * Besides, a padded lane is above every real lane of its tile, a lane reads only itself
 * and lanes below it, and only the last tile is short: padding cannot reach an output, and
 * out[i] depends on in[0..i], threads and items alone, not on n (test_scan_model checks it).
 */
#include <float.h>
#include <stdlib.h>

#include "dtype.h"
#include "hostref.h"

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "hostref_scan rounds every step in float or double: it needs FLT_EVAL_METHOD == 0"
#endif

/* A value of the scan: r.bits (integers, masked to the output) or r.value (floats, a
 * number of the accumulator type); present 0 is "none". */
typedef struct value {
    hostref_ref r;
    int present;
} value;

typedef struct model {
    gs_dtype in, out, acc;
    gs_op op;
    const void *data;
} model;

static const value none;

static int float_arith(const model *m)
{
    return gs_dtype_is_float(m->in) && (m->op == GS_OP_SUM || m->op == GS_OP_PROD);
}

/* a + b or a * b rounded once in the accumulator. Through a volatile, so that no compiler
 * contracts a product and a later sum into one fused multiply-add. */
static long double arith(gs_dtype acc, gs_op op, long double a, long double b)
{
    if (acc == GS_FLOAT64) {
        volatile double r = op == GS_OP_SUM ? (double)a + (double)b : (double)a * (double)b;
        return r;
    }
    volatile float r = op == GS_OP_SUM ? (float)a + (float)b : (float)a * (float)b;
    return r;
}

/* a op b (a on the left); a missing operand leaves the other (step 6's "whichever"). */
static value combine(const model *m, const value *a, const value *b)
{
    if (!a->present || !b->present)
        return a->present ? *a : *b;
    value r = *a;
    hostref_merge(&r.r, &b->r);
    if (float_arith(m))
        r.r.value = arith(m->acc, m->op, a->r.value, b->r.value);
    return r;
}

/* The op's identity: gs_reduce's n == 0 value; with `padding`, a float SUM's is -0.0. */
static value identity(const model *m, int padding)
{
    value v = {.present = 1};
    hostref_reduce(&v.r, m->in, m->op, m->out, NULL, 0);
    if (padding && gs_dtype_is_float(m->in) && m->op == GS_OP_SUM)
        v.r.value = -0.0L;
    return v;
}

/* Element i lifted to the accumulator. */
static value element(const model *m, uint64_t i)
{
    value v = {.present = 1};
    hostref_reduce(&v.r, m->in, m->op, m->out, (const char *)m->data + i * gs_dtype_size(m->in), 1);
    if (gs_dtype_is_float(m->in)) /* the element itself (a reduction's +0.0 start would turn -0.0 into +0.0) */
        v.r.value = hostref_load(m->in, m->data, i);
    return v;
}

static void emit(const model *m, void *out, uint64_t i, const value *v)
{
    if (gs_dtype_is_float(m->out))
        hostref_store(m->out, out, i, v->r.value); /* a value of the accumulator: one rounding */
    else
        hostref_store_bits(m->out, out, i, v->r.bits);
}

/* Inclusive Kogge-Stone over v[0..count): for d = 1, 2, 4, ... < count, v[l] = v[l-d] op
 * v[l] for l >= d, from the previous step's values (prev: room for count values). */
static void kogge_stone(const model *m, value *v, value *prev, unsigned count)
{
    for (unsigned d = 1; d < count; d *= 2) {
        for (unsigned l = 0; l < count; l++)
            prev[l] = v[l];
        for (unsigned l = d; l < count; l++)
            v[l] = combine(m, &prev[l - d], &prev[l]);
    }
}

/* gs_reduce_ex's outputs (docs/semantics.md §2) beyond the input type: integer SUM/PROD
 * into 64 bits, float32 SUM/PROD into float64, float16/bfloat16 SUM/PROD/MIN/MAX into
 * float32. */
static int out_offered(gs_dtype in, gs_op op, gs_dtype out)
{
    const int arith_op = op == GS_OP_SUM || op == GS_OP_PROD;
    switch (in) {
    case GS_INT8:
    case GS_INT32: return out == in || (arith_op && out == GS_INT64);
    case GS_UINT8:
    case GS_UINT32: return out == in || (arith_op && out == GS_UINT64);
    case GS_FLOAT32: return out == in || (arith_op && out == GS_FLOAT64);
    case GS_FLOAT16:
    case GS_BFLOAT16: return out == in || out == GS_FLOAT32;
    default: return out == in;
    }
}

static gs_status check_args(const void *in, uint64_t n, gs_dtype dtype, gs_op op, int32_t out_dtype,
                            unsigned threads, unsigned items, unsigned group, const void *out, gs_dtype *out_type)
{
    if (!gs_dtype_valid((int)dtype) || !gs_op_valid((int)op) ||
        (out_dtype != GS_OUT_DEFAULT && !gs_dtype_valid(out_dtype)))
        return GS_ERROR_INVALID_ARGUMENT;
    *out_type = out_dtype == GS_OUT_DEFAULT ? dtype : (gs_dtype)out_dtype;
    if (op == GS_OP_ARGMIN || op == GS_OP_ARGMAX || !gs_op_defined(dtype, op) || !out_offered(dtype, op, *out_type))
        return GS_ERROR_UNSUPPORTED;
    if (threads == 0 || threads % 32 || threads > 1024 || items == 0 || group == 0)
        return GS_ERROR_INVALID_ARGUMENT;
    if (n == 0)
        return GS_SUCCESS;
    if (!in || !out)
        return GS_ERROR_INVALID_ARGUMENT;
    /* in place (in == out, one element size) works; any other overlap does not */
    const uintptr_t a = (uintptr_t)in, b = (uintptr_t)out;
    const uint64_t in_bytes = n * gs_dtype_size(dtype), out_bytes = n * gs_dtype_size(*out_type);
    if (n > UINT64_MAX / 8 || (a == b ? in_bytes != out_bytes : a < b ? b - a < in_bytes : a - b < out_bytes))
        return GS_ERROR_INVALID_ARGUMENT;
    return GS_SUCCESS;
}

gs_status hostref_scan(const void *in, uint64_t n, gs_dtype dtype, gs_op op, int32_t out_dtype, int exclusive,
                       unsigned threads, unsigned items, unsigned group, void *out)
{
    model m = {dtype, dtype, dtype, op, in};
    gs_status st = check_args(in, n, dtype, op, out_dtype, threads, items, group, out, &m.out);
    if (st != GS_SUCCESS || n == 0)
        return st;
    m.acc = hostref_accumulator(dtype, m.out);
    const unsigned warps = threads / 32;
    value *lane = malloc((2 * (size_t)threads + warps) * sizeof *lane);
    if (!lane)
        return GS_ERROR_OUT_OF_MEMORY;
    value *prev = lane + threads, *warp = prev + threads;
    const value pad = identity(&m, 1), empty = identity(&m, 0);
    const uint64_t tile = (uint64_t)threads * items;
    value before = none, within = none; /* B_g and L_j */
    for (uint64_t base = 0, len, j = 0; base < n; base += len, j++) {
        const value carry = combine(&m, &before, &within); /* C_j */
        len = n - base < tile ? n - base : tile;
        /* 1: thread aggregates, left folds */
        for (unsigned t = 0; t < threads; t++) {
            const uint64_t first = (uint64_t)t * items, end = first + items < len ? first + items : len;
            if (first >= len) {
                lane[t] = pad;
                continue;
            }
            lane[t] = element(&m, base + first);
            for (uint64_t i = first + 1; i < end; i++) {
                const value x = element(&m, base + i);
                lane[t] = combine(&m, &lane[t], &x);
            }
        }
        /* 2, 3: the warps' scans, then their totals' */
        for (unsigned w = 0; w < warps; w++) {
            kogge_stone(&m, lane + 32 * w, prev, 32);
            warp[w] = lane[32 * w + 31];
        }
        kogge_stone(&m, warp, prev, warps);
        /* 4: I_t, in place of v_t */
        for (unsigned t = 32; t < threads; t++)
            lane[t] = combine(&m, &warp[t / 32 - 1], &lane[t]);
        /* 6, 7: the outputs of each thread that has elements */
        for (unsigned t = 0; t < threads && (uint64_t)t * items < len; t++) {
            const uint64_t first = (uint64_t)t * items, end = first + items < len ? first + items : len;
            value r = combine(&m, &carry, t ? &lane[t - 1] : &none);
            for (uint64_t i = base + first; i < base + end; i++) {
                const value x = element(&m, i); /* read before out[i] is written: in place works */
                if (exclusive)
                    emit(&m, out, i, r.present ? &r : &empty);
                r = combine(&m, &r, &x);
                if (!exclusive)
                    emit(&m, out, i, &r);
            }
        }
        /* 5: L_{j+1} = L_j op AGG_j; at a group's end, B_{g+1} = B_g op GT_g */
        within = combine(&m, &within, &lane[threads - 1]);
        if (j % group == group - 1) {
            before = combine(&m, &before, &within);
            within = none;
        }
    }
    free(lane);
    return GS_SUCCESS;
}
