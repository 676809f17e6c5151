/*
 * gridsync — the command-line tool: what gridsync runs on (info), one reduction checked and
 * timed (reduce), and every dtype x op checked on several sizes (selftest).
 *
 * It acts as an application would: libgridsync for the reductions, device memory, copies,
 * streams and events through the dlopen-based CUDA shim (tools/cudashim.h), so it builds
 * and runs, and says "no CUDA driver", on machines without CUDA.
 *
 * Checking. Inputs are fresh random data from a seed (printed; --seed replays it), chosen
 * per operation so the reference is meaningful (see make_input). The reference and the
 * check are hostref's (hostref/hostref.h) with its rigorous tolerance: integers and
 * MIN/MAX/ARGMIN/ARGMAX exact; float SUM and PROD within n * eps * sum|x| (|prod|) of the
 * exact value plus the final rounding of float16/bfloat16, and exact when every partial
 * sum provably is.
 *
 * The tool never assumes which dtype/op pairs the library implements: a pair it answers
 * GS_ERROR_UNSUPPORTED for is reported (reduce) or counted and skipped (selftest).
 *
 * Exit status: 0 success, 1 failure (wrong result, or a gridsync/CUDA error),
 * 2 usage error, 3 no CUDA driver, 4 no CUDA device (or no such device).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cudashim.h"
#include "dtype.h"
#include "gridsync.h"
#include "hostref.h"

enum {
    EXIT_OK = 0,
    EXIT_FAIL = 1,      /* a wrong result, or a gridsync or CUDA error */
    EXIT_USAGE = 2,     /* bad command line */
    EXIT_NO_DRIVER = 3, /* no usable CUDA driver (libcuda.so.1) */
    EXIT_NO_DEVICE = 4  /* no CUDA device, or the --device ordinal does not exist */
};

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
 * What the tool adds to internal/dtype.h's facts about each gs_dtype.
 * ====================================================================================== */

typedef enum { K_SIGNED, K_UNSIGNED, K_FLOAT } num_kind;

typedef struct dtype_info {
    gs_dtype id;
    const char *alias; /* the long name also accepted: "int32", "float16", ... */
    num_kind kind;
    /* integers only: range for SUM data, [-sum_range, sum_range] or [0, 2 * sum_range] */
    uint64_t sum_range;
} dtype_info;

/* Indexed by gs_dtype (checked in main). */
static const dtype_info k_dtypes[] = {
    {GS_INT32, "int32", K_SIGNED, 1000},         {GS_UINT32, "uint32", K_UNSIGNED, 1000},
    {GS_INT64, "int64", K_SIGNED, 1ull << 40},   {GS_UINT64, "uint64", K_UNSIGNED, 1ull << 40},
    {GS_FLOAT32, "float32", K_FLOAT, 0},         {GS_FLOAT64, "float64", K_FLOAT, 0},
    {GS_FLOAT16, "float16", K_FLOAT, 0},         {GS_BFLOAT16, "bfloat16", K_FLOAT, 0},
    {GS_INT8, "int8", K_SIGNED, 100},            {GS_UINT8, "uint8", K_UNSIGNED, 100},
};
#define NDTYPES ((int)(sizeof k_dtypes / sizeof k_dtypes[0]))

/* Aliases the command line also accepts (internal/dtype.h spells the names). */
static const char *const k_op_alias[] = {"add", "mul", NULL, NULL, NULL, NULL, "bit_and", "bit_or", "bit_xor"};
#define NOPS GS_OP_COUNT

static int is_arg_op(gs_op op)
{
    return op == GS_OP_ARGMIN || op == GS_OP_ARGMAX;
}

static int is_bit_op(gs_op op)
{
    return op == GS_OP_BIT_AND || op == GS_OP_BIT_OR || op == GS_OP_BIT_XOR;
}

