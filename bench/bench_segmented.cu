/*
 * gridsync-bench-segmented: gridsync's gs_segmented_reduce (the public API, once per
 * backend) against CUB's DeviceSegmentedReduce::Sum (the toolkit's CCCL headers), side by
 * side in one process on the same device buffers of fresh random float32 data, float32
 * SUM. Issue 7; the method is in bench/README.md ("Segmented reduction").
 *
 * Layouts (about 2^26 elements each; --quick: about 2^22):
 *   uniform   2^16 segments of 2^10
 *   powerlaw  Pareto lengths (P(len >= k) ~ k^-alpha, alpha 1 by default), 1 .. 2^22,
 *             seeded, summing to exactly 2^26
 *   giant     one segment of 2^26 at a random position in the middle half of 10^5
 *             segments of 1..16
 *   tiny      2^20 segments of 1..16 (about 8.9M elements)
 * gridsync runs twice per backend: the default SUM and the exact one (GS_SEGMENTED_EXACT:
 * each segment's sum correctly rounded), whose results must equal hostref's exact sum bit
 * for bit; the summary gives its time against the default's (the target is >= 0.8x).
 * Per layout, before any timing, two checked passes: every implementation's output is
 * poisoned (0xff: NaN), computed once, and compared per segment with a host float64
 * reference: exactly on data in {-1, 0, 1} (every partial sum exact in float), and on
 * fresh float data within |x - ref| <= len * FLT_EPSILON * sum|x|, gridsync's also with
 * CUB's (within twice that); a mismatch is reported and makes the exit status 2 (the
 * mismatching implementation is not timed). Then time per call on the float data:
 * CUDA events around --calls back-to-back calls, median (and min, max) of --runs runs
 * after a warm-up run, the implementations taking turns run by run. Throughput GB/s =
 * (input + offsets + output bytes) / time. After timing, gridsync's output must still be
 * bit-identical to the checked one (its run-to-run determinism promise).
 *
 * CSV (one row per layout x implementation; written and flushed row by row):
 *   layout, impl, backend, n, num_segments, median_us, min_us, max_us, gbps, ratio_vs_cub,
 *   runs, calls_per_run, bytes, check, gpu, note
 * ratio_vs_cub = CUB's time / this time = this throughput / CUB's (> 1: faster than CUB).
 *
 * Exit status: 0 every check passed; 2 a result mismatched or a call failed; 3 watchdog,
 * hung kernel or unusable CUDA context; 1 setup failure; 77 no CUDA device.
 */
#include <cuda_runtime.h>

#include <cub/device/device_segmented_reduce.cuh>

#include "gridsync.h"

#include "bench_common.cuh"
#include "exact_ref.h"
#include "hostref.h"

/* ---- small utilities ------------------------------------------------------------------ */

/* Element counts as 2^k, or with k/M for large ones. */
static std::string count_name(uint64_t n)
{
    if ((n && !(n & (n - 1))) || n < 100000)
        return pow2_name(n);
    return n >= 10000000 ? strf("%.1fM", n / 1e6) : strf("%.0fk", n / 1e3);
}

/* Host random numbers: splitmix64. */
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed) {}
    uint64_t next()
    {
        const uint64_t z = s;
        s += 0x9e3779b97f4a7c15ull;
        return splitmix(z); /* splitmix adds that increment itself */
    }
    uint64_t below(uint64_t m) { return next() % m; } /* bias negligible for small m */
    double unit_open0() { return (double)((next() >> 11) + 1) * 0x1p-53; } /* (0, 1] */
};

/* ---- device code ----------------------------------------------------------------------- */

/* Fresh random data. integers 0: uniform in [-1, 1) (multiples of 2^-23, exact in float);
 * 1: -1, 0 or 1 (every partial sum exact in float while it stays below 2^24). */
__host__ __device__ __forceinline__ float rand_value(uint64_t i, uint64_t seed, int integers)
{
    const uint64_t h = splitmix(seed ^ splitmix(i));
    return integers ? (float)((int)((h >> 32) % 3u) - 1) : (float)(h >> 40) * 0x1p-23f - 1.0f;
}

__global__ void fill_kernel(float *p, uint64_t n, uint64_t seed, int integers)
{
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = rand_value(i, seed, integers);
}

/* ---- layouts --------------------------------------------------------------------------- */

