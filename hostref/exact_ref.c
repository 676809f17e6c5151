/* hostref's exact sum (exact_ref.h): the oracle the library's exact sums are checked with. */
#include "exact_ref.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtype.h"
#include "hostref.h"

void hostref_exact_init(hostref_exact *a)
{
    memset(a, 0, sizeof *a);
}

/* mag += v * 2^bit (v < 2^64): a 128-bit shift over two or three words, carried to the top. */
static void add_at(uint64_t *mag, uint64_t v, int bit)
{
    int w = bit / 64;
    const unsigned __int128 shifted = (unsigned __int128)v << (bit % 64);
    uint64_t lo = (uint64_t)shifted, hi = (uint64_t)(shifted >> 64);
    unsigned __int128 t = (unsigned __int128)mag[w] + lo;
    mag[w] = (uint64_t)t;
    uint64_t carry = (uint64_t)(t >> 64);
    t = (unsigned __int128)mag[w + 1] + hi + carry;
    mag[w + 1] = (uint64_t)t;
    carry = (uint64_t)(t >> 64);
    for (w += 2; carry && w < HOSTREF_EXACT_WORDS; w++) {
        mag[w] += carry;
        carry = mag[w] == 0;
    }
}

void hostref_exact_add(hostref_exact *a, double x)
{
    a->count++;
    if (isnan(x)) {
        a->nan++;
        return;
    }
    if (!signbit(x))
        a->sign_clear = 1;
    if (isinf(x)) {
        if (x > 0)
            a->pos_inf++;
        else
            a->neg_inf++;
        return;
    }
    if (x == 0)
        return;
    int e;
    const double f = frexp(fabs(x), &e); /* |x| = f 2^e, f in [0.5, 1) */
    uint64_t m = (uint64_t)ldexp(f, 53);  /* |x| = m 2^(e - 53), exactly */
    int lsb = e - 53;
    if (lsb < -1074) { /* a subnormal: m's low bits are zero */
        m >>= -1074 - lsb;
        lsb = -1074;
    }
    add_at(x < 0 ? a->neg : a->pos, m, lsb + 1074);
}

void hostref_exact_add_array(hostref_exact *a, gs_dtype t, const void *data, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        hostref_exact_add(a, (double)hostref_load(t, data, i));
}

static void add_mag(uint64_t *dst, const uint64_t *src)
{
    uint64_t carry = 0;
    for (int w = 0; w < HOSTREF_EXACT_WORDS; w++) {
        const unsigned __int128 t = (unsigned __int128)dst[w] + src[w] + carry;
        dst[w] = (uint64_t)t;
        carry = (uint64_t)(t >> 64);
    }
}

void hostref_exact_merge(hostref_exact *a, const hostref_exact *b)
{
    add_mag(a->pos, b->pos);
    add_mag(a->neg, b->neg);
    a->count += b->count;
    a->nan += b->nan;
    a->pos_inf += b->pos_inf;
    a->neg_inf += b->neg_inf;
    a->sign_clear |= b->sign_clear;
}

static int cmp_mag(const uint64_t *x, const uint64_t *y)
{
    for (int w = HOSTREF_EXACT_WORDS - 1; w >= 0; w--)
        if (x[w] != y[w])
            return x[w] < y[w] ? -1 : 1;
    return 0;
}

/* Significand bits, least normal exponent and largest exponent of a float type. */
static void layout(gs_dtype out, int *p, int *emin, int *emax)
{
    *p = hostref_digits(out);
    *emax = out == GS_FLOAT64 ? 1023 : out == GS_FLOAT16 ? 15 : 127;
    *emin = 1 - *emax;
}

/* A value exactly representable in out, to its bits. */
static uint64_t to_bits(gs_dtype out, long double r)
{
    unsigned char buf[8];
    hostref_store(out, buf, 0, r);
    return hostref_load_bits(out, buf, 0);
}

uint64_t hostref_exact_round(const hostref_exact *a, gs_dtype out)
{
    if (a->nan || (a->pos_inf && a->neg_inf))
        return to_bits(out, (long double)NAN);
    if (a->pos_inf || a->neg_inf)
        return to_bits(out, a->pos_inf ? (long double)INFINITY : -(long double)INFINITY);
    uint64_t d[HOSTREF_EXACT_WORDS];
    const int c = cmp_mag(a->pos, a->neg);
    if (c == 0)
        return to_bits(out, a->count && !a->sign_clear ? -0.0L : 0.0L);
    const uint64_t *big = c > 0 ? a->pos : a->neg, *small = c > 0 ? a->neg : a->pos;
    uint64_t borrow = 0;
    for (int w = 0; w < HOSTREF_EXACT_WORDS; w++) {
        const unsigned __int128 t = (unsigned __int128)big[w] - small[w] - borrow;
        d[w] = (uint64_t)t;
        borrow = (uint64_t)(t >> 64) & 1u;
    }
    int top = HOSTREF_EXACT_WORDS - 1;
    while (d[top] == 0)
        top--;
    const int msb = 64 * top + 63 - __builtin_clzll(d[top]);
    /* The leading 64 bits, rounded to odd: any nonzero bit below them sets the last one.
     * A round to nearest of that at p <= 62 bits is the round to nearest of the exact value
     * (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved
     * algorithms using rounding to odd", 2008). */
    uint64_t hi;
    int shift = msb - 63; /* bit index of hi's lowest bit */
    if (shift <= 0) { /* the whole difference fits in one word: exact */
        hi = d[0];
        shift = 0;
    } else {
        const int w = shift / 64, s = shift % 64;
        hi = s ? d[w] >> s | d[w + 1] << (64 - s) : d[w];
        int sticky = s ? (d[w] & ((1ull << s) - 1)) != 0 : 0;
        for (int i = 0; i < w && !sticky; i++)
            sticky = d[i] != 0;
        hi |= (uint64_t)sticky;
    }
    long double x = ldexpl((long double)hi, shift - 1074); /* exact: 64 bits, wide exponent */
    int p, emin, emax;
    layout(out, &p, &emin, &emax);
    int e = ilogbl(x);
    if (e < emin)
        e = emin;
    /* rintl rounds half to even in the default rounding mode */
    long double r = ldexpl(rintl(ldexpl(x, p - 1 - e)), e - p + 1);
    const long double max = ldexpl(2.0L - ldexpl(1.0L, 1 - p), emax);
    if (r > max)
        r = INFINITY;
    return to_bits(out, c > 0 ? r : -r);
}

uint64_t hostref_exact_sum(gs_dtype t, const void *data, uint64_t n, gs_dtype out)
{
    hostref_exact a;
    hostref_exact_init(&a);
    hostref_exact_add_array(&a, t, data, n);
    return hostref_exact_round(&a, out);
}

static int is_nan_bits(gs_dtype out, uint64_t b)
{
    const int p = hostref_digits(out), bits = 8 * (int)gs_dtype_size(out);
    const uint64_t mag = b & (~0ull >> (65 - bits)); /* without the sign */
    const uint64_t inf = ((1ull << (bits - p)) - 1) << (p - 1);
    return mag > inf;
}

int hostref_exact_same(gs_dtype out, uint64_t a, uint64_t b)
{
    return a == b || (is_nan_bits(out, a) && is_nan_bits(out, b));
}

void hostref_exact_format(gs_dtype out, uint64_t bits, char *buf, unsigned len)
{
    unsigned char tmp[8];
    hostref_store_bits(out, tmp, 0, bits);
    snprintf(buf, len, "0x%0*llx (%.17Lg)", 2 * (int)gs_dtype_size(out), (unsigned long long)bits,
             hostref_load(out, tmp, 0));
}
