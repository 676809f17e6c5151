/*
 * gpu suite: gs_scan's results bit for bit against hostref_scan (scan_common.h) on fresh
 * random data; the seed is printed (GS_TEST_SEED=<n> replays a run). Exits 77 only
 * without a driver or a device. The backend is whatever GRIDSYNC_BACKEND says (meson runs
 * it once per backend and once with the automatic choice); the grids part opens both.
 *
 *  offered:  every (dtype, op, output) the header documents is offered, nothing else is;
 *            n == 0 succeeds and writes nothing; reserved flags and ARGMIN/ARGMAX refused;
 *  matrix:   every dtype x op x offered output x inclusive/exclusive, one model of N
 *            elements per case and every size <= N against its prefix: 0 .. 3, the
 *            thread, warp and tile edges +-1, 2^k +- 1, one and several groups of 32
 *            tiles (quick N: 3 groups and a tile of 4-byte outputs; full: 2^22 + 4099),
 *            the input at +0 or +1 element, the output at +0 or +1, in place, and nothing
 *            written outside out[0, n);
 *  special:  NaN and infinities reaching the scan in one tile and the next group (inf -
 *            inf, 0 x inf, NaN among MIN/MAX), all -0.0 SUMs, for every float type;
 *  refusals: overlaps (in place into a wider type included), misaligned pointers, NULL;
 *  grids:    GRIDSYNC_TEST_SCAN_GRID = default, 1, 2, 7, 64 on each backend (both when
 *            GRIDSYNC_BACKEND is unset): float32/float64 SUM over 5,000,011 elements and
 *            one case of every dtype, equal to the model and to each other;
 *  large:    more groups than the ring of group slots holds (8-byte outputs past 1600
 *            tiles, 4-byte ones past 3168), the order's model or, for integer ops past
 *            2^24, the sequential scan (the same bits; checked against the model first);
 *            full mode adds 2^26 + 4097 elements;
 *  huge:     full mode, when the device has the memory: uint8 XOR (out of place) and SUM
 *            (in place) over 2^32 + 4097 elements, 8192 sampled outputs checked.
 * Each part prints how many results were bitwise equal to the model (and across contexts).
 */
#define _GNU_SOURCE
#include <time.h>

#include "scan_test.h"

int g_failures, g_checks, g_quick;
uint64_t g_rng;
long g_equal, g_cross;

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void upload(cushim_ptr d, const void *h, size_t bytes)
{
    CHECK_CU(cushim_h2d(d, h, bytes));
    CHECK_CU(cushim_ctx_sync()); /* a pageable copy may return before it lands */
}

int check_scan(gs_context *ctx, const scan_case *c, cushim_ptr din, uint64_t n, cushim_ptr dbase,
                      unsigned out_off, const void *h_in, const void *want, unsigned char *got, const char *what,
                      cushim_stream s)
{
    const size_t es = gs_dtype_size(c->t), os = gs_dtype_size(c->out);
    const size_t span = (out_off + n + GUARD) * os;
    const cushim_ptr dout = dbase + out_off * os;
    char name[80], why[240] = "";
    CHECK_CU(cushim_memset8(dbase, POISON, span));
    if (h_in)
        CHECK_CU(cushim_h2d(dout, h_in, n * es));
    CHECK_CU(cushim_ctx_sync());
    gs_status st = scan_call(ctx, c, (const void *)(uintptr_t)(h_in ? dout : din), n, (void *)(uintptr_t)dout, s);
    if (st != GS_SUCCESS) {
        FAIL("%s, n=%" PRIu64 ", %s: %s: %s", scan_case_name(c, name, sizeof name), n, what, gs_status_string(st),
             gs_last_error_message());
        return 0;
    }
    CHECK_CU(cushim_stream_sync(s));
    CHECK_CU(cushim_d2h(got, dbase, span));
    g_checks++;
    uint64_t first = 0;
    if (!scan_same(c->out, got + out_off * os, want, n, &first))
        scan_describe(c->out, got + out_off * os, want, first, why, sizeof why);
    for (size_t b = 0; b < span && !*why; b++)
        if (got[b] != POISON && (b < out_off * os || b >= (out_off + n) * os))
            snprintf(why, sizeof why, "byte %zd from out[0] written", (ptrdiff_t)b - (ptrdiff_t)(out_off * os));
    if (*why) {
        FAIL("%s, n=%" PRIu64 ", %s: %s", scan_case_name(c, name, sizeof name), n, what, why);
        return 0;
    }
    g_equal++;
    return 1;
}

