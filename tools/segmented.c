/* gridsync segmented: one gs_segmented_reduce over a segment layout on fresh random data,
 * every segment checked against hostref, then timed as `reduce` times gs_reduce. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char k_usage_segmented[] =
    "usage: gridsync segmented [--dtype T] [--op OP] [--count N] [--segments S]\n"
    "                          [--layout L | --offsets FILE] [--check-offsets] [--exact]\n"
    "                          [--data KIND] [--print-offsets] [--device D]\n"
    "                          [--backend NAME] [--seed S] [--repeat R] [--json]\n"
    "\n"
    "Fills device memory with random data, runs gs_segmented_reduce once over S segments\n"
    "and checks every segment's result against a host reference (and that nothing is\n"
    "written past the last one), then times R back-to-back calls (median of 7 runs).\n"
    "\n"
    "  --dtype T         i32 u32 i64 u64 f32 f64 f16 bf16 i8 u8 (default f32)\n"
    "  --op OP           sum prod min max argmin argmax and or xor (default sum)\n"
    "  --count N         elements (default 16M); with --offsets, default: the last offset\n"
    "  --segments S      segments (default 65536)\n"
    "  --layout L        uniform: S segments of (about) equal length (the default);\n"
    "                    power-law: lengths with P(len > x) ~ 1/x (a few long, many short);\n"
    "                    giant: one segment of half the elements among S-1 tiny ones\n"
    "  --offsets FILE    the S+1 offsets (decimal integers separated by white space or\n"
    "                    commas) instead of a layout; '-' reads standard input\n"
    "  --check-offsets   pass GS_SEGMENTED_CHECK_OFFSETS (validate offsets on the device)\n"
    "  --exact           each segment's float SUM correctly rounded (GS_SEGMENTED_EXACT;\n"
    "                    f16 bf16 f32 f64), checked bit for bit against an exact host sum\n"
    "  --data KIND       default or wide, as for reduce (wide: float SUM over the type's\n"
    "                    whole exponent range, the exact sums' slow path)\n"
    "  --print-offsets   print the S+1 offsets of the layout, one a line, and stop (no\n"
    "                    device needed; --offsets reads them back)\n"
    "  --device D, --backend NAME, --seed S, --repeat R, --json: as for reduce\n";

typedef enum { LAYOUT_UNIFORM, LAYOUT_POWER, LAYOUT_GIANT, LAYOUT_FILE } layout_kind;
static const char *const k_layout_names[] = {"uniform", "power-law", "giant", "file"};

/* off[0..S]: segment j is [off[j], off[j+1]) of n elements. The layouts cover [0, n). */
static void make_layout(layout_kind kind, int64_t *off, uint64_t S, uint64_t n, uint64_t seed)
{
    uint64_t rng = seed ^ 0x5e6d5e6d5e6d5e6dull;
    off[0] = 0;
    if (kind == LAYOUT_GIANT && S > 1) {
        /* one segment of n/2 at a random place, the others share the rest evenly */
        const uint64_t giant = n / 2, g = hostref_rand(&rng) % S, rest = n - giant;
        for (uint64_t j = 0, small = 0; j < S; j++) {
            uint64_t len = j == g ? giant : rest * (small + 1) / (S - 1) - rest * small / (S - 1);
            small += j != g;
            off[j + 1] = off[j] + (int64_t)len;
        }
        return;
    }
    if (kind == LAYOUT_POWER) {
        /* Pareto weights 1/u, u uniform in (0, 1]: P(w > x) = 1/x; then scaled to n */
        long double total = 0;
        for (uint64_t j = 0; j < S; j++) {
            const long double u = (long double)((hostref_rand(&rng) >> 11) + 1) * 0x1p-53L;
            total += 1 / u;
        }
        rng = seed ^ 0x5e6d5e6d5e6d5e6dull; /* the same weights again */
        long double prefix = 0;
        for (uint64_t j = 0; j < S; j++) {
            prefix += 1 / ((long double)((hostref_rand(&rng) >> 11) + 1) * 0x1p-53L);
            off[j + 1] = j + 1 == S ? (int64_t)n : (int64_t)((long double)n * (prefix / total));
            if (off[j + 1] < off[j]) /* rounding of the prefix sums: never decreasing */
                off[j + 1] = off[j];
        }
        return;
    }
    for (uint64_t j = 1; j <= S; j++) /* uniform: exact in 128 bits for any n and S */
        off[j] = (int64_t)((unsigned __int128)n * j / S);
}

