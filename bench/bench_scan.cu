/*
 * gridsync-bench-scan: gs_scan (inclusive SUM, the input's type out) against CUB's
 * cub::DeviceScan::InclusiveSum (the toolkit's CCCL) and a device-to-device
 * cudaMemcpyAsync of the same bytes (the ceiling: a scan reads n and writes n elements), in
 * one process on the same device buffers, for float32, int32, float64, float16 (CUB over
 * __half) and int8 at n = 2^10, 2^12, ..., 2^28.
 *
 * Each time is the median over --runs repeats (default 21; one warm-up round first) of a
 * batch of back-to-back calls on one stream between two events, divided by the calls
 * (about a millisecond of work per batch); the contenders take turns within each repeat, so
 * drifts of clock and temperature hit all of them. CUB's temporary storage is allocated
 * once, for the largest n, outside the timing; each timed CUB call is both of its
 * launches. Below about 2^19 elements the per-call time is the host's launch rate for
 * all of them (bench/NOTES.md, "What is noise").
 *
 * Every gridsync result is checked (after its timing): against hostref_scan, bit for bit, up
 * to 2^22 elements; beyond, its first 2^22 outputs (out[i] does not depend on n) and, for
 * int32 and int8, the last output and 64 others against a sequential sum over the input.
 * CUB's int32 and int8 results (wrapping sums: every order gives the same bits) must equal
 * gridsync's at every n.
 *
 *   gridsync-bench-scan [--quick] [--csv FILE] [--dtypes f32,i32,f64,f16,bf16,i8]
 *                       [--min-log2 N] [--max-log2 N] [--runs R] [--backends a,b] [--seed S]
 *                       [--exact] [--data uniform|normal|wide]
 *
 * --exact adds gs_scan with GS_SCAN_EXACT (impl gridsync-exact:<backend>) for the float types,
 * checked bit for bit against hostref_scan_exact up to 2^22 elements. --data: the floats'
 * values, uniform in [-1, 1) (the default), normal (N(0, 1)) or wide (N(0, 1) times 2^u, u
 * uniform over +-60 binades, +-10 for float16: the exact scan's wider widths).
 *
 * CSV: dtype,n,impl,us,gbps; impl is gridsync:<backend>, cub or memcpy; gbps counts the
 * bytes read and written (2 n element sizes) per microsecond / 1000. --quick: up to 2^22,
 * 7 runs. Exit status: 0 every check passed, 2 a mismatch or a failed call, 3 the watchdog
 * or a fatal error, 77 no GPU, 1 bad options.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cub/device/device_scan.cuh>

#include "bench_common.cuh"
#include "dtype.h"
#include "exact_ref.h"
#include "hostref.h"
#include "scan_order.h"

struct ScanOptions : CommonOptions {
    std::vector<std::string> dtypes{"f32", "i32", "f64", "f16", "i8"};
    int min_log2 = 10, max_log2 = 28;
    bool exact = false;
    int data = 0; /* 0 uniform, 1 normal, 2 wide */
};

static void usage(FILE *f)
{
    fprintf(f, "usage: gridsync-bench-scan [--quick] [--csv FILE] [--dtypes f32,i32,f64,f16,bf16,i8] [--min-log2 N]\n"
               "                           [--max-log2 N] [--runs R] [--backends a,b] [--seed S] [--max-seconds S]\n"
               "                           [--exact] [--data uniform|normal|wide]\n");
}

static gs_dtype dtype_of(const std::string &s)
{
    const std::pair<const char *, gs_dtype> names[] = {
        {"f32", GS_FLOAT32}, {"i32", GS_INT32}, {"f64", GS_FLOAT64}, {"f16", GS_FLOAT16}, {"bf16", GS_BFLOAT16},
        {"i8", GS_INT8}};
    for (const auto &p : names)
        if (s == p.first)
            return p.second;
    throw BenchError("unknown dtype " + s + " (f32, i32, f64, f16, bf16, i8)");
}

