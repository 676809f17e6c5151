/*
 * gpu suite: gs_reduce against a host reference on fresh random data.
 *
 * Exits 77 (skipped) only when there is no CUDA driver or no device; any other failure
 * is a failure. The backend is whatever GRIDSYNC_BACKEND says (meson runs this once per
 * backend and once with none). The seed is printed; GS_TEST_SEED=<n> replays a run.
 *
 * What it checks:
 *  - every (dtype, op, output type) the header documents is offered, nothing else is, and
 *    bitwise ops on floats are refused with GS_ERROR_UNSUPPORTED;
 *  - each offered one at sizes 0 (identity), 1, 2, 31..33, 255..257, 1000, 4097, 65537,
 *    2^20+3, 2^24+7, at input offsets of 0..7 elements from an allocation (0 and 5 for
 *    65537 and 2^20+3, 3 for 2^24+7); SUM/MIN/MAX of i32/f32/f64 also at 2^26+1;
 *  - data chosen per op (see fill): integer-valued floats, whose sums are exact, so a
 *    dropped or doubled element is caught at any n; mixed sign and magnitude, within
 *    n*eps*sum|x|; many ties for ARGMIN/ARGMAX; integers exact with wrap-around;
 *  - NaN propagation of MIN/MAX and first-NaN ARGMIN/ARGMAX for every float type;
 *  - infinities (SUM +inf, or NaN with both signs; first +inf for ARGMAX), signed zeros,
 *    all-equal inputs (ARGMIN/ARGMAX 0);
 *  - more than 2^32 elements (uint8, 2^32 + 5): SUM into uint64, MAX, ARGMAX past 2^32;
 *  - the output is poisoned before every launch, so an unwritten result fails;
 *  - many launches queued back to back on one stream (the counter must reset itself);
 *  - the same reduction on the legacy, per-thread and two created streams, explicit and
 *    default (NULL) context;
 *  - a float SUM repeated 100 times gives identical bits;
 *  - gs_segmented_reduce: every dtype x op over random segment layouts (mixed, tiny,
 *    one giant among tiny ones, power-law, boundaries on chunk edges) with offsets[0] > 0
 *    and a margin after the last segment, every segment against the host reference, the
 *    output poisoned and its end guarded; all-empty segments (identities), one segment
 *    (= gs_reduce), zero segments (nothing written); 20 runs bitwise equal; launches
 *    back to back interleaved with gs_reduce on one stream; bad offsets refused when
 *    checked, harmless when not (the next call is right).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtype.h"
#include "gpu_check.h"
#include "hostref.h"

static uint64_t g_rng;
static int g_failures, g_checks;
/* GS_TEST_QUICK=1: small sizes and few repeats, for runs under compute-sanitizer. */
static int g_quick;

static uint64_t rnd(void)
{
    return hostref_rand(&g_rng);
}

static double rnd_unit(void) /* [-1, 1) */
{
    return hostref_rand_unit(&g_rng);
}

static const gs_dtype k_types_all[] = {GS_INT8,    GS_UINT8,   GS_INT32,   GS_UINT32,  GS_INT64,
                                       GS_UINT64,  GS_FLOAT32, GS_FLOAT64, GS_FLOAT16, GS_BFLOAT16};

static int is_signed(gs_dtype t)
{
    return t == GS_INT8 || t == GS_INT32 || t == GS_INT64;
}

/* Data, chosen per op so the reference is meaningful:
 *  DATA_INT:   integers in [-8, 8] (unsigned: [0, 16]): float sums stay exact, so a
 *              dropped or doubled element shows at any n; many ties for ARGMIN/ARGMAX;
 *  DATA_MIXED: floats of mixed sign and magnitude (2^-10 .. 2^10); integers over
 *              [-1000, 1000] (unsigned [0, 2000]), so int32 SUM of 2^24 of them wraps;
 *  DATA_PROD:  floats 1 +- 2^-6; odd integers (a product of odds never becomes 0 mod 2^w);
 *  DATA_BITS:  random bits, with a fixed mask ORed in (for AND) or ANDed out (for OR), so
 *              AND and OR do not collapse to 0 or all ones. */
typedef enum { DATA_INT, DATA_MIXED, DATA_PROD, DATA_BITS_AND, DATA_BITS_OR, DATA_BITS_XOR } data_kind;
static const char *const k_kind_name[] = {"int", "mixed", "prod", "and-bits", "or-bits", "xor-bits"};

static void fill(void *buf, size_t n, gs_dtype t, data_kind kind)
{
    const long double eps = ldexpl(1, 1 - hostref_digits(t));
    uint64_t mask = rnd();
    for (size_t i = 0; i < n; i++) {
        if (gs_dtype_is_float(t)) {
            /* Ranges keep SUM and PROD of 2^24 elements finite in each type: float16
             * tops out at 65504, and a product's logarithm random-walks. */
            const int half = t == GS_FLOAT16 || t == GS_BFLOAT16;
            double v;
            if (kind == DATA_INT)
                v = t == GS_FLOAT16 ? (double)((int64_t)(rnd() % 5) - 2) : (double)((int64_t)(rnd() % 17) - 8);
            else if (kind == DATA_PROD && half)
                v = 1.0 + (rnd() % 16 == 0 ? (rnd() & 1 ? 1 : -1) * (double)eps : 0.0);
            else if (kind == DATA_PROD)
                v = 1.0 + rnd_unit() * (1.0 / 4096);
            else if (t == GS_FLOAT16)
                v = rnd_unit() * ldexp(1.0, (int)(rnd() % 11) - 12);
            else
                v = rnd_unit() * ldexp(1.0, (int)(rnd() % 21) - 10);
            hostref_store(t, buf, i, v);
            continue;
        }
        uint64_t v;
        switch (kind) {
        case DATA_INT: v = is_signed(t) ? (uint64_t)((int64_t)(rnd() % 17) - 8) : rnd() % 17; break;
        case DATA_MIXED: v = is_signed(t) ? (uint64_t)((int64_t)(rnd() % 2001) - 1000) : rnd() % 2001; break;
        case DATA_PROD: v = is_signed(t) ? (uint64_t)((int64_t)(rnd() % 8) * 2 - 7) : (rnd() % 8) * 2 + 1; break;
        case DATA_BITS_AND: v = rnd() | mask; break;
        case DATA_BITS_OR: v = rnd() & mask & (rnd() | rnd()); break;
        default: v = rnd(); break;
        }
        hostref_store_bits(t, buf, i, v);
    }
}