/* Reads up to max offsets from a file; returns how many, usage error on bad input. */
static uint64_t read_offsets(const char *path, int64_t **out)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f)
        usage_error("--offsets %s: %s", path, strerror(errno));
    size_t cap = 1024, count = 0;
    int64_t *off = malloc(cap * sizeof *off);
    char word[64];
    int c, len = 0;
    while (off) {
        c = fgetc(f);
        if (c == EOF || c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (len) {
                word[len] = '\0';
                char *end;
                errno = 0;
                long long v = strtoll(word, &end, 10);
                if (*end || errno)
                    usage_error("--offsets %s: '%s' is not an offset", path, word);
                if (count == cap && !(off = realloc(off, (cap *= 2) * sizeof *off)))
                    break;
                off[count++] = v;
                len = 0;
            }
            if (c == EOF)
                break;
        } else if (len + 1 < (int)sizeof word) {
            word[len++] = (char)c;
        } else {
            usage_error("--offsets %s: a word of more than %zu characters", path, sizeof word - 1);
        }
    }
    if (f != stdin)
        fclose(f);
    if (!off) {
        fail("cannot allocate memory for the offsets of %s", path);
        exit(EXIT_FAIL);
    }
    *out = off;
    return count;
}

typedef struct segmented_call {
    cushim_ptr in, offsets, out;
    uint64_t n, S;
    gs_dtype dtype;
    gs_op op;
    unsigned flags;
} segmented_call;

static gs_status launch_segmented(session *s, const void *arg)
{
    const segmented_call *c = arg;
    return gs_segmented_reduce(s->ctx, (const void *)(uintptr_t)c->in, c->n, c->dtype, c->op,
                               (const int64_t *)(uintptr_t)c->offsets, c->S, (void *)(uintptr_t)c->out,
                               (gs_stream)s->stream, c->flags);
}

/* Every segment against hostref; returns the number of wrong ones (the first few shown). */
static uint64_t check_segments(const dtype_info *t, gs_op op, int exact, const unsigned char *data,
                               const int64_t *off, uint64_t S, const unsigned char *got)
{
    const gs_dtype out = hostref_default_out(t->id, op);
    const size_t esize = gs_dtype_size(t->id), osize = gs_dtype_size(out);
    uint64_t bad = 0;
    json_open("problems", '[');
    for (uint64_t j = 0; j < S; j++) {
        verdict v;
        const unsigned char *seg = data + (size_t)off[j] * esize;
        const uint64_t len = (uint64_t)(off[j + 1] - off[j]);
        if (exact)
            verify_exact(t, out, seg, len, got + j * osize, &v);
        else
            verify(t, op, out, seg, len, got + j * osize, &v);
        if (v.ok || ++bad > 5)
            continue;
        say("segment %" PRIu64 " [%" PRId64 ", %" PRId64 "): MISMATCH: got %s, want %s (%s)\n", j, off[j], off[j + 1],
            v.got, v.want, v.note);
        json_open(NULL, '{');
        json_uint("segment", j);
        json_int("begin", off[j]);
        json_int("end", off[j + 1]);
        json_str("result", v.got);
        json_str("reference", v.want);
        json_str("how", v.note);
        json_close();
    }
    json_close();
    return bad;
}

/* segmented's own options (the common ones are in common_opts). */
typedef struct segmented_opts {
    uint64_t n, S;
    int have_count, have_segments, print_offsets;
    unsigned flags;
    layout_kind layout;
    const char *offsets_file;
    data_kind kind;
} segmented_opts;

