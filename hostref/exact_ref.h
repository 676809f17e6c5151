/*
 * hostref's exact sum: the oracle of gridsync's correctly rounded sums (GS_REDUCE_EXACT,
 * docs/semantics.md §12). A big integer on purpose unlike the library's accumulator
 * (internal/exact_format.h), so the two check each other: two unsigned magnitudes, of the
 * positive and of the negative elements, in 64-bit words from 2^-1074 up, carried at
 * every addition; the difference taken once; rounded through a 64-bit round-to-odd long
 * double and the FPU's rintl (round half to even) instead of bit manipulation.
 */
#ifndef GS_HOSTREF_EXACT_REF_H
#define GS_HOSTREF_EXACT_REF_H

#include <stdint.h>

#include "gridsync.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 35 words: bits 2^-1074 .. 2^1166, room for 2^64 elements of up to 2^1024 each. */
#define HOSTREF_EXACT_WORDS 35

typedef struct hostref_exact {
    uint64_t pos[HOSTREF_EXACT_WORDS], neg[HOSTREF_EXACT_WORDS];
    uint64_t count, nan, pos_inf, neg_inf;
    int sign_clear; /* some element had its sign bit clear */
} hostref_exact;

void hostref_exact_init(hostref_exact *a);
/* One element (any double: every float16, bfloat16 and float32 value is one exactly). */
void hostref_exact_add(hostref_exact *a, double x);
/* n elements of the float type t at data. */
void hostref_exact_add_array(hostref_exact *a, gs_dtype t, const void *data, uint64_t n);
/* a += b. */
void hostref_exact_merge(hostref_exact *a, const hostref_exact *b);
/* The bits of the correctly rounded sum in the float type out (docs/semantics.md §12:
 * NaN if any NaN or both infinities, then the infinity, then the value rounded to nearest
 * even, +-inf beyond the range; a zero sum is -0.0 when n >= 1 and every element is -0.0).
 * NaN is the type's default quiet NaN, positive. */
uint64_t hostref_exact_round(const hostref_exact *a, gs_dtype out);
/* The same for the sum of n elements of t at data. */
uint64_t hostref_exact_sum(gs_dtype t, const void *data, uint64_t n, gs_dtype out);
/* Whether two results of type out are the same bits (every NaN counts as the same). */
int hostref_exact_same(gs_dtype out, uint64_t a, uint64_t b);
/* A result of type out as text ("0x3ff0000000000000 (1)"). */
void hostref_exact_format(gs_dtype out, uint64_t bits, char *buf, unsigned len);

/*
 * The oracle of gs_scan with GS_SCAN_EXACT (scan_exact.c): out[i] (type out_dtype) = the
 * exact sum of the carry-in and in[0..i] (exclusive: in[0..i-1]) rounded once as
 * hostref_exact_round does, the prefix's counts including the carry-in's (each summed
 * over carry_in[0 .. carry_in_count), then read as "> 0 or not", as gs_exact_round does;
 * an exclusive out[0] with no carry-in is +0.0). carry_in: carry_in_count gs_exact_acc
 * (NULL with 0); total (may be NULL): the normalised gs_exact_acc of in[0..n) alone, nan,
 * pos_inf, neg_inf and sign_clear written as 0 or 1, count = n, reserved 0. Returns 0, or
 * -1 for a dtype/out_dtype it does not take (in: float16, bfloat16, float32, float64; out:
 * in's type, or float32 for the 16-bit types, float64 for float32), a carry-in with bits
 * below 2^-1074 (hostref_exact's grid) or of magnitude 2^1120 or more (its words'
 * room with the elements'; 2^30 normalised accumulators stay below 2^1117).
 * Incremental: one hostref_exact_add and one hostref_exact_round per element.
 */
int hostref_scan_exact(const void *in, uint64_t n, gs_dtype dtype, gs_dtype out_dtype, int exclusive,
                       const gs_exact_acc *carry_in, uint64_t carry_in_count, void *out, gs_exact_acc *total);

#ifdef __cplusplus
}
#endif

#endif