enum LayoutId { L_UNIFORM, L_POWERLAW, L_GIANT, L_TINY, L_COUNT };
static const char *layout_name[L_COUNT] = {"uniform", "powerlaw", "giant", "tiny"};
/* Issue 7's targets: gridsync throughput / CUB throughput at least this. */
static const double layout_target[L_COUNT] = {1.0, 2.0, 2.0, 1.0};

struct Layout {
    int id;
    std::string name, desc;
    std::vector<int64_t> offsets; /* num_segments + 1, from 0 to n */
    uint64_t n = 0;
    uint64_t nseg() const { return offsets.size() - 1; }
};

struct Options : CommonOptions {
    std::vector<int> layouts{L_UNIFORM, L_POWERLAW, L_GIANT, L_TINY};
    int calls = 20; /* back-to-back calls per timed run */
    double alpha = 1.0;
    uint64_t layout_seed = 1; /* segment lengths: fixed, so runs compare */
    Options()
    {
        max_seconds = 150.0;
        csv = "segmented.csv";
    }
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gridsync-bench-segmented [options]\n"
            "  --csv PATH          CSV output (default segmented.csv), written row by row\n"
            "  --summary PATH      also write the summary (ratios against the targets of bench/README.md) there\n"
            "  --quick             layouts of about 2^22 elements instead of 2^26; 9 runs of 10 calls\n"
            "  --layouts LIST      of uniform,powerlaw,giant,tiny (default all)\n"
            "  --backends LIST     gridsync backends (default cuda_sm20,cuda_sm11_compat)\n"
            "  --runs N            timed runs per measurement (default 11, at least 9 used)\n"
            "  --calls K           back-to-back calls per timed run (default 20)\n"
            "  --alpha X           power-law exponent: P(len >= k) ~ k^-X (default 1)\n"
            "  --seed N            data seed (default: from the clock; printed)\n"
            "  --layout-seed N     segment-length seed (default 1)\n"
            "  --device N          CUDA device ordinal (default 0)\n"
            "  --max-seconds X     watchdog: exit 3 after this (default 150)\n"
            "  --selftest-summary  no GPU: made-up timings through the CSV and summary code\n");
}

static Options parse(int argc, char **argv)
{
    Options o;
    bool calls_given = false;
    parse_options(argc, argv, o, usage, [&](const std::string &a, const std::function<std::string()> &val) {
        if (a == "--layouts") {
            o.layouts.clear();
            split_list(val(), [&](const std::string &t) {
                int k = 0;
                while (k < L_COUNT && t != layout_name[k])
                    k++;
                if (k == L_COUNT)
                    throw BenchError("unknown layout '" + t + "' (uniform, powerlaw, giant, tiny)");
                o.layouts.push_back(k);
            });
        } else if (a == "--calls") {
            o.calls = std::stoi(val());
            calls_given = true;
        } else if (a == "--alpha") {
            o.alpha = std::stod(val());
        } else if (a == "--layout-seed") {
            o.layout_seed = std::stoull(val());
        } else {
            return false;
        }
        return true;
    });
    if (o.quick) {
        if (!o.runs_given)
            o.runs = 9;
        if (!calls_given)
            o.calls = 10;
    }
    if (o.runs < 9)
        o.runs = 9; /* the median of at least 9 runs (bench/README.md) */
    if (o.calls < 1)
        o.calls = 1;
    if (!(o.alpha > 0))
        throw BenchError("--alpha must be positive");
    if (o.layouts.empty())
        throw BenchError("no layouts");
    return o;
}

static void add_segment(Layout &L, uint64_t len)
{
    L.n += len;
    L.offsets.push_back((int64_t)L.n);
}