static int take_segmented_opt(int argc, char **argv, int *i, void *state)
{
    segmented_opts *o = state;
    const char *v;
    if (take_opt(argc, argv, i, "--count", &v)) {
        o->n = parse_u64("--count", v, (uint64_t)INT64_MAX);
        o->have_count = 1;
    } else if (take_opt(argc, argv, i, "--segments", &v)) {
        o->S = parse_u64("--segments", v, 1ull << 32);
        o->have_segments = 1;
    } else if (take_opt(argc, argv, i, "--layout", &v)) {
        int k = 0;
        while (k < LAYOUT_FILE && strcmp(v, k_layout_names[k]) != 0)
            k++;
        if (k == LAYOUT_FILE)
            usage_error("unknown --layout '%s' (one of: uniform power-law giant)", v);
        o->layout = (layout_kind)k;
    } else if (take_opt(argc, argv, i, "--offsets", &v)) {
        o->offsets_file = v;
    } else if (strcmp(argv[*i], "--print-offsets") == 0) {
        o->print_offsets = 1;
    } else if (strcmp(argv[*i], "--check-offsets") == 0) {
        o->flags |= GS_SEGMENTED_CHECK_OFFSETS;
    } else if (strcmp(argv[*i], "--exact") == 0) {
        o->flags |= GS_SEGMENTED_EXACT;
    } else if (take_opt(argc, argv, i, "--data", &v)) {
        o->kind = parse_data(v);
    } else {
        return 0;
    }
    return 1;
}

