/* hostref: the reference reductions (docs/semantics.md) and the check of one result. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtype.h"
#include "hostref.h"

const hostref_tolerance hostref_rigorous = {1.0, 0.0, 0, 1};

static int is_arg(gs_op op) { return op == GS_OP_ARGMIN || op == GS_OP_ARGMAX; }
static int is_signed_int(gs_dtype t) { return t == GS_INT8 || t == GS_INT32 || t == GS_INT64; }

static uint64_t width_mask(gs_dtype t)
{
    const size_t size = gs_dtype_size(t);
    return size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
}

/* Raw bits of t (zero-extended) as a 64-bit value: sign-extended for signed types, so
 * sums and products into a wider output are right and MIN/MAX compare as signed. */
static uint64_t widen(gs_dtype t, uint64_t b)
{
    const unsigned bits = 8 * (unsigned)gs_dtype_size(t);
    if (is_signed_int(t) && bits < 64 && (b >> (bits - 1)) & 1)
        return b | ~0ull << bits;
    return b;
}

static int int_less(gs_dtype t, uint64_t a, uint64_t b)
{
    return is_signed_int(t) ? (int64_t)a < (int64_t)b : a < b;
}

/* One step of an integer op on widened values. */
static uint64_t int_combine(gs_dtype t, gs_op op, uint64_t acc, uint64_t x)
{
    switch (op) {
    case GS_OP_SUM: return acc + x; /* modulo 2^64; masking to the output is the wrap */
    case GS_OP_PROD: return acc * x;
    case GS_OP_MIN: return int_less(t, x, acc) ? x : acc;
    case GS_OP_MAX: return int_less(t, acc, x) ? x : acc;
    case GS_OP_BIT_AND: return acc & x;
    case GS_OP_BIT_OR: return acc | x;
    default: return acc ^ x;
    }
}

static uint64_t int_identity(gs_dtype t, gs_op op)
{
    const uint64_t mask = width_mask(t);
    switch (op) {
    case GS_OP_PROD: return 1;
    case GS_OP_MIN: return is_signed_int(t) ? mask >> 1 : mask;
    case GS_OP_MAX: return is_signed_int(t) ? ~(mask >> 1) : 0;
    case GS_OP_BIT_AND: return ~0ull;
    default: return 0;
    }
}

/* Whether x beats the best so far for ARGMIN/ARGMAX: strictly (ties keep the first), and a
 * NaN beats any number (the first NaN wins, and nothing beats it). */
static int arg_better(gs_op op, long double x, long double best)
{
    if (best != best)
        return 0;
    if (x != x)
        return 1;
    return op == GS_OP_ARGMAX ? x > best : x < best;
}

/* The exponent of the lowest set bit of a finite nonzero x: x is an odd multiple of 2^q.
 * Elements come from types with at most 64 significand bits, so m * 2^64 is an integer. */
static int low_bit_exponent(long double x)
{
    int e;
    uint64_t m = (uint64_t)ldexpl(frexpl(fabsl(x), &e), 64);
    int q = e - 64;
    while (!(m & 1)) {
        m >>= 1;
        q++;
    }
    return q;
}

void hostref_reduce(hostref_ref *r, gs_dtype in, gs_op op, gs_dtype out, const void *data, uint64_t n)
{
    memset(r, 0, sizeof *r);
    r->in = in;
    r->out = out;
    r->op = op;
    r->n = n;
    r->index = -1;
    r->low_bit = INT32_MAX;
    r->finite = 1;
    if (is_arg(op)) {
        for (uint64_t i = 0; i < n && r->index_value == r->index_value; i++) {
            const long double x = hostref_load(in, data, i);
            if (r->index < 0 || arg_better(op, x, r->index_value)) {
                r->index = (int64_t)i;
                r->index_value = x;
            }
        }
        return;
    }
    if (!gs_dtype_is_float(in)) {
        uint64_t acc = int_identity(in, op);
        for (uint64_t i = 0; i < n; i++)
            acc = int_combine(in, op, acc, widen(in, hostref_load_bits(in, data, i)));
        r->bits = acc & width_mask(out);
        return;
    }
    switch (op) {
    case GS_OP_SUM: {
        long double comp = 0;
        for (uint64_t i = 0; i < n; i++) {
            const long double x = hostref_load(in, data, i);
            const long double y = x - comp, s = r->value + y;
            comp = (s - r->value) - y;
            r->value = s;
            r->abs_sum += fabsl(x);
            if (!isfinite(x))
                r->finite = 0;
            else if (x != 0) {
                const int q = low_bit_exponent(x);
                r->low_bit = q < r->low_bit ? q : r->low_bit;
            }
        }
        if (!r->finite) { /* Kahan's compensation turns inf - inf into NaN: add plainly */
            r->value = 0;
            for (uint64_t i = 0; i < n; i++)
                r->value += hostref_load(in, data, i);
        }
        break;
    }
    case GS_OP_PROD:
        r->value = 1;
        for (uint64_t i = 0; i < n; i++) {
            const long double x = hostref_load(in, data, i);
            r->finite &= isfinite(x) != 0;
            r->value *= x;
        }
        break;
    case GS_OP_MIN:
    case GS_OP_MAX:
        r->value = op == GS_OP_MIN ? INFINITY : -INFINITY;
        for (uint64_t i = 0; i < n; i++) {
            const long double x = hostref_load(in, data, i);
            r->finite &= isfinite(x) != 0;
            if (x != x || r->value != r->value)
                r->value = x != x ? x : r->value; /* NaN propagates */
            else if (op == GS_OP_MIN ? x < r->value : x > r->value)
                r->value = x;
        }
        break;
    default: /* bitwise ops over floats: not defined; hostref_check says so */
        break;
    }
}

