/*
 * hostref — the host reference of gridsync's reductions, written once for the programs
 * that check the library: the `gridsync` command, the gpu tests and the benchmarks.
 *
 * It reads and writes every gs_dtype on the host (float16 and bfloat16 included), computes
 * what gs_reduce and gs_segmented_reduce must return (docs/semantics.md: integer wrap at
 * the output's width, NaN and first-index rules of ARGMIN/ARGMAX, the identities of
 * n == 0), and judges a device result against it. Integer ops, MIN/MAX and ARGMIN/ARGMAX
 * are exact; a float SUM or PROD is judged within a tolerance the caller chooses (each
 * program has its own data, so each may promise more or less; see hostref_tolerance).
 *
 * hostref_scan runs gs_scan's association order (scan.c): the oracle whose bits the
 * scan's device results must equal, for every dtype.
 *
 * Not installed: a static library of the build tree. C11; usable from C++ (the benchmarks).
 */
#ifndef GS_HOSTREF_H
#define GS_HOSTREF_H

#include <stdint.h>

#include "gridsync.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- values on the host ------------------------------------------------------------- */

/* IEEE binary16 and bfloat16 <-> float, round to nearest even, with subnormals,
 * infinities and NaN (a NaN stays a quiet NaN). */
float hostref_half_to_float(uint16_t h);
uint16_t hostref_float_to_half(float f);
float hostref_bf16_to_float(uint16_t b);
uint16_t hostref_float_to_bf16(float f);

/* Element i of an array of t, as a number: exact for every dtype (integers sign- or
 * zero-extended; long double holds 64-bit integers exactly on x86-64). */
long double hostref_load(gs_dtype t, const void *p, uint64_t i);
/* Stores v as element i: floats rounded to t (float16/bfloat16 through float), integers
 * converted with two's complement wrap. */
void hostref_store(gs_dtype t, void *p, uint64_t i, long double v);
/* Integers as raw bits, zero-extended, and back (the low bits of v). */
uint64_t hostref_load_bits(gs_dtype t, const void *p, uint64_t i);
void hostref_store_bits(gs_dtype t, void *p, uint64_t i, uint64_t v);
/* v rounded once, to nearest even, to the float type t. */
long double hostref_round_to(gs_dtype t, long double v);
/* Significand bits of a float type, hidden bit included (24, 53, 11, 8); 0 for integers. */
int hostref_digits(gs_dtype t);
/* The float type a float SUM/PROD of `in` into `out` accumulates in (docs/semantics.md):
 * float64 for float64 outputs, float32 for the 16-bit types, else `in`. */
gs_dtype hostref_accumulator(gs_dtype in, gs_dtype out);
/* Prints a value of t with enough digits to tell every value of the type apart; bitwise
 * ops' integer results in hex. */
void hostref_format(gs_dtype t, gs_op op, long double v, char *buf, size_t len);

/* splitmix64: small, fast, and replayable from a printed seed. hostref_mix64 is its
 * output function alone (a good 64-bit hash: seeds of sub-cases). */
uint64_t hostref_rand(uint64_t *state);
uint64_t hostref_mix64(uint64_t z);
/* Uniform in [-1, 1), 53 random bits. */
double hostref_rand_unit(uint64_t *state);

/* ---- the reference ------------------------------------------------------------------ */

typedef struct hostref_ref {
    gs_dtype in, out;
    gs_op op;
    uint64_t n;
    /* integer SUM, PROD, MIN, MAX, AND, OR, XOR: the result's bits, masked to out's width */
    uint64_t bits;
    /* float SUM (Kahan-compensated), PROD, MIN, MAX: in long double; NaN if MIN/MAX met one */
    long double value;
    /* float SUM: sum|x|, and q such that every element is a multiple of 2^q (INT32_MAX
     * when none is a nonzero finite number) */
    long double abs_sum;
    int32_t low_bit;
    int32_t finite; /* floats: no element is an infinity or NaN */
    /* ARGMIN/ARGMAX: the first index of the extreme (or of the first NaN), -1 for n == 0,
     * and that element's value */
    int64_t index;
    long double index_value;
} hostref_ref;

/* The reference of op over data[0..n) of type in, with result type out (gs_reduce's
 * default is GS_OUT_DEFAULT's: pass hostref_default_out(in, op)). */
