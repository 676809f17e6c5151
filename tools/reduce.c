/* gridsync reduce: one gs_reduce on fresh random data, checked and timed. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char k_usage_reduce[] =
    "usage: gridsync reduce [--dtype T] [--op OP] [--out-dtype T] [--count N] [--offset K]\n"
    "                       [--device D] [--backend NAME] [--seed S] [--repeat R]\n"
    "                       [--data KIND] [--exact] [--json]\n"
    "\n"
    "Fills device memory with random data, runs gs_reduce once and checks the result against a\n"
    "host reference, then times R back-to-back calls (CUDA events; median of 7 runs).\n"
    "\n"
    "  --dtype T       i32 u32 i64 u64 f32 f64 f16 bf16 i8 u8 (default f32)\n"
    "  --op OP         sum prod min max argmin argmax and or xor (default sum)\n"
    "  --out-dtype T   the result's type (gs_reduce_ex): the default, or a wider one the\n"
    "                  library offers (i8/i32 -> i64, u8/u32 -> u64 for sum and prod,\n"
    "                  f32 -> f64 for sum and prod, f16/bf16 -> f32 for sum to max)\n"
    "  --count N       elements (default 16M = 16777216); suffixes K M G T are powers of 1024\n"
    "  --offset K      start the input K elements into its allocation (default 0)\n"
    "  --device D      CUDA device ordinal (default 0)\n"
    "  --backend NAME  force a backend (sets GRIDSYNC_BACKEND)\n"
    "  --seed S        seed of the random data (default: from the clock; always printed)\n"
    "  --repeat R      calls per timed run (default 100; 0 skips timing)\n"
    "  --data KIND     default: data chosen for the op (see gridsync(1));\n"
    "                  int: float SUM over integers in [-8, 8] (checked exactly);\n"
    "                  nan: float MIN/MAX/ARGMIN/ARGMAX with NaNs inserted;\n"
    "                  wide: float SUM over the type's whole exponent range (for --exact)\n"
    "  --exact         a correctly rounded float SUM (GS_REDUCE_EXACT; f16 bf16 f32 f64, and\n"
    "                  --out-dtype f32 from f16/bf16, f64 from f32), checked bit for bit\n"
    "                  against an exact host sum; --data wide spreads the magnitudes\n"
    "  --json          one JSON object on stdout instead of the text\n";

typedef struct reduce_call {
    cushim_ptr in, out;
    uint64_t n;
    gs_dtype dtype, out_dtype;
    gs_op op;
    uint32_t flags;
} reduce_call;

static gs_status launch_reduce(session *s, const void *arg)
{
    const reduce_call *c = arg;
    gs_reduce_options opts = {.struct_size = sizeof opts, .out_dtype = (int32_t)c->out_dtype, .flags = c->flags};
    return gs_reduce_ex(s->ctx, (const void *)(uintptr_t)c->in, c->n, c->dtype, c->op, (void *)(uintptr_t)c->out,
                        (gs_stream)s->stream, &opts);
}

/* The call's parameters: in the JSON object from the start (a run that fails still says
 * what it ran), as lines once the device is there (without one, the error line alone). */
static void describe_json(const dtype_info *t, gs_op op, gs_dtype out, uint64_t n, uint64_t offset, uint64_t seed,
                          data_kind kind, int exact)
{
    json_str("command", "reduce");
    json_bool("exact", exact);
    json_str("dtype", gs_dtype_name(t->id));
    json_str("op", gs_op_name(op));
    json_str("out_dtype", gs_dtype_name(out));
    json_uint("count", n);
    json_uint("offset", offset);
    json_uint("seed", seed);
    json_str("data", k_data_names[kind]);
}

static void describe_text(const dtype_info *t, gs_op op, gs_dtype out, uint64_t n, uint64_t offset, uint64_t seed,
                          data_kind kind, int exact)
{
    say("gridsync reduce: %s%s %s", exact ? "exact " : "", gs_dtype_name(t->id), gs_op_name(op));
    if (out != hostref_default_out(t->id, op))
        say(" -> %s", gs_dtype_name(out));
    say(", n = %" PRIu64, n);
    print_bytes(" (", (double)n * (double)gs_dtype_size(t->id));
    say(")%s", offset ? "" : "\n");
    if (offset)
        say(", input at element %" PRIu64 " of its allocation\n", offset);
    say("seed: %" PRIu64 " (--seed %" PRIu64 " repeats this input)%s%s\n", seed, seed,
        kind != DATA_DEFAULT ? ", data: " : "", kind != DATA_DEFAULT ? k_data_names[kind] : "");
}

/* reduce's own options (the common ones are in common_opts). */
typedef struct reduce_opts {
    uint64_t n, offset;
    int out_given; /* a gs_dtype, or -1: the default for dtype and op */
    int exact;
    data_kind kind;
} reduce_opts;

static int take_reduce_opt(int argc, char **argv, int *i, void *state)
{
    reduce_opts *o = state;
    const char *v;
    if (take_opt(argc, argv, i, "--out-dtype", &v))
        o->out_given = (int)parse_dtype(v)->id;
    else if (take_opt(argc, argv, i, "--count", &v))
        o->n = parse_u64("--count", v, UINT64_MAX);
    else if (take_opt(argc, argv, i, "--offset", &v))
        o->offset = parse_u64("--offset", v, 1u << 30);
    else if (take_opt(argc, argv, i, "--data", &v))
        o->kind = parse_data(v);
    else if (strcmp(argv[*i], "--exact") == 0)
        o->exact = 1;
    else
        return 0;
    return 1;
}

