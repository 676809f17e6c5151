/*
 * The exact scan's fixed point (backends/common/exact/fixed.cuh) on the CPU: the header's own
 * code, built by the host's C++ compiler. A scan runs as the device runs it, each element
 * lifted at the anchor (the lowest bit of any element, as the plan picks it), the values
 * added, each prefix rounded by fx_round into every output type; hostref's exact sum
 * (exact_ref.c, a big integer of another design) rounds the same prefixes. Data: ordinary
 * values, wide exponent ranges with cancellation, subnormals, signed zeros, infinities,
 * NaN, overflow of the output range, sums that land on ties, ties whose sticky bit lies
 * below the top 64 of 128 bits; every width (4, 10, 72 words) that holds the data's
 * prefixes. Prints one line per case; exit status 1 on any mismatch.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

extern "C" {
#include "exact_ref.h"
#include "hostref.h"
}

#include "dtype.h"
#include "exact/fixed.cuh"

using namespace gs;

static int g_fail;

/* An element's bits, its format's fields and its value as a double. */
struct Elem {
    uint64_t bits;
    double v;
};

static Elem elem_of(gs_dtype t, double x)
{
    Elem e;
    e.v = x;
    if (t == GS_FLOAT64) {
        memcpy(&e.bits, &x, 8);
    } else if (t == GS_FLOAT32) {
        float f = (float)x;
        uint32_t b;
        memcpy(&b, &f, 4);
        e.bits = b;
        e.v = f;
    } else if (t == GS_FLOAT16) {
        e.bits = hostref_float_to_half((float)x);
        e.v = hostref_half_to_float((uint16_t)e.bits);
    } else {
        e.bits = hostref_float_to_bf16((float)x);
        e.v = hostref_bf16_to_float((uint16_t)e.bits);
    }
    return e;
}

template <typename F> static bool lowest_field(const Elem *x, int n, uint32_t *min_f, uint32_t *max_f = nullptr)
{
    bool any = false;
    *min_f = ~0u;
    uint32_t top = 0;
    for (int i = 0; i < n; i++) {
        const uint32_t f = (uint32_t)(x[i].bits >> F::kMant) & F::kExpMax;
        const bool nz = (x[i].bits & ((1ull << F::kSignBit) - 1u)) != 0;
        if (nz && f != F::kExpMax) {
            const uint32_t g = f ? f : 1u;
            *min_f = g < *min_f ? g : *min_f;
            top = g > top ? g : top;
            any = true;
        }
    }
    if (max_f)
        *max_f = top;
    return any;
}

/* The words the scan's plan (agent/scan_exact.cuh) asks for these elements: every prefix
 * below n 2^(emax + 1) in magnitude, from the lowest bit up, and a sign bit. */
template <typename F> static int words_needed(const Elem *x, int n)
{
    uint32_t lo_f, hi_f;
    if (!lowest_field<F>(x, n, &lo_f, &hi_f))
        return 1;
    int L = 0;
    while ((1ll << L) < n)
        L++;
    const int bits = (int)hi_f - F::kBias + 1 + L + 2 - fx_lsb_of_field<F>(lo_f);
    return (bits + 31) / 32;
}

/* One scan of x into out at width W; returns whether every prefix matched. */
template <int W, typename F> static bool run(const char *what, gs_dtype in, gs_dtype out, const Elem *x, int n)
{
    if (words_needed<F>(x, n) > W) {
        printf("%-44s %s -> %s, W %2d: too narrow for these elements, not run\n", what, gs_dtype_name(in),
               gs_dtype_name(out), W);
        return true;
    }
    uint32_t min_f;
    const int a = lowest_field<F>(x, n, &min_f) ? fx_lsb_of_field<F>(min_f) : 0;
    Fx<W> run = fx_zero<W>();
    hostref_exact ref;
    hostref_exact_init(&ref);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        run = fx_add<W>(run, fx_lift<W, F>(x[i].bits, a));
        hostref_exact_add(&ref, x[i].v);
        const uint64_t got = fx_round<W>(run, a, out), want = hostref_exact_round(&ref, out);
        if (got != want && bad++ < 3)
            printf("  %s: prefix %d: 0x%llx, want 0x%llx\n", what, i, (unsigned long long)got,
                   (unsigned long long)want);
    }
    printf("%-44s %s -> %s, W %2d: %d prefixes, %d wrong\n", what, gs_dtype_name(in), gs_dtype_name(out), W, n, bad);
    g_fail |= bad != 0;
    return bad == 0;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

