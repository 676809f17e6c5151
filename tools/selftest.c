/* gridsync selftest: every dtype x op on several sizes and offsets, checked. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char k_usage_selftest[] =
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
 * gridsync selftest
 * ====================================================================================== */

static const uint64_t k_sizes[] = {0, 1, 255, 256, 257, 4097, (1u << 20) | 3};
static const uint64_t k_offsets[] = {0, 3};
#define NSIZES (sizeof k_sizes / sizeof k_sizes[0])
#define NOFFSETS (sizeof k_offsets / sizeof k_offsets[0])
#define MAX_OFFSET 3

int cmd_selftest(int argc, char **argv)
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

