/*
 * What the gs_scan gpu tests share (test_gpu_scan.c, test_gpu_scan_stress.c): which
 * outputs gs_scan offers, data per op, the oracle and the comparison with it.
 *
 * The oracle is hostref_scan with the order's numbers of internal/scan_order.h: every
 * device result must equal it bit for bit, floats included, except that a NaN need only
 * meet a NaN (NaN bits are not part of the contract). out[i] depends on in[0..i] alone, not
 * on n (hostref/scan.c), so one model of N elements is the oracle of every n <= N over the
 * same input: the programs compare each size's result with a prefix of one model.
 * For integer ops and float MIN/MAX the order changes no bit, so a sequential scan is the
 * same oracle (test_scan_model checks that); the programs use it only where hostref_scan
 * would take too long (past 2^24 elements), after checking it against hostref_scan on a
 * prefix. No CUDA header; needs dtype.h's helpers.
 */
#ifndef GS_GPU_SCAN_COMMON_H
#define GS_GPU_SCAN_COMMON_H

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtype.h"
#include "gridsync.h"
#include "hostref.h"
#include "scan_order.h"

static const gs_dtype k_scan_types[] = {GS_INT8,  GS_UINT8,   GS_INT32,   GS_UINT32,  GS_INT64,
                                        GS_UINT64, GS_FLOAT32, GS_FLOAT64, GS_FLOAT16, GS_BFLOAT16};
#define SCAN_NTYPES (sizeof k_scan_types / sizeof k_scan_types[0])

/* One scan: input type, op, output type (never GS_OUT_DEFAULT here), inclusive/exclusive. */
typedef struct scan_case {
    gs_dtype t;
    gs_op op;
    gs_dtype out;
    int excl;
} scan_case;

/* The outputs the API documents: the input type for SUM, PROD, MIN, MAX (and AND, OR, XOR
 * of integers); gs_reduce_ex's wider ones; ARGMIN/ARGMAX never. */
static inline int scan_documented(gs_dtype t, gs_op op, gs_dtype out)
{
    if (op == GS_OP_ARGMIN || op == GS_OP_ARGMAX || !gs_op_defined(t, op))
        return 0;
    if (out == t)
        return 1;
    const int sp = op == GS_OP_SUM || op == GS_OP_PROD;
    if (sp && (t == GS_INT8 || t == GS_INT32))
        return out == GS_INT64;
    if (sp && (t == GS_UINT8 || t == GS_UINT32))
        return out == GS_UINT64;
    if (sp && t == GS_FLOAT32)
        return out == GS_FLOAT64;
    if ((t == GS_FLOAT16 || t == GS_BFLOAT16) && op <= GS_OP_MAX)
        return out == GS_FLOAT32;
    return 0;
}

/* A tile's elements for an output type (the order's GS_SCAN_THREADS x GS_SCAN_ITEMS). */
static inline uint64_t scan_tile(gs_dtype out)
{
    return (uint64_t)GS_SCAN_THREADS * GS_SCAN_ITEMS(gs_dtype_size(out));
}

static inline const char *scan_case_name(const scan_case *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s %s -> %s %s", gs_dtype_name(c->t), gs_op_name(c->op), gs_dtype_name(c->out),
             c->excl ? "exclusive" : "inclusive");
    return buf;
}

/* The oracle: hostref_scan with the contract's numbers. */
static inline gs_status scan_model(const scan_case *c, const void *in, uint64_t n, void *out)
{
    return hostref_scan(in, n, c->t, c->op, (int32_t)c->out, c->excl, GS_SCAN_THREADS,
                        GS_SCAN_ITEMS((unsigned)gs_dtype_size(c->out)), GS_SCAN_GROUP, out);
}

/* gs_scan with the case's options. */
static inline gs_status scan_call(gs_context *ctx, const scan_case *c, const void *in, uint64_t n, void *out,
                                  gs_stream s)
{
    gs_scan_options o = {.struct_size = sizeof o, .out_dtype = (int32_t)c->out, .flags = c->excl ? GS_SCAN_EXCLUSIVE : 0u};
    return gs_scan(ctx, in, n, c->t, c->op, out, s, &o);
}

/* ---- data ------------------------------------------------------------------------------ */

