/*
 * The oracle of gs_scan with GS_SCAN_EXACT (exact_ref.h): each prefix is hostref_exact's
 * big integer, grown by one element at a time and rounded by hostref_exact_round, so a
 * prefix is never re-summed and never rounded twice. The carry-in enters that big integer
 * as exact doubles (its digits); only the `total` accumulator uses the library's
 * normalisation (internal/exact_format.h), being a format to match, not a value to round.
 */
#include <math.h>
#include <string.h>

#include "exact_format.h"
#include "exact_ref.h"
#include "hostref.h"

/* The carry-in's value as 72 digits: 68 limbs and the 4 more digits the carries of an
 * __int128 per-limb sum can reach (|sum| < 2^123 for fewer than 2^60 accumulators). */
#define CARRY_DIGITS (GS_EXACT_LIMBS + 4)

static int takes(gs_dtype in, gs_dtype out)
{
    switch (in) {
    case GS_FLOAT16:
    case GS_BFLOAT16: return out == in || out == GS_FLOAT32;
    case GS_FLOAT32: return out == in || out == GS_FLOAT64;
    case GS_FLOAT64: return out == in;
    default: return 0;
    }
}

/* a += d * 2^e (d < 2^32, d * 2^e a multiple of 2^-1074), negated when neg. Beyond
 * double's range the digit goes in at 2^(e - k) and is doubled k times by merging. */
static void add_digit(hostref_exact *a, uint32_t d, int e, int neg)
{
    const int k = e > 960 ? e - 960 : 0;
    hostref_exact t;
    hostref_exact_init(&t);
    hostref_exact_add(&t, (neg ? -1.0 : 1.0) * ldexp((double)d, e - k)); /* exact: 32 bits */
    for (int i = 0; i < k; i++) {
        const hostref_exact copy = t;
        hostref_exact_merge(&t, &copy);
    }
    hostref_exact_merge(a, &t);
}

/* The sum of the carry-in accumulators as a hostref_exact whose counts are 0 or 1 (each
 * member summed with int64 wrap, as the accumulators combine, then "> 0"). Returns -1 for
 * bits below 2^-1074 or a magnitude of 2^1120 or more. */
static int carry_value(const gs_exact_acc *c, uint64_t count, hostref_exact *a)
{
    __int128 s[GS_EXACT_LIMBS] = {0};
    uint64_t cnt[5] = {0};
    for (uint64_t k = 0; k < count; k++) {
        for (int i = 0; i < GS_EXACT_LIMBS; i++)
            s[i] += c[k].limb[i];
        const int64_t m[5] = {c[k].count, c[k].nan, c[k].pos_inf, c[k].neg_inf, c[k].sign_clear};
        for (int i = 0; i < 5; i++)
            cnt[i] += (uint64_t)m[i];
    }
    /* two's complement digits: the arithmetic shift floors, so each digit is in [0, 2^32)
     * and the final carry, 0 or -1, is the sign */
    uint32_t d[CARRY_DIGITS];
    __int128 carry = 0;
    for (int i = 0; i < CARRY_DIGITS; i++) {
        const __int128 t = (i < GS_EXACT_LIMBS ? s[i] : 0) + carry;
        d[i] = (uint32_t)(t & GS_EXACT_DIGIT_MASK);
        carry = t >> 32;
    }
    const int neg = carry < 0;
    if (neg) { /* the magnitude: -V = ~d + 1 over all the digits */
        uint64_t up = 1;
        for (int i = 0; i < CARRY_DIGITS; i++) {
            const uint64_t v = (uint64_t)(uint32_t)~d[i] + up;
            d[i] = (uint32_t)v;
            up = v >> 32;
        }
    }
    /* digit 0 is at 2^-1088: its low 14 bits lie below 2^-1074 (negation keeps them) */
    if (d[0] & ((1u << (-1074 - GS_EXACT_LOW_EXPONENT)) - 1u))
        return -1;
    for (int i = 69; i < CARRY_DIGITS; i++) /* digit 69 is at 2^(69 * 32 - 1088) = 2^1120 */
        if (d[i])
            return -1;
    hostref_exact_init(a);
    for (int i = 0; i < 69; i++)
        if (d[i])
            add_digit(a, d[i], GS_EXACT_LIMB_BITS * i + GS_EXACT_LOW_EXPONENT, neg);
    a->count = (int64_t)cnt[0] > 0;
    a->nan = (int64_t)cnt[1] > 0;
    a->pos_inf = (int64_t)cnt[2] > 0;
    a->neg_inf = (int64_t)cnt[3] > 0;
    a->sign_clear = (int64_t)cnt[4] > 0;
    return 0;
}

/* acc's limbs += x (finite, nonzero) as up to three 32-bit digits, each below 2^32. */
static void limbs_add(int64_t *l, double x)
{
    int e;
    const double f = frexp(fabs(x), &e);
    uint64_t m = (uint64_t)ldexp(f, 53); /* |x| = m 2^(e - 53) */
    int lsb = e - 53;
    if (lsb < -1074) { /* subnormal: m's low bits are zero */
        m >>= -1074 - lsb;
        lsb = -1074;
    }
    const int bit = lsb - GS_EXACT_LOW_EXPONENT; /* >= 14; <= 971 + 1088, so w + 2 <= 66 */
    const int w = bit / 32;
    const unsigned __int128 v = (unsigned __int128)m << (bit % 32); /* < 2^85 */
    for (int k = 0; k < 3; k++) {
        const int64_t digit = (int64_t)((v >> (32 * k)) & GS_EXACT_DIGIT_MASK);
        l[w + k] += x < 0 ? -digit : digit;
    }
}

int hostref_scan_exact(const void *in, uint64_t n, gs_dtype dtype, gs_dtype out_dtype, int exclusive,
                       const gs_exact_acc *carry_in, uint64_t carry_in_count, void *out, gs_exact_acc *total)
{
    if (!takes(dtype, out_dtype))
        return -1;
    hostref_exact run;
    if (carry_in && carry_in_count) {
        if (carry_value(carry_in, carry_in_count, &run))
            return -1;
    } else {
        hostref_exact_init(&run);
    }
    gs_exact_acc acc;
    memset(&acc, 0, sizeof acc);
    for (uint64_t i = 0; i < n; i++) {
        const double x = (double)hostref_load(dtype, in, i); /* exact for every float type */
        if (exclusive)
            hostref_store_bits(out_dtype, out, i, hostref_exact_round(&run, out_dtype));
        hostref_exact_add(&run, x);
        if (!exclusive)
            hostref_store_bits(out_dtype, out, i, hostref_exact_round(&run, out_dtype));
        if (!total)
            continue;
        if (!signbit(x)) /* a NaN's sign bit too, as gs_reduce_ex's accumulator reads it (gridsync.h) */
            acc.sign_clear = 1;
        if (isnan(x)) {
            acc.nan = 1;
            continue;
        }
        if (isinf(x))
            *(x > 0 ? &acc.pos_inf : &acc.neg_inf) = 1;
        else if (x != 0)
            limbs_add(acc.limb, x);
        /* each limb moves by less than 2^32 an element: normalised well before int64 ends */
        if ((i & ((1ull << 30) - 1)) == (1ull << 30) - 1)
            gs_exact_normalize(acc.limb);
    }
    if (total) {
        gs_exact_normalize(acc.limb); /* cannot fail: |limb 67| stays below 2^31 */
        acc.count = (int64_t)n;
        *total = acc;
    }
    return 0;
}