static Layout make_layout(int id, bool quick, double alpha, uint64_t seed)
{
    Layout L;
    L.id = id;
    L.name = layout_name[id];
    L.offsets.push_back(0);
    Rng rng(seed ^ (0x51ed2701ull * (uint64_t)(id + 1)));
    const int lg = quick ? 22 : 26; /* total elements (about) */
    switch (id) {
    case L_UNIFORM: {
        const uint64_t nseg = 1ull << (lg - 10);
        L.offsets.reserve(nseg + 1);
        for (uint64_t j = 0; j < nseg; j++)
            add_segment(L, 1024);
        L.desc = strf("%s segments of 2^10", count_name(nseg).c_str());
        break;
    }
    case L_POWERLAW: {
        /* Pareto: len = floor(U^(-1/alpha)), U in (0, 1], so P(len >= k) = k^-alpha;
         * capped at lmax; the last segment is cut so the total is exactly 2^lg. */
        const uint64_t total = 1ull << lg, lmax = 1ull << (lg - 4);
        while (L.n < total) {
            double x = std::floor(std::pow(rng.unit_open0(), -1.0 / alpha));
            uint64_t len = !(x < (double)lmax) ? lmax : std::max<uint64_t>(1, (uint64_t)x);
            len = std::min(len, total - L.n);
            add_segment(L, len);
        }
        L.desc = strf("Pareto lengths, alpha %.2f, 1..2^%d, seed %" PRIu64, alpha, lg - 4, seed);
        break;
    }
    case L_GIANT: {
        const uint64_t ntiny = quick ? 10000 : 100000;
        const uint64_t at = ntiny / 4 + rng.below(ntiny / 2 + 1);
        for (uint64_t j = 0; j <= ntiny; j++)
            add_segment(L, j == at ? (1ull << lg) : 1 + rng.below(16));
        L.desc = strf("one segment of 2^%d (segment %" PRIu64 ") among %" PRIu64 " of 1..16", lg, at, ntiny);
        break;
    }
    case L_TINY: {
        const uint64_t nseg = 1ull << (lg - 6);
        L.offsets.reserve(nseg + 1);
        for (uint64_t j = 0; j < nseg; j++)
            add_segment(L, 1 + rng.below(16));
        L.desc = strf("%s segments of 1..16", count_name(nseg).c_str());
        break;
    }
    }
    /* Statistics of the lengths, for the log. */
    std::vector<uint64_t> lens(L.nseg());
    uint64_t big = 0;
    for (uint64_t j = 0; j < L.nseg(); j++) {
        lens[j] = (uint64_t)(L.offsets[j + 1] - L.offsets[j]);
        if (lens[j] >= 65536)
            big += lens[j];
    }
    std::sort(lens.begin(), lens.end());
    L.desc += strf("; lengths min %" PRIu64 " median %" PRIu64 " max %" PRIu64 "; %.1f%% of elements in segments >= 2^16",
                   lens.front(), lens[lens.size() / 2], lens.back(), 100.0 * big / (double)L.n);
    return L;
}

/* ---- the benchmark --------------------------------------------------------------------- */

struct Impl {
    std::string backend; /* gridsync backend name, or "-" for CUB */
    bool cub;
    gs_context *ctx;
    bool exact = false;   /* GS_SEGMENTED_EXACT */
    float *out = nullptr; /* its own output buffer, max num_segments floats */
    const char *impl() const { return cub ? "cub" : exact ? "gridsync-exact" : "gridsync"; }
    std::string label() const { return cub ? std::string("cub") : exact ? backend + "-exact" : backend; }
    std::string short_label() const
    {
        if (cub)
            return "CUB";
        const std::string x = exact ? "-exact" : "";
        if (backend == "cuda_sm20")
            return "gridsync-sm20" + x;
        if (backend == "cuda_sm11_compat")
            return "gridsync-sm11" + x;
        return "gridsync-" + backend + x;
    }
};

struct Outcome {
    bool active = false; /* launched fine and checked ok: it gets timed */
    std::string check;   /* ok | MISMATCH... | error:... | unsupported */
    bool reported = false;
    double med = NAN, lo = NAN, hi = NAN;
};

struct Result { /* for the summary and the final table */
    int layout;
    std::string label, impl, backend, check;
    uint64_t n, nseg;
    double med, lo, hi, gbps, ratio;
};

struct Bench : BenchBase {
    Options o;
    std::vector<Impl> impls;
    float *d_in = nullptr;
    int64_t *d_off = nullptr;
    void *temp = nullptr;
    size_t temp_cap = 0;
    float *host = nullptr;
    bool host_pinned = false;
    size_t device_bytes = 0;
    std::vector<Result> results;

    Bench() { yield_while_waiting = true; }

    static double bytes_moved(uint64_t n, uint64_t nseg) { return 4.0 * n + 8.0 * (nseg + 1) + 4.0 * nseg; }