/* Checks the device result `got` of op over buf[0..n) written as `out`: hostref's
 * reference, float SUM/PROD within n * eps(acc) * sum|x| ((n + 1) * eps(acc) * |prod| for
 * PROD; 0 for sums of integer data, whose partial sums are all exact) plus eps(out) *
 * |exact| for the final rounding. */
static void verify(const char *what, const void *buf, size_t n, gs_dtype t, gs_op op, gs_dtype out, data_kind kind,
                   const void *got)
{
    const hostref_tolerance tol = {op == GS_OP_SUM && kind == DATA_INT ? 0 : 1, op == GS_OP_PROD ? 1 : 0, 1, 0};
    hostref_ref r;
    hostref_verdict v;
    g_checks++;
    hostref_reduce(&r, t, op, out, buf, n);
    if (!hostref_check(&r, buf, got, &tol, &v))
        FAIL("%s: got %s, want %s (%s)", what, v.got, v.want, v.note);
}

/* Every (dtype, op, out) the library offers: the default output and the wider ones. */
typedef struct triple {
    gs_dtype t;
    gs_op op;
    gs_dtype out;
} triple;

static data_kind kinds_for(gs_op op, data_kind *kinds)
{
    int k = 0;
    switch (op) {
    case GS_OP_SUM: kinds[k++] = DATA_INT; kinds[k++] = DATA_MIXED; break;
    case GS_OP_PROD: kinds[k++] = DATA_PROD; break;
    case GS_OP_BIT_AND: kinds[k++] = DATA_BITS_AND; break;
    case GS_OP_BIT_OR: kinds[k++] = DATA_BITS_OR; break;
    case GS_OP_BIT_XOR: kinds[k++] = DATA_BITS_XOR; break;
    default: kinds[k++] = DATA_INT; kinds[k++] = DATA_MIXED; break; /* ties, and spread */
    }
    return (data_kind)k;
}

static const size_t k_sizes[] = {0, 1, 2, 31, 32, 33, 255, 256, 257, 1000, 4097, 65537,
                                 (1u << 20) + 3, (1u << 24) + 7};
#define MAX_N ((size_t)(1u << 26) + 1 + 8)
static size_t g_maxn = MAX_N; /* elements filled and copied; smaller in quick mode */
#define POISON 0xA5

/* One reduction of host data `h` (already on the device at `d`), poisoned output. */
static void run_case(gs_context *ctx, cushim_ptr d, const void *h, size_t off, size_t n, gs_dtype t, gs_op op,
                     gs_dtype out, data_kind kind, cushim_ptr dout, cushim_stream s)
{
    const size_t es = gs_dtype_size(t);
    unsigned char got[8];
    gs_reduce_options opts = {.struct_size = sizeof opts, .out_dtype = (int32_t)out};
    CHECK_CU(cushim_memset8(dout, POISON, 8));
    CHECK_CU(cushim_ctx_sync()); /* the poison (legacy stream) lands before the launch on s */
    CHECK_GS(gs_reduce_ex(ctx, (const void *)(uintptr_t)(d + off * es), n, t, op, (void *)(uintptr_t)dout, s, &opts));
    CHECK_CU(cushim_stream_sync(s));
    CHECK_CU(cushim_d2h(got, dout, 8));
    char what[200];
    snprintf(what, sizeof what, "%s %s -> %s n=%zu offset=%zu data=%s", gs_dtype_name(t), gs_op_name(op), gs_dtype_name(out), n, off,
             k_kind_name[kind]);
    verify(what, (const unsigned char *)h + off * es, n, t, op, out, kind, got);
}

/* Finds which (dtype, op, out) the context offers, by asking gs_reduce_ex with n == 0 into
 * a scratch output: every pair the public header documents must be offered. */
static int offered(gs_context *ctx, gs_dtype t, gs_op op, gs_dtype out, cushim_ptr dout)
{
    gs_reduce_options opts = {.struct_size = sizeof opts, .out_dtype = (int32_t)out};
    gs_status st = gs_reduce_ex(ctx, NULL, 0, t, op, (void *)(uintptr_t)dout, NULL, &opts);
    if (st == GS_ERROR_UNSUPPORTED)
        return 0;
    if (st != GS_SUCCESS) {
        FAIL("probe %s %s -> %s: %s: %s", gs_dtype_name(t), gs_op_name(op), gs_dtype_name(out), gs_status_string(st),
             gs_last_error_message());
        return 0;
    }
    return 1;
}

static int documented_wide(gs_dtype t, gs_op op, gs_dtype out)
{
    int sp = op == GS_OP_SUM || op == GS_OP_PROD;
    if (sp && (t == GS_INT8 || t == GS_INT32) && out == GS_INT64)
        return 1;
    if (sp && (t == GS_UINT8 || t == GS_UINT32) && out == GS_UINT64)
        return 1;
    if (sp && t == GS_FLOAT32 && out == GS_FLOAT64)
        return 1;
    return (t == GS_FLOAT16 || t == GS_BFLOAT16) && out == GS_FLOAT32 && op <= GS_OP_MAX;
}

/* Uploads host data: cuMemcpyHtoD from pageable memory may return before the DMA lands,
 * and the reductions run on other (non-blocking) streams, so wait for it. */
static void upload(cushim_ptr d, const void *h, size_t bytes)
{
    CHECK_CU(cushim_h2d(d, h, bytes));
    CHECK_CU(cushim_ctx_sync());
}

