/* gridsync scan: one gs_scan on fresh random data, every result checked bit for bit against
 * hostref_scan (the host model of the scan's association order), or with --exact against
 * hostref_scan_exact (the correctly rounded prefix sums), then timed as `reduce` times
 * gs_reduce. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "scan_order.h"

const char k_usage_scan[] =
    "usage: gridsync scan [--dtype T] [--op OP] [--out-dtype T] [--count N] [--offset K]\n"
    "                     [--exclusive] [--exact] [--device D] [--backend NAME] [--seed S]\n"
    "                     [--repeat R] [--data KIND] [--json]\n"
    "\n"
    "Fills device memory with random data, runs gs_scan once and checks every one of the N\n"
    "results against the host model of the scan's order (hostref_scan): the same bits,\n"
    "floats included; then times R back-to-back calls (CUDA events; median of 7 runs).\n"
    "\n"
    "  --dtype T       i32 u32 i64 u64 f32 f64 f16 bf16 i8 u8 (default f32)\n"
    "  --op OP         sum prod min max and or xor (default sum; argmin and argmax have no scan)\n"
    "  --out-dtype T   the results' type: the input's (the default), or a wider one the\n"
    "                  library offers (i8/i32 -> i64, u8/u32 -> u64 for sum and prod,\n"
    "                  f32 -> f64 for sum and prod, f16/bf16 -> f32 for sum to max)\n"
    "  --exclusive     an exclusive scan (GS_SCAN_EXCLUSIVE): out[0] is the op's identity\n"
    "  --exact         correctly rounded float prefix sums (GS_SCAN_EXACT; sum over f16 bf16\n"
    "                  f32 f64, and --out-dtype f32 from f16/bf16, f64 from f32), every result\n"
    "                  and the total accumulator checked bit for bit against\n"
    "                  hostref_scan_exact; --data wide spreads the magnitudes\n"
    "  --count N       elements (default 16M = 16777216); suffixes K M G T are powers of 1024\n"
    "  --offset K      start the input K elements into its allocation (default 0)\n"
    "  --device D, --backend NAME, --seed S, --repeat R, --json: as for reduce\n"
    "  --data KIND     default, int (float sum over integers), nan (float min/max with\n"
    "                  NaNs inserted) or wide (float sum over the whole exponent range)\n";

typedef struct scan_call {
    cushim_ptr in, out;
    uint64_t n;
    gs_dtype dtype;
    gs_op op;
    int32_t out_dtype; /* GS_OUT_DEFAULT or a gs_dtype */
    uint32_t flags;
    cushim_ptr total; /* GS_SCAN_EXACT: the gs_exact_acc of in[0, n); else 0 */
} scan_call;

static gs_status launch_scan(session *s, const void *arg)
{
    const scan_call *c = arg;
    gs_scan_options opts = {.struct_size = sizeof opts, .out_dtype = c->out_dtype, .flags = c->flags,
                            .total = (gs_exact_acc *)(uintptr_t)c->total};
    return gs_scan(s->ctx, (const void *)(uintptr_t)c->in, c->n, c->dtype, c->op, (void *)(uintptr_t)c->out,
                   (gs_stream)s->stream, &opts);
}

/* scan's own options (the common ones are in common_opts). */
typedef struct scan_opts {
    uint64_t n, offset;
    int out_given; /* a gs_dtype, or -1: the input's */
    int exclusive, exact;
    data_kind kind;
} scan_opts;

static int take_scan_opt(int argc, char **argv, int *i, void *state)
{
    scan_opts *o = state;
    const char *v;
    if (take_opt(argc, argv, i, "--out-dtype", &v))
        o->out_given = (int)parse_dtype(v)->id;
    else if (take_opt(argc, argv, i, "--count", &v))
        o->n = parse_u64("--count", v, UINT64_MAX);
    else if (take_opt(argc, argv, i, "--offset", &v))
        o->offset = parse_u64("--offset", v, 1u << 30);
    else if (take_opt(argc, argv, i, "--data", &v))
        o->kind = parse_data(v);
    else if (strcmp(argv[*i], "--exclusive") == 0)
        o->exclusive = 1;
    else if (strcmp(argv[*i], "--exact") == 0)
        o->exact = 1;
    else
        return 0;
    return 1;
}

/* Whether two results of type t are the same: the same bits, or both NaN (a NaN's sign and
 * payload are not part of the default scan's contract: x86 and CUDA make different NaNs from
 * inf - inf). An exact scan writes the type's default quiet NaN (docs/semantics.md §12), as
 * hostref_scan_exact does, so there the bits alone decide. */