    void row(const Layout &L, const Impl &im, int runs, int calls, double med, double lo, double hi, double ratio,
             const std::string &check, const std::string &note)
    {
        auto num = [](double v, const char *fmt) { return std::isfinite(v) ? strf(fmt, v) : std::string(); };
        const double bytes = bytes_moved(L.n, L.nseg());
        const double gbps = std::isfinite(med) ? bytes / (med * 1e-6) / 1e9 : NAN;
        fprintf(g_csv, "%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%s,%s,%s,%s,%s,%d,%d,%.0f,%s,%s,%s\n", L.name.c_str(),
                im.impl(), csv_safe(im.backend).c_str(), L.n, L.nseg(), num(med, "%.3f").c_str(),
                num(lo, "%.3f").c_str(), num(hi, "%.3f").c_str(), num(gbps, "%.2f").c_str(), num(ratio, "%.4f").c_str(),
                runs, calls, bytes, csv_safe(check).c_str(), csv_safe(gpu).c_str(), csv_safe(note).c_str());
        fflush(g_csv);
        results.push_back(Result{L.id, im.label(), im.impl(), im.backend, check, L.n, L.nseg(), med, lo, hi, gbps, ratio});
    }

    void setup()
    {
        open_device(o.device, "gridsync-bench-segmented: ", " (exit 77)");
        int l2 = 0;
        CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, o.device));
        size_t free_b = 0, total_b = 0;
        CK(cudaMemGetInfo(&free_b, &total_b));
        printf("device %d: %s, compute capability %d.%d, %d SMs, L2 %s, memory %s (%s free)\n", o.device, prop.name,
               prop.major, prop.minor, prop.multiProcessorCount, bytes_name(l2).c_str(), bytes_name((double)total_b).c_str(),
               bytes_name((double)free_b).c_str());
        print_versions();
        open_backends(o.device, o.backends,
                      [&](const std::string &b, const std::string &why) { bad.push_back("ERROR backend " + b + ": " + why); });
        for (const auto &c : contexts)
            impls.push_back(Impl{c.first, false, c.second});
        for (size_t i = 0, nb = impls.size(); i < nb; i++)
            impls.push_back(Impl{impls[i].backend, false, impls[i].ctx, true});
        impls.push_back(Impl{"-", true, nullptr});
    }

    template <typename T> T *dev_alloc(size_t count, const char *what)
    {
        void *p = nullptr;
        const size_t b = std::max<size_t>(count, 1) * sizeof(T);
        cudaError_t e = cudaMalloc(&p, b);
        if (e != cudaSuccess)
            throw BenchError(strf("cudaMalloc(%s for %s): %s", bytes_name((double)b).c_str(), what, cudaGetErrorName(e)));
        device_bytes += b;
        return (T *)p;
    }

    /* One allocation of each buffer, sized for the largest layout. */
    void allocate(const std::vector<Layout> &layouts)
    {
        uint64_t max_n = 0, max_seg = 0;
        for (const Layout &L : layouts) {
            max_n = std::max(max_n, L.n);
            max_seg = std::max(max_seg, L.nseg());
        }
        const double need = 4.0 * max_n + 8.0 * (max_seg + 1) + 4.0 * max_seg * impls.size();
        size_t free_b = 0, total_b = 0;
        CK(cudaMemGetInfo(&free_b, &total_b));
        printf("device memory: %s for the data (input %s, offsets %s, %zu outputs of %s), %s free\n",
               bytes_name(need).c_str(), bytes_name(4.0 * max_n).c_str(), bytes_name(8.0 * (max_seg + 1)).c_str(),
               impls.size(), bytes_name(4.0 * max_seg).c_str(), bytes_name((double)free_b).c_str());
        if (need + (256u << 20) > (double)free_b)
            throw BenchError(strf("not enough free device memory: %s needed", bytes_name(need).c_str()));
        d_in = dev_alloc<float>(max_n, "the input");
        d_off = dev_alloc<int64_t>(max_seg + 1, "the offsets");
        for (Impl &im : impls)
            im.out = dev_alloc<float>(max_seg, "an output");
        const size_t hb = (size_t)max_n * sizeof(float);
        if (cudaMallocHost((void **)&host, hb) == cudaSuccess) {
            host_pinned = true;
        } else {
            (void)cudaGetLastError();
            host = (float *)malloc(hb);
            if (!host)
                throw BenchError("out of host memory for the reference copy (" + bytes_name((double)hb) + ")");
        }
    }

    void ensure_temp(size_t bytes)
    {
        if (bytes <= temp_cap && temp)
            return;
        if (temp) {
            CK(cudaFree(temp)); /* synchronises */
            device_bytes -= temp_cap;
        }
        temp = nullptr;
        temp_cap = 0;
        const size_t cap = std::max<size_t>(bytes, 1 << 20);
        CK(cudaMalloc(&temp, cap));
        temp_cap = cap;
        device_bytes += cap;
    }

    /* One call. GS_SUCCESS, or the status (CUB failures as GS_ERROR_CUDA) with *err. */
    gs_status launch(const Impl &im, const Layout &L, size_t temp_bytes, uint32_t flags, std::string *err)
    {
        if (im.cub) {
            size_t tb = temp_bytes;
            cudaError_t e = cub::DeviceSegmentedReduce::Sum(temp, tb, (const float *)d_in, im.out,
                                                            (int64_t)L.nseg(), (const int64_t *)d_off,
                                                            (const int64_t *)d_off + 1, stream);
            if (e == cudaSuccess)
                e = cudaGetLastError();
            if (e != cudaSuccess) {
                if (err)
                    *err = strf("cub::DeviceSegmentedReduce::Sum: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
                return GS_ERROR_CUDA;
            }
            return GS_SUCCESS;
        }
        if (im.exact)
            flags |= GS_SEGMENTED_EXACT;
        gs_status st = gs_segmented_reduce(im.ctx, d_in, L.n, GS_FLOAT32, GS_OP_SUM, d_off, L.nseg(), im.out, stream, flags);
        if (st != GS_SUCCESS && err)
            *err = strf("gs_segmented_reduce: %s: %s", gs_status_string(st), gs_last_error_message());
        return st;
    }

    void launch_or_throw(const Impl &im, const Layout &L, size_t temp_bytes)
    {
        std::string err;
        if (launch(im, L, temp_bytes, 0, &err) != GS_SUCCESS)
            throw BenchError(im.label() + ": " + err);
    }

    /* Microseconds per call over k back-to-back calls, from events. */
    double timed_run(const Impl &im, const Layout &L, size_t temp_bytes, int k)
    {
        return time_calls(k, [&] { launch_or_throw(im, L, temp_bytes); });
    }

    /* hostref's reference of each segment's SUM, threads over segment ranges. */
    void reference(const Layout &L, std::vector<hostref_ref> &refs)
    {
        const uint64_t S = L.nseg();
        refs.resize(S);
        unsigned nt = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
        if (L.n < (1u << 20))
            nt = 1;
        /* thread t: the segments beginning in elements [n t / nt, n (t+1) / nt) */
        std::vector<uint64_t> first(nt + 1);
        for (unsigned t = 0; t <= nt; t++) {
            const int64_t pos = (int64_t)(L.n * t / nt);
            first[t] = t == nt ? S : (uint64_t)(std::lower_bound(L.offsets.begin(), L.offsets.end() - 1, pos) - L.offsets.begin());
        }
        auto work = [&](unsigned t) {
            for (uint64_t j = first[t]; j < first[t + 1]; j++)
                hostref_reduce(&refs[j], GS_FLOAT32, GS_OP_SUM, GS_FLOAT32, host + L.offsets[j],
                               (uint64_t)(L.offsets[j + 1] - L.offsets[j]));
        };
        on_threads(nt, work);
    }

    /* The tolerance of segment r: exact on integer data of random signs, whose partial sums
     * stay far below 2^24 and so are exact in float; else len * FLT_EPSILON * sum|x|. */
    static hostref_tolerance tolerance(const hostref_ref &r, bool exact)
    {
        const bool none = exact && std::fabs((double)r.value) < 16777216.0;
        return hostref_tolerance{none ? 0.0 : 1.0, 0.0, 0, 0};
    }

    /* Compares got[] with the reference and, where `other` is given, with it (within twice
     * the tolerance). "ok" or "MISMATCH ..." naming the first bad segment and the count. */
    static std::string compare(const Layout &L, const std::vector<float> &got, const std::vector<hostref_ref> &refs,
                               const std::vector<float> *other, const char *other_name, bool exact, const char *pass)
    {
        uint64_t bad_ref = 0, bad_other = 0;
        std::string first;
        for (uint64_t j = 0; j < L.nseg(); j++) {
            const uint64_t len = (uint64_t)(L.offsets[j + 1] - L.offsets[j]);
            const hostref_tolerance tol = tolerance(refs[j], exact);
            hostref_verdict v;
            if (!hostref_check(&refs[j], nullptr, &got[j], &tol, &v)) {
                if (!bad_ref && !bad_other)
                    first = strf("segment %" PRIu64 " (len %" PRIu64 "): %s expected %s (%s)", j, len, v.got, v.want, v.note);
                bad_ref++;
            }
            if (other) {
                const double w = (*other)[j], bound2 = 2 * (double)hostref_bound(&refs[j], &tol);
                if (!(std::fabs(got[j] - w) <= bound2)) {
                    if (!bad_ref && !bad_other)
                        first = strf("segment %" PRIu64 " (len %" PRIu64 "): %.9g, %s %.9g (|diff| %.3g > 2 tol %.3g)", j,
                                     len, got[j], other_name, w, std::fabs(got[j] - w), bound2);
                    bad_other++;
                }
            }
        }
        if (!bad_ref && !bad_other)
            return "ok";
        return strf("MISMATCH (%s) %" PRIu64 " segments off the reference, %" PRIu64 " off %s; first: %s", pass, bad_ref,
                    bad_other, other ? other_name : "-", first.c_str());
    }

    /* The exact sums: every segment bit for bit against hostref's exact sum of host[]. */
    std::string compare_exact(const Layout &L, const std::vector<float> &got, const char *pass) const
    {
        const uint64_t S = L.nseg();
        const unsigned nt = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
        std::vector<uint64_t> bad(nt, 0), first(nt, S);
        auto work = [&](unsigned t) {
            for (uint64_t j = S * t / nt; j < S * (t + 1) / nt; j++) {
                const uint64_t len = (uint64_t)(L.offsets[j + 1] - L.offsets[j]);
                const uint64_t want = hostref_exact_sum(GS_FLOAT32, host + L.offsets[j], len, GS_FLOAT32);
                uint32_t g;
                memcpy(&g, &got[j], 4);
                if (!hostref_exact_same(GS_FLOAT32, g, want) && bad[t]++ == 0)
                    first[t] = j;
            }
        };
        on_threads(nt, work);
        uint64_t nbad = 0, j = S;
        for (unsigned t = 0; t < nt; t++) {
            nbad += bad[t];
            j = std::min(j, first[t]);
        }
        if (!nbad)
            return "ok";
        return strf("MISMATCH (%s) %" PRIu64 " segments off the exact sum; first: segment %" PRIu64 " got %.9g", pass,
                    nbad, j, got[j]);
    }

    void run_layout(const Layout &L, int li, int ln)
    {
        printf("\n[%d/%d %6.1fs] layout %s: n %" PRIu64 " (%s), %" PRIu64 " segments; %s\n", li, ln, elapsed_s(),
               L.name.c_str(), L.n, count_name(L.n).c_str(), L.nseg(), L.desc.c_str());
        const uint64_t S = L.nseg();
        const size_t ni = impls.size(), ci_cub = ni - 1;

        CK(cudaMemcpyAsync(d_off, L.offsets.data(), (S + 1) * sizeof(int64_t), cudaMemcpyHostToDevice, stream));
        size_t temp_bytes = 0;
        {
            cudaError_t e = cub::DeviceSegmentedReduce::Sum(nullptr, temp_bytes, (const float *)d_in, impls[ci_cub].out,
                                                            (int64_t)S, (const int64_t *)d_off,
                                                            (const int64_t *)d_off + 1, stream);
            if (e != cudaSuccess)
                throw BenchError(strf("CUB temp storage query: %s", cudaGetErrorName(e)));
            ensure_temp(temp_bytes); /* outside any timed region */
        }

        /* 1. correctness, two passes, each on fresh data with poisoned outputs:
         *   exact  integers in {-1, 0, 1}: every partial sum is an integer far below 2^24,
         *          so every result must equal the exact sum (catches a lost or doubled
         *          element, which the tolerance of a 2^26-element segment would not);
         *   float  uniform in [-1, 1): within len * FLT_EPSILON * sum|x| of the float64
         *          reference, gridsync within twice that of CUB. This is the data timed.
         * gridsync's first call validates the offsets (GS_SEGMENTED_CHECK_OFFSETS). */
        std::vector<Outcome> out(ni);
        for (size_t i = 0; i < ni; i++) {
            out[i].active = true;
            out[i].check = "ok";
        }
        std::vector<std::vector<float>> res(ni, std::vector<float>(S));
        const uint64_t s = seed ^ (0x100000001b3ull * (uint64_t)(L.id + 1));
        for (int pass = 0; pass < 2; pass++) {
            const bool exact = pass == 0;
            const uint64_t ps = exact ? ~s : s;
            const unsigned blocks = (unsigned)std::min<uint64_t>((L.n + 255) / 256, (uint64_t)prop.multiProcessorCount * 32);
            fill_kernel<<<std::max(1u, blocks), 256, 0, stream>>>(d_in, L.n, ps, exact ? 1 : 0);
            CK(cudaGetLastError());
            CK(cudaMemcpyAsync(host, d_in, L.n * sizeof(float), cudaMemcpyDeviceToHost, stream));
            sync_stream("the random fill and its copy to the host");
            std::vector<hostref_ref> refs;
            reference(L, refs);
            for (size_t i = 0; i < ni; i++) {
                if (!out[i].active)
                    continue;
                std::string err;
                gs_status st = GS_SUCCESS;
                if (!impls[i].cub && pass == 0) {
                    st = launch(impls[i], L, temp_bytes, GS_SEGMENTED_CHECK_OFFSETS, &err);
                    if (st == GS_SUCCESS)
                        sync_stream("the offsets-checking call");
                }
                CK(cudaMemsetAsync(impls[i].out, 0xff, S * sizeof(float), stream)); /* poison: NaN */
                if (st == GS_SUCCESS)
                    st = launch(impls[i], L, temp_bytes, 0, &err);
                if (st != GS_SUCCESS) {
                    out[i].active = false;
                    out[i].check = strf("error:%s%s", st == GS_ERROR_UNSUPPORTED ? "unsupported: " : "", err.c_str());
                }
            }
            sync_stream("the checked calls");
            for (size_t i = 0; i < ni; i++)
                if (out[i].active)
                    CK(cudaMemcpy(res[i].data(), impls[i].out, S * sizeof(float), cudaMemcpyDeviceToHost));
            const bool cub_ok = out[ci_cub].active;
            const char *pname = exact ? "exact pass" : "float pass";
            if (cub_ok)
                out[ci_cub].check = compare(L, res[ci_cub], refs, nullptr, "", exact, pname);
            for (size_t i = 0; i < ci_cub; i++)
                if (out[i].active)
                    out[i].check = impls[i].exact ? compare_exact(L, res[i], pname)
                                                  : compare(L, res[i], refs, cub_ok ? &res[ci_cub] : nullptr, "cub",
                                                            exact, pname);
            for (size_t i = 0; i < ni; i++) {
                const std::string &c = out[i].check;
                if (out[i].reported || c == "ok")
                    continue;
                out[i].active = false; /* a wrong or failed implementation is not timed */
                out[i].reported = true;
                if (c.compare(0, 8, "MISMATCH") == 0)
                    mismatches++;
                else
                    errors++;
                std::string line = strf("%s %s: %s", impls[i].label().c_str(), L.name.c_str(), c.c_str());
                fprintf(stderr, "!!! %s\n", line.c_str());
                bad.push_back(line);
            }
        }
        printf("  checks (exact and float passes): ");
        for (size_t i = 0; i < ni; i++)
            printf("%s %s%s", impls[i].short_label().c_str(), out[i].check.substr(0, 8).c_str(), i + 1 < ni ? ", " : "\n");

        /* 2. warm-up: one run each, then the timed runs, the implementations taking turns
         * (starting with a different one each run). A call that fails here takes its
         * implementation out of this layout; a hang ends everything. */
        std::vector<std::vector<double>> ts(ni);
        auto run_or_drop = [&](size_t i, bool keep) {
            try {
                double t = timed_run(impls[i], L, temp_bytes, o.calls);
                if (keep)
                    ts[i].push_back(t);
            } catch (const HangError &) {
                throw;
            } catch (const std::exception &e) {
                out[i].active = false;
                out[i].check = std::string("error:timing: ") + e.what();
                errors++;
                std::string line = strf("%s %s: %s", impls[i].label().c_str(), L.name.c_str(), out[i].check.c_str());
                fprintf(stderr, "!!! %s\n", line.c_str());
                bad.push_back(line);
                (void)cudaGetLastError();
                sync_stream("the stream after a failed call");
            }
        };
        for (size_t i = 0; i < ni; i++)
            if (out[i].active)
                run_or_drop(i, false);
        for (int r = 0; r < o.runs; r++)
            for (size_t j = 0; j < ni; j++) {
                const size_t i = (j + r) % ni;
                if (out[i].active)
                    run_or_drop(i, true);
            }
        for (size_t i = 0; i < ni; i++)
            if (out[i].active && !ts[i].empty())
                spread(ts[i], out[i].med, out[i].lo, out[i].hi);

        /* 3. gridsync's output after all those calls: bit-identical to the checked one. */
        for (size_t i = 0; i < ci_cub; i++) {
            if (!out[i].active)
                continue;
            std::vector<float> again(S);
            CK(cudaMemcpy(again.data(), impls[i].out, S * sizeof(float), cudaMemcpyDeviceToHost));
            if (memcmp(again.data(), res[i].data(), S * sizeof(float)) != 0) {
                uint64_t j = 0;
                while (j < S && !memcmp(&again[j], &res[i][j], sizeof(float)))
                    j++;
                out[i].check = strf("MISMATCH not deterministic: segment %" PRIu64 " was %.9g, then %.9g", j, res[i][j],
                                    again[j]);
                mismatches++;
                std::string line = strf("%s %s: %s", impls[i].label().c_str(), L.name.c_str(), out[i].check.c_str());
                fprintf(stderr, "!!! %s\n", line.c_str());
                bad.push_back(line);
            }
        }

        /* 4. rows and progress. */
        const double bytes = bytes_moved(L.n, S);
        const double t_cub = out[ci_cub].active ? out[ci_cub].med : NAN;
        std::string progress = strf("[%d/%d %6.1fs] %-8s %s:", li, ln, elapsed_s(), L.name.c_str(), bytes_name(bytes).c_str());
        for (size_t i = 0; i < ni; i++) {
            const Impl &im = impls[i];
            const Outcome &x = out[i];
            const double ratio = im.cub ? (std::isfinite(x.med) ? 1.0 : NAN) : t_cub / x.med;
            std::string note = strf("data seed %" PRIu64 "; %s", s, L.desc.c_str());
            row(L, im, std::isfinite(x.med) ? o.runs : 0, o.calls, x.med, x.lo, x.hi, ratio, x.check, note);
            if (std::isfinite(x.med)) {
                progress += strf("  %s %.1fus %.0fGB/s", im.short_label().c_str(), x.med, bytes / (x.med * 1e-6) / 1e9);
                if (!im.cub && std::isfinite(ratio))
                    progress += strf(" (%.2fx)", ratio);
            } else {
                progress += strf("  %s %s", im.short_label().c_str(), x.check.substr(0, 12).c_str());
            }
        }
        printf("%s\n", progress.c_str());
    }

    /* The report (bench_segmented_report.cuh): the table of every row, the summary against
     * the targets, the exact sums against the default, and both printed and written. */
    std::string table() const;
    std::string summary() const;
    std::string exact_summary() const;
    void write_summary() const;
};