/* Element i: every bit random for integers; floats by `data` (ScanOptions): uniform in
 * [-1, 1), N(0, 1) (Box-Muller), or N(0, 1) times 2^u, u uniform in [-span, span). */
template <typename T> __global__ void fill(T *p, uint64_t n, uint64_t seed, int data, int span)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t z = splitmix(seed + i * 0x9e3779b97f4a7c15ull);
        if constexpr (std::is_integral<T>::value) {
            p[i] = (T)z;
        } else {
            const double u = (double)(int64_t)z * 0x1p-63;
            double v = u;
            if (data) {
                const uint64_t y = splitmix(z);
                v = sqrt(-2.0 * log(((double)(y >> 11) + 0.5) * 0x1p-53)) * cospi(u);
                if (data == 2)
                    v = ldexp(v, (int)((double)span * (double)(int64_t)splitmix(y) * 0x1p-63));
            }
            if constexpr (std::is_same<T, double>::value)
                p[i] = v;
            else
                p[i] = (T)(float)v;
        }
    }
}

/* CUB's inclusive sum over n elements of t; temp == nullptr asks for the bytes it needs. */
static void cub_scan(gs_dtype t, void *temp, size_t &bytes, const void *in, void *out, uint64_t n, cudaStream_t s)
{
    const int ni = (int)n;
    switch (t) {
    case GS_FLOAT32: CK(cub::DeviceScan::InclusiveSum(temp, bytes, (const float *)in, (float *)out, ni, s)); break;
    case GS_INT32: CK(cub::DeviceScan::InclusiveSum(temp, bytes, (const int32_t *)in, (int32_t *)out, ni, s)); break;
    case GS_FLOAT64: CK(cub::DeviceScan::InclusiveSum(temp, bytes, (const double *)in, (double *)out, ni, s)); break;
    case GS_FLOAT16: CK(cub::DeviceScan::InclusiveSum(temp, bytes, (const __half *)in, (__half *)out, ni, s)); break;
    case GS_BFLOAT16:
        CK(cub::DeviceScan::InclusiveSum(temp, bytes, (const __nv_bfloat16 *)in, (__nv_bfloat16 *)out, ni, s));
        break;
    default: CK(cub::DeviceScan::InclusiveSum(temp, bytes, (const int8_t *)in, (int8_t *)out, ni, s)); break;
    }
}

struct Bench : BenchBase {
    ScanOptions o;
    void *in = nullptr, *out = nullptr, *cub_out = nullptr, *temp = nullptr;
    std::vector<unsigned char> exact_model; /* hostref_scan_exact of the first m elements */
    size_t temp_bytes = 0;

    /* gs_scan on context c, inclusive SUM into the input's type (exact: GS_SCAN_EXACT). */
    void gs(gs_context *c, gs_dtype t, uint64_t n, void *dst, bool exact = false)
    {
        gs_scan_options so = {};
        so.struct_size = sizeof so;
        so.out_dtype = GS_OUT_DEFAULT;
        so.flags = exact ? GS_SCAN_EXACT : 0u;
        GS_CK(gs_scan(c, in, n, t, GS_OP_SUM, dst, stream, &so));
    }