void hostref_merge(hostref_ref *acc, const hostref_ref *next)
{
    if (is_arg(acc->op)) {
        if (next->index >= 0 && (acc->index < 0 || arg_better(acc->op, next->index_value, acc->index_value))) {
            acc->index = next->index + (int64_t)acc->n;
            acc->index_value = next->index_value;
        }
    } else if (!gs_dtype_is_float(acc->in)) {
        /* MIN/MAX keep the input type, so out's bits widen like the input's */
        acc->bits = int_combine(acc->in, acc->op, widen(acc->out, acc->bits), widen(acc->out, next->bits)) &
                    width_mask(acc->out);
    } else {
        switch (acc->op) {
        case GS_OP_SUM: acc->value += next->value; break;
        case GS_OP_PROD: acc->value *= next->value; break;
        case GS_OP_MIN:
        case GS_OP_MAX:
            if (next->value != next->value || acc->value != acc->value)
                acc->value = acc->value != acc->value ? acc->value : next->value;
            else if (acc->op == GS_OP_MIN ? next->value < acc->value : next->value > acc->value)
                acc->value = next->value;
            break;
        default: break;
        }
        acc->abs_sum += next->abs_sum;
        acc->low_bit = next->low_bit < acc->low_bit ? next->low_bit : acc->low_bit;
        acc->finite &= next->finite;
    }
    acc->n += next->n;
}

/* ---- checking ------------------------------------------------------------------------ */

static long double eps_of(gs_dtype t)
{
    return ldexpl(1.0L, 1 - hostref_digits(t));
}

/* Half the smallest subnormal of a float type: the rounding error of a result near 0. */
static long double half_tiny(gs_dtype t)
{
    switch (t) {
    case GS_FLOAT16: return 0x1p-25L;
    case GS_BFLOAT16: return 0x1p-134L;
    case GS_FLOAT32: return 0x1p-150L;
    default: return 0x1p-1075L;
    }
}

/* The final rounding's allowance on top of an accumulation error `err`. */
static long double final_rounding(const hostref_ref *r, const hostref_tolerance *tol, long double err)
{
    if (tol->final_eps)
        return eps_of(r->out) * fabsl(r->value);
    if (hostref_digits(r->out) >= hostref_digits(hostref_accumulator(r->in, r->out)))
        return 0;
    return ldexpl(1.0L, -hostref_digits(r->out)) * (fabsl(r->value) + err) + half_tiny(r->out);
}

static long double scale_of(const hostref_ref *r)
{
    return r->op == GS_OP_SUM ? r->abs_sum : fabsl(r->value);
}

long double hostref_bound(const hostref_ref *r, const hostref_tolerance *tol)
{
    const gs_dtype acc = hostref_accumulator(r->in, r->out);
    const long double err = ((long double)tol->per_n * (long double)r->n + tol->fixed) * eps_of(acc) * scale_of(r);
    return err + final_rounding(r, tol, err);
}

static void format_bits(gs_dtype t, gs_op op, uint64_t bits, char *buf, size_t len)
{
    const long double v = is_signed_int(t) ? (long double)(int64_t)widen(t, bits) : (long double)bits;
    hostref_format(t, op, v, buf, len);
}

static void describe_index(const hostref_ref *r, const void *data, int64_t idx, long double value, char *buf,
                           size_t len)
{
    char val[40];
    if (idx >= 0 && (uint64_t)idx < r->n && (data || idx == r->index)) {
        hostref_format(r->in, GS_OP_MIN, data ? hostref_load(r->in, data, (uint64_t)idx) : value, val, sizeof val);
        snprintf(buf, len, "index %" PRId64 " (value %s)", idx, val);
    } else {
        snprintf(buf, len, "index %" PRId64 "%s", idx, idx == -1 ? " (none)" : idx < 0 || (uint64_t)idx >= r->n ? " (out of range)" : "");
    }
}

