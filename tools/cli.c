/* The gridsync command's shared parts: what it knows about dtypes beyond internal/dtype.h,
 * errors and exit statuses, option parsing, the device session, one checked launch. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* ======================================================================================
 * What the tool adds to internal/dtype.h's facts about each gs_dtype.
 * ====================================================================================== */

/* Indexed by gs_dtype (checked in main). */
const dtype_info k_dtypes[] = {
    {GS_INT32, "int32", K_SIGNED, 1000},         {GS_UINT32, "uint32", K_UNSIGNED, 1000},
    {GS_INT64, "int64", K_SIGNED, 1ull << 40},   {GS_UINT64, "uint64", K_UNSIGNED, 1ull << 40},
    {GS_FLOAT32, "float32", K_FLOAT, 0},         {GS_FLOAT64, "float64", K_FLOAT, 0},
    {GS_FLOAT16, "float16", K_FLOAT, 0},         {GS_BFLOAT16, "bfloat16", K_FLOAT, 0},
    {GS_INT8, "int8", K_SIGNED, 100},            {GS_UINT8, "uint8", K_UNSIGNED, 100},
};

/* Aliases the command line also accepts (internal/dtype.h spells the names). */
static const char *const k_op_alias[] = {"add", "mul", NULL, NULL, NULL, NULL, "bit_and", "bit_or", "bit_xor"};

int is_arg_op(gs_op op)
{
    return op == GS_OP_ARGMIN || op == GS_OP_ARGMAX;
}

int is_bit_op(gs_op op)
{
    return op == GS_OP_BIT_AND || op == GS_OP_BIT_OR || op == GS_OP_BIT_XOR;
}

/* Bytes of gs_reduce's (default) result. */
unsigned out_size(const dtype_info *t, gs_op op)
{
    return (unsigned)gs_dtype_size(hostref_default_out(t->id, op));
}

/* ======================================================================================
 * The check of one result: hostref's reference, within the rigorous bound.
 * ====================================================================================== */

void verify(const dtype_info *t, gs_op op, gs_dtype out, const void *data, uint64_t n, const unsigned char *got,
            verdict *v)
{
    hostref_ref r;
    hostref_reduce(&r, t->id, op, out, data, n);
    hostref_check(&r, data, got, &hostref_rigorous, v);
}

/* An exact sum (GS_REDUCE_EXACT): the same bits as hostref's exact sum, nothing less. */
void verify_exact(const dtype_info *t, gs_dtype out, const void *data, uint64_t n, const unsigned char *got,
                  verdict *v)
{
    const uint64_t want = hostref_exact_sum(t->id, data, n, out);
    uint64_t bits = 0;
    memcpy(&bits, got, gs_dtype_size(out)); /* little-endian: the low bytes */
    memset(v, 0, sizeof *v);
    v->ok = hostref_exact_same(out, bits, want);
    hostref_exact_format(out, bits, v->got, sizeof v->got);
    hostref_exact_format(out, want, v->want, sizeof v->want);
    snprintf(v->note, sizeof v->note, "bitwise against the correctly rounded sum (hostref's exact sum)");
}

/* ======================================================================================
 * Errors, names, numbers.
 * ====================================================================================== */

const char *g_cmd = ""; /* the subcommand, for usage messages */

void usage_error(const char *fmt, ...)
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

/* Whether libgridsync traces its failures itself (GRIDSYNC_DEBUG, read as core/error.c
 * reads it): then its "error:" line already holds the message. */
static int library_traces(void)
{
    const char *v = getenv("GRIDSYNC_DEBUG");
    return v && *v && strcmp(v, "0") != 0;
}

/* Reports a failed gridsync call on one line and returns the exit status for it. Under
 * GRIDSYNC_DEBUG the line leaves out the message the library's trace printed just above,
 * so the reason appears once. */
