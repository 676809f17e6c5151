/* The gridsync command's inputs: random data chosen per operation so the reference means
 * something. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include <math.h>

/* ======================================================================================
 * Random numbers: splitmix64 (hostref_rand), one global stream, reseeded for every input.
 * ====================================================================================== */

static uint64_t g_rng;

static uint64_t rnd(void)
{
    return hostref_rand(&g_rng);
}

/* Uniform in [0, m), m >= 1 (the modulo bias is below 2^-40 for the m used here). */
static uint64_t rnd_below(uint64_t m)
{
    return rnd() % m;
}

static double rnd_unit(void)
{
    return hostref_rand_unit(&g_rng);
}

/* ======================================================================================
 * Inputs. make_input() fills `offset` elements of random bits (where the reduction must
 * never look: a kernel that reads before its input spoils its result) and then n elements
 * chosen for the operation, so that the reference means something:
 *
 *  SUM   integers: uniform in [-R, R] (unsigned [0, 2R]), R = 100 (8-bit), 1000 (32-bit),
 *        2^40 (64-bit): no 32/64-bit wrap for n < 2^21 (8-bit sums wrap: exact anyway);
 *        floats: mixed sign, magnitudes 2^-10 .. 2^10 (float16: scaled down as n grows so
 *        the sum stays far from 65504);
 *  PROD  integers: odd values in [-15, 15] (unsigned [1, 31]): products of odd numbers
 *        never collapse to 0 mod 2^w, so every element counts; floats: random sign and
 *        |x| = 2^u, u uniform in [-s, s], s = 1/4 (s = 16 / sqrt(n) for n > 4096), steered
 *        so the log2 of every prefix product stays within +-(4 + s): the whole product
 *        fits float16, and the partial products of whatever grouping the library uses
 *        wander like a random walk of about 16 / sqrt(3) in log2 (float32 holds +-126);
 *  MIN, MAX, ARGMIN, ARGMAX: elements drawn from a palette of about n/4 (at most 1024)
 *        random values (integers: full width, floats: as for SUM), so the extreme occurs
 *        several times and "first occurrence" is tested;
 *  OR    about 1 set bit event per bit position, spread over the elements (so about 2/3
 *        of the bits end up set, each from one or two elements); AND the complement;
 *  XOR   random bits.
 * Variants (--data): DATA_INT, float SUM over integers in [-8, 8] (exact while
 * 8n < 2^24: a dropped or doubled element shows at any size); DATA_NAN, float
 * MIN/MAX/ARGMIN/ARGMAX with one or two quiet NaNs inserted at random places; DATA_WIDE,
 * float SUM over both signs and the type's whole finite exponent range, subnormals
 * included, where only an exact sum keeps every bit (for --exact).
 * ====================================================================================== */

const char *const k_data_names[] = {"default", "int", "nan", "wide"};

static int ceil_log2(uint64_t n)
{
    int k = 0;
    while (k < 64 && (1ull << k) < n)
        k++;
    return k;
}

/* Exponent range of float SUM (and palette) data. */
static void float_exponents(const dtype_info *t, uint64_t n, int *kmin, int *kmax)
{
    if (t->id == GS_FLOAT16) {
        /* random-walk sum ~ sqrt(n) * 2^kmax / 2: keep it below about 2^13 */
        int k = 14 - ceil_log2(n ? n : 1) / 2;
        *kmax = k < 4 ? k : 4;
        *kmin = *kmax - 12;
    } else {
        *kmin = -10;
        *kmax = 10;
    }
}

static long double rnd_float_mixed(int kmin, int kmax)
{
    return (long double)rnd_unit() * ldexpl(1.0L, kmin + (int)rnd_below((uint64_t)(kmax - kmin + 1)));
}

static uint64_t palette_size(uint64_t n)
{
    uint64_t p = n / 4;
    return p < 2 ? 2 : p > 1024 ? 1024 : p;
}