/*
 * n elements of t for op, from the splitmix state *rng:
 *  integers: every bit random; PROD odd (a product of odds never becomes 0 modulo 2^w, so
 *  a late wrong factor shows); AND (OR) a fixed random mask ORed in (ANDed out), so the
 *  prefix does not collapse to 0 (all ones) within a few elements;
 *  float SUM: mixed signs, magnitudes 2^-10 .. 2^10 (float16: 2^-8 .. 2^4, so its float32
 *  prefix rounds to finite float16 values for long);
 *  float PROD: e^(+-2^-8 u) (the 16-bit types: e^(+-2^-6 u), a few steps of their grid near
 *  1), u uniform in [0, 1), the sign random while the product of the rounded values is
 *  within e^+-1, else towards 1: rounding alone would make it drift to 0 or inf;
 *  float MIN/MAX: mixed signs over 2^-20 .. 2^20 (float16: 2^-14 .. 2^14), signed zeros
 *  (1/64), the infinity that never wins (MIN: +inf, MAX: -inf; 1/256), and, each half the
 *  time, one winning infinity and one NaN in the last quarter: the sizes below them see
 *  neither, the ones above see them spread to the end.
 */
static inline void scan_fill(void *buf, uint64_t n, gs_dtype t, gs_op op, uint64_t *rng)
{
    const uint64_t mask = hostref_rand(rng);
    double log_prod = 0; /* float PROD: the logarithm of the product so far */
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t r = hostref_rand(rng);
        if (!gs_dtype_is_float(t)) {
            uint64_t v = r;
            if (op == GS_OP_PROD)
                v |= 1;
            else if (op == GS_OP_BIT_AND)
                v |= mask | hostref_rand(rng);
            else if (op == GS_OP_BIT_OR)
                v &= ~mask & hostref_rand(rng);
            hostref_store_bits(t, buf, i, v);
            continue;
        }
        const double u = hostref_rand_unit(rng);
        double v;
        if (op == GS_OP_SUM)
            v = u * ldexp(1.0, t == GS_FLOAT16 ? (int)(r % 13) - 8 : (int)(r % 21) - 10);
        else if (op == GS_OP_PROD) {
            const double a = fabs(u) * ldexp(1.0, t == GS_FLOAT16 || t == GS_BFLOAT16 ? -6 : -8);
            v = (double)hostref_round_to(t, exp(fabs(log_prod) > 1 ? (log_prod > 0 ? -a : a) : (r & 4 ? -a : a)));
            log_prod += log(v);
        }
        else if (r % 64 == 0)
            v = r & 64 ? -0.0 : 0.0;
        else if (r % 256 == 1)
            v = op == GS_OP_MIN ? INFINITY : -INFINITY;
        else
            v = u * ldexp(1.0, t == GS_FLOAT16 ? (int)(r % 29) - 14 : (int)(r % 41) - 20);
        hostref_store(t, buf, i, v);
    }
    if (gs_dtype_is_float(t) && (op == GS_OP_MIN || op == GS_OP_MAX) && n >= 4) {
        if (hostref_rand(rng) % 2)
            hostref_store(t, buf, n - 1 - hostref_rand(rng) % (n / 4), op == GS_OP_MIN ? -INFINITY : INFINITY);
        if (hostref_rand(rng) % 2)
            hostref_store(t, buf, n - 1 - hostref_rand(rng) % (n / 4), NAN);
    }
}

/* ---- comparison ------------------------------------------------------------------------ */

static inline int scan_is_nan(gs_dtype t, uint64_t b)
{
    switch (t) {
    case GS_FLOAT32: return (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu);
    case GS_FLOAT64: return (b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (b & 0xfffffffffffffull);
    case GS_FLOAT16: return (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu);
    case GS_BFLOAT16: return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu);
    default: return 0;
    }
}

/* Whether got[0..n) equals want[0..n) bit for bit (two NaNs count as equal); the first
 * index that differs in *first. */
static inline int scan_same(gs_dtype out, const void *got, const void *want, uint64_t n, uint64_t *first)
{
    const size_t es = gs_dtype_size(out);
    if (memcmp(got, want, n * es) == 0)
        return 1;
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t g = hostref_load_bits(out, got, i), w = hostref_load_bits(out, want, i);
        if (g != w && !(scan_is_nan(out, g) && scan_is_nan(out, w))) {
            *first = i;
            return 0;
        }
    }
    return 1;
}