int report_gs(const char *what, gs_status st)
{
    const char *msg = gs_last_error_message();
    char head[256], full[1400];
    if (st == GS_ERROR_NO_DRIVER)
        snprintf(head, sizeof head, "no CUDA driver");
    else if (st == GS_ERROR_NO_DEVICE)
        snprintf(head, sizeof head, "no CUDA device");
    else
        snprintf(head, sizeof head, "%s: %s", what, gs_status_string(st));
    if (!*msg)
        snprintf(full, sizeof full, "%s: %s", head, gs_status_string(st));
    else
        snprintf(full, sizeof full, "%s: %s", head, st == GS_ERROR_NO_DRIVER ? strip_prefix(msg, "no CUDA driver: ") : msg);
    if (*msg && library_traces())
        fail_traced(head, full);
    else
        fail("%s", full);
    return exit_code_for(st);
}

int report_shim(const char *what)
{
    fail("%s: %s", what, cushim_error());
    return EXIT_FAIL;
}

int report_shim_init(cushim_status st)
{
    if (st == CUSHIM_NO_DRIVER) {
        fail("no CUDA driver: %s", strip_prefix(cushim_error(), "no CUDA driver: "));
        return EXIT_NO_DRIVER;
    }
    if (st == CUSHIM_NO_DEVICE) {
        fail("no CUDA device: %s", cushim_error());
        return EXIT_NO_DEVICE;
    }
    return report_shim("setting up the CUDA context");
}

const dtype_info *parse_dtype(const char *s)
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

gs_op parse_op(const char *s)
{
    for (int i = 0; i < NOPS; i++)
        if (strcmp(s, gs_op_name((gs_op)i)) == 0 || (k_op_alias[i] && strcmp(s, k_op_alias[i]) == 0))
            return (gs_op)i;
    usage_error("unknown op '%s' (one of: sum prod min max argmin argmax and or xor)", s);
}

data_kind parse_data(const char *s)
{
    for (int i = 0; i < DATA_COUNT; i++)
        if (strcmp(s, k_data_names[i]) == 0)
            return (data_kind)i;
    usage_error("unknown --data '%s' (one of: default int nan wide)", s);
}

/* A non-negative integer: decimal or 0x hex, optionally with a binary suffix K, M, G or T
 * (x 2^10, 2^20, 2^30, 2^40); at most max. */
uint64_t parse_u64(const char *opt, const char *s, uint64_t max)
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
int take_opt(int argc, char **argv, int *i, const char *name, const char **value)
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

int is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

void set_backend(const char *name)
{
    if (!*name)
        usage_error("--backend needs a name (cuda_sm20, cuda_sm11_compat) or an absolute path");
    if (setenv("GRIDSYNC_BACKEND", name, 1) != 0) {
        fail("setenv(GRIDSYNC_BACKEND): %s", strerror(errno));
        exit(EXIT_FAIL);
    }
}

uint64_t time_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    /* printed, and short enough to retype */
    return hostref_mix64((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ((uint64_t)getpid() << 32)) %
           1000000000000ull;
}

void common_opts_init(common_opts *o)
{
    memset(o, 0, sizeof *o);
    o->t = &k_dtypes[GS_FLOAT32];
    o->op = GS_OP_SUM;
    o->repeat = 100;
}

int take_common_opt(int argc, char **argv, int *i, unsigned which, common_opts *o)
{
    const char *v;
    if (take_opt(argc, argv, i, "--backend", &v)) {
        set_backend(v);
        o->backend = v;
    } else if (strcmp(argv[*i], "--json") == 0) {
        g_json = 1;
    } else if ((which & OPT_DATA) && take_opt(argc, argv, i, "--dtype", &v)) {
        o->t = parse_dtype(v);
    } else if ((which & OPT_DATA) && take_opt(argc, argv, i, "--op", &v)) {
        o->op = parse_op(v);
    } else if ((which & OPT_DEVICE) && take_opt(argc, argv, i, "--device", &v)) {
        o->device = (int)parse_u64("--device", v, 1u << 20);
    } else if ((which & OPT_DEVICE) && take_opt(argc, argv, i, "--seed", &v)) {
        o->seed = parse_u64("--seed", v, UINT64_MAX);
        o->have_seed = 1;
    } else if ((which & OPT_REPEAT) && take_opt(argc, argv, i, "--repeat", &v)) {
        o->repeat = parse_u64("--repeat", v, 1000000);
    } else {
        return 0;
    }
    return 1;
}