static void fill_float(const dtype_info *t, gs_op op, data_kind kind, void *p, uint64_t n)
{
    int kmin, kmax;
    float_exponents(t, n, &kmin, &kmax);
    if (kind == DATA_INT) {
        for (uint64_t i = 0; i < n; i++)
            hostref_store(t->id, p, i, (long double)((int)rnd_below(17) - 8));
        return;
    }
    if (kind == DATA_WIDE) {
        /* exponents from the smallest subnormal's to the largest finite value's, uniformly */
        const int lo = t->id == GS_FLOAT64 ? -1074 : t->id == GS_FLOAT16 ? -24 : t->id == GS_BFLOAT16 ? -133 : -149;
        const int hi = t->id == GS_FLOAT64 ? 1023 : t->id == GS_FLOAT16 ? 15 : 127;
        for (uint64_t i = 0; i < n; i++)
            hostref_store(t->id, p, i, rnd_float_mixed(lo, hi));
        return;
    }
    if (op == GS_OP_PROD) {
        /* the step bounds how far the partial products of any grouping wander (sqrt(n) * step) */
        const double step = n > 4096 ? 16.0 / sqrt((double)n) : 0.25;
        long double log2_prefix = 0;
        for (uint64_t i = 0; i < n; i++) {
            double u = step * rnd_unit();
            if (log2_prefix > 4)
                u = -fabs(u);
            else if (log2_prefix < -4)
                u = fabs(u);
            long double v = exp2l(u) * ((rnd() & 1) ? -1 : 1);
            hostref_store(t->id, p, i, v);
            log2_prefix += log2l(fabsl(hostref_load(t->id, p, i)));
        }
        return;
    }
    if (op == GS_OP_MIN || op == GS_OP_MAX || is_arg_op(op)) {
        long double palette[1024];
        const uint64_t np = palette_size(n);
        for (uint64_t k = 0; k < np; k++)
            palette[k] = rnd_float_mixed(kmin, kmax);
        for (uint64_t i = 0; i < n; i++)
            hostref_store(t->id, p, i, palette[rnd_below(np)]);
        if (kind == DATA_NAN && n > 0) {
            uint64_t first = rnd_below(n);
            hostref_store(t->id, p, first, (long double)NAN);
            if (n - first > 1)
                hostref_store(t->id, p, first + 1 + rnd_below(n - first - 1), (long double)NAN);
        }
        return;
    }
    for (uint64_t i = 0; i < n; i++) /* SUM (and the bitwise ops, which floats do not have) */
        hostref_store(t->id, p, i, rnd_float_mixed(kmin, kmax));
}

static void fill_int(const dtype_info *t, gs_op op, void *p, uint64_t n)
{
    const int sgn = t->kind == K_SIGNED;
    switch (op) {
    case GS_OP_SUM: {
        const uint64_t r = t->sum_range;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t v = rnd_below(2 * r + 1);
            hostref_store_bits(t->id, p, i, sgn ? v - r : v);
        }
        break;
    }
    case GS_OP_PROD:
        for (uint64_t i = 0; i < n; i++) {
            uint64_t v = 2 * rnd_below(16);
            hostref_store_bits(t->id, p, i, sgn ? v - 15 : v + 1);
        }
        break;
    case GS_OP_BIT_AND:
    case GS_OP_BIT_OR:
        memset(p, 0, (size_t)(n * gs_dtype_size(t->id)));
        if (n) {
            for (unsigned b = 0; b < 8 * gs_dtype_size(t->id); b++)
                for (uint64_t events = rnd_below(3); events > 0; events--) {
                    uint64_t i = rnd_below(n);
                    hostref_store_bits(t->id, p, i, hostref_load_bits(t->id, p, i) | (1ull << b));
                }
        }
        if (op == GS_OP_BIT_AND)
            for (uint64_t i = 0; i < n; i++)
                hostref_store_bits(t->id, p, i, ~hostref_load_bits(t->id, p, i));
        break;
    case GS_OP_BIT_XOR:
        for (uint64_t i = 0; i < n; i++)
            hostref_store_bits(t->id, p, i, rnd());
        break;
    default: { /* MIN, MAX, ARGMIN, ARGMAX */
        uint64_t palette[1024];
        const uint64_t np = palette_size(n);
        for (uint64_t k = 0; k < np; k++)
            palette[k] = rnd();
        for (uint64_t i = 0; i < n; i++)
            hostref_store_bits(t->id, p, i, palette[rnd_below(np)]);
        break;
    }
    }
}

/* `buf` holds offset + n elements; the reduction's input starts at element `offset`. */
void make_input(const dtype_info *t, gs_op op, data_kind kind, void *buf, uint64_t offset, uint64_t n,
                       uint64_t seed)
{
    g_rng = seed;
    unsigned char *b = buf;
    for (uint64_t i = 0; i < offset * gs_dtype_size(t->id); i++)
        b[i] = (unsigned char)rnd();
    void *p = b + offset * gs_dtype_size(t->id);
    if (t->kind == K_FLOAT)
        fill_float(t, op, kind, p, n);
    else
        fill_int(t, op, p, n);
}