static int same_result(gs_dtype t, int exact, const unsigned char *a, const unsigned char *b)
{
    if (memcmp(a, b, gs_dtype_size(t)) == 0)
        return 1;
    return !exact && gs_dtype_is_float(t) && isnan(hostref_load(t, a, 0)) && isnan(hostref_load(t, b, 0));
}

/* An exact result shows its bits too: a difference in the last place is the point there. */
static void format_result(gs_dtype t, gs_op op, int exact, const unsigned char *p, char *buf, size_t len)
{
    uint64_t bits = 0;
    memcpy(&bits, p, gs_dtype_size(t)); /* little-endian: the low bytes */
    if (exact)
        hostref_exact_format(t, bits, buf, (unsigned)len);
    else
        hostref_format(t, op, hostref_load(t, p, 0), buf, len);
}

/* Every result against the reference's; returns the number of wrong ones, *first the
 * first's index. */
static uint64_t check_results(gs_dtype out, int exact, const unsigned char *got, const unsigned char *want,
                              uint64_t n, uint64_t *first)
{
    const size_t osize = gs_dtype_size(out);
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++)
        if (!same_result(out, exact, got + i * osize, want + i * osize) && bad++ == 0)
            *first = i;
    return bad;
}

/* The reference results of `call` (results of type out, the input at data) into want, and
 * with GS_SCAN_EXACT the total into *total; `how` gets the check's description. Returns
 * GS_SUCCESS, hostref_scan's status, or GS_ERROR_UNSUPPORTED for a pair hostref_scan_exact
 * does not take. */
static gs_status reference(const scan_call *call, const unsigned char *data, gs_dtype out, unsigned char *want,
                           gs_exact_acc *total, char *how, size_t len)
{
    const int exclusive = (call->flags & GS_SCAN_EXCLUSIVE) != 0;
    if (call->flags & GS_SCAN_EXACT) {
        snprintf(how, len, "bitwise against hostref_scan_exact (each exact prefix sum rounded once), the total too");
        return hostref_scan_exact(data, call->n, call->dtype, out, exclusive, NULL, 0, want, total) == 0
                   ? GS_SUCCESS
                   : GS_ERROR_UNSUPPORTED;
    }
    const unsigned items = GS_SCAN_ITEMS(gs_dtype_size(out));
    snprintf(how, len, "bitwise against hostref_scan (%u threads x %u items a tile, groups of %u tiles)",
             GS_SCAN_THREADS, items, GS_SCAN_GROUP);
    return hostref_scan(data, call->n, call->dtype, call->op, call->out_dtype, exclusive, GS_SCAN_THREADS, items,
                        GS_SCAN_GROUP, want);
}

/* The call's parameters: in the JSON object from the start (a run that fails still says
 * what it ran), as lines once the device is there (without one, the error line alone). */
static void describe_json(const scan_opts *o, const dtype_info *t, gs_op op, gs_dtype out, uint64_t seed)
{
    json_str("command", "scan");
    json_bool("exact", o->exact);
    json_bool("exclusive", o->exclusive);
    json_str("dtype", gs_dtype_name(t->id));
    json_str("op", gs_op_name(op));
    json_str("out_dtype", gs_dtype_name(out));
    json_uint("count", o->n);
    json_uint("offset", o->offset);
    json_uint("seed", seed);
    json_str("data", k_data_names[o->kind]);
}

static void describe_text(const scan_opts *o, const dtype_info *t, gs_op op, gs_dtype out, uint64_t seed)
{
    say("gridsync scan: %s%s %s %s", o->exact ? "exact " : "", o->exclusive ? "exclusive" : "inclusive",
        gs_dtype_name(t->id), gs_op_name(op));
    if (out != t->id)
        say(" -> %s", gs_dtype_name(out));
    say(", n = %" PRIu64, o->n);
    print_bytes(" (", (double)o->n * (double)gs_dtype_size(t->id));
    say(")%s", o->offset ? "" : "\n");
    if (o->offset)
        say(", input at element %" PRIu64 " of its allocation\n", o->offset);
    say("seed: %" PRIu64 " (--seed %" PRIu64 " repeats this input)%s%s\n", seed, seed,
        o->kind != DATA_DEFAULT ? ", data: " : "", o->kind != DATA_DEFAULT ? k_data_names[o->kind] : "");
}

/* The check's lines and the JSON object "check"; returns whether everything matched. got and
 * want hold n results and got the poisoned bytes after them; the totals count only with
 * GS_SCAN_EXACT. */