static void test_matrix(gs_context *ctx, cushim_ptr d, void *h, cushim_ptr dout)
{
    enum { NT = sizeof k_types_all / sizeof k_types_all[0] };
    int combos = 0;
    for (size_t ti = 0; ti < NT; ti++) {
        gs_dtype t = k_types_all[ti];
        /* Which outputs each op offers, checked against the documentation first. */
        int has[GS_OP_BIT_XOR + 1][NT];
        memset(has, 0, sizeof has);
        for (int op = 0; op <= GS_OP_BIT_XOR; op++) {
            int bitwise = op >= GS_OP_BIT_AND;
            if (bitwise && gs_dtype_is_float(k_types_all[ti])) {
                /* not defined: must be refused as unsupported, never run */
                gs_status st = gs_reduce(ctx, (const void *)(uintptr_t)d, 1, t, (gs_op)op, (void *)(uintptr_t)dout, NULL);
                g_checks++;
                if (st != GS_ERROR_UNSUPPORTED)
                    FAIL("%s %s: got %s, want GS_ERROR_UNSUPPORTED", gs_dtype_name(t), gs_op_name((gs_op)op), gs_status_string(st));
                continue;
            }
            for (size_t oi = 0; oi < NT; oi++) {
                gs_dtype out = k_types_all[oi];
                int is_default = out == ((op == GS_OP_ARGMIN || op == GS_OP_ARGMAX) ? GS_INT64 : t);
                int documented = is_default || documented_wide(t, (gs_op)op, out);
                int offers = offered(ctx, t, (gs_op)op, out, dout);
                g_checks++;
                if (offers != documented)
                    FAIL("%s %s -> %s: offered=%d, documented=%d", gs_dtype_name(t), gs_op_name((gs_op)op), gs_dtype_name(out), offers,
                         documented);
                has[op][oi] = offers && documented;
                combos += has[op][oi];
            }
        }
        /* One fill per kind of data, shared by every (op, out) that uses that kind. */
        for (int kind = DATA_INT; kind <= DATA_BITS_XOR; kind++) {
            int filled = 0;
            for (int op = 0; op <= GS_OP_BIT_XOR; op++)
                for (size_t oi = 0; oi < NT; oi++) {
                    data_kind kinds[4];
                    int nk = has[op][oi] ? (int)kinds_for((gs_op)op, kinds) : 0, uses = 0;
                    for (int k = 0; k < nk; k++)
                        uses |= kinds[k] == (data_kind)kind;
                    if (!uses)
                        continue;
                    size_t fill_n = g_quick ? g_maxn : (1u << 24) + 16;
                    if (!filled) {
                        fill(h, fill_n, t, (data_kind)kind);
                        upload(d, h, fill_n * gs_dtype_size(t));
                        filled = 1;
                    }
                    gs_dtype out = k_types_all[oi];
                    for (size_t si = 0; si < sizeof k_sizes / sizeof k_sizes[0]; si++) {
                        size_t n = k_sizes[si];
                        if (g_quick && n > 70000)
                            break;
                        /* offsets 0..7 elements; fewer for the large sizes (their host
                         * reference is what costs): 0 and 5, and 3 alone for 2^24+7 */
                        size_t off0 = n > (1u << 22) ? 3 : 0, step = n > 70000 ? 5 : 1;
                        for (size_t off = off0; off < 8; off += n > (1u << 22) ? 8 : step)
                            run_case(ctx, d, h, off, n, t, (gs_op)op, out, (data_kind)kind, dout, NULL);
                    }
                }
        }
    }
    printf("matrix: %d (dtype, op, out) combinations offered and checked\n", combos);
}

/* The issue-2 sizes beyond 2^24: 2^26 + 1 elements, SUM/MIN/MAX of the first types. */
static void test_large(gs_context *ctx, cushim_ptr d, void *h, cushim_ptr dout)
{
    const gs_dtype types[] = {GS_INT32, GS_FLOAT32, GS_FLOAT64};
    const gs_op ops[] = {GS_OP_SUM, GS_OP_MIN, GS_OP_MAX};
    const size_t n = (1u << 26) + 1;
    if (g_quick)
        return;
    for (int ti = 0; ti < 3; ti++)
        for (int kind = DATA_INT; kind <= DATA_MIXED; kind++) {
            fill(h, n + 1, types[ti], (data_kind)kind);
            upload(d, h, (n + 1) * gs_dtype_size(types[ti]));
            for (int oi = 0; oi < 3; oi++)
                run_case(ctx, d, h, (size_t)kind, n, types[ti], ops[oi], types[ti], (data_kind)kind, dout, NULL);
        }
}

/* NaN anywhere makes MIN/MAX NaN, and ARGMIN/ARGMAX point at the first NaN. */
static void test_nan(gs_context *ctx, cushim_ptr d, void *h, cushim_ptr dout)
{
    const size_t sizes[] = {1, 257, 65537, (1u << 20) + 3};
    const gs_dtype types[] = {GS_FLOAT32, GS_FLOAT64, GS_FLOAT16, GS_BFLOAT16};
    for (size_t si = 0; si < (g_quick ? 3u : 4u); si++) {
        size_t n = sizes[si];
        for (int ti = 0; ti < 4; ti++) {
            gs_dtype t = types[ti];
            fill(h, n, t, DATA_MIXED);
            for (int k = 0; k < 2; k++) /* two NaNs: ARGMIN/ARGMAX must find the first */
                hostref_store(t, h, rnd() % n, NAN);
            upload(d, h, n * gs_dtype_size(t));
            for (int op = GS_OP_MIN; op <= GS_OP_ARGMAX; op++)
                run_case(ctx, d, h, 0, n, t, (gs_op)op, op >= GS_OP_ARGMIN ? GS_INT64 : t, DATA_MIXED, dout, NULL);
        }
    }
}