/* Bytes of gs_reduce's (default) result. */
static unsigned out_size(const dtype_info *t, gs_op op)
{
    return (unsigned)gs_dtype_size(hostref_default_out(t->id, op));
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
 * MIN/MAX/ARGMIN/ARGMAX with one or two quiet NaNs inserted at random places.
 * ====================================================================================== */

typedef enum { DATA_DEFAULT, DATA_INT, DATA_NAN } data_kind;
static const char *const k_data_names[] = {"default", "int", "nan"};

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
static void make_input(const dtype_info *t, gs_op op, data_kind kind, void *buf, uint64_t offset, uint64_t n,
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

/* ======================================================================================
 * The check of one result: hostref's reference, within the rigorous bound.
 * ====================================================================================== */

typedef hostref_verdict verdict;

static void verify(const dtype_info *t, gs_op op, const void *data, uint64_t n, const unsigned char *got, verdict *v)
{
    hostref_ref r;
    hostref_reduce(&r, t->id, op, hostref_default_out(t->id, op), data, n);
    hostref_check(&r, data, got, &hostref_rigorous, v);
}

/* ======================================================================================
 * Errors, names, numbers.
 * ====================================================================================== */

static const char *g_cmd = ""; /* the subcommand, for usage messages */

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gridsync: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'gridsync %s%s--help'.\n", g_cmd, *g_cmd ? " " : "");
    exit(EXIT_USAGE);
}

static int exit_code_for(gs_status st)
{
    return st == GS_ERROR_NO_DRIVER ? EXIT_NO_DRIVER : st == GS_ERROR_NO_DEVICE ? EXIT_NO_DEVICE : EXIT_FAIL;
}

/* The message without a leading "no CUDA driver: " (the line says it already). */
static const char *strip_prefix(const char *msg, const char *prefix)
{
    size_t len = strlen(prefix);
    return strncmp(msg, prefix, len) == 0 ? msg + len : msg;
}

/* Reports a failed gridsync call on one line and returns the exit status for it. */
static int report_gs(const char *what, gs_status st)
{
    const char *msg = gs_last_error_message();
    if (st == GS_ERROR_NO_DRIVER)
        fprintf(stderr, "gridsync: no CUDA driver: %s\n", *msg ? strip_prefix(msg, "no CUDA driver: ") : gs_status_string(st));
    else if (st == GS_ERROR_NO_DEVICE)
        fprintf(stderr, "gridsync: no CUDA device: %s\n", *msg ? msg : gs_status_string(st));
    else
        fprintf(stderr, "gridsync: %s: %s%s%s\n", what, gs_status_string(st), *msg ? ": " : "", msg);
    return exit_code_for(st);
}

static int report_shim(const char *what)
{
    fprintf(stderr, "gridsync: %s: %s\n", what, cushim_error());
    return EXIT_FAIL;
}

static int report_shim_init(cushim_status st)
{
    if (st == CUSHIM_NO_DRIVER) {
        fprintf(stderr, "gridsync: no CUDA driver: %s\n", strip_prefix(cushim_error(), "no CUDA driver: "));
        return EXIT_NO_DRIVER;
    }
    if (st == CUSHIM_NO_DEVICE) {
        fprintf(stderr, "gridsync: no CUDA device: %s\n", cushim_error());
        return EXIT_NO_DEVICE;
    }
    return report_shim("setting up the CUDA context");
}

static const dtype_info *parse_dtype(const char *s)
{
    for (int i = 0; i < NDTYPES; i++)
        if (strcmp(s, gs_dtype_name(k_dtypes[i].id)) == 0 || strcmp(s, k_dtypes[i].alias) == 0)
            return &k_dtypes[i];
    if (strcmp(s, "half") == 0)
        return &k_dtypes[GS_FLOAT16];
    if (strcmp(s, "float") == 0)
        return &k_dtypes[GS_FLOAT32];
    if (strcmp(s, "double") == 0)
        return &k_dtypes[GS_FLOAT64];
    usage_error("unknown dtype '%s' (one of: i32 u32 i64 u64 f32 f64 f16 bf16 i8 u8)", s);
}

static gs_op parse_op(const char *s)
{
    for (int i = 0; i < NOPS; i++)
        if (strcmp(s, gs_op_name((gs_op)i)) == 0 || (k_op_alias[i] && strcmp(s, k_op_alias[i]) == 0))
            return (gs_op)i;
    usage_error("unknown op '%s' (one of: sum prod min max argmin argmax and or xor)", s);
}

static data_kind parse_data(const char *s)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, k_data_names[i]) == 0)
            return (data_kind)i;
    usage_error("unknown --data '%s' (one of: default int nan)", s);
}

/* A non-negative integer: decimal or 0x hex, optionally with a binary suffix K, M, G or T
 * (x 2^10, 2^20, 2^30, 2^40); at most max. */
static uint64_t parse_u64(const char *opt, const char *s, uint64_t max)
{
    const char *p = s;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p < '0' || *p > '9')
        usage_error("%s: '%s' is not a non-negative integer", opt, s);
    /* decimal, or hex after 0x (a leading 0 is not octal) */
    const int hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
    errno = 0;
    char *end;
    unsigned long long v = strtoull(p, &end, hex ? 16 : 10);
    if (errno == ERANGE)
        usage_error("%s: '%s' is too large", opt, s);
    if (end == p)
        usage_error("%s: '%s' is not a non-negative integer", opt, s);
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (*end != '\0')
        usage_error("%s: '%s' is not a non-negative integer (suffixes: K M G T)", opt, s);
    if (shift && v > (UINT64_MAX >> shift))
        usage_error("%s: '%s' is too large", opt, s);
    v <<= shift;
    if (v > max)
        usage_error("%s: '%s' is too large (at most %" PRIu64 ")", opt, s, max);
    return v;
}

/* Matches "--name value" and "--name=value"; advances *i past the value. */
static int take_opt(int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *a = argv[*i];
    size_t len = strlen(name);
    if (strncmp(a, name, len) != 0)
        return 0;
    if (a[len] == '=') {
        *value = a + len + 1;
        if (!**value)
            usage_error("%s needs a value", name);
        return 1;
    }
    if (a[len] != '\0')
        return 0;
    if (*i + 1 >= argc)
        usage_error("%s needs a value", name);
    *value = argv[++*i];
    return 1;
}

static int is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

