/*
 * The host side of exact sums (GRIDSYNC_1.2): rounding an exact accumulator and combining
 * two. Both are pure integer arithmetic on the caller's memory, so they need no driver and
 * are the same on every machine. The arithmetic itself is internal/exact_format.h, shared
 * with the kernels' last block, so a rounded call and a rounded accumulator agree.
 */
#include "gridsync.h"

#include <string.h>

#include "dtype.h"
#include "error.h"
#include "exact_format.h"

_Static_assert(sizeof(gs_exact_acc) == GS_EXACT_ACC_WORDS * sizeof(int64_t),
               "gs_exact_acc is GS_EXACT_ACC_WORDS int64 words, nothing else (it is summed as one array)");

GS_API gs_status gs_exact_round(const gs_exact_acc *acc, gs_dtype out_dtype, void *result)
{
    gs_clear_error();
    if (!acc || !result)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_exact_round: %s is NULL", acc ? "result" : "acc");
    if (!gs_dtype_valid((int)out_dtype) || !gs_dtype_is_float(out_dtype))
        return gs_fail(GS_ERROR_INVALID_ARGUMENT,
                       "gs_exact_round: out_dtype %d is not a float type (f16, bf16, f32 or f64)", (int)out_dtype);
    const uint64_t bits = gs_exact_round_bits(acc->limb, acc->count, acc->nan, acc->pos_inf, acc->neg_inf,
                                              acc->sign_clear, out_dtype);
    /* The low bytes of `bits` in the result's width (host byte order, as a store of the
     * value would write them). */
    if (gs_dtype_size(out_dtype) == 8) {
        memcpy(result, &bits, 8);
    } else if (gs_dtype_size(out_dtype) == 4) {
        const uint32_t b = (uint32_t)bits;
        memcpy(result, &b, 4);
    } else {
        const uint16_t b = (uint16_t)bits;
        memcpy(result, &b, 2);
    }
    return GS_SUCCESS;
}

GS_API gs_status gs_exact_combine(gs_exact_acc *acc, const gs_exact_acc *other)
{
    gs_clear_error();
    if (!acc || !other)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT, "gs_exact_combine: %s is NULL", acc ? "other" : "acc");
    /* Into a copy, so a failure leaves acc as it was. Every member adds as an int64; the
     * reserved words too (they are 0 in accumulators gridsync writes). */
    gs_exact_acc sum;
    const int64_t *a = (const int64_t *)acc, *b = (const int64_t *)other;
    int64_t *s = (int64_t *)&sum;
    for (int i = 0; i < GS_EXACT_ACC_WORDS; i++)
        if (__builtin_add_overflow(a[i], b[i], &s[i]))
            return gs_fail(GS_ERROR_INVALID_ARGUMENT,
                           "gs_exact_combine: word %d of the sum leaves int64 (%lld + %lld): not accumulators "
                           "gridsync wrote, or counts beyond 2^63",
                           i, (long long)a[i], (long long)b[i]);
    if (gs_exact_normalize(sum.limb) != 0)
        return gs_fail(GS_ERROR_INVALID_ARGUMENT,
                       "gs_exact_combine: the sum's top limb leaves int64 when normalised (far beyond any float)");
    memcpy(acc, &sum, sizeof sum);
    return GS_SUCCESS;
}