/* ---- offered ------------------------------------------------------------------------- */

static int g_offered[SCAN_NTYPES][GS_OP_COUNT][SCAN_NTYPES];

static void test_offered(gs_context *ctx, cushim_ptr din, cushim_ptr dout)
{
    int combos = 0;
    for (size_t ti = 0; ti < SCAN_NTYPES; ti++)
        for (int op = 0; op < GS_OP_COUNT; op++)
            for (size_t oi = 0; oi < SCAN_NTYPES; oi++) {
                const scan_case c = {k_scan_types[ti], (gs_op)op, k_scan_types[oi], 0};
                /* one element: n == 0 checks dtype, op and opts alone, not the backend */
                gs_status st = scan_call(ctx, &c, (const void *)(uintptr_t)din, 1, (void *)(uintptr_t)dout, NULL);
                const int doc = scan_documented(c.t, c.op, c.out);
                char name[80];
                CHECK(st == (doc ? GS_SUCCESS : GS_ERROR_UNSUPPORTED), "%s: %s (%s), documented %d",
                      scan_case_name(&c, name, sizeof name), gs_status_string(st), gs_last_error_message(), doc);
                g_offered[ti][op][oi] = doc && st == GS_SUCCESS;
                combos += g_offered[ti][op][oi];
            }
    CHECK_CU(cushim_ctx_sync());
    unsigned char b[64];
    CHECK_CU(cushim_memset8(dout, POISON, sizeof b));
    gs_scan_options o = {.struct_size = sizeof o, .out_dtype = GS_OUT_DEFAULT, .flags = GS_SCAN_EXCLUSIVE};
    CHECK(gs_scan(ctx, NULL, 0, GS_FLOAT32, GS_OP_SUM, NULL, NULL, &o) == GS_SUCCESS, "n 0, NULL pointers: %s",
          gs_last_error_message());
    CHECK(gs_scan(ctx, (const void *)(uintptr_t)din, 0, GS_INT8, GS_OP_MAX, (void *)(uintptr_t)dout, NULL, NULL) ==
          GS_SUCCESS, "n 0: %s", gs_last_error_message());
    CHECK(gs_scan(ctx, NULL, 0, GS_FLOAT32, GS_OP_ARGMAX, NULL, NULL, NULL) == GS_ERROR_UNSUPPORTED, "ARGMAX, n 0");
    CHECK(gs_scan(ctx, NULL, 0, GS_FLOAT32, GS_OP_BIT_OR, NULL, NULL, NULL) == GS_ERROR_UNSUPPORTED, "f32 OR, n 0");
    o.flags = 4;
    CHECK(gs_scan(ctx, (const void *)(uintptr_t)din, 8, GS_INT32, GS_OP_SUM, (void *)(uintptr_t)dout, NULL, &o) ==
          GS_ERROR_INVALID_ARGUMENT, "reserved flag 4");
    o.flags = GS_SCAN_EXACT; /* exact sums are of floats */
    CHECK(gs_scan(ctx, (const void *)(uintptr_t)din, 8, GS_INT32, GS_OP_SUM, (void *)(uintptr_t)dout, NULL, &o) ==
          GS_ERROR_UNSUPPORTED, "GS_SCAN_EXACT over int32");
    CHECK_CU(cushim_ctx_sync());
    CHECK_CU(cushim_d2h(b, dout, sizeof b));
    int untouched = 1;
    for (size_t i = 0; i < sizeof b; i++)
        untouched &= b[i] == POISON;
    CHECK(untouched, "n == 0 or a refused call wrote its output");
    printf("offered: %d (dtype, op, output) combinations\n", combos);
}