static void set_backend(const char *name)
{
    if (!*name)
        usage_error("--backend needs a name (cuda_sm20, cuda_sm11_compat) or an absolute path");
    if (setenv("GRIDSYNC_BACKEND", name, 1) != 0) {
        fprintf(stderr, "gridsync: setenv(GRIDSYNC_BACKEND): %s\n", strerror(errno));
        exit(EXIT_FAIL);
    }
}

static uint64_t time_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    /* printed, and short enough to retype */
    return hostref_mix64((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ((uint64_t)getpid() << 32)) %
           1000000000000ull;
}

/* ======================================================================================
 * Help.
 * ====================================================================================== */

static const char k_usage[] =
    "usage: gridsync [--help] [--version] COMMAND [OPTIONS]\n"
    "\n"
    "Commands:\n"
    "  info       library and driver versions, devices, and the backend chosen for each\n"
    "  reduce     one gs_reduce on fresh random data: checked against a host reference, timed\n"
    "  selftest   every dtype x op on several sizes, checked against a host reference\n"
    "\n"
    "'gridsync COMMAND --help' describes a command's options. See also gridsync(1).\n"
    "\n"
    "Exit status: 0 success, 1 failure (wrong result or error), 2 usage error,\n"
    "             3 no CUDA driver, 4 no CUDA device.\n";

static const char k_usage_info[] =
    "usage: gridsync info [--backend NAME]\n"
    "\n"
    "Prints the library version, the CUDA driver version, and for every CUDA device its name,\n"
    "compute capability, the backend gridsync chooses (name and file) and why the others were\n"
    "not chosen.\n"
    "\n"
    "  --backend NAME   force a backend (sets GRIDSYNC_BACKEND): a name such as cuda_sm20\n"
    "                   or cuda_sm11_compat, or an absolute path to a backend file\n";

static const char k_usage_reduce[] =
    "usage: gridsync reduce [--dtype T] [--op OP] [--count N] [--offset K] [--device D]\n"
    "                       [--backend NAME] [--seed S] [--repeat R] [--data KIND]\n"
    "\n"
    "Fills device memory with random data, runs gs_reduce once and checks the result against a\n"
    "host reference, then times R back-to-back calls (CUDA events; median of 7 runs).\n"
    "\n"
    "  --dtype T       i32 u32 i64 u64 f32 f64 f16 bf16 i8 u8 (default f32)\n"
    "  --op OP         sum prod min max argmin argmax and or xor (default sum)\n"
    "  --count N       elements (default 16M = 16777216); suffixes K M G T are powers of 1024\n"
    "  --offset K      start the input K elements into its allocation (default 0)\n"
    "  --device D      CUDA device ordinal (default 0)\n"
    "  --backend NAME  force a backend (sets GRIDSYNC_BACKEND)\n"
    "  --seed S        seed of the random data (default: from the clock; always printed)\n"
    "  --repeat R      calls per timed run (default 100; 0 skips timing)\n"
    "  --data KIND     default: data chosen for the op (see gridsync(1));\n"
    "                  int: float SUM over integers in [-8, 8] (checked exactly);\n"
    "                  nan: float MIN/MAX/ARGMIN/ARGMAX with NaNs inserted\n";

static const char k_usage_selftest[] =
    "usage: gridsync selftest [--device D] [--backend NAME] [--seed S]\n"
    "\n"
    "Runs every dtype x op on sizes 0, 1, 255, 256, 257, 4097 and 2^20+3, at input offsets 0\n"
    "and 3 elements, each twice back to back (results must be identical), and checks each\n"
    "against a host reference. Pairs the library answers GS_ERROR_UNSUPPORTED for are counted\n"
    "and skipped. Ends with 'selftest: N passed, M failed, K unsupported' (N and M count cases,\n"
    "K dtype/op pairs).\n"
    "\n"
    "  --device D      CUDA device ordinal (default 0)\n"
    "  --backend NAME  force a backend (sets GRIDSYNC_BACKEND)\n"
    "  --seed S        seed (default: from the clock; always printed)\n";

/* ======================================================================================
 * Common setup: a gridsync context and the CUDA context for the tool's own calls.
 * ====================================================================================== */

typedef struct session {
    int device;
    gs_context *ctx;
    gs_context_info info;
    cushim_stream stream;
    int have_stream;
} session;

/* Returns 0 or an exit status (the failure already reported). */
static int session_open(session *s, int device)
{
    memset(s, 0, sizeof *s);
    s->device = device;
    gs_status st = gs_context_create(device, &s->ctx);
    if (st != GS_SUCCESS)
        return report_gs("gs_context_create", st);
    s->info.struct_size = sizeof s->info;
    if ((st = gs_context_get_info(s->ctx, &s->info)) != GS_SUCCESS)
        return report_gs("gs_context_get_info", st);
    cushim_status cs = cushim_init(device);
    if (cs != CUSHIM_OK)
        return report_shim_init(cs);
    if (cushim_stream_create(&s->stream) != 0)
        return report_shim("creating a stream");
    s->have_stream = 1;
    return 0;
}

/* Returns the exit status to use: `rc`, or EXIT_FAIL if cleaning up failed. */
static int session_close(session *s, int rc)
{
    if (s->have_stream) {
        if (cushim_stream_sync(s->stream) != 0)
            rc = rc ? rc : report_shim("synchronizing the stream");
        if (cushim_stream_destroy(s->stream) != 0)
            rc = rc ? rc : report_shim("destroying the stream");
    }
    if (s->ctx) {
        gs_status st = gs_context_destroy(s->ctx);
        if (st != GS_SUCCESS)
            rc = rc ? rc : report_gs("gs_context_destroy", st);
    }
    return rc;
}