int cmd_segmented(int argc, char **argv)
{
    common_opts c;
    segmented_opts o = {16777216, 65536, 0, 0, 0, 0, LAYOUT_UNIFORM, NULL, DATA_DEFAULT};
    if (parse_command_line(argc, argv, k_usage_segmented, OPT_DATA | OPT_DEVICE | OPT_REPEAT, &c, take_segmented_opt,
                           &o))
        return EXIT_OK;
    uint64_t n = o.n, S = o.S;
    const int have_count = o.have_count, have_segments = o.have_segments, print_offsets = o.print_offsets;
    const unsigned flags = o.flags;
    layout_kind layout = o.layout;
    const char *const offsets_file = o.offsets_file;
    const dtype_info *t = c.t;
    const gs_op op = c.op;
    const uint64_t seed = c.seed;
    const int exact = (flags & GS_SEGMENTED_EXACT) != 0;
    if (o.kind != DATA_DEFAULT && o.kind != DATA_WIDE)
        usage_error("--data: segmented takes default or wide");
    if (o.kind == DATA_WIDE && !(t->kind == K_FLOAT && op == GS_OP_SUM))
        usage_error("--data wide is for float SUM (f32 f64 f16 bf16 with --op sum)");
    int64_t *off = NULL;
    if (offsets_file) {
        if (have_segments)
            usage_error("--offsets gives the segments: leave --segments out");
        const uint64_t count = read_offsets(offsets_file, &off);
        if (count < 1)
            usage_error("--offsets %s: no offsets (S segments need S+1)", offsets_file);
        S = count - 1;
        if (!have_count)
            n = off[S] > 0 ? (uint64_t)off[S] : 0;
        /* the reference reads what the offsets say: they must make sense on the host */
        for (uint64_t j = 0; j <= S; j++)
            if (off[j] < 0 || (uint64_t)off[j] > n || (j && off[j] < off[j - 1]))
                usage_error("--offsets %s: offset %" PRIu64 " (%" PRId64 ") is not within [%" PRId64 ", %" PRIu64 "]",
                            offsets_file, j, off[j], j ? off[j - 1] : 0, n);
        layout = LAYOUT_FILE;
    }
    const size_t esize = gs_dtype_size(t->id), osize = out_size(t, op);
    if (n > (SIZE_MAX / 4) / esize || S > (SIZE_MAX / 4) / 8)
        usage_error("--count %" PRIu64 " or --segments %" PRIu64 " is too large", n, S);
    if (!off) {
        if (!(off = malloc((size_t)(S + 1) * sizeof *off))) {
            fail("cannot allocate %" PRIu64 " offsets", S + 1);
            return EXIT_FAIL;
        }
        make_layout(layout, off, S, n, seed);
    }
    if (print_offsets) {
        for (uint64_t j = 0; j <= S; j++)
            printf("%" PRId64 "\n", off[j]);
        free(off);
        return EXIT_OK;
    }
    json_str("command", "segmented");
    json_str("dtype", gs_dtype_name(t->id));
    json_str("op", gs_op_name(op));
    json_uint("count", n);
    json_uint("segments", S);
    json_str("layout", k_layout_names[layout]);
    json_bool("exact", exact);
    json_uint("seed", seed);

    session s;
    int rc = session_open(&s, c.device);
    if (rc) {
        free(off);
        return session_close(&s, rc);
    }
    say("gridsync segmented: %s%s %s, n = %" PRIu64 ", %" PRIu64 " segments (%s%s%s)\n", exact ? "exact " : "",
        gs_dtype_name(t->id), gs_op_name(op), n, S, k_layout_names[layout], offsets_file ? " " : "", offsets_file ? offsets_file : "");
    say("seed: %" PRIu64 " (--seed %" PRIu64 " repeats this input)\n", seed, seed);
    print_device_line(&s.info);
    fflush(stdout);

    const size_t in_bytes = (size_t)n * esize, off_bytes = (size_t)(S + 1) * 8, out_bytes = (size_t)S * osize + 16;
    unsigned char *host = malloc(in_bytes ? in_bytes : 1), *got = malloc(out_bytes), *again = malloc(out_bytes);
    segmented_call call = {0, 0, 0, n, S, t->id, op, flags};
    char what[128];
    snprintf(what, sizeof what, "gs_segmented_reduce(%s %s, n = %" PRIu64 ", %" PRIu64 " segments)",
             gs_dtype_name(t->id), gs_op_name(op), n, S);
    if (!host || !got || !again) {
        fail("cannot allocate %zu bytes of host memory", in_bytes + 2 * out_bytes);
        rc = EXIT_FAIL;
        goto done;
    }
    make_input(t, op, o.kind, host, 0, n, seed);
    if (cushim_alloc(&call.in, in_bytes ? in_bytes : 1) != 0 || cushim_alloc(&call.offsets, off_bytes) != 0 ||
        cushim_alloc(&call.out, out_bytes) != 0) {
        rc = report_shim("allocating device memory");
        goto done;
    }
    /* the copies and the poison run on the legacy stream: wait for them before the launch */
    if (cushim_h2d(call.in, host, in_bytes) != 0 || cushim_h2d(call.offsets, off, off_bytes) != 0 ||
        cushim_memset8(call.out, POISON, out_bytes) != 0 || cushim_ctx_sync() != 0) {
        rc = report_shim("copying the input to the device");
        goto done;
    }
    gs_status st = launch_segmented(&s, &call);
    if (st != GS_SUCCESS) {
        rc = report_gs(what, st);
        goto done;
    }
    if (cushim_stream_sync(s.stream) != 0 || cushim_d2h(got, call.out, out_bytes) != 0) {
        rc = report_shim("running the reduction");
        goto done;
    }
    const uint64_t bad = check_segments(t, op, exact, host, off, S, got);
    int past_end = 0;
    for (size_t i = (size_t)S * osize; i < out_bytes; i++)
        past_end |= got[i] != POISON;
    say("check:     %s: %" PRIu64 " of %" PRIu64 " segments match the reference%s\n", bad || past_end ? "MISMATCH" : "ok",
        S - bad, S, past_end ? "; and bytes past the last segment's result were written" : "");
    json_open("check", '{');
    json_bool("ok", !bad && !past_end);
    json_uint("mismatches", bad);
    json_bool("wrote_past_end", past_end);
    json_close();
    if (bad || past_end)
        rc = EXIT_FAIL;
    fflush(stdout);

    if (c.repeat > 0) {
        const int trc = time_launches(&s, launch_segmented, &call, c.repeat, what, (double)(in_bytes + off_bytes + out_bytes - 16));
        if (trc) {
            rc = trc;
            goto done;
        }
        if (cushim_d2h(again, call.out, (size_t)S * osize) != 0) {
            rc = report_shim("reading the results back");
            goto done;
        }
        const int same = memcmp(again, got, (size_t)S * osize) == 0;
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
    if (cushim_free(call.in) != 0 || cushim_free(call.offsets) != 0 || cushim_free(call.out) != 0)
        rc = rc ? rc : report_shim("freeing device memory");
    free(host);
    free(got);
    free(again);
    free(off);
    return session_close(&s, rc);
}