static void check_float_sum_prod(const hostref_ref *r, long double got, const hostref_tolerance *tol, hostref_verdict *v)
{
    const long double ref = r->value, rounded = hostref_round_to(r->out, ref);
    if (!r->finite || !isfinite(ref)) {
        v->ok = ref != ref ? got != got : got == ref;
        snprintf(v->note, sizeof v->note, "non-finite input: exact");
        return;
    }
    if (isinf(rounded)) { /* the exact value is beyond the output type's range */
        v->ok = got == rounded;
        hostref_format(r->out, r->op, rounded, v->want, sizeof v->want);
        snprintf(v->note, sizeof v->note, "exact: %Lg rounds to infinity in %s", ref, gs_dtype_name(r->out));
        return;
    }
    const gs_dtype acc = hostref_accumulator(r->in, r->out);
    const int p = hostref_digits(acc), rounds_at_end = hostref_digits(r->out) < p;
    if (tol->exact_when_provable && r->op == GS_OP_SUM &&
        (r->low_bit == INT32_MAX || r->abs_sum <= ldexpl(1.0L, p + r->low_bit))) {
        /* Every element is a multiple of 2^q, so is every partial sum, in any order, and
         * none exceeds sum|x| <= 2^(p+q): all of them are exact in the accumulator. */
        v->ok = got == rounded;
        hostref_format(r->out, r->op, rounded, v->want, sizeof v->want);
        if (r->low_bit == INT32_MAX)
            snprintf(v->note, sizeof v->note, "exact (%s)", r->n ? "all zeros" : "n = 0: the identity");
        else
            snprintf(v->note, sizeof v->note, "exact (elements are multiples of 2^%d and sum|x| <= 2^%d: no rounding%s)",
                     (int)r->low_bit, p + (int)r->low_bit, rounds_at_end ? " but the final one" : "");
        return;
    }
    const long double bound = hostref_bound(r, tol);
    /* Higham and Mary's probabilistic bound (SIAM J. Sci. Comput. 41(5), 2019) with
     * lambda = 8: rounding errors that behave like independent random variables exceed it
     * with probability below 2n exp(-32) (< 1e-7 for n < 2^23). */
    const long double u = ldexpl(1.0L, -p), n = (long double)r->n;
    long double likely = expm1l(8 * sqrtl(n) * u + n * u * u / (1 - u)) * scale_of(r);
    likely += final_rounding(r, tol, likely);
    const long double diff = fabsl(got - ref);
    v->ok = isfinite(got) && diff <= bound;
    v->suspicious = v->ok && diff > likely;
    char acc_term[64];
    if (tol->per_n != 0)
        snprintf(acc_term, sizeof acc_term, "%sn*eps*%s", tol->per_n != 1 || tol->fixed != 0 ? "~" : "",
                 r->op == GS_OP_SUM ? "sum|x|" : "|prod|");
    else
        snprintf(acc_term, sizeof acc_term, "%g*eps*%s", tol->fixed, r->op == GS_OP_SUM ? "sum|x|" : "|prod|");
    snprintf(v->note, sizeof v->note, "|diff| %.3Lg %s bound %.3Lg = %s%s; likely |diff| <= %.3Lg", diff,
             v->ok ? "<=" : ">", bound, acc_term,
             tol->final_eps ? " + eps(out)*|exact|" : rounds_at_end ? " + final rounding" : "", likely);
}

int hostref_check(const hostref_ref *r, const void *data, const void *got, const hostref_tolerance *tol,
                  hostref_verdict *v)
{
    memset(v, 0, sizeof *v);
    if (is_arg(r->op)) {
        int64_t idx;
        memcpy(&idx, got, 8);
        v->ok = idx == r->index;
        describe_index(r, data, idx, r->index_value, v->got, sizeof v->got);
        describe_index(r, NULL, r->index, r->index_value, v->want, sizeof v->want);
        snprintf(v->note, sizeof v->note, "exact (first %s%s)", r->op == GS_OP_ARGMAX ? "maximum" : "minimum",
                 gs_dtype_is_float(r->in) ? ", or first NaN" : "");
        return v->ok;
    }
    if (!gs_dtype_is_float(r->in)) {
        const uint64_t g = hostref_load_bits(r->out, got, 0);
        v->ok = g == r->bits;
        format_bits(r->out, r->op, g, v->got, sizeof v->got);
        format_bits(r->out, r->op, r->bits, v->want, sizeof v->want);
        if (r->op == GS_OP_SUM || r->op == GS_OP_PROD)
            snprintf(v->note, sizeof v->note, "exact (two's complement, wrapping at %u bits)",
                     8 * (unsigned)gs_dtype_size(r->out));
        else
            snprintf(v->note, sizeof v->note, "exact");
        return v->ok;
    }
    if (!gs_op_defined(r->in, r->op)) {
        snprintf(v->want, sizeof v->want, "GS_ERROR_UNSUPPORTED");
        snprintf(v->note, sizeof v->note, "bitwise operations are not defined for floating-point types");
        return 0;
    }
    const long double g = hostref_load(r->out, got, 0);
    hostref_format(r->out, r->op, g, v->got, sizeof v->got);
    hostref_format(r->out, r->op, r->value, v->want, sizeof v->want);
    if (r->op == GS_OP_MIN || r->op == GS_OP_MAX) {
        v->ok = r->value != r->value ? g != g : g == r->value;
        snprintf(v->note, sizeof v->note, "exact (NaN propagates)");
        return v->ok;
    }
    check_float_sum_prod(r, g, tol, v);
    return v->ok;
}