static int report_check(const scan_call *call, gs_dtype out, const unsigned char *got, const unsigned char *want,
                        const gs_exact_acc *got_total, const gs_exact_acc *want_total, const char *how)
{
    const int exact = (call->flags & GS_SCAN_EXACT) != 0;
    const size_t osize = gs_dtype_size(out);
    const uint64_t n = call->n;
    uint64_t first = 0;
    const uint64_t bad = check_results(out, exact, got, want, n, &first);
    int past_end = 0;
    for (size_t i = 0; i < OUT_SLOT; i++)
        past_end |= got[n * osize + i] != POISON;
    const int total_ok = !exact || memcmp(got_total, want_total, sizeof *got_total) == 0;
    const int ok = !bad && !past_end && total_ok;
    char g[96], w[96];
    say("check:     %s: %" PRIu64 " of %" PRIu64 " results match, %s%s%s\n", ok ? "ok" : "MISMATCH", n - bad, n, how,
        past_end ? "; and bytes past the last result were written" : "",
        total_ok ? "" : "; and the total accumulator differs");
    json_open("check", '{');
    json_bool("ok", ok);
    json_uint("mismatches", bad);
    json_bool("wrote_past_end", past_end);
    if (exact)
        json_bool("total_ok", total_ok);
    json_str("how", how);
    if (bad) {
        format_result(out, call->op, exact, got + first * osize, g, sizeof g);
        format_result(out, call->op, exact, want + first * osize, w, sizeof w);
        say("first:     out[%" PRIu64 "] = %s, reference %s\n", first, g, w);
        json_open("first_mismatch", '{');
        json_uint("index", first);
        json_str("result", g);
        json_str("reference", w);
        json_close();
    }
    if (!total_ok) {
        /* the sums the two accumulators stand for, and their counts: which part went wrong */
        unsigned char gr[8] = {0}, wr[8] = {0};
        (void)gs_exact_round(got_total, out, gr); /* fails only for a NULL or a non-float out */
        (void)gs_exact_round(want_total, out, wr);
        format_result(out, GS_OP_SUM, 1, gr, g, sizeof g);
        format_result(out, GS_OP_SUM, 1, wr, w, sizeof w);
        say("total:     rounds to %s with count %" PRId64 ", reference %s with count %" PRId64 "\n", g,
            got_total->count, w, want_total->count);
        json_open("total_mismatch", '{');
        json_str("result", g);
        json_int("result_count", got_total->count);
        json_str("reference", w);
        json_int("reference_count", want_total->count);
        json_close();
    }
    json_close();
    return ok;
}