static void print_device_line(const gs_context_info *info)
{
    printf("device %d: %s, compute capability %d.%d, %d multiprocessors\n", info->device, info->device_name,
           info->cc_major, info->cc_minor, info->multiprocessor_count);
    printf("backend: %s (%s)\n", info->backend_name, info->backend_path);
}

/* ======================================================================================
 * gridsync info
 * ====================================================================================== */

static int cmd_info(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (is_help(argv[i])) {
            fputs(k_usage_info, stdout);
            return EXIT_OK;
        } else if (take_opt(argc, argv, &i, "--backend", &v)) {
            set_backend(v);
        } else {
            usage_error("info: unknown option '%s'", argv[i]);
        }
    }

    int driver = 0, count = 0;
    gs_status st = gs_driver_version(&driver);
    if (st != GS_SUCCESS)
        return report_gs("gs_driver_version", st);
    if ((st = gs_device_count(&count)) != GS_SUCCESS)
        return report_gs("gs_device_count", st);
    if (count == 0) {
        fprintf(stderr, "gridsync: no CUDA device: the CUDA driver (version %d.%d) sees none\n", driver / 1000,
                (driver % 1000) / 10);
        return EXIT_NO_DEVICE;
    }

    printf("gridsync %s (library), built against %d.%d.%d\n", gs_version_string(), GS_VERSION_MAJOR,
           GS_VERSION_MINOR, GS_VERSION_PATCH);
    printf("CUDA driver %d.%d (%d)\n", driver / 1000, (driver % 1000) / 10, driver);
    const char *env_backend = getenv("GRIDSYNC_BACKEND"), *env_path = getenv("GRIDSYNC_BACKEND_PATH");
    if (env_backend)
        printf("GRIDSYNC_BACKEND=%s\n", env_backend);
    if (env_path)
        printf("GRIDSYNC_BACKEND_PATH=%s\n", env_path);
    printf("%d CUDA device%s\n", count, count == 1 ? "" : "s");

    int rc = EXIT_OK;
    for (int d = 0; d < count; d++) {
        gs_context *ctx = NULL;
        printf("\ndevice %d:\n", d);
        st = gs_context_create(d, &ctx);
        if (st != GS_SUCCESS) {
            printf("  error: %s: %s\n", gs_status_string(st), gs_last_error_message());
            fflush(stdout);
            rc = EXIT_FAIL;
            continue;
        }
        gs_context_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        st = gs_context_get_info(ctx, &info);
        if (st != GS_SUCCESS) {
            printf("  error: gs_context_get_info: %s: %s\n", gs_status_string(st), gs_last_error_message());
            rc = EXIT_FAIL;
        } else {
            printf("  name:               %s\n", info.device_name ? info.device_name : "?");
            printf("  compute capability: %d.%d\n", info.cc_major, info.cc_minor);
            printf("  multiprocessors:    %d\n", info.multiprocessor_count);
            printf("  backend:            %s\n", info.backend_name ? info.backend_name : "?");
            printf("  backend file:       %s\n", info.backend_path ? info.backend_path : "?");
            printf("  selection:\n");
            const char *log = info.selection_log ? info.selection_log : "";
            while (*log) {
                size_t len = strcspn(log, "\n");
                printf("    %.*s\n", (int)len, log);
                log += len + (log[len] == '\n');
            }
        }
        if ((st = gs_context_destroy(ctx)) != GS_SUCCESS) {
            printf("  error: gs_context_destroy: %s: %s\n", gs_status_string(st), gs_last_error_message());
            rc = EXIT_FAIL;
        }
    }
    return rc;
}

/* ======================================================================================
 * One reduction on the device: poisoned output, launch, wait, read back.
 * ====================================================================================== */

#define POISON 0xA5
#define OUT_SLOT 16 /* bytes between the two result slots selftest uses */

/* Returns GS_SUCCESS, the gs_reduce status (message left in gs_last_error_message), or
 * GS_ERROR_CUDA with *shim_failed set when a shim call failed (cushim_error() says why). */
static gs_status launch_and_read(session *s, cushim_ptr in, uint64_t n, const dtype_info *t, gs_op op,
                                 cushim_ptr out, unsigned char *got, int times, int *shim_failed)
{
    *shim_failed = 0;
    /* cuMemsetD8 and cuMemcpyHtoD run on the legacy default stream, which does not order
     * with s->stream (created non-blocking), and may return before they are done on the
     * device: wait for the whole context before launching. */
    if (cushim_memset8(out, POISON, (size_t)times * OUT_SLOT) != 0 || cushim_ctx_sync() != 0) {
        *shim_failed = 1;
        return GS_ERROR_CUDA;
    }
    for (int k = 0; k < times; k++) {
        gs_status st = gs_reduce(s->ctx, (const void *)(uintptr_t)in, n, t->id, op,
                                 (void *)(uintptr_t)(out + (cushim_ptr)k * OUT_SLOT), (gs_stream)s->stream);
        if (st != GS_SUCCESS)
            return st;
    }
    if (cushim_stream_sync(s->stream) != 0 || cushim_d2h(got, out, (size_t)times * OUT_SLOT) != 0) {
        *shim_failed = 1;
        return GS_ERROR_CUDA;
    }
    return GS_SUCCESS;
}