#include "bench_segmented_report.cuh"

int main(int argc, char **argv)
{
    Bench b;
    if (!start("gridsync-bench-segmented", argc, argv, parse, b,
               "layout,impl,backend,n,num_segments,median_us,min_us,max_us,gbps,ratio_vs_cub,runs,calls_per_run,"
               "bytes,check,gpu,note\n",
               selftest))
        return 1;
    const Options &o = b.o;
    printf("gridsync-bench-segmented: data seed %" PRIu64 " (--seed to replay), layout seed %" PRIu64
           ", %d runs of %d calls, watchdog %.0f s%s\n",
           b.seed, o.layout_seed, o.runs, o.calls, o.max_seconds, o.quick ? ", --quick" : "");

    std::vector<Layout> layouts;
    try {
        b.setup();
        for (int id : o.layouts)
            layouts.push_back(make_layout(id, o.quick, o.alpha, o.layout_seed));
        b.allocate(layouts);
    } catch (const std::exception &e) {
        setup_failed("gridsync-bench-segmented", e.what());
    }

    for (size_t li = 0; li < layouts.size() && !b.aborted; li++)
        b.guarded("layout " + layouts[li].name, [&] { b.run_layout(layouts[li], (int)li + 1, (int)layouts.size()); },
                  [](bool, const std::string &) {});

    printf("\ndevice memory allocated by the benchmark: %s (CUB temporary storage %s)\n",
           bytes_name((double)b.device_bytes).c_str(), bytes_name((double)b.temp_cap).c_str());
    b.write_summary();
    b.finish(o.csv);
}