/* Infinities, signed zeros and all-equal inputs. */
static void test_special(gs_context *ctx, cushim_ptr d, void *h, cushim_ptr dout)
{
    const size_t sizes[] = {1, 257, 65537, (1u << 20) + 3};
    const gs_dtype types[] = {GS_FLOAT32, GS_FLOAT64, GS_FLOAT16, GS_BFLOAT16, GS_INT32, GS_UINT8};
    for (size_t si = 0; si < (g_quick ? 3u : 4u); si++) {
        size_t n = sizes[si];
        for (int ti = 0; ti < 6; ti++) {
            gs_dtype t = types[ti];
            const int fl = gs_dtype_is_float(t);
            /* all equal: MIN/MAX the value, ARGMIN/ARGMAX index 0 */
            for (size_t i = 0; i < n; i++) {
                if (fl)
                    hostref_store(t, h, i, 3.0);
                else
                    hostref_store_bits(t, h, i, 3);
            }
            upload(d, h, n * gs_dtype_size(t));
            for (int op = GS_OP_MIN; op <= GS_OP_ARGMAX; op++)
                run_case(ctx, d, h, 0, n, t, (gs_op)op, op >= GS_OP_ARGMIN ? GS_INT64 : t, DATA_INT, dout, NULL);
            if (!fl)
                continue;
            /* +inf (twice: ARGMAX finds the first), and -inf: MIN/MAX/ARG* exact; SUM with
             * only +inf is +inf, with both it is NaN */
            for (int both = 0; both < 2; both++) {
                fill(h, n, t, DATA_MIXED);
                hostref_store(t, h, rnd() % n, INFINITY);
                hostref_store(t, h, rnd() % n, INFINITY);
                if (both && n > 1)
                    hostref_store(t, h, rnd() % n, -INFINITY);
                upload(d, h, n * gs_dtype_size(t));
                for (int op = GS_OP_SUM; op <= GS_OP_ARGMAX; op++)
                    if (op != GS_OP_PROD)
                        run_case(ctx, d, h, 0, n, t, (gs_op)op, op >= GS_OP_ARGMIN ? GS_INT64 : t, DATA_MIXED, dout,
                                 NULL);
            }
            /* signed zeros only: every result compares equal to 0; ARG* index 0 (ties) */
            for (size_t i = 0; i < n; i++)
                hostref_store(t, h, i, (rnd() & 1) ? -0.0 : 0.0);
            upload(d, h, n * gs_dtype_size(t));
            for (int op = GS_OP_SUM; op <= GS_OP_ARGMAX; op++)
                run_case(ctx, d, h, 0, n, t, (gs_op)op, op >= GS_OP_ARGMIN ? GS_INT64 : t, DATA_INT, dout, NULL);
        }
    }
}

/* More than 2^32 elements: uint8 at 2^32 + 5 (4 GiB), so indices and counts need 64 bits.
 * SUM into uint64 (exact), MAX, and ARGMAX of a maximum planted twice past 2^32. Skipped
 * (with a message) when the device or the host lacks the memory. */
static void test_huge(gs_context *ctx)
{
    const size_t n = ((size_t)1 << 32) + 5;
    size_t free_b = 0, total_b = 0;
    CHECK_CU(cushim_device_memory(&free_b, &total_b));
    if (g_quick || free_b < n + ((size_t)1 << 30)) {
        printf("huge: skipped (%s; %zu MiB free on the device)\n", g_quick ? "quick mode" : "too little memory",
               free_b >> 20);
        return;
    }
    unsigned char *h = malloc(n);
    cushim_ptr d, out;
    if (!h) {
        printf("huge: skipped (no 4 GiB of host memory)\n");
        return;
    }
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t r = rnd() & 0x7f7f7f7f7f7f7f7full; /* bytes 0 .. 127 */
        memcpy(h + i, &r, 8);
    }
    for (size_t i = n - n % 8; i < n; i++)
        h[i] = (unsigned char)(rnd() & 0x7f);
    const size_t at = ((size_t)1 << 32) + 2;
    h[at] = 200;
    h[at + 2] = 200;
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += h[i];
    CHECK_CU(cushim_alloc(&d, n));
    CHECK_CU(cushim_alloc(&out, 8));
    upload(d, h, n);
    uint64_t got;
    gs_reduce_options wide = {.struct_size = sizeof wide, .out_dtype = GS_UINT64};
    CHECK_CU(cushim_memset8(out, POISON, 8));
    CHECK_CU(cushim_ctx_sync());
    CHECK_GS(gs_reduce_ex(ctx, (const void *)(uintptr_t)d, n, GS_UINT8, GS_OP_SUM, (void *)(uintptr_t)out, NULL, &wide));
    CHECK_CU(cushim_d2h(&got, out, 8));
    g_checks++;
    if (got != sum)
        FAIL("u8 sum -> u64 n=2^32+5: got %" PRIu64 ", want %" PRIu64, got, sum);
    unsigned char mx = 0;
    CHECK_CU(cushim_memset8(out, POISON, 8));
    CHECK_CU(cushim_ctx_sync());
    CHECK_GS(gs_reduce(ctx, (const void *)(uintptr_t)d, n, GS_UINT8, GS_OP_MAX, (void *)(uintptr_t)out, NULL));
    CHECK_CU(cushim_d2h(&mx, out, 1));
    g_checks++;
    if (mx != 200)
        FAIL("u8 max n=2^32+5: got %u, want 200", mx);
    int64_t idx = 0;
    CHECK_CU(cushim_memset8(out, POISON, 8));
    CHECK_CU(cushim_ctx_sync());
    CHECK_GS(gs_reduce(ctx, (const void *)(uintptr_t)d, n, GS_UINT8, GS_OP_ARGMAX, (void *)(uintptr_t)out, NULL));
    CHECK_CU(cushim_d2h(&idx, out, 8));
    g_checks++;
    if (idx != (int64_t)at)
        FAIL("u8 argmax n=2^32+5: got %" PRId64 ", want %zu", idx, at);
    CHECK_CU(cushim_free(d));
    CHECK_CU(cushim_free(out));
    free(h);
}

/* Many launches queued on one stream without a host sync in between, each into its own
 * output: every one must be right, so the last block must leave the counter at 0. */
static void test_back_to_back(gs_context *ctx, cushim_ptr d, void *h)
{
    enum { K = 64 };
    cushim_ptr outs;
    CHECK_CU(cushim_alloc(&outs, K * 8));
    CHECK_CU(cushim_memset8(outs, POISON, K * 8));
    size_t n[K];
    fill(h, g_maxn, GS_FLOAT32, DATA_INT);
    upload(d, h, g_maxn * 4);
    for (int k = 0; k < K; k++) {
        n[k] = 1 + rnd() % (k % 2 && !g_quick ? (1u << 22) : 5000);
        CHECK_GS(gs_reduce(ctx, (const void *)(uintptr_t)(d + 4 * (size_t)k), n[k], GS_FLOAT32, GS_OP_SUM,
                           (void *)(uintptr_t)(outs + 8 * (size_t)k), NULL));
    }
    CHECK_CU(cushim_ctx_sync());
    float got[K * 2];
    CHECK_CU(cushim_d2h(got, outs, K * 8));
    for (int k = 0; k < K; k++) {
        char what[96];
        snprintf(what, sizeof what, "back-to-back #%d f32 sum n=%zu", k, n[k]);
        verify(what, (const float *)h + k, n[k], GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, DATA_INT, &got[2 * k]);
    }
    CHECK_CU(cushim_free(outs));
}