int cmd_scan(int argc, char **argv)
{
    common_opts c;
    scan_opts o = {16777216, 0, -1, 0, 0, DATA_DEFAULT};
    if (parse_command_line(argc, argv, k_usage_scan, OPT_DATA | OPT_DEVICE | OPT_REPEAT, &c, take_scan_opt, &o))
        return EXIT_OK;
    const uint64_t n = o.n, offset = o.offset, seed = c.seed;
    const dtype_info *t = c.t;
    const gs_op op = c.op;
    const data_kind kind = o.kind;
    const int exact = o.exact;
    if (is_arg_op(op))
        usage_error("%s has no scan (gs_scan's ops: sum prod min max and or xor)", gs_op_name(op));
    /* gridsync.h defines GS_SCAN_EXACT for float SUM alone, so no backend could run the rest */
    if (exact && !(t->kind == K_FLOAT && op == GS_OP_SUM))
        usage_error("--exact is for float SUM (f32 f64 f16 bf16 with --op sum), not %s %s", gs_dtype_name(t->id),
                    gs_op_name(op));
    if ((kind == DATA_INT || kind == DATA_WIDE) && !(t->kind == K_FLOAT && op == GS_OP_SUM))
        usage_error("--data %s is for float SUM (f32 f64 f16 bf16 with --op sum)", k_data_names[kind]);
    if (kind == DATA_NAN && !(t->kind == K_FLOAT && (op == GS_OP_MIN || op == GS_OP_MAX)))
        usage_error("--data nan is for float MIN and MAX");
    const gs_dtype out = o.out_given >= 0 ? (gs_dtype)o.out_given : t->id;
    const size_t esize = gs_dtype_size(t->id), osize = gs_dtype_size(out);
    /* the input, two host copies of the results and their device buffer must be addressable */
    if (n > (SIZE_MAX / 4) / (esize + 2 * osize) - offset)
        usage_error("--count %" PRIu64 " with --offset %" PRIu64 " is too large for %s", n, offset,
                    gs_dtype_name(t->id));

    describe_json(&o, t, op, out, seed);
    session s;
    int rc = session_open(&s, c.device);
    if (rc)
        return session_close(&s, rc);
    describe_text(&o, t, op, out, seed);
    print_device_line(&s.info);
    fflush(stdout);

    /* OUT_SLOT poisoned bytes after the n results: a scan that writes past its end shows */
    const size_t in_bytes = (size_t)((offset + n) * esize), out_bytes = (size_t)n * osize,
                 dout_bytes = out_bytes + OUT_SLOT;
    unsigned char *host = malloc(in_bytes ? in_bytes : 1), *got = malloc(dout_bytes), *want = malloc(dout_bytes);
    cushim_ptr dbuf = 0, dout = 0, dtotal = 0;
    gs_exact_acc got_total, want_total, again_total;
    if (!host || !got || !want) {
        fail("cannot allocate %zu bytes of host memory", in_bytes + 2 * dout_bytes);
        rc = EXIT_FAIL;
        goto done;
    }
    make_input(t, op, kind, host, offset, n, seed);
    if (cushim_alloc(&dbuf, in_bytes ? in_bytes : 1) != 0 || cushim_alloc(&dout, dout_bytes) != 0 ||
        (exact && cushim_alloc(&dtotal, sizeof got_total) != 0)) {
        rc = report_shim("allocating device memory");
        goto done;
    }
    /* the copy and the poison run on the legacy stream: wait for them before the launch */
    if (cushim_h2d(dbuf, host, in_bytes) != 0 || cushim_memset8(dout, POISON, dout_bytes) != 0 ||
        (exact && cushim_memset8(dtotal, POISON, sizeof got_total) != 0) || cushim_ctx_sync() != 0) {
        rc = report_shim("copying the input to the device");
        goto done;
    }
    const scan_call call = {dbuf + offset * esize, dout, n, t->id, op,
                            o.out_given >= 0 ? (int32_t)out : GS_OUT_DEFAULT,
                            (o.exclusive ? GS_SCAN_EXCLUSIVE : 0u) | (exact ? GS_SCAN_EXACT : 0u), dtotal};
    char what[96];
    snprintf(what, sizeof what, "gs_scan(%s%s%s %s -> %s, n = %" PRIu64 ")", exact ? "exact " : "",
             o.exclusive ? "exclusive " : "", gs_dtype_name(t->id), gs_op_name(op), gs_dtype_name(out), n);
    gs_status st = launch_scan(&s, &call);
    if (st != GS_SUCCESS) {
        rc = report_gs(what, st);
        goto done;
    }
    if (cushim_stream_sync(s.stream) != 0 || cushim_d2h(got, dout, dout_bytes) != 0 ||
        (exact && cushim_d2h(&got_total, dtotal, sizeof got_total) != 0)) {
        rc = report_shim("running the scan");
        goto done;
    }

    char how[128];
    st = reference(&call, host + offset * esize, out, want, &want_total, how, sizeof how);
    if (st != GS_SUCCESS) {
        fail("%s(%s %s -> %s, n = %" PRIu64 "): %s, where the library ran the scan",
             exact ? "hostref_scan_exact" : "hostref_scan", gs_dtype_name(t->id), gs_op_name(op), gs_dtype_name(out),
             n, gs_status_string(st));
        rc = EXIT_FAIL;
        goto done;
    }
    if (!report_check(&call, out, got, want, &got_total, &want_total, how))
        rc = EXIT_FAIL;
    fflush(stdout);

    if (c.repeat > 0) {
        const int trc = time_launches(&s, launch_scan, &call, c.repeat, what, (double)(n * esize + out_bytes));
        if (trc) {
            rc = trc;
            goto done;
        }
        /* the last of the timed calls wrote dout (and the total): it must match the first,
         * bit for bit */
        if (cushim_d2h(want, dout, out_bytes) != 0 ||
            (exact && cushim_d2h(&again_total, dtotal, sizeof again_total) != 0)) {
            rc = report_shim("reading the results back");
            goto done;
        }
        const int same = memcmp(want, got, out_bytes) == 0 &&
                         (!exact || memcmp(&again_total, &got_total, sizeof got_total) == 0);
        json_bool("repeat_identical", same);
        say("repeat:    %s\n", same ? "ok, the last timed call gave the same bits"
                                    : "MISMATCH: the last timed call gave other results (they must be deterministic)");
        if (!same)
            rc = EXIT_FAIL;
    }

done:
    fflush(stdout);
    if (s.have_stream && cushim_stream_sync(s.stream) != 0)
        rc = rc ? rc : report_shim("synchronizing the stream");
    if (cushim_free(dbuf) != 0 || cushim_free(dout) != 0 || cushim_free(dtotal) != 0)
        rc = rc ? rc : report_shim("freeing device memory");
    free(host);
    free(got);
    free(want);
    return session_close(&s, rc);
}