/* ---- matrix -------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The sizes <= N worth trying for an output type, sorted, without repeats. */
static size_t sizes_for(gs_dtype out, uint64_t N, uint64_t *s)
{
    const uint64_t it = GS_SCAN_ITEMS((unsigned)gs_dtype_size(out)), tile = scan_tile(out), span = tile * GS_SCAN_GROUP;
    const uint64_t edges[] = {it, 32 * it, tile, 2 * tile, 4096, 1u << 16, 1u << 17, 1u << 18, 1u << 20, 1u << 21,
                              1u << 22, span, 2 * span, 3 * span};
    size_t k = 0;
    const uint64_t fixed[] = {0, 1, 2, 3, 31, 32, 33, 255, 256, 257, 2 * span + tile + 1, 8 * span + 3, N};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        s[k++] = fixed[i];
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++)
        for (int d = -1; d <= 1; d++)
            s[k++] = edges[i] + (uint64_t)d;
    qsort(s, k, sizeof *s, cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < k; i++)
        if (s[i] <= N && (m == 0 || s[i] != s[m - 1]))
            s[m++] = s[i];
    return m;
}

static void test_matrix(gs_context *ctx, cushim_ptr din, cushim_ptr dout, uint64_t N)
{
    enum { MAXJOBS = 20 }; /* int32, int8: 7 ops, 2 of them with a wider output; x 2 */
    void *h[GS_OP_COUNT], *models[MAXJOBS];
    for (int op = 0; op < GS_OP_COUNT; op++)
        h[op] = scan_xmalloc(N * 8);
    for (int j = 0; j < MAXJOBS; j++)
        models[j] = scan_xmalloc(N * 8);
    unsigned char *got = scan_xmalloc((N + 1 + GUARD) * 8);
    long cases = 0;
    for (size_t ti = 0; ti < SCAN_NTYPES; ti++) {
        const gs_dtype t = k_scan_types[ti];
        const size_t es = gs_dtype_size(t);
        scan_job jobs[MAXJOBS];
        size_t nj = 0;
        for (int op = 0; op < GS_OP_COUNT; op++) {
            int any = 0;
            for (size_t oi = 0; oi < SCAN_NTYPES; oi++)
                for (int ex = 0; ex < 2 && g_offered[ti][op][oi] && nj < MAXJOBS; ex++, any = 1)
                    jobs[nj] = (scan_job){{t, (gs_op)op, k_scan_types[oi], ex}, h[op], N, models[nj], GS_SUCCESS}, nj++;
            if (any)
                scan_fill(h[op], N, t, (gs_op)op, &g_rng);
        }
        const double t0 = now_s();
        scan_models(jobs, nj);
        const double t1 = now_s();
        int op_up = -1;
        for (size_t j = 0; j < nj; j++) {
            const scan_case *c = &jobs[j].c;
            char name[80];
            if (jobs[j].st != GS_SUCCESS) {
                FAIL("%s: hostref_scan: %s", scan_case_name(c, name, sizeof name), gs_status_string(jobs[j].st));
                continue;
            }
            if (op_up != (int)c->op) { /* the data at +0 in din and at +1 element after N + 1 */
                upload(din, h[c->op], N * es);
                upload(din + (N + 1) * es, h[c->op], N * es);
                op_up = (int)c->op;
            }
            uint64_t sizes[64];
            const size_t ns = sizes_for(c->out, N, sizes);
            int bad = 0;
            for (size_t si = 0; si < ns && bad < 3; si++) {
                const unsigned in_off = si & 1, out_off = (si >> 1) & 1;
                const int in_place = c->out == t && si % 5 == 4;
                char what[64];
                snprintf(what, sizeof what, "%s, out at +%u", in_place ? "in place" : in_off ? "in at +1" : "in at +0",
                         out_off);
                bad += !check_scan(ctx, c, in_off ? din + (N + 1) * es : din, sizes[si], dout, out_off,
                                   in_place ? h[c->op] : NULL, models[j], got, what, NULL);
                cases++;
            }
        }
        printf("matrix %-4s: %2zu cases, models %.2f s, device and checks %.2f s\n", gs_dtype_name(t), nj, t1 - t0,
               now_s() - t1);
    }
    printf("matrix: %ld results of N = %" PRIu64 " prefixes\n", cases, N);
    for (int op = 0; op < GS_OP_COUNT; op++)
        free(h[op]);
    for (int j = 0; j < MAXJOBS; j++)
        free(models[j]);
    free(got);
}