/* n values: kind 0 normal, 1 over `spread` binades with cancellation, 2 specials mixed in,
 * 3 normal with one in 64 scaled down (4 words, the upper two in use). */
static void make(gs_dtype t, int kind, double spread, double scale, Elem *x, int n)
{
    const int in_type_scale = t == GS_FLOAT64 ? -8 : -30;
    for (int i = 0; i < n; i++) {
        const double u = hostref_rand_unit(&g_rng), w = hostref_rand_unit(&g_rng);
        double v = scale * (u + w) * 0.7;
        if (kind == 1 || kind == 2)
            v = scale * u * exp2(spread * w);
        if (kind == 1 && i > n / 2 && hostref_rand(&g_rng) % 3 == 0)
            v = -x[hostref_rand(&g_rng) % (uint64_t)(n / 2)].v; /* cancels an earlier one */
        if (kind == 3 && hostref_rand(&g_rng) % 64 == 0)
            v = ldexp(v, in_type_scale);
        if (kind == 2) {
            const uint64_t r = hostref_rand(&g_rng) % 40;
            v = r == 0 ? -0.0 : r == 1 ? 0.0 : r == 2 ? INFINITY : r == 3 ? -INFINITY : r == 4 ? NAN : v;
        }
        x[i] = elem_of(t, v);
    }
}

/* Every width that holds the elements' prefixes, which the plan may pick (the narrowest) or
 * a wider one stands in for. */
template <typename F> static void widths(const char *what, gs_dtype in, gs_dtype out, const Elem *x, int n)
{
    run<4, F>(what, in, out, x, n);
    run<10, F>(what, in, out, x, n);
    run<72, F>(what, in, out, x, n);
}

