/*
 * The ARGMIN/ARGMAX keys of backends/common/thread/ops.cuh, on the CPU: for float32, int32,
 * uint32 (one-word keys; every smaller type widens to one of them), float64, int64 and
 * uint64 (two-word keys), both directions, and pairs of (value, index) drawn from the
 * values that decide ties and NaNs (signed zeros, infinities, NaNs of either sign and
 * payload, denormals, the integer extremes) and from random ones, the maximum of the two
 * keys must name the index that OpArgBase::combine - the rule the kernels apply without
 * keys - chooses, in either order; "no element" (the zero key, index -1) must lose to
 * everything. The kernels combine keys wherever n allows (reduce_kernel); this checks
 * that doing so cannot change an answer. Prints one line per type and direction; exit
 * status 1 if any pair disagrees (the first one of each is printed).
 */
#include "thread/ops.cuh"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <initializer_list>
#include <random>
#include <type_traits>
#include <vector>

/* The value whose bits are u (V and U of one size). */
template <typename V, typename U> static V from_bits(U u)
{
    static_assert(sizeof(V) == sizeof(U), "same size");
    V v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* The values listed, then those of the raw bit patterns, then 24 random bit patterns. */
template <typename V, typename U = typename std::conditional<sizeof(V) == 8, uint64_t, uint32_t>::type>
static std::vector<V> values(std::vector<V> v, std::initializer_list<U> raw, unsigned seed)
{
    for (U r : raw)
        v.push_back(from_bits<V>(r));
    std::mt19937_64 rng(seed);
    for (int k = 0; k < 24; k++)
        v.push_back(from_bits<V>((U)rng()));
    return v;
}

template <typename V> static std::vector<V> special_values();

template <> std::vector<float> special_values<float>()
{
    return values<float>({0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, INFINITY, -INFINITY, 3.4028235e38f, -3.4028235e38f,
                          1.17549435e-38f, -1.17549435e-38f},
                         {
                             0x00000001u, 0x80000001u, /* the smallest denormals */
                             0x007fffffu, 0x807fffffu, /* the largest denormals */
                             0x7fc00000u, 0xffc00000u, /* quiet NaNs, both signs */
                             0x7f800001u, 0xff800001u, /* signalling NaNs */
                             0x7fffffffu, 0xffffffffu, /* NaNs with every payload bit */
                         },
                         7);
}

template <> std::vector<double> special_values<double>()
{
    return values<double>({0.0, -0.0, 1.0, -1.0, 0.5, -0.5, INFINITY, -INFINITY, 1.7976931348623157e308,
                           -1.7976931348623157e308, 2.2250738585072014e-308, -2.2250738585072014e-308,
                           1.0 + 2.220446049250313e-16, 1.0000001192092896 /* a float's neighbour */},
                          {
                              0x0000000000000001ull, 0x8000000000000001ull, /* the smallest denormals */
                              0x7ff8000000000000ull, 0xfff8000000000000ull, /* quiet NaNs, both signs */
                              0x7ff0000000000001ull, 0xfff0000000000001ull, /* signalling NaNs */
                              0x7fffffffffffffffull, 0xffffffffffffffffull, /* NaNs, every payload bit */
                          },
                          10);
}

template <> std::vector<int32_t> special_values<int32_t>()
{
    return values<int32_t>({0, 1, -1, 2, -2, INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1}, {}, 8);
}

template <> std::vector<uint32_t> special_values<uint32_t>()
{
    return values<uint32_t>({0u, 1u, 2u, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu}, {}, 9);
}

template <> std::vector<int64_t> special_values<int64_t>()
{
    return values<int64_t>({0, 1, -1, INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1, (int64_t)1 << 32,
                            -((int64_t)1 << 32), INT32_MIN, INT32_MAX},
                           {}, 11);
}

template <> std::vector<uint64_t> special_values<uint64_t>()
{
    return values<uint64_t>({0, 1, UINT64_MAX, UINT64_MAX - 1, (uint64_t)1 << 63, ((uint64_t)1 << 63) - 1,
                             (uint64_t)1 << 32, 0xffffffffull},
                            {}, 12);
}

template <typename V, bool kMax> static int check(const char *name)
{
    typedef gs::OpArgBase<V, V, kMax> Arg;
    typedef gs::ArgKeyBase<V, V, kMax> Key;
    typedef typename Arg::Acc Acc;
    /* indices up to the largest that keys allow (an input of Key::kMaxN elements) */
    const int64_t top = Key::kMaxN > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)Key::kMaxN;
    const int64_t indices[] = {0, 1, 2, 7, 1000, (int64_t)1 << 31, ((int64_t)1 << 32) - 4, top - 2, top - 1};
    const std::vector<V> values = special_values<V>();
    std::vector<Acc> accs;
    for (V x : values)
        for (int64_t i : indices) {
            Acc a;
            a.v = x;
            a.i = i;
            accs.push_back(a);
        }
    Acc none;
    none.v = V(0);
    none.i = -1;
    accs.push_back(none);

    long pairs = 0, bad = 0;
    for (const Acc &a : accs)
        for (const Acc &b : accs) {
            if (a.i == b.i && a.i >= 0)
                continue; /* one element has one value */
            const int64_t want = Arg::combine(a, b).i;
            const int64_t got = Key::Op::result(Key::Op::combine(Key::key(a), Key::key(b)));
            pairs++;
            if (got != want && bad++ == 0) {
                double av = (double)a.v, bv = (double)b.v;
                fprintf(stderr, "FAIL %s: (%g, %lld) vs (%g, %lld): combine picks %lld, keys pick %lld\n", name, av,
                        (long long)a.i, bv, (long long)b.i, (long long)want, (long long)got);
            }
        }
    /* The identity: the zero key, result -1. */
    typename Key::Op::Acc zero;
    memset(&zero, 0, sizeof zero);
    const typename Key::Op::Acc kn = Key::key(none), ki = Key::Op::identity();
    if (memcmp(&kn, &zero, sizeof zero) || memcmp(&ki, &zero, sizeof zero) || Key::Op::result(zero) != -1) {
        fprintf(stderr, "FAIL %s: \"no element\" is not key 0 / index -1\n", name);
        bad++;
    }
    printf("%-16s %ld pairs, %ld wrong\n", name, pairs, bad);
    return bad ? 1 : 0;
}

/* ARGMAX and ARGMIN over one value type. */
template <typename V> static int check_both(const char *dtype)
{
    char name[32];
    snprintf(name, sizeof name, "%s ARGMAX", dtype);
    int status = check<V, true>(name);
    snprintf(name, sizeof name, "%s ARGMIN", dtype);
    return status | check<V, false>(name);
}

int main(void)
{
    int status = 0;
    status |= check_both<float>("float32");
    status |= check_both<int32_t>("int32");
    status |= check_both<uint32_t>("uint32");
    status |= check_both<double>("float64");
    status |= check_both<int64_t>("int64");
    status |= check_both<uint64_t>("uint64");
    return status;
}