/* ======================================================================================
 * gridsync reduce
 * ====================================================================================== */

#define TIMED_RUNS 7

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void print_bytes(const char *label, double bytes)
{
    if (bytes >= 1073741824.0)
        printf("%s%.2f GiB", label, bytes / 1073741824.0);
    else if (bytes >= 1048576.0)
        printf("%s%.2f MiB", label, bytes / 1048576.0);
    else if (bytes >= 1024.0)
        printf("%s%.2f KiB", label, bytes / 1024.0);
    else
        printf("%s%.0f bytes", label, bytes);
}

static int cmd_reduce(int argc, char **argv)
{
    const dtype_info *t = &k_dtypes[GS_FLOAT32];
    gs_op op = GS_OP_SUM;
    uint64_t n = 16777216, offset = 0, seed = 0, repeat = 100;
    int device = 0, have_seed = 0;
    data_kind kind = DATA_DEFAULT;
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (is_help(argv[i])) {
            fputs(k_usage_reduce, stdout);
            return EXIT_OK;
        } else if (take_opt(argc, argv, &i, "--dtype", &v)) {
            t = parse_dtype(v);
        } else if (take_opt(argc, argv, &i, "--op", &v)) {
            op = parse_op(v);
        } else if (take_opt(argc, argv, &i, "--count", &v)) {
            n = parse_u64("--count", v, UINT64_MAX);
        } else if (take_opt(argc, argv, &i, "--offset", &v)) {
            offset = parse_u64("--offset", v, 1u << 30);
        } else if (take_opt(argc, argv, &i, "--device", &v)) {
            device = (int)parse_u64("--device", v, 1u << 20);
        } else if (take_opt(argc, argv, &i, "--backend", &v)) {
            set_backend(v);
        } else if (take_opt(argc, argv, &i, "--seed", &v)) {
            seed = parse_u64("--seed", v, UINT64_MAX);
            have_seed = 1;
        } else if (take_opt(argc, argv, &i, "--repeat", &v)) {
            repeat = parse_u64("--repeat", v, 1000000);
        } else if (take_opt(argc, argv, &i, "--data", &v)) {
            kind = parse_data(v);
        } else {
            usage_error("reduce: unknown option '%s'", argv[i]);
        }
    }
    if (kind == DATA_INT && !(t->kind == K_FLOAT && op == GS_OP_SUM))
        usage_error("--data int is for float SUM (f32 f64 f16 bf16 with --op sum)");
    if (kind == DATA_NAN && !(t->kind == K_FLOAT && (op == GS_OP_MIN || op == GS_OP_MAX || is_arg_op(op))))
        usage_error("--data nan is for float MIN, MAX, ARGMIN and ARGMAX");
    /* host and device buffers of (offset + n) elements must be addressable */
    if (n > (SIZE_MAX / 2) / gs_dtype_size(t->id) - offset)
        usage_error("--count %" PRIu64 " with --offset %" PRIu64 " is too large for %s", n, offset, gs_dtype_name(t->id));
    if (!have_seed)
        seed = time_seed();

    session s;
    int rc = session_open(&s, device);
    if (rc)
        return session_close(&s, rc);

    const size_t bytes = (size_t)((offset + n) * gs_dtype_size(t->id)), in_bytes = (size_t)(n * gs_dtype_size(t->id));
    const unsigned osize = out_size(t, op);
    unsigned char *host = malloc(bytes ? bytes : 1);
    cushim_ptr dbuf = 0, dout = 0;
    cushim_event ev[2] = {NULL, NULL};
    unsigned char got[2 * OUT_SLOT], again[2 * OUT_SLOT];

    printf("gridsync reduce: %s %s, n = %" PRIu64, gs_dtype_name(t->id), gs_op_name(op), n);
    print_bytes(" (", (double)in_bytes);
    printf(")%s", offset ? "" : "\n");
    if (offset)
        printf(", input at element %" PRIu64 " of its allocation\n", offset);
    printf("seed: %" PRIu64 " (--seed %" PRIu64 " repeats this input)%s%s\n", seed, seed,
           kind != DATA_DEFAULT ? ", data: " : "", kind != DATA_DEFAULT ? k_data_names[kind] : "");
    print_device_line(&s.info);
    fflush(stdout);

    if (!host) {
        fprintf(stderr, "gridsync: cannot allocate %zu bytes of host memory\n", bytes);
        rc = EXIT_FAIL;
        goto done;
    }
    make_input(t, op, kind, host, offset, n, seed);
    if (cushim_alloc(&dbuf, bytes) != 0) {
        rc = report_shim("allocating the input");
        goto done;
    }
    if (cushim_alloc(&dout, 2 * OUT_SLOT) != 0) {
        rc = report_shim("allocating the output");
        goto done;
    }
    if (cushim_h2d(dbuf, host, bytes) != 0) {
        rc = report_shim("copying the input to the device");
        goto done;
    }
    const cushim_ptr din = dbuf + offset * gs_dtype_size(t->id);

    int shim_failed;
    gs_status st = launch_and_read(&s, din, n, t, op, dout, got, 1, &shim_failed);
    if (shim_failed) {
        rc = report_shim("running the reduction");
        goto done;
    }
    char what[64];
    snprintf(what, sizeof what, "gs_reduce(%s %s, n = %" PRIu64 ")", gs_dtype_name(t->id), gs_op_name(op), n);
    if (st != GS_SUCCESS) {
        rc = report_gs(what, st);
        goto done;
    }
    verdict v;
    const unsigned char *data = host + offset * gs_dtype_size(t->id);
    verify(t, op, data, n, got, &v);
    printf("result:    %s\n", v.got);
    printf("reference: %s\n", v.want);
    printf("check:     %s, %s\n", v.ok ? "ok" : "MISMATCH", v.note);
    fflush(stdout);
    if (v.suspicious)
        printf("warning:   the difference is beyond the likely bound: suspicious, though within the "
               "rigorous one (not counted as a failure)\n");
    if (!v.ok)
        rc = EXIT_FAIL;

    if (repeat > 0) {
        float ms[TIMED_RUNS];
        if (cushim_event_create(&ev[0]) != 0 || cushim_event_create(&ev[1]) != 0) {
            rc = report_shim("creating events");
            goto done;
        }
        for (int r = 0; r < TIMED_RUNS; r++) {
            if (cushim_event_record(ev[0], s.stream) != 0) {
                rc = report_shim("recording an event");
                goto done;
            }
            for (uint64_t k = 0; k < repeat; k++) {
                st = gs_reduce(s.ctx, (const void *)(uintptr_t)din, n, t->id, op, (void *)(uintptr_t)dout,
                               (gs_stream)s.stream);
                if (st != GS_SUCCESS) {
                    rc = report_gs(what, st);
                    goto done;
                }
            }
            if (cushim_event_record(ev[1], s.stream) != 0 || cushim_stream_sync(s.stream) != 0 ||
                cushim_event_elapsed_ms(&ms[r], ev[0], ev[1]) != 0) {
                rc = report_shim("timing the reduction");
                goto done;
            }
        }
        qsort(ms, TIMED_RUNS, sizeof ms[0], cmp_float);
        const double per_call_s = (double)ms[TIMED_RUNS / 2] / 1e3 / (double)repeat;
        printf("time:      %.3f us per call (median of %d runs of %" PRIu64 " back-to-back call%s; "
               "runs %.3f .. %.3f us per call)\n",
               per_call_s * 1e6, TIMED_RUNS, repeat, repeat == 1 ? "" : "s", (double)ms[0] * 1e3 / (double)repeat,
               (double)ms[TIMED_RUNS - 1] * 1e3 / (double)repeat);
        if (n > 0 && per_call_s > 0)
            printf("bandwidth: %.1f GB/s (%" PRIu64 " bytes read per call)\n", (double)in_bytes / per_call_s / 1e9,
                   (uint64_t)in_bytes);
        else
            printf("bandwidth: n/a\n");
        /* the last of the timed calls wrote dout: it must match the first, bit for bit */
        if (cushim_d2h(again, dout, osize) != 0) {
            rc = report_shim("reading the result back");
            goto done;
        }
        if (memcmp(again, got, osize) != 0) {
            verdict v2;
            verify(t, op, data, n, again, &v2);
            printf("repeat:    MISMATCH: the last timed call gave %s, the first %s (results must be "
                   "deterministic)\n", v2.got, v.got);
            rc = EXIT_FAIL;
        } else {
            printf("repeat:    ok, the last timed call gave the same bits\n");
        }
    }