    /* The check of one gridsync result (already in `out`): see the header comment. */
    void verify(const std::string &impl, gs_dtype t, uint64_t n, const std::vector<unsigned char> &model, uint64_t m,
                const std::vector<std::pair<uint64_t, uint64_t>> &samples)
    {
        const size_t es = gs_dtype_size(t);
        const uint64_t k = std::min(n, m);
        std::vector<unsigned char> got(k * es);
        CK(cudaMemcpy(got.data(), out, k * es, cudaMemcpyDeviceToHost));
        std::string why;
        if (memcmp(got.data(), model.data(), k * es) != 0) {
            uint64_t i = 0;
            while (memcmp(&got[i * es], &model[i * es], es) == 0)
                i++;
            why = strf("out[%" PRIu64 "] = 0x%" PRIx64 ", hostref_scan 0x%" PRIx64, i, hostref_load_bits(t, got.data(), i),
                       hostref_load_bits(t, model.data(), i));
        }
        for (const auto &s : samples) { /* (index, sequential sum's bits) */
            if (!why.empty() || s.first >= n)
                continue;
            uint64_t g = 0;
            CK(cudaMemcpy(&g, (char *)out + s.first * es, es, cudaMemcpyDeviceToHost));
            if (g != s.second)
                why = strf("out[%" PRIu64 "] = 0x%" PRIx64 ", the sequential sum 0x%" PRIx64, s.first, g, s.second);
        }
        if (!why.empty()) {
            fprintf(stderr, "!!! MISMATCH %s %s n=%" PRIu64 ": %s\n", impl.c_str(), gs_dtype_name(t), n, why.c_str());
            bad.push_back(strf("MISMATCH %s %s n=%" PRIu64 ": %s", impl.c_str(), gs_dtype_name(t), n, why.c_str()));
            mismatches++;
        }
    }

    void run()
    {
        const uint64_t max_n = 1ull << o.max_log2, m = std::min<uint64_t>(max_n, 1u << 22);
        CK(cudaMalloc(&in, max_n * 8));
        CK(cudaMalloc(&out, max_n * 8));
        CK(cudaMalloc(&cub_out, max_n * 8));
        for (const std::string &d : o.dtypes) { /* the most any dtype needs, once */
            size_t b = 0;
            cub_scan(dtype_of(d), nullptr, b, in, out, max_n, stream);
            temp_bytes = std::max(temp_bytes, b);
        }
        CK(cudaMalloc(&temp, temp_bytes));
        printf("CUB temporary storage: %s, allocated once\n", bytes_name((double)temp_bytes).c_str());
        printf("%-4s %10s %-26s %10s %9s\n", "type", "n", "impl", "us", "GB/s");
        for (const std::string &d : o.dtypes) {
            const gs_dtype t = dtype_of(d);
            const size_t es = gs_dtype_size(t);
            const uint64_t seed = this->seed + (uint64_t)t * 0x1000193ull;
            const int dk = o.data, span = t == GS_FLOAT16 ? 10 : 60;
            switch (t) {
            case GS_FLOAT32: fill<float><<<1024, 256, 0, stream>>>((float *)in, max_n, seed, dk, span); break;
            case GS_INT32: fill<int32_t><<<1024, 256, 0, stream>>>((int32_t *)in, max_n, seed, dk, span); break;
            case GS_FLOAT64: fill<double><<<1024, 256, 0, stream>>>((double *)in, max_n, seed, dk, span); break;
            case GS_FLOAT16: fill<__half><<<1024, 256, 0, stream>>>((__half *)in, max_n, seed, dk, span); break;
            case GS_BFLOAT16:
                fill<__nv_bfloat16><<<1024, 256, 0, stream>>>((__nv_bfloat16 *)in, max_n, seed, dk, span);
                break;
            default: fill<int8_t><<<1024, 256, 0, stream>>>((int8_t *)in, max_n, seed, dk, span); break;
            }
            CK(cudaGetLastError());
            CK(cudaStreamSynchronize(stream));
            /* the model of the first m elements serves every n (out[i] depends on in[0, i]) */
            const bool integer = !gs_dtype_is_float(t);
            std::vector<unsigned char> host((integer ? max_n : m) * es), model(m * es);
            CK(cudaMemcpy(host.data(), in, host.size(), cudaMemcpyDeviceToHost));
            const gs_status hs = hostref_scan(host.data(), m, t, GS_OP_SUM, GS_OUT_DEFAULT, 0, GS_SCAN_THREADS,
                                              GS_SCAN_ITEMS((unsigned)es), GS_SCAN_GROUP, model.data());
            if (hs != GS_SUCCESS)
                throw BenchError(strf("hostref_scan: %s", gs_status_string(hs)));
            exact_model.clear();
            if (o.exact && !integer) {
                exact_model.resize(m * es);
                if (hostref_scan_exact(host.data(), m, t, t, 0, nullptr, 0, exact_model.data(), nullptr) != 0)
                    throw BenchError("hostref_scan_exact refused the data");
            }
            /* integers beyond m: each size's last output and 64 others, from one sequential pass */
            std::vector<std::pair<uint64_t, uint64_t>> samples;
            if (integer && max_n > m) {
                std::vector<uint64_t> at;
                for (int lg = o.min_log2; lg <= o.max_log2; lg += 2)
                    if ((1ull << lg) > m)
                        at.push_back((1ull << lg) - 1);
                for (int k = 0; k < 64; k++)
                    at.push_back(m + splitmix(seed + (uint64_t)k) % (max_n - m));
                std::sort(at.begin(), at.end());
                uint64_t sum = 0, i = 0;
                for (uint64_t a : at) {
                    for (; i <= a; i++)
                        sum += (uint64_t)(int64_t)hostref_load(t, host.data(), i);
                    samples.emplace_back(a, sum & (es == 8 ? ~0ull : (1ull << (8 * es)) - 1));
                }
            }
            for (int lg = o.min_log2; lg <= o.max_log2 && !aborted; lg += 2)
                guarded(strf("%s n=2^%d", d.c_str(), lg), [&] { measure(d, t, 1ull << lg, model, m, samples); },
                        [](bool, const std::string &) {});
        }
    }