/* The same input on several streams, explicit and default context. */
static void test_streams(gs_context *ctx, cushim_ptr d, void *h, cushim_ptr dout)
{
    cushim_stream s1, s2;
    CHECK_CU(cushim_stream_create(&s1));
    CHECK_CU(cushim_stream_create(&s2));
    const size_t n = g_quick ? 100005 : (1u << 22) + 5;
    fill(h, n, GS_INT32, DATA_INT);
    upload(d, h, n * 4);
    cushim_stream streams[] = {NULL, (cushim_stream)0x2 /* per-thread default */, s1, s2};
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 4; i++)
            run_case(c ? NULL : ctx, d, h, 0, n, GS_INT32, GS_OP_SUM, GS_INT32, DATA_INT, dout, streams[i]);
    CHECK_CU(cushim_stream_destroy(s1));
    CHECK_CU(cushim_stream_destroy(s2));
}

/* Two long reductions on two streams at once: a shared counter would mix them up. */
static void test_overlap(gs_context *ctx, cushim_ptr d, void *h)
{
    const size_t n = g_quick ? 200003 : (1u << 26) + 1;
    cushim_stream s[2];
    cushim_ptr outs;
    CHECK_CU(cushim_alloc(&outs, 16));
    fill(h, g_maxn, GS_FLOAT32, DATA_INT);
    upload(d, h, g_maxn * 4);
    for (int rep = 0; rep < (g_quick ? 2 : 10); rep++) {
        CHECK_CU(cushim_memset8(outs, POISON, 16));
        CHECK_CU(cushim_ctx_sync());
        for (int i = 0; i < 2; i++) {
            CHECK_CU(cushim_stream_create(&s[i]));
            CHECK_GS(gs_reduce(ctx, (const void *)(uintptr_t)(d + 4 * (size_t)(i * 3)), n, GS_FLOAT32,
                               i ? GS_OP_SUM : GS_OP_MAX, (void *)(uintptr_t)(outs + 8 * (size_t)i), s[i]));
        }
        float got[4];
        CHECK_CU(cushim_ctx_sync());
        CHECK_CU(cushim_d2h(got, outs, 16));
        verify("overlap max", h, n, GS_FLOAT32, GS_OP_MAX, GS_FLOAT32, DATA_INT, &got[0]);
        verify("overlap sum", (const float *)h + 3, n, GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, DATA_INT, &got[2]);
        for (int i = 0; i < 2; i++)
            CHECK_CU(cushim_stream_destroy(s[i]));
    }
    CHECK_CU(cushim_free(outs));
}

/* Run-to-run determinism of a float SUM whose rounding depends on the combine order. */
static void test_determinism(gs_context *ctx, cushim_ptr d, void *h, cushim_ptr dout)
{
    const size_t n = g_quick ? 100003 : (1u << 24) + 7;
    const gs_dtype types[] = {GS_FLOAT32, GS_FLOAT64, GS_FLOAT16, GS_BFLOAT16};
    for (int ti = 0; ti < 4; ti++) {
        gs_dtype t = types[ti];
        fill(h, n, t, DATA_MIXED);
        upload(d, h, n * gs_dtype_size(t));
        unsigned char first[8], got[8];
        for (int rep = 0; rep < (g_quick ? 5 : 100); rep++) {
            CHECK_CU(cushim_memset8(dout, POISON, 8));
            CHECK_GS(gs_reduce(ctx, (const void *)(uintptr_t)d, n, t, GS_OP_SUM, (void *)(uintptr_t)dout, NULL));
            CHECK_CU(cushim_d2h(got, dout, gs_dtype_size(t)));
            if (rep == 0) {
                memcpy(first, got, 8);
                verify("determinism first run", h, n, t, GS_OP_SUM, t, DATA_MIXED, got);
            } else if (memcmp(first, got, gs_dtype_size(t)) != 0) {
                FAIL("%s sum n=%zu: run %d differs bitwise from run 0", gs_dtype_name(t), n, rep);
                break;
            }
            g_checks++;
        }
    }
}

/* ---- gs_segmented_reduce --------------------------------------------------------------
 * Layouts of num_segments + 1 offsets over [0, n): segments start at a random base and
 * leave a random margin at the end, so offsets[0] > 0 and offsets[S] < n happen. */
typedef enum { LAY_MIXED, LAY_TINY, LAY_GIANT, LAY_POWER, LAY_EDGES, LAY_COUNT } layout_kind;
static const char *const k_layout_name[] = {"mixed", "tiny", "giant+tiny", "power-law", "chunk-edges"};

/* Fills off[0..S] for about `target` elements; returns S. off has room for max_seg + 1. */
static size_t make_layout(layout_kind kind, size_t target, int64_t *off, size_t max_seg, size_t *n_out)
{
    size_t S = 0, pos = rnd() % 6;
    off[0] = (int64_t)pos;
    const size_t giant_at = kind == LAY_GIANT ? rnd() % 64 : (size_t)-1;
    while (S < max_seg) {
        size_t len;
        switch (kind) {
        case LAY_TINY: len = rnd() % 17; break; /* 0..16, empty ones included */
        case LAY_GIANT: len = S == giant_at ? target * 3 / 4 : rnd() % 17; break;
        case LAY_POWER: { /* Pareto-like: P(len > x) ~ 1/x, 1 .. target/4 */
            double u = (double)(rnd() >> 11) / 9007199254740992.0;
            double l = 1.0 / (u + 1e-9);
            len = l > (double)target / 4 ? target / 4 : (size_t)l;
            break;
        }
        case LAY_EDGES: { /* boundaries on and around multiples of 2^k (chunk edges) */
            size_t q = (size_t)1 << (10 + rnd() % 8);
            size_t next = (pos / q + 1) * q + (size_t)(rnd() % 3) - 1;
            len = next > pos ? next - pos : rnd() % 3;
            break;
        }
        default: { /* a mix of empty, short, medium, long and chunk-spanning segments */
            unsigned r = (unsigned)(rnd() % 100);
            len = r < 10 ? 0 : r < 55 ? 1 + rnd() % 16 : r < 85 ? 17 + rnd() % 2000 : r < 97 ? 2017 + rnd() % 30000
                                                                                     : 30000 + rnd() % 300000;
            break;
        }
        }
        if (pos + len > target)
            break;
        pos += len;
        off[++S] = (int64_t)pos;
    }
    *n_out = pos + rnd() % 4;
    return S;
}

