/* gridsync selftest: every dtype x op on several sizes and offsets, checked. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char k_usage_selftest[] =
    "usage: gridsync selftest [--device D] [--backend NAME] [--seed S] [--json]\n"
    "\n"
    "Runs every dtype x op on sizes 0, 1, 255, 256, 257, 4097 and 2^20+3, at input offsets 0\n"
    "and 3 elements, each twice back to back (results must be identical), and checks each\n"
    "against a host reference. Pairs the library answers GS_ERROR_UNSUPPORTED for are counted\n"
    "and skipped. Ends with 'selftest: N passed, M failed, K unsupported' (N and M count cases,\n"
    "K dtype/op pairs).\n"
    "\n"
    "  --device D      CUDA device ordinal (default 0)\n"
    "  --backend NAME  force a backend (sets GRIDSYNC_BACKEND)\n"
    "  --seed S        seed (default: from the clock; always printed)\n"
    "  --json          one JSON object on stdout instead of the text\n";

static const uint64_t k_sizes[] = {0, 1, 255, 256, 257, 4097, (1u << 20) | 3};
static const uint64_t k_offsets[] = {0, 3};
#define NSIZES (sizeof k_sizes / sizeof k_sizes[0])
#define NOFFSETS (sizeof k_offsets / sizeof k_offsets[0])
#define MAX_OFFSET 3

/* What the cases share: the device buffers, a host buffer, and how to replay a case. */
typedef struct selftest_state {
    session *s;
    unsigned char *host;
    cushim_ptr dbuf, dout;
    int device;
    const char *backend;
} selftest_state;

typedef enum { CASE_PASS, CASE_WARN, CASE_FAIL, CASE_UNSUPPORTED, CASE_ABORT } case_result;

/* One problem case: a line for people, an object in the pair's "problems" for JSON. */
static void report_case(const char *kind, const dtype_info *t, gs_op op, uint64_t n, uint64_t off, data_kind data,
                        const char *what, const char *replay)
{
    say("%s %s %s n=%" PRIu64 " offset=%" PRIu64 " data=%s: %s\n     replay: %s\n", kind, gs_dtype_name(t->id),
        gs_op_name(op), n, off, k_data_names[data], what, replay);
    json_open(NULL, '{');
    json_str("kind", kind);
    json_uint("count", n);
    json_uint("offset", off);
    json_str("data", k_data_names[data]);
    json_str("what", what);
    json_str("replay", replay);
    json_close();
}

static case_result run_case(selftest_state *b, const dtype_info *t, gs_op op, uint64_t n, uint64_t off, data_kind kind,
                            uint64_t case_seed, char *unsupported_msg, size_t msg_len)
{
    const size_t esize = gs_dtype_size(t->id);
    const gs_dtype out = hostref_default_out(t->id, op);
    make_input(t, op, kind, b->host, off, n, case_seed);
    if (cushim_h2d(b->dbuf, b->host, (size_t)((off + n) * esize)) != 0) {
        report_shim("copying an input to the device");
        return CASE_ABORT;
    }
    unsigned char got[2 * OUT_SLOT];
    int shim_failed;
    gs_status st = launch_and_read(b->s, b->dbuf + off * esize, n, t, op, out, 0, b->dout, got, 2, &shim_failed);
    if (shim_failed) { /* a failed copy or sync: the CUDA context is likely unusable now */
        report_shim("running a reduction");
        return CASE_ABORT;
    }
    if (st == GS_ERROR_UNSUPPORTED) {
        snprintf(unsupported_msg, msg_len, "%s", gs_last_error_message());
        return CASE_UNSUPPORTED;
    }
    char replay[400], what[1400];
    snprintf(replay, sizeof replay,
             "gridsync reduce --dtype %s --op %s --count %" PRIu64 " --offset %" PRIu64 " --seed %" PRIu64
             "%s%s --device %d%s%s",
             gs_dtype_name(t->id), gs_op_name(op), n, off, case_seed, kind ? " --data " : "",
             kind ? k_data_names[kind] : "", b->device, b->backend ? " --backend " : "", b->backend ? b->backend : "");
    if (st != GS_SUCCESS) {
        snprintf(what, sizeof what, "gs_reduce: %s: %s", gs_status_string(st), gs_last_error_message());
        report_case("FAIL", t, op, n, off, kind, what, replay);
        return CASE_FAIL;
    }
    if (!gs_op_defined(t->id, op)) {
        report_case("FAIL", t, op, n, off, kind,
                    "gs_reduce succeeded, but bitwise operations are not defined for floating-point types "
                    "(GS_ERROR_UNSUPPORTED expected)",
                    replay);
        return CASE_FAIL;
    }
    verdict v, v2;
    verify(t, op, out, b->host + off * esize, n, got, &v);
    const int same = memcmp(got, got + OUT_SLOT, gs_dtype_size(out)) == 0;
    if (v.ok && same) {
        if (!v.suspicious)
            return CASE_PASS;
        snprintf(what, sizeof what, "got %s, want %s (%s): suspicious, not counted as a failure", v.got, v.want,
                 v.note);
        report_case("WARN", t, op, n, off, kind, what, replay);
        return CASE_WARN;
    }
    if (!v.ok) {
        snprintf(what, sizeof what, "got %s, want %s (%s)", v.got, v.want, v.note);
    } else {
        verify(t, op, out, b->host + off * esize, n, got + OUT_SLOT, &v2);
        snprintf(what, sizeof what, "a second call right after the first gave %s, the first %s (must be identical)",
                 v2.got, v.got);
    }
    report_case("FAIL", t, op, n, off, kind, what, replay);
    return CASE_FAIL;
}

typedef struct totals {
    unsigned long passed, failed, unsupported, undefined, warnings;
} totals;