done:
    fflush(stdout);
    if (ev[0] && cushim_event_destroy(ev[0]) != 0)
        rc = rc ? rc : report_shim("destroying an event");
    if (ev[1] && cushim_event_destroy(ev[1]) != 0)
        rc = rc ? rc : report_shim("destroying an event");
    if (s.have_stream && cushim_stream_sync(s.stream) != 0)
        rc = rc ? rc : report_shim("synchronizing the stream");
    if (cushim_free(dbuf) != 0 || cushim_free(dout) != 0)
        rc = rc ? rc : report_shim("freeing device memory");
    free(host);
    return session_close(&s, rc);
}

/* ======================================================================================
 * gridsync selftest
 * ====================================================================================== */

static const uint64_t k_sizes[] = {0, 1, 255, 256, 257, 4097, (1u << 20) | 3};
static const uint64_t k_offsets[] = {0, 3};
#define NSIZES (sizeof k_sizes / sizeof k_sizes[0])
#define NOFFSETS (sizeof k_offsets / sizeof k_offsets[0])
#define MAX_OFFSET 3

static int cmd_selftest(int argc, char **argv)
{
    uint64_t seed = 0;
    int device = 0, have_seed = 0;
    const char *backend = NULL;
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (is_help(argv[i])) {
            fputs(k_usage_selftest, stdout);
            return EXIT_OK;
        } else if (take_opt(argc, argv, &i, "--device", &v)) {
            device = (int)parse_u64("--device", v, 1u << 20);
        } else if (take_opt(argc, argv, &i, "--backend", &v)) {
            set_backend(v);
            backend = v;
        } else if (take_opt(argc, argv, &i, "--seed", &v)) {
            seed = parse_u64("--seed", v, UINT64_MAX);
            have_seed = 1;
        } else {
            usage_error("selftest: unknown option '%s'", argv[i]);
        }
    }
    if (!have_seed)
        seed = time_seed();

    session s;
    int rc = session_open(&s, device);
    if (rc)
        return session_close(&s, rc);
    printf("gridsync selftest, seed %" PRIu64 " (--seed %" PRIu64 " repeats it)\n", seed, seed);
    print_device_line(&s.info);
    fflush(stdout);

    uint64_t max_n = 0;
    for (size_t k = 0; k < NSIZES; k++)
        max_n = k_sizes[k] > max_n ? k_sizes[k] : max_n;
    const size_t max_bytes = (size_t)((max_n + MAX_OFFSET) * 8);
    unsigned char *host = malloc(max_bytes);
    cushim_ptr dbuf = 0, dout = 0;
    unsigned long passed = 0, failed = 0, unsupported = 0, undefined = 0, warnings = 0;
    if (!host) {
        fprintf(stderr, "gridsync: cannot allocate %zu bytes of host memory\n", max_bytes);
        rc = EXIT_FAIL;
        goto done;
    }
    if (cushim_alloc(&dbuf, max_bytes) != 0 || cushim_alloc(&dout, 2 * OUT_SLOT) != 0) {
        rc = report_shim("allocating device memory");
        goto done;
    }

    for (int di = 0; di < NDTYPES; di++) {
        const dtype_info *t = &k_dtypes[di];
        for (int oi = 0; oi < NOPS; oi++) {
            const gs_op op = (gs_op)oi;
            const unsigned osize = out_size(t, op);
            data_kind kinds[2] = {DATA_DEFAULT, DATA_DEFAULT};
            int nkinds = 1;
            if (t->kind == K_FLOAT && op == GS_OP_SUM)
                kinds[nkinds++] = DATA_INT;
            if (t->kind == K_FLOAT && (op == GS_OP_MIN || op == GS_OP_MAX || is_arg_op(op)))
                kinds[nkinds++] = DATA_NAN;
            unsigned long pair_pass = 0, pair_fail = 0;
            int pair_unsupported = 0;
            char unsupported_msg[1100] = "";

            for (size_t si = 0; si < NSIZES && !pair_unsupported; si++) {
                for (size_t fi = 0; fi < NOFFSETS && !pair_unsupported; fi++) {
                    for (int ki = 0; ki < nkinds && !pair_unsupported; ki++) {
                        const uint64_t n = k_sizes[si], off = k_offsets[fi];
                        if (kinds[ki] == DATA_NAN && n == 0)
                            continue;
                        const uint64_t case_seed =
                            hostref_mix64(seed ^ hostref_mix64(((uint64_t)di << 48) | ((uint64_t)oi << 40) | (si << 16) |
                                               (fi << 8) | (uint64_t)ki));
                        make_input(t, op, kinds[ki], host, off, n, case_seed);
                        if (cushim_h2d(dbuf, host, (size_t)((off + n) * gs_dtype_size(t->id))) != 0) {
                            rc = report_shim("copying an input to the device");
                            goto done;
                        }
                        unsigned char got[2 * OUT_SLOT];
                        int shim_failed;
                        gs_status st = launch_and_read(&s, dbuf + off * gs_dtype_size(t->id), n, t, op, dout, got, 2, &shim_failed);
                        if (shim_failed) {
                            /* a failed copy or sync: the CUDA context is likely unusable now */
                            rc = report_shim("running a reduction");
                            goto done;
                        }
                        char replay[400];
                        snprintf(replay, sizeof replay,
                                 "gridsync reduce --dtype %s --op %s --count %" PRIu64 " --offset %" PRIu64
                                 " --seed %" PRIu64 "%s%s --device %d%s%s",
                                 gs_dtype_name(t->id), gs_op_name((gs_op)oi), n, off, case_seed, kinds[ki] ? " --data " : "",
                                 kinds[ki] ? k_data_names[kinds[ki]] : "", device, backend ? " --backend " : "",
                                 backend ? backend : "");
                        if (st == GS_ERROR_UNSUPPORTED && pair_pass + pair_fail == 0) {
                            pair_unsupported = 1;
                            snprintf(unsupported_msg, sizeof unsupported_msg, "%s", gs_last_error_message());
                            break;
                        }
                        if (st != GS_SUCCESS) {
                            pair_fail++;
                            printf("FAIL %s %s n=%" PRIu64 " offset=%" PRIu64 " data=%s: gs_reduce: %s: %s\n", gs_dtype_name(t->id),
                                   gs_op_name((gs_op)oi), n, off, k_data_names[kinds[ki]], gs_status_string(st),
                                   gs_last_error_message());
                            continue;
                        }
                        if (t->kind == K_FLOAT && is_bit_op(op)) {
                            pair_fail++;
                            printf("FAIL %s %s: gs_reduce succeeded, but bitwise operations are not defined "
                                   "for floating-point types (GS_ERROR_UNSUPPORTED expected)\n",
                                   gs_dtype_name(t->id), gs_op_name((gs_op)oi));
                            continue;
                        }
                        verdict v;
                        verify(t, op, host + off * gs_dtype_size(t->id), n, got, &v);
                        const int same = memcmp(got, got + OUT_SLOT, osize) == 0;
                        if (v.ok && same) {
                            pair_pass++;
                            if (v.suspicious) {
                                warnings++;
                                printf("WARN %s %s n=%" PRIu64 " offset=%" PRIu64 " data=%s: got %s, want %s (%s): "
                                       "suspicious, not counted as a failure\n     replay: %s\n",
                                       gs_dtype_name(t->id), gs_op_name((gs_op)oi), n, off, k_data_names[kinds[ki]], v.got, v.want,
                                       v.note, replay);
                            }
                            continue;
                        }
                        pair_fail++;
                        if (!v.ok)
                            printf("FAIL %s %s n=%" PRIu64 " offset=%" PRIu64 " data=%s: got %s, want %s (%s)\n",
                                   gs_dtype_name(t->id), gs_op_name((gs_op)oi), n, off, k_data_names[kinds[ki]], v.got, v.want, v.note);
                        if (!same) {
                            verdict v2;
                            verify(t, op, host + off * gs_dtype_size(t->id), n, got + OUT_SLOT, &v2);
                            printf("FAIL %s %s n=%" PRIu64 " offset=%" PRIu64 " data=%s: a second call right "
                                   "after the first gave %s, the first %s (must be identical)\n",
                                   gs_dtype_name(t->id), gs_op_name((gs_op)oi), n, off, k_data_names[kinds[ki]], v2.got, v.got);
                        }
                        printf("     replay: %s\n", replay);
                    }
                }
            }
            if (pair_unsupported) {
                unsupported++;
                if (t->kind == K_FLOAT && is_bit_op(op))
                    undefined++;
                printf("  %-4s %-6s unsupported: %s\n", gs_dtype_name(t->id), gs_op_name((gs_op)oi), unsupported_msg);
            } else {
                printf("  %-4s %-6s %lu passed%s", gs_dtype_name(t->id), gs_op_name((gs_op)oi), pair_pass, pair_fail ? ", " : "\n");
                if (pair_fail)
                    printf("%lu FAILED\n", pair_fail);
            }
            fflush(stdout);
            passed += pair_pass;
            failed += pair_fail;
        }
    }
    printf("selftest: %lu passed, %lu failed, %lu unsupported\n", passed, failed, unsupported);
    printf("  (passed and failed count cases: dtype x op x size x offset x data; unsupported counts dtype/op "
           "pairs, %lu of them bitwise operations over floats, which gridsync.h leaves undefined)\n",
           undefined);
    if (warnings)
        printf("  %lu passed case%s had a float error beyond the likely (probabilistic) bound: see WARN above\n",
               warnings, warnings == 1 ? "" : "s");
    if (failed)
        rc = EXIT_FAIL;