void hostref_reduce(hostref_ref *r, gs_dtype in, gs_op op, gs_dtype out, const void *data, uint64_t n);
/* Extends acc by next, the reference of the elements right after acc's (same in, op, out):
 * lets a caller reduce pieces on several threads, or prefixes of one array, in one pass. */
void hostref_merge(hostref_ref *acc, const hostref_ref *next);
/* gs_reduce's output type: int64 for ARGMIN/ARGMAX, else the input type. */
gs_dtype hostref_default_out(gs_dtype in, gs_op op);

/* ---- checking one result ------------------------------------------------------------ */

/*
 * How far a float SUM or PROD may be from the exact value:
 *   accumulation:   (per_n * n + fixed) * eps(acc) * scale,  scale = sum|x| (SUM) or |exact| (PROD),
 *                   eps(acc) = 2^(1 - digits) of the accumulator;
 *   final rounding: final_eps ? eps(out) * |exact|
 *                             : where out is narrower than the accumulator, half an ulp of
 *                               out: 2^-digits(out) * (|exact| + accumulation) + half the
 *                               smallest subnormal of out.
 * per_n = 1 is the rigorous bound of any evaluation order (Higham, Accuracy and Stability
 * of Numerical Algorithms, ch. 4); a smaller constant trusts the data to be random.
 * exact_when_provable: a SUM whose elements are all multiples of 2^q with sum|x| <= 2^(p+q)
 * (p the accumulator's digits) has no rounding in any order; it must then equal the exact
 * sum rounded once to out.
 * Whatever the tolerance: an exact value that rounds to +-inf in out must come back as that
 * infinity; with an infinity or NaN among the elements, the result must be the exact one.
 */
typedef struct hostref_tolerance {
    double per_n, fixed;
    int final_eps;
    int exact_when_provable;
} hostref_tolerance;

/* per_n 1, no constant, half-ulp final rounding, exact when provable. */
extern const hostref_tolerance hostref_rigorous;

typedef struct hostref_verdict {
    int ok;
    /* within the tolerance but beyond Higham and Mary's probabilistic bound (lambda = 8):
     * suspicious, not proven wrong */
    int suspicious;
    char got[96], want[96];
    char note[240]; /* how it was compared: "exact", "|diff| ... <= bound ..." */
} hostref_verdict;

/* Judges `got` (one result of r->out; ARGMIN/ARGMAX an int64) against r; returns v->ok.
 * `data` (r's input, or NULL) lets ARGMIN/ARGMAX name the value at the index returned. */
int hostref_check(const hostref_ref *r, const void *data, const void *got, const hostref_tolerance *tol,
                  hostref_verdict *v);
/* The float SUM/PROD bound hostref_check applies (accumulation + final rounding), for
 * callers that compare two device results with each other. */
long double hostref_bound(const hostref_ref *r, const hostref_tolerance *tol);

/* ---- the scan's model (issue 45) ------------------------------------------------------ */

/*
 * gs_scan's association order, run on the host (scan.c's header comment is the contract):
 * writes n outputs of out_dtype (GS_OUT_DEFAULT: dtype; else one of gs_reduce_ex's wider
 * outputs) for tiles of threads x items elements (threads a multiple of 32, up to 1024;
 * items >= 1), their carries folded in groups of `group` tiles (>= 1). Inclusive, or exclusive when `exclusive` is nonzero (out[0] is then the op's
 * identity; a float SUM's is +0.0). in == out (one element size) scans in place.
 * GS_ERROR_UNSUPPORTED: ARGMIN/ARGMAX, bitwise ops over floats, an output gs_reduce_ex does
 * not offer; GS_ERROR_INVALID_ARGUMENT: an enum out of range, a bad geometry, a NULL
 * pointer with n > 0, overlapping in and out (other than in place); GS_ERROR_OUT_OF_MEMORY.
 * n == 0 writes nothing.
 */
gs_status hostref_scan(const void *in, uint64_t n, gs_dtype dtype, gs_op op, int32_t out_dtype, int exclusive,
                       unsigned threads, unsigned items, unsigned group, void *out);

#ifdef __cplusplus
}
#endif

#endif