/* Every case of one dtype/op pair; 0, or an exit status when the device is unusable. */
static int run_pair(selftest_state *b, int di, gs_op op, uint64_t seed, totals *sum)
{
    const dtype_info *t = &k_dtypes[di];
    data_kind kinds[2] = {DATA_DEFAULT, DATA_DEFAULT};
    int nkinds = 1;
    if (t->kind == K_FLOAT && op == GS_OP_SUM)
        kinds[nkinds++] = DATA_INT;
    if (t->kind == K_FLOAT && (op == GS_OP_MIN || op == GS_OP_MAX || is_arg_op(op)))
        kinds[nkinds++] = DATA_NAN;
    unsigned long pass = 0, failed = 0;
    char unsupported[1100] = "";
    json_open(NULL, '{');
    json_str("dtype", gs_dtype_name(t->id));
    json_str("op", gs_op_name(op));
    json_open("problems", '[');
    for (size_t si = 0; si < NSIZES && !unsupported[0]; si++)
        for (size_t fi = 0; fi < NOFFSETS && !unsupported[0]; fi++)
            for (int ki = 0; ki < nkinds && !unsupported[0]; ki++) {
                const uint64_t n = k_sizes[si];
                if (kinds[ki] == DATA_NAN && n == 0)
                    continue;
                const uint64_t case_seed = hostref_mix64(
                    seed ^ hostref_mix64(((uint64_t)di << 48) | ((uint64_t)op << 40) | (si << 16) | (fi << 8) | (uint64_t)ki));
                switch (run_case(b, t, op, n, k_offsets[fi], kinds[ki], case_seed, unsupported, sizeof unsupported)) {
                case CASE_ABORT: json_close(); json_close(); return EXIT_FAIL;
                case CASE_WARN: sum->warnings++; __attribute__((fallthrough)); /* a warning passed too */
                case CASE_PASS: pass++; break;
                case CASE_FAIL: failed++; break;
                case CASE_UNSUPPORTED:
                    if (pass + failed) { /* a pair is unsupported or not; never in between */
                        char what[1200];
                        snprintf(what, sizeof what, "GS_ERROR_UNSUPPORTED after %lu cases ran: %s", pass + failed,
                                 unsupported);
                        report_case("FAIL", t, op, n, k_offsets[fi], kinds[ki], what, "-");
                        failed++;
                        unsupported[0] = '\0';
                    }
                    break;
                }
            }
    json_close();
    if (unsupported[0]) {
        sum->unsupported++;
        sum->undefined += !gs_op_defined(t->id, op);
        say("  %-4s %-6s unsupported: %s\n", gs_dtype_name(t->id), gs_op_name(op), unsupported);
    } else {
        say("  %-4s %-6s %lu passed%s", gs_dtype_name(t->id), gs_op_name(op), pass, failed ? ", " : "\n");
        if (failed)
            say("%lu FAILED\n", failed);
    }
    json_bool("unsupported", unsupported[0] != '\0');
    json_uint("passed", pass);
    json_uint("failed", failed);
    json_close();
    fflush(stdout);
    sum->passed += pass;
    sum->failed += failed;
    return 0;
}

int cmd_selftest(int argc, char **argv)
{
    common_opts c;
    if (parse_command_line(argc, argv, k_usage_selftest, OPT_DEVICE, &c, NULL, NULL))
        return EXIT_OK;
    const uint64_t seed = c.seed;
    json_str("command", "selftest");
    json_uint("seed", seed);

    session s;
    int rc = session_open(&s, c.device);
    if (rc)
        return session_close(&s, rc);
    say("gridsync selftest, seed %" PRIu64 " (--seed %" PRIu64 " repeats it)\n", seed, seed);
    print_device_line(&s.info);
    fflush(stdout);

    const size_t max_bytes = (size_t)((k_sizes[NSIZES - 1] /* the largest */ + MAX_OFFSET) * 8);
    selftest_state b = {&s, malloc(max_bytes), 0, 0, c.device, c.backend};
    totals sum = {0, 0, 0, 0, 0};
    if (!b.host) {
        fail("cannot allocate %zu bytes of host memory", max_bytes);
        rc = EXIT_FAIL;
        goto done;
    }
    if (cushim_alloc(&b.dbuf, max_bytes) != 0 || cushim_alloc(&b.dout, 2 * OUT_SLOT) != 0) {
        rc = report_shim("allocating device memory");
        goto done;
    }
    json_open("pairs", '[');
    for (int di = 0; di < NDTYPES && !rc; di++)
        for (int oi = 0; oi < NOPS && !rc; oi++)
            rc = run_pair(&b, di, (gs_op)oi, seed, &sum);
    json_close();
    if (rc)
        goto done;
    say("selftest: %lu passed, %lu failed, %lu unsupported\n", sum.passed, sum.failed, sum.unsupported);
    say("  (passed and failed count cases: dtype x op x size x offset x data; unsupported counts dtype/op "
        "pairs, %lu of them bitwise operations over floats, which gridsync.h leaves undefined)\n",
        sum.undefined);
    if (sum.warnings)
        say("  %lu passed case%s had a float error beyond the likely (probabilistic) bound: see WARN above\n",
            sum.warnings, sum.warnings == 1 ? "" : "s");
    json_uint("passed", sum.passed);
    json_uint("failed", sum.failed);
    json_uint("unsupported", sum.unsupported);
    json_uint("warnings", sum.warnings);
    if (sum.failed)
        rc = EXIT_FAIL;

done:
    fflush(stdout);
    if (cushim_free(b.dbuf) != 0 || cushim_free(b.dout) != 0)
        rc = rc ? rc : report_shim("freeing device memory");
    free(b.host);
    return session_close(&s, rc);
}