done:
    fflush(stdout);
    if (cushim_free(dbuf) != 0 || cushim_free(dout) != 0)
        rc = rc ? rc : report_shim("freeing device memory");
    free(host);
    return session_close(&s, rc);
}

/* ======================================================================================
 * main
 * ====================================================================================== */

int main(int argc, char **argv)
{
    /* The tables above are indexed by the enums' values. */
    for (int i = 0; i < NDTYPES; i++)
        if ((int)k_dtypes[i].id != i) {
            fprintf(stderr, "gridsync: internal error: dtype table out of order\n");
            return EXIT_FAIL;
        }

    if (argc < 2) {
        fputs(k_usage, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (is_help(cmd) || strcmp(cmd, "help") == 0) {
        if (strcmp(cmd, "help") == 0 && argc > 2) {
            const char *sub = argv[2];
            if (strcmp(sub, "info") == 0) { fputs(k_usage_info, stdout); return EXIT_OK; }
            if (strcmp(sub, "reduce") == 0) { fputs(k_usage_reduce, stdout); return EXIT_OK; }
            if (strcmp(sub, "selftest") == 0) { fputs(k_usage_selftest, stdout); return EXIT_OK; }
            usage_error("help: unknown command '%s'", sub);
        }
        fputs(k_usage, stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("gridsync %d.%d.%d (libgridsync %s)\n", GS_VERSION_MAJOR, GS_VERSION_MINOR, GS_VERSION_PATCH,
               gs_version_string());
        return EXIT_OK;
    }
    g_cmd = cmd;
    if (strcmp(cmd, "info") == 0)
        return cmd_info(argc - 2, argv + 2);
    if (strcmp(cmd, "reduce") == 0)
        return cmd_reduce(argc - 2, argv + 2);
    if (strcmp(cmd, "selftest") == 0)
        return cmd_selftest(argc - 2, argv + 2);
    g_cmd = "";
    if (cmd[0] == '-')
        usage_error("unknown option '%s'", cmd);
    usage_error("unknown command '%s' (info, reduce, selftest)", cmd);
}
