/* hostref: element types on the host (conversions, loads, stores, printing) and the
 * random numbers the checking programs draw their data from. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtype.h"
#include "hostref.h"

static float bits_to_float(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static uint32_t float_to_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

float hostref_half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0) { /* zero or subnormal: man * 2^-24, exact in float */
        float f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    if (exp == 31) /* infinity or NaN (payload kept in the top bits) */
        return bits_to_float(sign | 0x7f800000u | (man << 13));
    return bits_to_float(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t hostref_float_to_half(float f)
{
    uint32_t x = float_to_bits(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    x &= 0x7fffffffu;
    if (x > 0x7f800000u) /* NaN: a quiet one */
        return (uint16_t)(sign | 0x7e00u);
    if (x >= 0x477ff000u) /* >= 65520 (halfway between 65504 and 2^16) rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (x < 0x38800000u) { /* below 2^-14: a subnormal half (or zero, or 2^-14 itself) */
        /* |f| * 2^24 < 2^10 is exact; rintf rounds to nearest even (the default mode). */
        float units = rintf(ldexpf(bits_to_float(x), 24));
        return (uint16_t)(sign | (uint16_t)units);
    }
    uint32_t h = ((x >> 23) - 112u) << 10 | ((x & 0x7fffffu) >> 13);
    const uint32_t rest = x & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is the right answer, up to infinity */
    return (uint16_t)(sign | h);
}

float hostref_bf16_to_float(uint16_t b)
{
    return bits_to_float((uint32_t)b << 16);
}

uint16_t hostref_float_to_bf16(float f)
{
    uint32_t x = float_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* NaN stays NaN (quiet) */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static int is_signed_int(gs_dtype t)
{
    return t == GS_INT8 || t == GS_INT32 || t == GS_INT64;
}

uint64_t hostref_load_bits(gs_dtype t, const void *p, uint64_t i)
{
    const size_t size = gs_dtype_size(t);
    const unsigned char *q = (const unsigned char *)p + i * size;
    switch (size) {
    case 1: return *q;
    case 2: { uint16_t v; memcpy(&v, q, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, q, 4); return v; }
    default: { uint64_t v; memcpy(&v, q, 8); return v; }
    }
}

void hostref_store_bits(gs_dtype t, void *p, uint64_t i, uint64_t v)
{
    const size_t size = gs_dtype_size(t);
    unsigned char *q = (unsigned char *)p + i * size;
    switch (size) {
    case 1: *q = (unsigned char)v; break;
    case 2: { uint16_t w = (uint16_t)v; memcpy(q, &w, 2); break; }
    case 4: { uint32_t w = (uint32_t)v; memcpy(q, &w, 4); break; }
    default: memcpy(q, &v, 8); break;
    }
}

long double hostref_load(gs_dtype t, const void *p, uint64_t i)
{
    const uint64_t b = hostref_load_bits(t, p, i);
    switch (t) {
    case GS_FLOAT32: return bits_to_float((uint32_t)b);
    case GS_FLOAT64: { double d; memcpy(&d, &b, 8); return d; }
    case GS_FLOAT16: return hostref_half_to_float((uint16_t)b);
    case GS_BFLOAT16: return hostref_bf16_to_float((uint16_t)b);
    default: break;
    }
    const unsigned bits = 8 * (unsigned)gs_dtype_size(t);
    if (is_signed_int(t) && bits < 64 && (b >> (bits - 1)) & 1)
        return (long double)(int64_t)(b | ~0ull << bits);
    return is_signed_int(t) ? (long double)(int64_t)b : (long double)b;
}

void hostref_store(gs_dtype t, void *p, uint64_t i, long double v)
{
    uint64_t b;
    switch (t) {
    case GS_FLOAT32: b = float_to_bits((float)v); break;
    case GS_FLOAT64: { double d = (double)v; memcpy(&b, &d, 8); break; }
    /* two roundings (to float, then to 16 bits): fine for data, which is what it is */
    case GS_FLOAT16: b = hostref_float_to_half((float)v); break;
    case GS_BFLOAT16: b = hostref_float_to_bf16((float)v); break;
    default: b = v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v; break;
    }
    hostref_store_bits(t, p, i, b);
}

long double hostref_round_to(gs_dtype t, long double v)
{
    switch (t) {
    case GS_FLOAT16: return hostref_half_to_float(hostref_float_to_half((float)v));
    case GS_BFLOAT16: return hostref_bf16_to_float(hostref_float_to_bf16((float)v));
    case GS_FLOAT32: return (float)v;
    case GS_FLOAT64: return (double)v;
    default: return v;
    }
}

int hostref_digits(gs_dtype t)
{
    switch (t) {
    case GS_FLOAT32: return 24;
    case GS_FLOAT64: return 53;
    case GS_FLOAT16: return 11;
    case GS_BFLOAT16: return 8;
    default: return 0;
    }
}

gs_dtype hostref_accumulator(gs_dtype in, gs_dtype out)
{
    if (out == GS_FLOAT64)
        return GS_FLOAT64;
    return in == GS_FLOAT16 || in == GS_BFLOAT16 ? GS_FLOAT32 : in;
}

gs_dtype hostref_default_out(gs_dtype in, gs_op op)
{
    return gs_default_out(in, op);
}

void hostref_format(gs_dtype t, gs_op op, long double v, char *buf, size_t len)
{
    if (gs_dtype_is_float(t)) {
        /* significant digits that tell every value of the type apart */
        const int digits = t == GS_FLOAT64 ? 17 : t == GS_FLOAT32 ? 9 : t == GS_FLOAT16 ? 5 : 4;
        snprintf(buf, len, "%.*Lg", digits, v);
        return;
    }
    const size_t size = gs_dtype_size(t);
    const uint64_t mask = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
    if (op == GS_OP_BIT_AND || op == GS_OP_BIT_OR || op == GS_OP_BIT_XOR)
        snprintf(buf, len, "0x%0*" PRIx64, (int)(size * 2), (v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v) & mask);
    else if (is_signed_int(t))
        snprintf(buf, len, "%" PRId64, (int64_t)v);
    else
        snprintf(buf, len, "%" PRIu64, (uint64_t)v);
}

uint64_t hostref_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t hostref_rand(uint64_t *state)
{
    return hostref_mix64(*state += 0x9e3779b97f4a7c15ull);
}

double hostref_rand_unit(uint64_t *state)
{
    return (double)(hostref_rand(state) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}