    void measure(const std::string &d, gs_dtype t, uint64_t n, const std::vector<unsigned char> &model, uint64_t m,
                 const std::vector<std::pair<uint64_t, uint64_t>> &samples)
    {
        const size_t es = gs_dtype_size(t);
        /* about 1 ms of work per batch, from ~5 us per call plus 2 n es bytes at 2.5 TB/s */
        const double est_us = 5.0 + 2.0 * (double)(n * es) / 2.5e6;
        const int calls = std::max(1, std::min(1000, (int)(1000.0 / est_us)));
        std::vector<std::string> impls;
        const size_t nctx = contexts.size(), nexact = exact_model.empty() ? 0 : nctx;
        for (const auto &c : contexts)
            impls.push_back("gridsync:" + c.first);
        for (size_t k = 0; k < nexact; k++)
            impls.push_back("gridsync-exact:" + contexts[k].first);
        impls.push_back("cub");
        impls.push_back("memcpy");
        std::vector<std::vector<double>> ts(impls.size());
        auto launch = [&](size_t k) {
            if (k < nctx)
                gs(contexts[k].second, t, n, out);
            else if (k < nctx + nexact)
                gs(contexts[k - nctx].second, t, n, out, true);
            else if (impls[k] == "cub")
                cub_scan(t, temp, temp_bytes, in, cub_out, n, stream);
            else
                CK(cudaMemcpyAsync(out, in, n * es, cudaMemcpyDeviceToDevice, stream));
        };
        for (int r = 0; r <= o.runs; r++) /* round 0 warms up */
            for (size_t k = 0; k < impls.size(); k++) {
                const double us = time_calls(calls, [&] { launch(k); });
                if (r > 0)
                    ts[k].push_back(us);
            }
        for (size_t k = 0; k < impls.size(); k++) {
            const double us = median(ts[k]), gbps = 2.0 * (double)(n * es) / (us * 1e3);
            printf("%-4s %10" PRIu64 " %-26s %10.2f %9.1f\n", d.c_str(), n, impls[k].c_str(), us, gbps);
            fprintf(g_csv, "%s,%" PRIu64 ",%s,%.3f,%.2f\n", d.c_str(), n, impls[k].c_str(), us, gbps);
        }
        fflush(g_csv);
        for (size_t k = 0; k < nexact; k++) {
            gs(contexts[k].second, t, n, out, true);
            sync_stream("a checked exact scan");
            verify(impls[nctx + k], t, n, exact_model, m, {});
        }
        for (size_t k = 0; k < contexts.size(); k++) {
            gs(contexts[k].second, t, n, out);
            sync_stream("a checked scan");
            verify(impls[k], t, n, model, m, samples);
            if (!gs_dtype_is_float(t)) { /* CUB's wrapping sum: the same bits in any order */
                cub_scan(t, temp, temp_bytes, in, cub_out, n, stream);
                sync_stream("a CUB scan");
                std::vector<unsigned char> a(n * es), b(n * es);
                CK(cudaMemcpy(a.data(), out, n * es, cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(b.data(), cub_out, n * es, cudaMemcpyDeviceToHost));
                if (a != b) {
                    fprintf(stderr, "!!! MISMATCH %s %s n=%" PRIu64 ": other bits than CUB's\n", impls[k].c_str(),
                            d.c_str(), n);
                    bad.push_back(strf("MISMATCH %s %s n=%" PRIu64 ": CUB differs", impls[k].c_str(), d.c_str(), n));
                    mismatches++;
                }
            }
        }
    }
};

int main(int argc, char **argv)
{
    setvbuf(stdout, nullptr, _IOLBF, 0);
    Bench b;
    try {
        parse_options(argc, argv, b.o, usage, [&](const std::string &a, auto &val) {
            if (a == "--dtypes") {
                b.o.dtypes.clear();
                split_list(val(), [&](const std::string &t) {
                    dtype_of(t); /* throws for an unknown one */
                    b.o.dtypes.push_back(t);
                });
            } else if (a == "--exact") {
                b.o.exact = true;
            } else if (a == "--data") {
                const std::string v = val();
                b.o.data = v == "uniform" ? 0 : v == "normal" ? 1 : v == "wide" ? 2 : -1;
                if (b.o.data < 0)
                    throw BenchError("--data is uniform, normal or wide");
            } else if (a == "--min-log2")
                b.o.min_log2 = std::stoi(val());
            else if (a == "--max-log2")
                b.o.max_log2 = std::stoi(val());
            else
                return false;
            return true;
        });
        if (b.o.quick)
            b.o.max_log2 = std::min(b.o.max_log2, 22);
        if (!b.o.runs_given)
            b.o.runs = b.o.quick ? 7 : 21;
        if (b.o.min_log2 < 0 || b.o.max_log2 > 30 || b.o.min_log2 > b.o.max_log2 || b.o.runs < 1)
            throw BenchError("need 0 <= --min-log2 <= --max-log2 <= 30 and --runs >= 1");
    } catch (const std::exception &e) {
        fprintf(stderr, "gridsync-bench-scan: %s\n", e.what());
        return 1;
    }
    if (b.o.max_seconds <= 0)
        b.o.max_seconds = b.o.quick ? 240 : 1200;
    b.seed = b.o.seed ? b.o.seed : (uint64_t)std::chrono::system_clock::now().time_since_epoch().count();
    if (!open_csv("gridsync-bench-scan", b.o.csv.empty() ? "/dev/null" : b.o.csv, "dtype,n,impl,us,gbps\n"))
        return 1;
    watchdog_start(b.o.max_seconds);
    try {
        b.open_device(b.o.device, "gridsync-bench-scan: ", "");
        BenchBase::print_versions();
        printf("device %s, seed %" PRIu64 " (--seed replays it), %d runs per size\n", b.gpu.c_str(), b.seed, b.o.runs);
        b.open_backends(b.o.device, b.o.backends, [](const std::string &, const std::string &) {});
        b.run();
    } catch (const std::exception &e) {
        fprintf(stderr, "gridsync-bench-scan: FATAL %s\n", e.what());
        b.aborted = true;
        b.errors++;
    }
    for (const std::string &s : b.bad)
        printf("%s\n", s.c_str());
    printf("%s\n", b.mismatches || b.errors ? "SOME CHECKS FAILED" : "every gridsync result checked");
    b.finish(b.o.csv);
}
