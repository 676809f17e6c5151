/* gridsync reduce: one gs_reduce on fresh random data, checked and timed. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char k_usage_reduce[] =
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

int cmd_reduce(int argc, char **argv)
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