int main(void)
{
    enum { N = 3000 };
    static Elem x[N];
    struct {
        gs_dtype in, out;
    } pairs[] = {{GS_FLOAT16, GS_FLOAT16}, {GS_FLOAT16, GS_FLOAT32}, {GS_BFLOAT16, GS_BFLOAT16},
                 {GS_BFLOAT16, GS_FLOAT32}, {GS_FLOAT32, GS_FLOAT32}, {GS_FLOAT32, GS_FLOAT64},
                 {GS_FLOAT64, GS_FLOAT64}};
    for (auto p : pairs) {
        for (int kind = 0; kind < 4; kind++) {
            const double spread = p.in == GS_FLOAT16 ? 20 : p.in == GS_FLOAT64 ? (kind == 1 ? 1500 : 60) : 200;
            const double scale = p.in == GS_FLOAT16 ? 100 : 1e3;
            make(p.in, kind, spread, scale, x, N);
            char what[64];
            snprintf(what, sizeof what, "%s",
                     kind == 0 ? "ordinary" : kind == 1 ? "wide, cancelling" : kind == 2 ? "specials" : "two scales");
            if (p.in == GS_FLOAT16)
                widths<FxFmt<uint16_t> >(what, p.in, p.out, x, N);
            else if (p.in == GS_BFLOAT16)
                widths<FxBf16>(what, p.in, p.out, x, N);
            else if (p.in == GS_FLOAT32)
                widths<FxFmt<uint32_t> >(what, p.in, p.out, x, N);
            else
                widths<FxFmt<uint64_t> >(what, p.in, p.out, x, N);
        }
    }
    /* hand-made: ties, overflow and back, the smallest subnormals, signed zeros */
    {
        const double f32[] = {16777216.0, 1.0, 1.0, -1.0, ldexp(1, -60), -16777216.0, -2.0};
        Elem e[7];
        for (int i = 0; i < 7; i++)
            e[i] = elem_of(GS_FLOAT32, f32[i]);
        run<10, FxFmt<uint32_t> >("ties and a tiny term", GS_FLOAT32, GS_FLOAT32, e, 7);
        const double h[] = {65504.0, 65504.0, -65504.0, ldexp(1, -24), -ldexp(1, -24), -0.0};
        for (int i = 0; i < 6; i++)
            e[i] = elem_of(GS_FLOAT16, h[i]);
        run<4, FxFmt<uint16_t> >("float16 beyond its range and back", GS_FLOAT16, GS_FLOAT16, e, 6);
        /* ties whose only sticky bit lies below the top 64 of 128: 1 + half an ulp + a tiny one */
        const double t64[] = {1.0, ldexp(1, -53), ldexp(1, -70), -ldexp(1, -70), ldexp(-1, -70)};
        for (int i = 0; i < 5; i++)
            e[i] = elem_of(GS_FLOAT64, t64[i]);
        run<4, FxFmt<uint64_t> >("a tie and a far sticky bit", GS_FLOAT64, GS_FLOAT64, e, 5);
        const double t32[] = {1.0, ldexp(1, -24), ldexp(1, -90), ldexp(-1, -90), ldexp(-1, -90)};
        for (int i = 0; i < 5; i++)
            e[i] = elem_of(GS_FLOAT32, t32[i]);
        run<4, FxFmt<uint32_t> >("a tie and a far sticky bit", GS_FLOAT32, GS_FLOAT32, e, 5);
        const double t16[] = {1.0, ldexp(1, -11), ldexp(1, -90), ldexp(-1, -90), ldexp(-1, -90)};
        for (int i = 0; i < 5; i++)
            e[i] = elem_of(GS_FLOAT32, t16[i]);
        run<4, FxFmt<uint32_t> >("a tie and a far sticky bit", GS_FLOAT32, GS_FLOAT16, e, 5);
        const double z[] = {-0.0, -0.0, 0.0, -0.0};
        for (int i = 0; i < 4; i++)
            e[i] = elem_of(GS_FLOAT64, z[i]);
        run<4, FxFmt<uint64_t> >("signed zeros", GS_FLOAT64, GS_FLOAT64, e, 4);
        const double d[] = {ldexp(1, -1074), ldexp(1, 1023), ldexp(1, 1023), -ldexp(1, 1023), -ldexp(1, 1023),
                            ldexp(3, -1074)};
        for (int i = 0; i < 6; i++)
            e[i] = elem_of(GS_FLOAT64, d[i]);
        run<72, FxFmt<uint64_t> >("float64's whole range", GS_FLOAT64, GS_FLOAT64, e, 6);
    }
    /* fx_digits_bits32 over a negative number: sign-extended above, zeros below */
    {
        const uint32_t d[2] = {0x89abcdefu, 0xf1234567u};
        const bool ok = fx_digits_bits32(d, 2, 0) == 0x89abcdefu && fx_digits_bits32(d, 2, 16) == 0x456789abu &&
                        fx_digits_bits32(d, 2, 48) == 0xfffff123u && fx_digits_bits32(d, 2, 96) == 0xffffffffu &&
                        fx_digits_bits32(d, 2, -8) == 0xabcdef00u && fx_digits_bits32(d, 2, -40) == 0u;
        printf("fx_digits_bits32: %s\n", ok ? "ok" : "WRONG");
        g_fail |= !ok;
    }
    printf("%s\n", g_fail ? "FAILED" : "all prefixes correctly rounded");
    return g_fail;
}