/* "got 0x.. (value), want 0x.. (value)" for element i of two arrays of out. */
static inline void scan_describe(gs_dtype out, const void *got, const void *want, uint64_t i, char *buf, size_t len)
{
    const int w = (int)gs_dtype_size(out) * 2;
    snprintf(buf, len, "out[%" PRIu64 "]: got 0x%0*" PRIx64 " (%.21Lg), want 0x%0*" PRIx64 " (%.21Lg)", i, w,
             hostref_load_bits(out, got, i), hostref_load(out, got, i), w, hostref_load_bits(out, want, i),
             hostref_load(out, want, i));
}

/* The sequential scan of an integer op, the same bits as the model (associative ops):
 * out[i] of type out, from in[0..n). Integer types only, out offered for (t, op). */
static inline void scan_sequential_int(const scan_case *c, const void *in, uint64_t n, void *out)
{
    const int sgn = c->t == GS_INT8 || c->t == GS_INT32 || c->t == GS_INT64;
    const unsigned bits = 8u * (unsigned)gs_dtype_size(c->out);
    const uint64_t m = bits == 64 ? ~0ull : (1ull << bits) - 1;
    hostref_ref id; /* exclusive out[0]: the op's identity, gs_reduce's n == 0 value */
    hostref_reduce(&id, c->t, c->op, c->out, NULL, 0);
    uint64_t r = 0;
    int have = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t x = hostref_load_bits(c->t, in, i);
        const unsigned ib = 8u * (unsigned)gs_dtype_size(c->t);
        if (sgn && ib < 64 && (x >> (ib - 1)) & 1)
            x |= ~0ull << ib; /* sign-extended to the output's width (masked below) */
        x &= m;
        if (c->excl)
            hostref_store_bits(c->out, out, i, have ? r : id.bits);
        if (!have)
            r = x;
        else if (c->op == GS_OP_SUM)
            r = (r + x) & m;
        else if (c->op == GS_OP_PROD)
            r = (r * x) & m;
        else if (c->op == GS_OP_BIT_AND)
            r &= x;
        else if (c->op == GS_OP_BIT_OR)
            r |= x;
        else if (c->op == GS_OP_BIT_XOR)
            r ^= x;
        else {
            /* MIN/MAX, compared as the output type's integers */
            const int less = sgn ? (int64_t)(x << (64 - bits)) < (int64_t)(r << (64 - bits)) : x < r;
            const int more = sgn ? (int64_t)(x << (64 - bits)) > (int64_t)(r << (64 - bits)) : x > r;
            if (c->op == GS_OP_MIN ? less : more)
                r = x;
        }
        have = 1;
        if (!c->excl)
            hostref_store_bits(c->out, out, i, r);
    }
}

/* ---- models on several threads ---------------------------------------------------------- */

/* One model to compute: scan_model(&c, in, n, out) into st. */
typedef struct scan_job {
    scan_case c;
    const void *in;
    uint64_t n;
    void *out;
    gs_status st;
} scan_job;

typedef struct scan_pool {
    scan_job *jobs;
    size_t count, next;
    pthread_mutex_t lock;
} scan_pool;

static inline void *scan_pool_worker(void *p)
{
    scan_pool *pool = p;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        const size_t k = pool->next++;
        pthread_mutex_unlock(&pool->lock);
        if (k >= pool->count)
            return NULL;
        scan_job *j = &pool->jobs[k];
        j->st = scan_model(&j->c, j->in, j->n, j->out);
    }
}

/* Runs the jobs on up to one thread per CPU (16 at most): the host model, not the GPU, is
 * what the tests' time goes to. Each job's status in its st. */
static inline void scan_models(scan_job *jobs, size_t count)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nt = cpus < 1 ? 1 : cpus > 16 ? 16 : (size_t)cpus;
    if (nt > count)
        nt = count;
    scan_pool pool = {.jobs = jobs, .count = count};
    pthread_mutex_init(&pool.lock, NULL);
    pthread_t th[16];
    size_t started = 0;
    for (; started + 1 < nt; started++)
        if (pthread_create(&th[started], NULL, scan_pool_worker, &pool) != 0)
            break;
    scan_pool_worker(&pool);
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&pool.lock);
}

static inline void *scan_xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "FATAL: out of host memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

#endif