/* ---- special values ---------------------------------------------------------------------- */

static void test_special(gs_context *ctx, cushim_ptr din, cushim_ptr dout)
{
    const gs_dtype types[] = {GS_FLOAT32, GS_FLOAT64, GS_FLOAT16, GS_BFLOAT16};
    const uint64_t tile = 4096, span = tile * GS_SCAN_GROUP, n = span + 2 * tile + 5;
    const uint64_t p1 = tile + 17, p2 = span + tile + 3; /* the second tile; the second group */
    enum { VARIANTS = 4, MAXJOBS = 4 * 2 * 2 * VARIANTS };
    scan_job jobs[MAXJOBS];
    void *h[4][VARIANTS];
    unsigned char *got = scan_xmalloc((n + 1 + GUARD) * 8);
    for (int ti = 0; ti < 4; ti++) {
        const gs_dtype t = types[ti];
        size_t nj = 0;
        for (int op = GS_OP_SUM; op <= GS_OP_MAX; op++) {
            for (int v = 0; v < VARIANTS; v++) {
                void *p = h[op][v] = scan_xmalloc(n * 8);
                scan_fill(p, n, t, (gs_op)op, &g_rng);
                /* v 0: SUM +inf then -inf (NaN from p2), PROD 0 then inf, MIN/MAX NaN at p1
                 * and the winning infinity at p2; v 1: a NaN at p2 alone; v 2: SUM all -0.0,
                 * PROD all -1 (signs alternate), MIN/MAX all +inf with a -inf at p2; v 3: MIN/MAX
                 * zeros of both signs among numbers beyond them, so the extreme is a tie of
                 * zeros whose sign only the order decides (every GPU must keep the left one) */
                const double a = op == GS_OP_SUM ? INFINITY : op == GS_OP_PROD ? 0.0 : NAN;
                const double b = op == GS_OP_SUM ? -INFINITY : op == GS_OP_PROD ? INFINITY : op == GS_OP_MIN ? -INFINITY : INFINITY;
                if (v == 2)
                    for (uint64_t i = 0; i < n; i++)
                        hostref_store(t, p, i, op == GS_OP_SUM ? -0.0 : op == GS_OP_PROD ? -1.0 : INFINITY);
                if (v == 3 && op >= GS_OP_MIN)
                    for (uint64_t i = 0; i < n; i++)
                        hostref_store(t, p, i, (i * 2654435761u >> 7) % 3 == 0   ? -0.0
                                               : (i * 2654435761u >> 7) % 3 == 1 ? 0.0
                                               : op == GS_OP_MIN                 ? 1.0 + (double)(i % 5)
                                                                                 : -1.0 - (double)(i % 5));
                if (v == 0)
                    hostref_store(t, p, p1, a);
                if (v != 3)
                    hostref_store(t, p, p2, v == 0 ? b : v == 1 ? NAN : op >= GS_OP_MIN ? -INFINITY : op == GS_OP_SUM ? -0.0 : -1.0);
                for (size_t oi = 0; oi < SCAN_NTYPES; oi++)
                    for (int ex = 0; ex < 2 && scan_documented(t, (gs_op)op, k_scan_types[oi]); ex++, nj++)
                        jobs[nj] = (scan_job){{t, (gs_op)op, k_scan_types[oi], ex}, p, n, scan_xmalloc(n * 8), 0};
            }
        }
        scan_models(jobs, nj);
        for (size_t j = 0; j < nj; j++) {
            char name[80];
            CHECK(jobs[j].st == GS_SUCCESS, "%s: hostref_scan: %s", scan_case_name(&jobs[j].c, name, sizeof name),
                  gs_status_string(jobs[j].st));
            upload(din, jobs[j].in, n * gs_dtype_size(t));
            const uint64_t sizes[] = {1, p1, p1 + 1, p2 + 1, n};
            for (int si = 0; si < 5; si++)
                check_scan(ctx, &jobs[j].c, din, sizes[si], dout, 0, NULL, jobs[j].out, got, "special values", NULL);
            free(jobs[j].out);
        }
        for (int op = GS_OP_SUM; op <= GS_OP_MAX; op++)
            for (int v = 0; v < VARIANTS; v++)
                free(h[op][v]);
    }
    free(got);
}