/* One gs_segmented_reduce of host data h (on the device at d + off_el elements) over the
 * layout in hoff (on the device at doff), output poisoned, every segment checked. */
static void run_segmented(gs_context *ctx, cushim_ptr d, const void *h, size_t off_el, size_t n, const int64_t *hoff,
                          cushim_ptr doff, size_t S, gs_dtype t, gs_op op, data_kind kind, cushim_ptr dsegout,
                          void *hsegout, const char *label, cushim_stream s)
{
    const size_t es = gs_dtype_size(t);
    const gs_dtype out = (op == GS_OP_ARGMIN || op == GS_OP_ARGMAX) ? GS_INT64 : t;
    const size_t os = gs_dtype_size(out);
    CHECK_CU(cushim_memset8(dsegout, POISON, S * os + 8));
    CHECK_CU(cushim_ctx_sync());
    CHECK_GS(gs_segmented_reduce(ctx, (const void *)(uintptr_t)(d + off_el * es), n, t, op,
                                 (const int64_t *)(uintptr_t)doff, S, (void *)(uintptr_t)dsegout, s, 0));
    CHECK_CU(cushim_stream_sync(s));
    CHECK_CU(cushim_d2h(hsegout, dsegout, S * os + 8));
    const unsigned char *hb = (const unsigned char *)h + off_el * es;
    int failed_before = g_failures;
    for (size_t j = 0; j < S && g_failures - failed_before < 5; j++) {
        char what[240];
        snprintf(what, sizeof what, "segmented %s %s %s n=%zu offset=%zu S=%zu data=%s: segment %zu [%lld, %lld)",
                 gs_dtype_name(t), gs_op_name(op), label, n, off_el, S, k_kind_name[kind], j, (long long)hoff[j],
                 (long long)hoff[j + 1]);
        verify(what, hb + (size_t)hoff[j] * es, (size_t)(hoff[j + 1] - hoff[j]), t, op, out, kind,
               (const unsigned char *)hsegout + j * os);
    }
    unsigned char tail[8];
    memset(tail, POISON, 8);
    if (memcmp((const unsigned char *)hsegout + S * os, tail, 8) != 0)
        FAIL("segmented %s %s %s: wrote past out[%zu]", gs_dtype_name(t), gs_op_name(op), label, S);
}