void common_opts_done(common_opts *o)
{
    if (!o->have_seed)
        o->seed = time_seed();
}

int parse_command_line(int argc, char **argv, const char *usage, unsigned which, common_opts *o, own_opt_fn own,
                       void *state)
{
    common_opts_init(o);
    for (int i = 0; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs(usage, stdout);
            return 1;
        }
        if (!take_common_opt(argc, argv, &i, which, o) && !(own && own(argc, argv, &i, state)))
            usage_error("%s: unknown option '%s'", g_cmd, argv[i]);
    }
    common_opts_done(o);
    return 0;
}

/* ======================================================================================
 * Common setup: a gridsync context and the CUDA context for the tool's own calls.
 * ====================================================================================== */

/* Returns 0 or an exit status (the failure already reported). */
int session_open(session *s, int device)
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
int session_close(session *s, int rc)
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

/* The members naming a device and its backend, in the current JSON object. */
void json_context_info(const gs_context_info *info)
{
    char cc[24];
    snprintf(cc, sizeof cc, "%d.%d", info->cc_major, info->cc_minor);
    json_str("name", info->device_name);
    json_str("compute_capability", cc);
    json_int("multiprocessors", info->multiprocessor_count);
    json_str("backend", info->backend_name);
    json_str("backend_file", info->backend_path);
}

void print_device_line(const gs_context_info *info)
{
    say("device %d: %s, compute capability %d.%d, %d multiprocessors\n", info->device, info->device_name,
        info->cc_major, info->cc_minor, info->multiprocessor_count);
    say("backend: %s (%s)\n", info->backend_name, info->backend_path);
    json_open("device", '{');
    json_int("index", info->device);
    json_context_info(info);
    json_close();
}

/* ======================================================================================
 * One reduction on the device: poisoned output, launch, wait, read back.
 * ====================================================================================== */

/* Returns GS_SUCCESS, the gs_reduce status (message left in gs_last_error_message), or
 * GS_ERROR_CUDA with *shim_failed set when a shim call failed (cushim_error() says why). */
gs_status launch_and_read(session *s, cushim_ptr in, uint64_t n, const dtype_info *t, gs_op op, gs_dtype out_dtype,
                          uint32_t flags, cushim_ptr out, unsigned char *got, int times, int *shim_failed)
{
    *shim_failed = 0;
    /* cuMemsetD8 and cuMemcpyHtoD run on the legacy default stream, which does not order
     * with s->stream (created non-blocking), and may return before they are done on the
     * device: wait for the whole context before launching. */
    if (cushim_memset8(out, POISON, (size_t)times * OUT_SLOT) != 0 || cushim_ctx_sync() != 0) {
        *shim_failed = 1;
        return GS_ERROR_CUDA;
    }
    gs_reduce_options opts = {.struct_size = sizeof opts, .out_dtype = (int32_t)out_dtype, .flags = flags};
    for (int k = 0; k < times; k++) {
        gs_status st = gs_reduce_ex(s->ctx, (const void *)(uintptr_t)in, n, t->id, op,
                                    (void *)(uintptr_t)(out + (cushim_ptr)k * OUT_SLOT), (gs_stream)s->stream, &opts);
        if (st != GS_SUCCESS)
            return st;
    }
    if (cushim_stream_sync(s->stream) != 0 || cushim_d2h(got, out, (size_t)times * OUT_SLOT) != 0) {
        *shim_failed = 1;
        return GS_ERROR_CUDA;
    }
    return GS_SUCCESS;
}