/* ---- refusals ---------------------------------------------------------------------------- */

static void expect(gs_status got, gs_status want, const char *what)
{
    CHECK(got == want, "%s: %s (%s), want %s", what, gs_status_string(got), gs_last_error_message(),
          gs_status_string(want));
}

static void test_refusals(gs_context *ctx, cushim_ptr din, cushim_ptr dout)
{
    const char *d = (const char *)(uintptr_t)din;
    char *o = (char *)(uintptr_t)dout;
    const scan_case f32 = {GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, 0}, wide = {GS_INT32, GS_OP_SUM, GS_INT64, 1};
    CHECK_CU(cushim_memset8(dout, POISON, 4096));
    CHECK_CU(cushim_ctx_sync());
    expect(scan_call(ctx, &f32, d + 64, 100, (char *)d + 68, NULL), GS_ERROR_INVALID_ARGUMENT, "out = in + 1 element");
    expect(scan_call(ctx, &f32, d + 64, 100, (char *)d + 60, NULL), GS_ERROR_INVALID_ARGUMENT, "out = in - 1 element");
    expect(scan_call(ctx, &f32, d + 64, 100, (char *)d + 64 + 99 * 4, NULL), GS_ERROR_INVALID_ARGUMENT,
           "out[0] on in's last element");
    expect(scan_call(ctx, &wide, d + 64, 100, (char *)d + 64, NULL), GS_ERROR_INVALID_ARGUMENT,
           "in place into a wider type");
    expect(scan_call(ctx, &wide, d + 1024, 100, (char *)d + 1024 - 792, NULL), GS_ERROR_INVALID_ARGUMENT,
           "a wider out whose last element overlaps in[0]");
    expect(scan_call(ctx, &f32, d + 64, 100, o + 2, NULL), GS_ERROR_INVALID_ARGUMENT, "out misaligned");
    expect(scan_call(ctx, &f32, d + 66, 100, o, NULL), GS_ERROR_INVALID_ARGUMENT, "in misaligned");
    expect(scan_call(ctx, &f32, NULL, 100, o, NULL), GS_ERROR_INVALID_ARGUMENT, "in NULL");
    expect(scan_call(ctx, &f32, d, 100, NULL, NULL), GS_ERROR_INVALID_ARGUMENT, "out NULL");
    static float host[100];
    expect(scan_call(ctx, &f32, host, 100, o, NULL), GS_ERROR_INVALID_POINTER, "in in pageable host memory");
    CHECK_CU(cushim_ctx_sync());
    unsigned char b[4096];
    CHECK_CU(cushim_d2h(b, dout, sizeof b));
    int untouched = 1;
    for (size_t i = 0; i < sizeof b; i++)
        untouched &= b[i] == POISON;
    CHECK(untouched, "a refused call wrote its output");
    /* touching ranges are no overlap: out right after in's end */
    for (int i = 0; i < 100; i++)
        host[i] = (float)(i % 7) - 3.0f;
    upload(din + 64, host, sizeof host);
    float want[100], got[100];
    CHECK(scan_model(&f32, host, 100, want) == GS_SUCCESS, "hostref_scan");
    expect(scan_call(ctx, &f32, d + 64, 100, (char *)d + 64 + 400, NULL), GS_SUCCESS, "out right after in");
    CHECK_CU(cushim_ctx_sync());
    CHECK_CU(cushim_d2h(got, din + 64 + 400, sizeof got));
    uint64_t first = 0;
    CHECK(scan_same(GS_FLOAT32, got, want, 100, &first) && ++g_equal, "out right after in: out[%" PRIu64 "]", first);
}