int cmd_reduce(int argc, char **argv)
{
    common_opts c;
    reduce_opts o = {16777216, 0, -1, 0, DATA_DEFAULT};
    if (parse_command_line(argc, argv, k_usage_reduce, OPT_DATA | OPT_DEVICE | OPT_REPEAT, &c, take_reduce_opt, &o))
        return EXIT_OK;
    const uint64_t n = o.n, offset = o.offset;
    const int out_given = o.out_given, exact = o.exact;
    const data_kind kind = o.kind;
    const dtype_info *t = c.t;
    const gs_op op = c.op;
    const uint64_t seed = c.seed, repeat = c.repeat;
    if (kind == DATA_INT && !(t->kind == K_FLOAT && op == GS_OP_SUM))
        usage_error("--data int is for float SUM (f32 f64 f16 bf16 with --op sum)");
    if (kind == DATA_NAN && !(t->kind == K_FLOAT && (op == GS_OP_MIN || op == GS_OP_MAX || is_arg_op(op))))
        usage_error("--data nan is for float MIN, MAX, ARGMIN and ARGMAX");
    if (kind == DATA_WIDE && !(t->kind == K_FLOAT && op == GS_OP_SUM))
        usage_error("--data wide is for float SUM (f32 f64 f16 bf16 with --op sum)");
    const size_t esize = gs_dtype_size(t->id);
    /* host and device buffers of (offset + n) elements must be addressable */
    if (n > (SIZE_MAX / 2) / esize - offset)
        usage_error("--count %" PRIu64 " with --offset %" PRIu64 " is too large for %s", n, offset, gs_dtype_name(t->id));
    const gs_dtype out = out_given >= 0 ? (gs_dtype)out_given : hostref_default_out(t->id, op);

    describe_json(t, op, out, n, offset, seed, kind, exact);
    session s;
    int rc = session_open(&s, c.device);
    if (rc)
        return session_close(&s, rc);
    describe_text(t, op, out, n, offset, seed, kind, exact);
    print_device_line(&s.info);
    fflush(stdout);

    const size_t bytes = (size_t)((offset + n) * esize), osize = gs_dtype_size(out);
    unsigned char *host = malloc(bytes ? bytes : 1);
    cushim_ptr dbuf = 0, dout = 0;
    unsigned char got[2 * OUT_SLOT], again[2 * OUT_SLOT];
    if (!host) {
        fail("cannot allocate %zu bytes of host memory", bytes);
        rc = EXIT_FAIL;
        goto done;
    }
    make_input(t, op, kind, host, offset, n, seed);
    if (cushim_alloc(&dbuf, bytes) != 0 || cushim_alloc(&dout, 2 * OUT_SLOT) != 0) {
        rc = report_shim("allocating device memory");
        goto done;
    }
    if (cushim_h2d(dbuf, host, bytes) != 0) {
        rc = report_shim("copying the input to the device");
        goto done;
    }
    const uint32_t flags = exact ? GS_REDUCE_EXACT : 0;
    const reduce_call call = {dbuf + offset * esize, dout, n, t->id, out, op, flags};

    int shim_failed;
    gs_status st = launch_and_read(&s, call.in, n, t, op, out, flags, dout, got, 1, &shim_failed);
    if (shim_failed) {
        rc = report_shim("running the reduction");
        goto done;
    }
    char what[80];
    snprintf(what, sizeof what, "gs_reduce(%s%s %s -> %s, n = %" PRIu64 ")", exact ? "exact " : "",
             gs_dtype_name(t->id), gs_op_name(op), gs_dtype_name(out), n);
    if (st != GS_SUCCESS) {
        rc = report_gs(what, st);
        goto done;
    }
    verdict v;
    const unsigned char *data = host + offset * esize;
    if (exact)
        verify_exact(t, out, data, n, got, &v);
    else
        verify(t, op, out, data, n, got, &v);
    say("result:    %s\n", v.got);
    say("reference: %s\n", v.want);
    say("check:     %s, %s\n", v.ok ? "ok" : "MISMATCH", v.note);
    if (v.suspicious)
        say("warning:   the difference is beyond the likely bound: suspicious, though within the "
            "rigorous one (not counted as a failure)\n");
    fflush(stdout);
    json_open("check", '{');
    json_bool("ok", v.ok);
    json_str("result", v.got);
    json_str("reference", v.want);
    json_str("how", v.note);
    json_bool("suspicious", v.suspicious);
    json_close();
    if (!v.ok)
        rc = EXIT_FAIL;

    if (repeat > 0) {
        const int trc = time_launches(&s, launch_reduce, &call, repeat, what, (double)(n * esize));
        if (trc) {
            rc = trc;
            goto done;
        }
        /* the last of the timed calls wrote dout: it must match the first, bit for bit */
        if (cushim_d2h(again, dout, osize) != 0) {
            rc = report_shim("reading the result back");
            goto done;
        }
        const int same = memcmp(again, got, osize) == 0;
        json_bool("repeat_identical", same);
        if (!same) {
            verdict v2;
            if (exact)
                verify_exact(t, out, data, n, again, &v2);
            else
                verify(t, op, out, data, n, again, &v2);
            say("repeat:    MISMATCH: the last timed call gave %s, the first %s (results must be "
                "deterministic)\n", v2.got, v.got);
            rc = EXIT_FAIL;
        } else {
            say("repeat:    ok, the last timed call gave the same bits\n");
        }
    }

done:
    fflush(stdout);
    if (s.have_stream && cushim_stream_sync(s.stream) != 0)
        rc = rc ? rc : report_shim("synchronizing the stream");
    if (cushim_free(dbuf) != 0 || cushim_free(dout) != 0)
        rc = rc ? rc : report_shim("freeing device memory");
    free(host);
    return session_close(&s, rc);
}