#define SEG_MAX 400000
static void test_segmented(gs_context *ctx, cushim_ptr d, void *h, cushim_ptr dout)
{
    (void)dout;
    enum { NT = sizeof k_types_all / sizeof k_types_all[0] };
    const size_t target = g_quick ? 200000 : (1u << 22) + 17;
    int64_t *hoff = malloc((SEG_MAX + 1) * sizeof *hoff);
    void *hsegout = malloc(SEG_MAX * 8 + 8);
    cushim_ptr doff, dsegout;
    CHECK_CU(cushim_alloc(&doff, (SEG_MAX + 1) * sizeof *hoff));
    CHECK_CU(cushim_alloc(&dsegout, SEG_MAX * 8 + 8));
    if (!hoff || !hsegout) {
        fprintf(stderr, "FATAL: out of host memory\n");
        exit(1);
    }
    size_t S, n;

    /* Every dtype x op (default outputs), two layouts each, fresh data per case. */
    for (size_t ti = 0; ti < NT; ti++) {
        gs_dtype t = k_types_all[ti];
        for (int op = 0; op <= GS_OP_BIT_XOR; op++) {
            if (op >= GS_OP_BIT_AND && gs_dtype_is_float(k_types_all[ti])) {
                gs_status st = gs_segmented_reduce(ctx, NULL, 0, t, (gs_op)op, NULL, 0, NULL, NULL, 0);
                g_checks++;
                if (st != GS_ERROR_UNSUPPORTED)
                    FAIL("segmented %s %s: %s, want GS_ERROR_UNSUPPORTED", gs_dtype_name(t), gs_op_name((gs_op)op),
                         gs_status_string(st));
                continue;
            }
            data_kind kinds[2];
            int nk = (int)kinds_for((gs_op)op, kinds);
            for (int rep = 0; rep < 2; rep++) {
                layout_kind lay = (layout_kind)((ti * 2 + (size_t)op * 3 + (size_t)rep) % LAY_COUNT);
                data_kind kind = kinds[rep % nk];
                S = make_layout(lay, target, hoff, SEG_MAX, &n);
                size_t off_el = rnd() % 4;
                fill(h, n + off_el, t, kind);
                upload(d, h, (n + off_el) * gs_dtype_size(t));
                upload(doff, hoff, (S + 1) * sizeof *hoff);
                run_segmented(ctx, d, h, off_el, n, hoff, doff, S, t, (gs_op)op, kind, dsegout, hsegout,
                              k_layout_name[lay], NULL);
            }
        }
    }

    /* Every layout for f32 SUM and i32 ARGMAX, on a created stream; 2^20 tiny segments. */
    cushim_stream s;
    CHECK_CU(cushim_stream_create(&s));
    for (int lay = 0; lay < LAY_COUNT; lay++)
        for (int k = 0; k < 2; k++) {
            gs_dtype t = k ? GS_INT32 : GS_FLOAT32;
            gs_op op = k ? GS_OP_ARGMAX : GS_OP_SUM;
            S = make_layout((layout_kind)lay, target, hoff, SEG_MAX, &n);
            fill(h, n, t, DATA_MIXED);
            upload(d, h, n * gs_dtype_size(t));
            upload(doff, hoff, (S + 1) * sizeof *hoff);
            run_segmented(ctx, d, h, 0, n, hoff, doff, S, t, op, DATA_MIXED, dsegout, hsegout,
                          k_layout_name[lay], s);
        }

    /* Edge cases: no elements at all (every segment empty: identities), one segment that is
     * the whole input (the same as gs_reduce), zero segments (nothing written). */
    for (int op = 0; op <= GS_OP_ARGMAX; op++) {
        S = 7;
        for (size_t j = 0; j <= S; j++)
            hoff[j] = 0;
        upload(doff, hoff, (S + 1) * sizeof *hoff);
        run_segmented(ctx, d, h, 0, 0, hoff, doff, S, GS_FLOAT32, (gs_op)op, DATA_INT, dsegout, hsegout, "empty", s);
        n = g_quick ? 100000 : (1u << 24) + 3;
        fill(h, n, GS_FLOAT64, DATA_MIXED);
        upload(d, h, n * 8);
        hoff[0] = 0;
        hoff[1] = (int64_t)n;
        upload(doff, hoff, 2 * sizeof *hoff);
        run_segmented(ctx, d, h, 0, n, hoff, doff, 1, GS_FLOAT64, (gs_op)op, DATA_MIXED, dsegout, hsegout, "whole", s);
    }
    CHECK_CU(cushim_memset8(dsegout, POISON, 8));
    CHECK_GS(gs_segmented_reduce(ctx, (const void *)(uintptr_t)d, 10, GS_FLOAT32, GS_OP_SUM,
                                 (const int64_t *)(uintptr_t)doff, 0, (void *)(uintptr_t)dsegout, s, 0));
    CHECK_CU(cushim_ctx_sync());
    unsigned char b[8];
    CHECK_CU(cushim_d2h(b, dsegout, 8));
    g_checks++;
    for (int i = 0; i < 8; i++)
        if (b[i] != POISON) {
            FAIL("segmented with 0 segments wrote its output");
            break;
        }

    /* Run-to-run determinism: a float SUM over a power-law layout, 20 times, every bit. */
    S = make_layout(LAY_POWER, target, hoff, SEG_MAX, &n);
    fill(h, n, GS_FLOAT32, DATA_MIXED);
    upload(d, h, n * 4);
    upload(doff, hoff, (S + 1) * sizeof *hoff);
    void *first = malloc(S * 4 + 8);
    for (int rep = 0; rep < (g_quick ? 3 : 20); rep++) {
        run_segmented(ctx, d, h, 0, n, hoff, doff, S, GS_FLOAT32, GS_OP_SUM, DATA_MIXED, dsegout, hsegout,
                      "determinism", s);
        if (rep == 0)
            memcpy(first, hsegout, S * 4);
        else if (memcmp(first, hsegout, S * 4) != 0) {
            FAIL("segmented f32 sum S=%zu: run %d differs bitwise from run 0", S, rep);
            break;
        }
    }
    free(first);

    /* Back to back, no synchronisation in between: segmented reductions with different
     * layouts into separate outputs, interleaved with gs_reduce on the same stream (they
     * share the stream's workspace), then every result checked. */
    {
        enum { K = 6 };
        const size_t part = target / K;
        int64_t *offs[K];
        size_t Ss[K], ns[K];
        cushim_ptr doffs[K], douts[K], dred;
        CHECK_CU(cushim_alloc(&dred, 8 * K));
        fill(h, target, GS_FLOAT32, DATA_INT);
        upload(d, h, target * 4);
        for (int k = 0; k < K; k++) {
            offs[k] = malloc((SEG_MAX + 1) * sizeof(int64_t));
            Ss[k] = make_layout((layout_kind)(k % LAY_COUNT), part, offs[k], SEG_MAX, &ns[k]);
            CHECK_CU(cushim_alloc(&doffs[k], (Ss[k] + 1) * sizeof(int64_t)));
            CHECK_CU(cushim_alloc(&douts[k], Ss[k] * 4 + 8));
            upload(doffs[k], offs[k], (Ss[k] + 1) * sizeof(int64_t));
            CHECK_CU(cushim_memset8(douts[k], POISON, Ss[k] * 4 + 8));
        }
        CHECK_CU(cushim_ctx_sync());
        for (int k = 0; k < K; k++) {
            CHECK_GS(gs_segmented_reduce(ctx, (const void *)(uintptr_t)(d + 4 * part * (size_t)k), ns[k], GS_FLOAT32,
                                         GS_OP_SUM, (const int64_t *)(uintptr_t)doffs[k], Ss[k],
                                         (void *)(uintptr_t)douts[k], s, 0));
            CHECK_GS(gs_reduce(ctx, (const void *)(uintptr_t)(d + 4 * part * (size_t)k), part, GS_FLOAT32, GS_OP_MAX,
                               (void *)(uintptr_t)(dred + 4 * (size_t)k), s));
        }
        CHECK_CU(cushim_stream_sync(s));
        float red[K];
        CHECK_CU(cushim_d2h(red, dred, 4 * K));
        for (int k = 0; k < K; k++) {
            CHECK_CU(cushim_d2h(hsegout, douts[k], Ss[k] * 4));
            const float *base = (const float *)h + part * (size_t)k;
            int fb = g_failures;
            for (size_t j = 0; j < Ss[k] && g_failures - fb < 3; j++)
                verify("segmented back-to-back", base + offs[k][j], (size_t)(offs[k][j + 1] - offs[k][j]), GS_FLOAT32,
                       GS_OP_SUM, GS_FLOAT32, DATA_INT, (const float *)hsegout + j);
            verify("reduce between segmented", base, part, GS_FLOAT32, GS_OP_MAX, GS_FLOAT32, DATA_INT, &red[k]);
            CHECK_CU(cushim_free(doffs[k]));
            CHECK_CU(cushim_free(douts[k]));
            free(offs[k]);
        }
        CHECK_CU(cushim_free(dred));
    }

    /* Bad offsets. Checked (GS_SEGMENTED_CHECK_OFFSETS): GS_ERROR_INVALID_ARGUMENT. Not
     * checked: success, nothing out of bounds (compute-sanitizer watches), and the next
     * good call on the same workspace is right. */
    {
        n = 100000;
        fill(h, n, GS_FLOAT32, DATA_INT);
        upload(d, h, n * 4);
        const int64_t bad[][5] = {{0, 10, 5, 20, 30}, {-4, 10, 20, 30, 40}, {0, 10, 20, 30, 100001},
                                  {0, 1, 2, 3, -1}, {INT64_MAX, 0, INT64_MAX, INT64_MIN, 5}};
        for (int b = 0; b < 5; b++) {
            upload(doff, bad[b], sizeof bad[b]);
            gs_status st = gs_segmented_reduce(ctx, (const void *)(uintptr_t)d, n, GS_FLOAT32, GS_OP_SUM,
                                               (const int64_t *)(uintptr_t)doff, 4, (void *)(uintptr_t)dsegout, s,
                                               GS_SEGMENTED_CHECK_OFFSETS);
            g_checks++;
            if (st != GS_ERROR_INVALID_ARGUMENT)
                FAIL("bad offsets %d, checked: %s, want GS_ERROR_INVALID_ARGUMENT", b, gs_status_string(st));
            st = gs_segmented_reduce(ctx, (const void *)(uintptr_t)d, n, GS_FLOAT32, GS_OP_ARGMIN,
                                     (const int64_t *)(uintptr_t)doff, 4, (void *)(uintptr_t)dsegout, s, 0);
            g_checks++;
            if (st != GS_SUCCESS)
                FAIL("bad offsets %d, unchecked: %s: %s", b, gs_status_string(st), gs_last_error_message());
            CHECK_CU(cushim_stream_sync(s));
        }
        S = make_layout(LAY_MIXED, n, hoff, SEG_MAX, &n);
        upload(doff, hoff, (S + 1) * sizeof *hoff);
        run_segmented(ctx, d, h, 0, n, hoff, doff, S, GS_FLOAT32, GS_OP_ARGMIN, DATA_INT, dsegout, hsegout,
                      "after bad offsets", s);
        /* and the check passes good offsets */
        gs_status st = gs_segmented_reduce(ctx, (const void *)(uintptr_t)d, n, GS_FLOAT32, GS_OP_SUM,
                                           (const int64_t *)(uintptr_t)doff, S, (void *)(uintptr_t)dsegout, s,
                                           GS_SEGMENTED_CHECK_OFFSETS);
        g_checks++;
        if (st != GS_SUCCESS)
            FAIL("good offsets, checked: %s: %s", gs_status_string(st), gs_last_error_message());
        CHECK_CU(cushim_stream_sync(s));
    }
    CHECK_CU(cushim_stream_destroy(s));
    CHECK_CU(cushim_free(doff));
    CHECK_CU(cushim_free(dsegout));
    free(hoff);
    free(hsegout);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void)
{
    gpu_test_init();
    g_quick = getenv("GS_TEST_QUICK") && atoi(getenv("GS_TEST_QUICK"));
    if (g_quick)
        g_maxn = 300000;
    const char *seed_env = getenv("GS_TEST_SEED");
    g_rng = seed_env ? strtoull(seed_env, NULL, 0) : (unsigned long long)time(NULL) ^ ((unsigned long long)clock() << 32);
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress reaches a log even if the run is cut short */
    printf("seed %llu (GS_TEST_SEED=%llu replays it)\n", (unsigned long long)g_rng, (unsigned long long)g_rng);

    gs_context *ctx;
    CHECK_GS(gs_context_create(0, &ctx));
    gs_context_info info = {.struct_size = sizeof info};
    CHECK_GS(gs_context_get_info(ctx, &info));
    printf("device %d: %s, compute capability %d.%d, backend %s (%s)\n", info.device, info.device_name,
           info.cc_major, info.cc_minor, info.backend_name, info.backend_path);
    const char *forced = getenv("GRIDSYNC_BACKEND");
    if (forced && *forced && forced[0] != '/' && strcmp(forced, info.backend_name) != 0)
        FAIL("GRIDSYNC_BACKEND=%s but the context runs %s", forced, info.backend_name);
    if ((!forced || !*forced) && info.cc_major >= 2 && strcmp(info.backend_name, "cuda_sm20") != 0)
        FAIL("compute capability %d.%d should pick cuda_sm20, got %s", info.cc_major, info.cc_minor,
             info.backend_name);

    void *h = malloc(MAX_N * 8);
    cushim_ptr d, dout;
    if (!h) {
        fprintf(stderr, "FATAL: out of host memory\n");
        return 1;
    }
    CHECK_CU(cushim_alloc(&d, MAX_N * 8));
    CHECK_CU(cushim_alloc(&dout, 8));

    struct {
        const char *name;
        void (*fn)(gs_context *, cushim_ptr, void *, cushim_ptr);
    } parts[] = {{"matrix", test_matrix},   {"large", test_large},   {"nan", test_nan},
                 {"special", test_special}, {"streams", test_streams}, {"determinism", test_determinism},
                 {"segmented", test_segmented}};
    /* GS_TEST_PARTS=name,name: only those parts (and no back-to-back/overlap/huge unless
     * named), for a quick look at one area. */
    const char *only = getenv("GS_TEST_PARTS");
#define WANT(name) (!only || !*only || strstr(only, name))
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (!WANT(parts[i].name))
            continue;
        int before = g_failures, checks = g_checks;
        double t0 = now_s();
        parts[i].fn(ctx, d, h, dout);
        printf("%-12s %5d checks, %d failed (%.1f s)\n", parts[i].name, g_checks - checks, g_failures - before,
               now_s() - t0);
    }
    int before = g_failures, checks = g_checks;
    if (WANT("back-to-back")) {
        test_back_to_back(ctx, d, h);
        printf("%-12s %5d checks, %d failed\n", "back-to-back", g_checks - checks, g_failures - before);
    }
    before = g_failures, checks = g_checks;
    if (WANT("overlap")) {
        test_overlap(ctx, d, h);
        printf("%-12s %5d checks, %d failed\n", "overlap", g_checks - checks, g_failures - before);
    }

    /* the 4 GiB case last, with the other buffers freed */
    CHECK_CU(cushim_free(d));
    CHECK_CU(cushim_free(dout));
    free(h);
    before = g_failures, checks = g_checks;
    double t0 = now_s();
    if (WANT("huge")) {
        test_huge(ctx);
        printf("%-12s %5d checks, %d failed (%.1f s)\n", "huge", g_checks - checks, g_failures - before,
               now_s() - t0);
    }

    CHECK_GS(gs_context_destroy(ctx));
    printf("backend %s: %d checks, %d failed\n", info.backend_name, g_checks, g_failures);
    return g_failures ? 1 : 0;
}