int main(void)
{
    gpu_test_init();
    g_quick = getenv("GS_TEST_QUICK") && atoi(getenv("GS_TEST_QUICK"));
    const char *seed_env = getenv("GS_TEST_SEED");
    g_rng = seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress reaches a log even if the run is cut short */
    printf("seed %" PRIu64 " (GS_TEST_SEED=%" PRIu64 " replays it), %s mode\n", g_rng, g_rng,
           g_quick ? "quick" : "full");
    gs_context *ctx;
    CHECK_GS(gs_context_create(0, &ctx));
    gs_context_info info = {.struct_size = sizeof info};
    CHECK_GS(gs_context_get_info(ctx, &info));
    char backend[64]; /* the info's strings live as long as the context */
    snprintf(backend, sizeof backend, "%s", info.backend_name);
    printf("device %s, backend %s (%s)\n", info.device_name, backend, info.backend_path);
    const char *forced = getenv("GRIDSYNC_BACKEND");
    if (forced && *forced && forced[0] != '/' && strcmp(forced, info.backend_name) != 0)
        FAIL("GRIDSYNC_BACKEND=%s but the context runs %s", forced, info.backend_name);

    /* quick: three groups and a tile of 4-byte outputs (six groups of 8-byte ones) */
    const uint64_t N = g_quick ? 3 * 131072 + 4096 + 3 : (1u << 22) + 4099;
    cushim_ptr din, dout;
    CHECK_CU(cushim_alloc(&din, (2 * N + 2) * 8));
    CHECK_CU(cushim_alloc(&dout, (N + 1 + GUARD) * 8));
    const char *only = getenv("GS_TEST_PARTS");
    struct {
        const char *name;
        int full_only;
    } parts[] = {{"offered", 0}, {"matrix", 0}, {"special", 0}, {"refusals", 0}, {"grids", 0}, {"large", 0}, {"huge", 1}};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        if ((only && *only && !strstr(only, parts[i].name)) || (parts[i].full_only && g_quick))
            continue;
        const int failures = g_failures, checks = g_checks;
        const long equal = g_equal, cross = g_cross;
        const double t0 = now_s();
        switch (i) {
        case 0: test_offered(ctx, din, dout); break;
        case 1: test_matrix(ctx, din, dout, N); break;
        case 2: test_special(ctx, din, dout); break;
        case 3: test_refusals(ctx, din, dout); break;
        case 4: test_grids(&info); break;
        case 5: test_large(ctx); break;
        default:
            CHECK_CU(cushim_free(din)); /* the huge part needs the memory */
            CHECK_CU(cushim_free(dout));
            din = dout = 0;
            test_huge(ctx);
        }
        printf("%-9s %6d checks, %d failed, %ld results bitwise equal to hostref_scan, %ld equal across contexts "
               "(%.1f s)\n", parts[i].name, g_checks - checks, g_failures - failures, g_equal - equal,
               g_cross - cross, now_s() - t0);
    }
    if (din)
        CHECK_CU(cushim_free(din));
    if (dout)
        CHECK_CU(cushim_free(dout));
    CHECK_GS(gs_context_destroy(ctx));
    printf("backend %s: %d checks, %d failed; %ld results bitwise equal to hostref_scan, %ld across contexts\n",
           backend, g_checks, g_failures, g_equal, g_cross);
    return g_failures ? 1 : 0;
}
