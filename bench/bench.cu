/*
 * gridsync-bench: gridsync's gs_reduce (the public API, as an application calls it) against
 * CUB's DeviceReduce (the toolkit's CCCL headers), side by side on the same device buffers
 * of fresh random data. Issue 4; the method is in bench/README.md.
 *
 * For every dtype (f32, i32, f64, f16), size (2^10 .. 2^30 elements by default) and op
 * (SUM, MAX, ARGMAX), and for each gridsync backend (one gs_context per backend, created
 * with GRIDSYNC_BACKEND set) and CUB:
 *   hot       time per call from CUDA events around K back-to-back calls on one buffer,
 *             median over --runs runs (the impls take turns run by run);
 *   rotating  the same, cycling over copies of the input that together span 4x the L2, and
 *             with the L2 flushed before each run (only where the input fits in L2);
 *   latency   one call + cudaStreamSynchronize, host clock, median;
 * every result checked once per configuration against a host reference and the other
 * impls. Also: host cost per call of the API on a tiny input against a raw launch of an
 * equivalent one-block kernel (cudaLaunchKernel and cuLaunchKernel), and the device copy
 * bandwidth (cudaMemcpy device to device, bytes read + written).
 *
 * Writes one CSV row per measurement as soon as it has it (flushed), prints progress and,
 * at the end, a summary of the gridsync/CUB ratios against bench/README.md's targets. Every CUDA
 * call is checked; a watchdog ends the program (exit 3) after --max-seconds whatever
 * happens. Exit status: 0 all checks passed, 2 some result mismatched, 3 watchdog or sweep
 * aborted, 1 setup failure, 77 no CUDA device.
 */
#include <cuda.h> /* CUfunction and cuLaunchKernel's type only: the driver is reached through the runtime */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cub/cub.cuh>

#include <tuple>

#include "gridsync.h"

#include "bench_common.cuh"
#include "hostref.h"
#include "pointer_query.h"

/* ---- dtypes and ops -------------------------------------------------------------------- */

enum DT { DT_F32, DT_I32, DT_F64, DT_F16, DT_COUNT };
enum OP { OP_SUM, OP_MAX, OP_ARGMAX, OP_COUNT };
static const char *dt_name[DT_COUNT] = {"f32", "i32", "f64", "f16"};
static const size_t dt_size[DT_COUNT] = {4, 4, 8, 2};
static const gs_dtype dt_gs[DT_COUNT] = {GS_FLOAT32, GS_INT32, GS_FLOAT64, GS_FLOAT16};
static const char *op_name[OP_COUNT] = {"sum", "max", "argmax"};
static const gs_op op_gs[OP_COUNT] = {GS_OP_SUM, GS_OP_MAX, GS_OP_ARGMAX};

/* ---- device code ----------------------------------------------------------------------- */

/* Fresh random data: floats uniform in [-1, 1) (exact in the type), int32 over its whole
 * range (so integer sums wrap, as they must). */
template <typename T> __device__ __forceinline__ T rand_value(uint64_t h);
template <> __device__ __forceinline__ float rand_value<float>(uint64_t h) { return (float)(h >> 40) * 0x1p-23f - 1.0f; }
template <> __device__ __forceinline__ double rand_value<double>(uint64_t h) { return (double)(h >> 11) * 0x1p-52 - 1.0; }
template <> __device__ __forceinline__ int32_t rand_value<int32_t>(uint64_t h) { return (int32_t)(uint32_t)(h >> 32); }
template <> __device__ __forceinline__ __half rand_value<__half>(uint64_t h)
{
    return __float2half_rn((float)(h >> 40) * 0x1p-23f - 1.0f);
}

template <typename T> __global__ void fill_kernel(T *p, uint64_t n, uint64_t seed)
{
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = rand_value<T>(splitmix(seed ^ splitmix(i)));
}

/* Reads a buffer larger than the L2 so that what was cached is evicted; reading (not a
 * memset) leaves clean lines, so the timed run after it pays no write-backs. */
__global__ void evict_kernel(const uint4 *p, size_t n16, unsigned *sink)
{
    uint32_t x = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride) {
        uint4 v = p[i];
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u && sink) /* practically never; keeps the loads */
        *sink = x;
}

/* The read ceiling: one launch that reads n16 16-byte vectors through the read-only path
 * with four loads in flight per thread and does nothing else (a XOR per word; the store
 * practically never happens and only keeps the loads). No reduction can read its input in
 * one launch faster; gridsync's time over this one's is what its combine and its guard
 * cost. */
__global__ void __launch_bounds__(256) read_kernel(const uint4 *__restrict__ p, size_t n16, unsigned *sink)
{
    uint32_t x = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        const uint4 a = __ldg(p + i), b = __ldg(p + i + stride), c = __ldg(p + i + 2 * stride),
                    d = __ldg(p + i + 3 * stride);
        x ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n16; i += stride) {
        const uint4 a = __ldg(p + i);
        x ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (x == 0x9e3779b9u && sink)
        *sink = x;
}

/* The "equivalent single-block kernel" for the host-cost comparison: the same four
 * parameters as gridsync's kernels (in, n, out, workspace), one block of 256 threads. */
__global__ void __launch_bounds__(256) one_block_sum(const float *in, unsigned long long n, float *out, unsigned char *ws)
{
    typedef cub::BlockReduce<float, 256> BR;
    __shared__ typename BR::TempStorage tmp;
    float a = 0.0f;
    for (unsigned long long i = threadIdx.x; i < n; i += 256)
        a += in[i];
    a = BR(tmp).Sum(a);
    if (threadIdx.x == 0) {
        *out = a;
        if (ws)
            ws[0] = 0;
    }
}

/* ---- CUB ------------------------------------------------------------------------------- */

/* float16 SUM in CUB: accumulated in float and rounded once to half, as gridsync does
 * (cub::DeviceReduce::Sum over __half would accumulate in __half). */
struct SumAsFloat {
    __host__ __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};

template <typename T, typename N>
static cudaError_t cub_call_n(OP op, void *temp, size_t &temp_bytes, const void *in, N n, void *out, int64_t *idx,
                              cudaStream_t s)
{
    const T *p = (const T *)in;
    switch (op) {
    case OP_SUM:
        if constexpr (std::is_same<T, __half>::value)
            return cub::DeviceReduce::Reduce(temp, temp_bytes, p, (T *)out, n, SumAsFloat(), 0.0f, s);
        else
            return cub::DeviceReduce::Sum(temp, temp_bytes, p, (T *)out, n, s);
    case OP_MAX:
        return cub::DeviceReduce::Max(temp, temp_bytes, p, (T *)out, n, s);
    case OP_ARGMAX:
        return cub::DeviceReduce::ArgMax(temp, temp_bytes, p, (T *)out, idx, (int64_t)n, s);
    default:
        return cudaErrorInvalidValue;
    }
}

/* n as int where it fits (what a CUB user passes; 32-bit offsets), 64-bit beyond. */
template <typename T>
static cudaError_t cub_call(OP op, void *temp, size_t &temp_bytes, const void *in, uint64_t n, void *out, int64_t *idx,
                            cudaStream_t s)
{
    if (n <= (uint64_t)INT32_MAX)
        return cub_call_n<T, int>(op, temp, temp_bytes, in, (int)n, out, idx, s);
    return cub_call_n<T, int64_t>(op, temp, temp_bytes, in, (int64_t)n, out, idx, s);
}

typedef cudaError_t (*cub_fn)(OP, void *, size_t &, const void *, uint64_t, void *, int64_t *, cudaStream_t);
static const cub_fn cub_for[DT_COUNT] = {cub_call<float>, cub_call<int32_t>, cub_call<double>, cub_call<__half>};

/* ---- options --------------------------------------------------------------------------- */

struct Options : CommonOptions {
    std::vector<int> log2_sizes;
    std::vector<uint64_t> sizes;
    std::vector<int> dtypes{DT_F32, DT_I32, DT_F64, DT_F16};
    std::vector<int> ops{OP_SUM, OP_MAX, OP_ARGMAX};
    int latency_runs = 21;
    double target_ms = 2.0;  /* length of one timed run of back-to-back calls */
    double rotate_factor = 4.0; /* rotating copies span this many L2s */
    double budget_seconds = 210.0; /* past this, fewer and shorter runs */
    double peak_gbps = 3350.0; /* H100 SXM datasheet */
    bool rotate = true;
    Options()
    {
        max_seconds = 420.0;
        csv = "bench.csv";
    }
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gridsync-bench [options]\n"
            "  --csv PATH          CSV output (default bench.csv), written row by row\n"
            "  --summary PATH      also write the summary table there\n"
            "  --quick             sizes 2^10,14,18,20,22,24,26,28; 7 runs of 0.5 ms\n"
            "  --sizes LIST        comma list of log2 sizes (10..34) or ranges A-B (e.g. 10-30,33);\n"
            "                      numbers above 63 are element counts (e.g. 1000003)\n"
            "  --dtypes LIST       of f32,i32,f64,f16      --ops LIST   of sum,max,argmax\n"
            "  --backends LIST     gridsync backends, by name or by a gridsync-<name>.so's absolute\n"
            "                      path (an A/B of two builds in one process; default\n"
            "                      cuda_sm20,cuda_sm11_compat)\n"
            "  --runs N            timed runs per measurement (default 11, at least 7 used)\n"
            "  --target-ms X       length of one timed run (default 2)\n"
            "  --no-rotate         skip the rotating-buffer mode\n"
            "  --peak-gbps X       datasheet bandwidth for frac_peak (default 3350, H100 SXM)\n"
            "  --seed N            base seed (default: from the clock; printed)\n"
            "  --device N          CUDA device ordinal (default 0)\n"
            "  --budget-seconds X  after this, shorten the remaining runs (default 210)\n"
            "  --max-seconds X     watchdog: exit 3 after this (default 420)\n");
}

static int name_index(const char *const *names, int count, const std::string &s)
{
    for (int i = 0; i < count; i++)
        if (s == names[i])
            return i;
    throw BenchError("unknown name '" + s + "'");
}

static Options parse(int argc, char **argv)
{
    Options o;
    bool sizes_given = false, target_given = false;
    parse_options(argc, argv, o, usage, [&](const std::string &a, const std::function<std::string()> &val) {
        if (a == "--sizes") {
            sizes_given = true;
            split_list(val(), [&](const std::string &t) {
                size_t dash = t.find('-');
                if (dash != std::string::npos) {
                    int lo = std::stoi(t.substr(0, dash)), hi = std::stoi(t.substr(dash + 1));
                    if (lo < 0 || hi > 34 || lo > hi)
                        throw BenchError("bad size range " + t);
                    for (int k = lo; k <= hi; k++)
                        o.sizes.push_back(1ull << k);
                } else {
                    unsigned long long v = std::stoull(t);
                    if (v <= 34)
                        o.sizes.push_back(1ull << v);
                    else if (v > 63)
                        o.sizes.push_back(v);
                    else
                        throw BenchError("size " + t + ": log2 sizes go up to 34, element counts start at 64");
                }
            });
        } else if (a == "--dtypes") {
            o.dtypes.clear();
            split_list(val(), [&](const std::string &t) { o.dtypes.push_back(name_index(dt_name, DT_COUNT, t)); });
        } else if (a == "--ops") {
            o.ops.clear();
            split_list(val(), [&](const std::string &t) { o.ops.push_back(name_index(op_name, OP_COUNT, t)); });
        } else if (a == "--target-ms") {
            o.target_ms = std::stod(val());
            target_given = true;
        } else if (a == "--no-rotate") {
            o.rotate = false;
        } else if (a == "--peak-gbps") {
            o.peak_gbps = std::stod(val());
        } else if (a == "--budget-seconds") {
            o.budget_seconds = std::stod(val());
        } else {
            return false;
        }
        return true;
    });
    if (!sizes_given) {
        if (o.quick)
            for (int k : {10, 14, 18, 20, 22, 24, 26, 28})
                o.sizes.push_back(1ull << k);
        else
            for (int k = 10; k <= 30; k++)
                o.sizes.push_back(1ull << k);
    }
    if (o.quick) {
        if (!o.runs_given)
            o.runs = 7;
        if (!target_given)
            o.target_ms = 0.5;
        o.latency_runs = 11;
    }
    if (o.runs < 7)
        o.runs = 7; /* the median of at least 7 runs (bench/README.md) */
    if (!(o.target_ms > 0))
        o.target_ms = 2.0;
    std::sort(o.sizes.begin(), o.sizes.end());
    o.sizes.erase(std::unique(o.sizes.begin(), o.sizes.end()), o.sizes.end());
    return o;
}

/* ---- the sweep ------------------------------------------------------------------------- */

struct Impl {
    std::string backend; /* gridsync backend name, or "-" for CUB */
    bool cub;
    gs_context *ctx;
    size_t slot; /* byte offset of its outputs in d_out */
    const char *impl() const { return cub ? "cub" : "gridsync"; }
    std::string label() const { return cub ? std::string("cub") : backend; }
};

/* One impl's outcome for one configuration. */
struct Outcome {
    bool active = false; /* launched fine: it gets timed */
    std::string check;   /* ok | unsupported | MISMATCH... | error:... */
    double hot = NAN, hot_min = NAN, hot_max = NAN, rot = NAN, rot_min = NAN, rot_max = NAN;
    double lat = NAN, lat_min = NAN, lat_max = NAN;
    int k_hot = 0, k_rot = 0;
};

/* `runs` rounds of measure(i), which returns one time, over every impl i that is active;
 * each round starts with a different impl, so that clock drift spreads over all of them.
 * The times, per impl. */
template <typename Measure>
static std::vector<std::vector<double>> take_turns(const std::vector<Outcome> &out, int runs, Measure measure)
{
    std::vector<std::vector<double>> ts(out.size());
    for (int r = 0; r < runs; r++)
        for (size_t j = 0; j < out.size(); j++) {
            const size_t i = (j + r) % out.size();
            if (out[i].active)
                ts[i].push_back(measure(i));
        }
    return ts;
}

struct Bench : BenchBase {
    Options o;
    std::vector<Impl> impls;
    unsigned char *pool = nullptr;
    size_t pool_bytes = 0;
    unsigned char *flush = nullptr;
    size_t flush_bytes = 0;
    unsigned char *d_out = nullptr;
    void *temp = nullptr;
    size_t temp_cap = 0;
    unsigned char *host = nullptr;
    bool host_pinned = false;
    size_t host_bytes = 0;
    size_t l2 = 0;
    double copy_gbps = NAN;
    double peak_theoretical_gbps = NAN;
    uint64_t rot_cursor = 0;
    /* (label, dtype, op, n, mode) -> median microseconds, for the summary */
    std::map<std::tuple<std::string, int, int, uint64_t, std::string>, double> times;

    void row(const std::string &backend, const std::string &dtype, const std::string &op, uint64_t n, double bytes,
             const std::string &impl, const std::string &mode, int runs, int calls, double t_med, double t_min,
             double t_max, double gbps, double ratio, const std::string &check, const std::string &note)
    {
        auto num = [](double v, const char *fmt) { return std::isfinite(v) ? strf(fmt, v) : std::string(); };
        std::string l2n = (n && !(n & (n - 1))) ? strf("%d", 63 - __builtin_clzll(n)) : std::string();
        fprintf(g_csv, "%s,%s,%s,%s,%" PRIu64 ",%s,%.0f,%s,%s,%d,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", csv_safe(gpu).c_str(),
                csv_safe(backend).c_str(), dtype.c_str(), op.c_str(), n, l2n.c_str(), bytes, impl.c_str(), mode.c_str(),
                runs, calls, num(t_med, "%.3f").c_str(), num(t_min, "%.3f").c_str(), num(t_max, "%.3f").c_str(),
                num(gbps, "%.2f").c_str(), num(gbps / copy_gbps, "%.4f").c_str(), num(gbps / o.peak_gbps, "%.4f").c_str(),
                num(ratio, "%.4f").c_str(), csv_safe(check).c_str(), csv_safe(note).c_str());
        fflush(g_csv);
    }

    void setup()
    {
        open_device(o.device, "", "");
        int l2i = 0, memclk = 0, bus = 0, smclk = 0;
        CK(cudaDeviceGetAttribute(&l2i, cudaDevAttrL2CacheSize, o.device));
        CK(cudaDeviceGetAttribute(&memclk, cudaDevAttrMemoryClockRate, o.device));
        CK(cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, o.device));
        CK(cudaDeviceGetAttribute(&smclk, cudaDevAttrClockRate, o.device));
        l2 = (size_t)l2i;
        peak_theoretical_gbps = 2.0 * memclk * 1e3 * (bus / 8.0) / 1e9;
        size_t free_b = 0, total_b = 0;
        CK(cudaMemGetInfo(&free_b, &total_b));
        printf("device %d: %s, compute capability %d.%d, %d SMs, SM clock %d MHz, L2 %s, memory %s (%s free)\n",
               o.device, prop.name, prop.major, prop.minor, prop.multiProcessorCount, smclk / 1000,
               bytes_name((double)l2).c_str(), bytes_name((double)total_b).c_str(), bytes_name((double)free_b).c_str());
        printf("memory: %d-bit bus at %d MHz: %.0f GB/s theoretical; frac_peak uses %.0f GB/s (--peak-gbps)\n", bus,
               memclk / 1000, peak_theoretical_gbps, o.peak_gbps);
        print_versions();
        if (std::fabs(peak_theoretical_gbps - o.peak_gbps) > 0.1 * o.peak_gbps)
            printf("NOTE: this device's theoretical bandwidth (%.0f GB/s) differs from --peak-gbps %.0f "
                   "(H100 SXM's datasheet figure): frac_peak is against the latter\n",
                   peak_theoretical_gbps, o.peak_gbps);
        if (!l2)
            l2 = 50u << 20;

        CK(cudaMalloc(&d_out, 4096));
        open_backends(o.device, o.backends, [&](const std::string &b, const std::string &why) {
            row(b, "-", "-", 0, 0, "gridsync", "setup", 0, 0, NAN, NAN, NAN, NAN, NAN, "error:" + why, "");
        });
        size_t slot = 0; /* each implementation's outputs in d_out */
        for (const auto &c : contexts) {
            impls.push_back(Impl{c.first, false, c.second, slot});
            slot += 64;
        }
        impls.push_back(Impl{"-", true, nullptr, slot});
    }

    /* Element counts whose data (with the rotating copies) fit in the memory we have. */
    size_t region_bytes(int dt, uint64_t n) const
    {
        size_t bytes = (size_t)n * dt_size[dt];
        size_t stride = (bytes + 255) & ~(size_t)255;
        if (!o.rotate || bytes > l2)
            return stride;
        size_t copies = std::max<size_t>(2, (size_t)std::ceil(o.rotate_factor * (double)l2 / (double)stride));
        return copies * stride;
    }

    void allocate()
    {
        flush_bytes = 2 * l2;
        CK(cudaMalloc(&flush, flush_bytes));
        CK(cudaMemsetAsync(flush, 0x5a, flush_bytes, stream));
        size_t free_b = 0, total_b = 0;
        CK(cudaMemGetInfo(&free_b, &total_b));
        /* Leave room for CUB's temporary storage, gridsync's workspaces, the runtime. */
        size_t reserve = std::max<size_t>(1ull << 30, total_b / 20);
        size_t avail = free_b > reserve ? free_b - reserve : 0;
        size_t need = 0, host_need = 0;
        for (int dt : o.dtypes)
            for (uint64_t n : o.sizes)
                if (region_bytes(dt, n) <= avail) {
                    need = std::max(need, region_bytes(dt, n));
                    host_need = std::max(host_need, (size_t)n * dt_size[dt]);
                }
        printf("memory: %s free, data pool %s (sizes that need more are skipped), host buffer %s\n",
               bytes_name((double)free_b).c_str(), bytes_name((double)need).c_str(), bytes_name((double)host_need).c_str());
        if (!need)
            throw BenchError("not enough device memory for any requested size");

        /* The copy bandwidth first, on buffers of its own (this also warms the clocks up). */
        size_t cb = std::min<size_t>(1ull << 30, (avail / 4) & ~(size_t)0xfffff);
        if (cb >= 4 * l2) {
            unsigned char *a = nullptr, *b = nullptr;
            CK(cudaMalloc(&a, cb));
            CK(cudaMalloc(&b, cb));
            CK(cudaMemsetAsync(a, 1, cb, stream));
            std::vector<double> ts;
            for (int r = 0; r < 3 + 9; r++) {
                CK(cudaEventRecord(ev0, stream));
                CK(cudaMemcpyAsync(b, a, cb, cudaMemcpyDeviceToDevice, stream));
                CK(cudaEventRecord(ev1, stream));
                wait_event(ev1, "the device copy");
                float ms = 0;
                CK(cudaEventElapsedTime(&ms, ev0, ev1));
                if (r >= 3)
                    ts.push_back(ms * 1e3);
            }
            CK(cudaFree(a));
            CK(cudaFree(b));
            double t = median(ts);
            copy_gbps = 2.0 * cb / (t * 1e-6) / 1e9;
            printf("device copy bandwidth: cudaMemcpy D2D of %s: %.1f us, %.1f GB/s (read + written) = %.3f of %.0f GB/s\n",
                   bytes_name((double)cb).c_str(), t, copy_gbps, copy_gbps / o.peak_gbps, o.peak_gbps);
            row("-", "u8", "copy", cb, 2.0 * cb, "memcpy", "copy", (int)ts.size(), 1, t,
                *std::min_element(ts.begin(), ts.end()), *std::max_element(ts.begin(), ts.end()), copy_gbps, NAN, "ok",
                "cudaMemcpyAsync device to device; bytes = read + written");
        } else {
            printf("device copy bandwidth: not measured (too little free memory)\n");
        }

        CK(cudaMalloc(&pool, need));
        pool_bytes = need;
        host_bytes = host_need;
        if (cudaMallocHost(&host, host_bytes) == cudaSuccess) {
            host_pinned = true;
        } else {
            (void)cudaGetLastError();
            host = (unsigned char *)malloc(host_bytes);
            if (!host)
                throw BenchError("out of host memory for the reference copy (" + bytes_name((double)host_bytes) + ")");
        }
    }

    void ensure_temp(size_t bytes)
    {
        if (bytes <= temp_cap)
            return;
        if (temp)
            CK(cudaFree(temp)); /* synchronises */
        temp = nullptr;
        temp_cap = 0;
        size_t cap = std::max<size_t>(bytes, 1 << 20);
        CK(cudaMalloc(&temp, cap));
        temp_cap = cap;
    }

    void fill(int dt, void *p, uint64_t n, uint64_t s)
    {
        const int threads = 256;
        const unsigned blocks = (unsigned)std::min<uint64_t>((n + threads - 1) / threads, 65535ull * 4);
        switch (dt) {
        case DT_F32: fill_kernel<float><<<blocks, threads, 0, stream>>>((float *)p, n, s); break;
        case DT_I32: fill_kernel<int32_t><<<blocks, threads, 0, stream>>>((int32_t *)p, n, s); break;
        case DT_F64: fill_kernel<double><<<blocks, threads, 0, stream>>>((double *)p, n, s); break;
        case DT_F16: fill_kernel<__half><<<blocks, threads, 0, stream>>>((__half *)p, n, s); break;
        }
        CK(cudaGetLastError());
    }

    /* hostref's reference of op over the host copy's first n elements, on up to 32
     * threads (contiguous pieces, merged in order). */
    hostref_ref reference(int dt, int op, uint64_t n)
    {
        unsigned nt = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
        if (n < (1u << 16))
            nt = 1;
        std::vector<hostref_ref> part(nt);
        const gs_dtype t = dt_gs[dt];
        const gs_op g = op_gs[op];
        auto work = [&](unsigned k) {
            const uint64_t lo = n * k / nt, hi = n * (k + 1) / nt;
            hostref_reduce(&part[k], t, g, hostref_default_out(t, g), host + lo * dt_size[dt], hi - lo);
        };
        on_threads(nt, work);
        for (unsigned k = 1; k < nt; k++)
            hostref_merge(&part[0], &part[k]);
        return part[0];
    }

    /* One call. Returns GS_SUCCESS, or the status (CUB failures as GS_ERROR_CUDA) with *err. */
    gs_status launch(const Impl &im, int dt, int op, const void *in, uint64_t n, size_t temp_bytes, std::string *err)
    {
        unsigned char *out = d_out + im.slot;
        if (im.cub) {
            size_t tb = temp_bytes;
            cudaError_t e = cub_for[dt]((OP)op, temp, tb, in, n, out, (int64_t *)(out + 16), stream);
            if (e != cudaSuccess) {
                if (err)
                    *err = strf("cub: %s", cudaGetErrorName(e));
                return GS_ERROR_CUDA;
            }
            return GS_SUCCESS;
        }
        gs_status st = gs_reduce(im.ctx, in, n, dt_gs[dt], op_gs[op], out, stream);
        if (st != GS_SUCCESS && err)
            *err = strf("%s: %s", gs_status_string(st), gs_last_error_message());
        return st;
    }

    void launch_or_throw(const Impl &im, int dt, int op, const void *in, uint64_t n, size_t temp_bytes)
    {
        std::string err;
        if (launch(im, dt, op, in, n, temp_bytes, &err) != GS_SUCCESS)
            throw BenchError(im.label() + ": " + err);
    }

    /* Microseconds per call over k back-to-back calls, from events. */
    double timed_run(const Impl &im, int dt, int op, uint64_t n, size_t temp_bytes, int k, size_t ncopies, size_t stride)
    {
        if (ncopies > 1) { /* evict the L2 */
            evict_kernel<<<prop.multiProcessorCount * 8, 256, 0, stream>>>((const uint4 *)flush, flush_bytes / 16,
                                                                           (unsigned *)(d_out + 4032));
            CK(cudaGetLastError());
        }
        return time_calls(k, [&] {
            const void *in = ncopies > 1 ? pool + (rot_cursor++ % ncopies) * stride : pool;
            launch_or_throw(im, dt, op, in, n, temp_bytes);
        });
    }

    /* "ok" or "MISMATCH ...". Float sums: the accumulation error allowed is 4 eps(acc)
     * sum|x| (random data: far below the worst case of n eps), plus eps(out) |sum| for the
     * final rounding; f16 accumulates in f32 (gridsync's semantics; CUB is called the same
     * way). CUB's ARGMAX also returns the value, which must be the maximum. */
    std::string verify(const Impl &im, int op, const hostref_ref &ref, const unsigned char *res, double *value_out)
    {
        static const hostref_tolerance tol = {0, 4, 1, 0};
        const unsigned char *r = res + im.slot;
        hostref_verdict v;
        hostref_check(&ref, host, r + (im.cub && op == OP_ARGMAX ? 16 : 0), &tol, &v);
        if (op == OP_ARGMAX) {
            int64_t idx;
            memcpy(&idx, r + (im.cub ? 16 : 0), 8);
            *value_out = (double)idx;
            if (v.ok && im.cub && hostref_load(ref.in, r, 0) != ref.index_value)
                return strf("MISMATCH argmax value %.17Lg expected %.17Lg", hostref_load(ref.in, r, 0), ref.index_value);
        } else {
            *value_out = (double)hostref_load(ref.out, r, 0);
        }
        if (!v.ok)
            return strf("MISMATCH %s %s expected %s (%s)", op_name[op], v.got, v.want, v.note);
        return "ok";
    }

    void run_config(int dt, uint64_t n, int ci, int cn)
    {
        const size_t bytes = (size_t)n * dt_size[dt];
        const std::string dname = dt_name[dt];
        if (region_bytes(dt, n) > pool_bytes) {
            printf("[%3d/%d %6.1fs] %s n=%s (%s): skipped, needs %s of device memory\n", ci, cn, elapsed_s(),
                   dname.c_str(), pow2_name(n).c_str(), bytes_name((double)bytes).c_str(),
                   bytes_name((double)region_bytes(dt, n)).c_str());
            for (int op : o.ops)
                row("-", dname, op_name[op], n, (double)bytes, "-", "hot", 0, 0, NAN, NAN, NAN, NAN, NAN, "skipped",
                    "not enough device memory");
            return;
        }
        const size_t stride = (bytes + 255) & ~(size_t)255;
        const size_t ncopies = region_bytes(dt, n) / stride;
        const bool hurry = elapsed_s() > o.budget_seconds;
        static bool hurry_said;
        const int runs = hurry ? 7 : o.runs;
        const int lat_runs = hurry ? 7 : o.latency_runs;
        const double target_us = (hurry ? std::min(0.25, o.target_ms) : o.target_ms) * 1e3;
        if (hurry && !hurry_said) {
            hurry_said = true;
            printf("(past the %.0f s budget: 7 runs of %.2f ms from here on)\n", o.budget_seconds, target_us / 1e3);
        }

        /* Fresh random data, every copy different; copy 0 (at the pool's start) is the one
         * the hot and latency modes use and the one checked. */
        const uint64_t s = seed ^ (0x100000001b3ull * (uint64_t)(dt + 1)) ^ (n * 0x9e3779b97f4a7c15ull);
        fill(dt, pool, (uint64_t)(ncopies * stride / dt_size[dt]), s);
        sync_stream("the random fill");
        CK(cudaMemcpy(host, pool, bytes, cudaMemcpyDeviceToHost));
        hostref_ref refs[OP_COUNT];
        for (int op : o.ops)
            refs[op] = reference(dt, op, n);

        for (int op : o.ops) {
            const std::string oname = op_name[op];
            std::vector<Outcome> out(impls.size());
            size_t temp_bytes = 0;
            {
                cudaError_t e = cub_for[dt]((OP)op, nullptr, temp_bytes, pool, n, d_out, (int64_t *)d_out, stream);
                if (e != cudaSuccess)
                    throw BenchError(strf("CUB temp storage query: %s", cudaGetErrorName(e)));
                ensure_temp(temp_bytes);
            }
            /* 1. one call each, results checked. */
            CK(cudaMemsetAsync(d_out, 0xff, 4096, stream)); /* poison: an unwritten result fails */
            for (size_t i = 0; i < impls.size(); i++) {
                std::string err;
                gs_status st = launch(impls[i], dt, op, pool, n, temp_bytes, &err);
                if (st == GS_ERROR_UNSUPPORTED)
                    out[i].check = "unsupported";
                else if (st != GS_SUCCESS)
                    out[i].check = "error:" + err;
                else
                    out[i].active = true;
            }
            sync_stream("the checked calls");
            unsigned char res[4096];
            CK(cudaMemcpy(res, d_out, sizeof res, cudaMemcpyDeviceToHost));
            std::vector<double> vals(impls.size(), NAN);
            for (size_t i = 0; i < impls.size(); i++)
                if (out[i].active)
                    out[i].check = verify(impls[i], op, refs[op], res, &vals[i]);
            /* Cross-check gridsync against CUB where both ran (beyond both being within the
             * tolerance of the reference): MAX/ARGMAX must agree exactly. */
            const size_t ci_cub = impls.size() - 1;
            for (size_t i = 0; i + 1 < impls.size(); i++)
                if (out[i].active && out[ci_cub].active && out[i].check == "ok" && out[ci_cub].check == "ok" &&
                    op != OP_SUM && vals[i] != vals[ci_cub])
                    out[i].check = strf("MISMATCH vs cub: %.17g vs %.17g", vals[i], vals[ci_cub]);
            for (size_t i = 0; i < impls.size(); i++) {
                const std::string &c = out[i].check;
                if (c.compare(0, 8, "MISMATCH") == 0 || c.compare(0, 6, "error:") == 0) {
                    if (c[0] == 'M')
                        mismatches++;
                    else
                        errors++;
                    std::string line = strf("%s %s %s n=%s: %s", impls[i].label().c_str(), dname.c_str(),
                                            oname.c_str(), pow2_name(n).c_str(), c.c_str());
                    fprintf(stderr, "!!! %s\n", line.c_str());
                    bad.push_back(line);
                }
            }

            /* 2. calibrate: calls per run so that a run lasts about target_ms. */
            for (size_t i = 0; i < impls.size(); i++) {
                if (!out[i].active)
                    continue;
                launch_or_throw(impls[i], dt, op, pool, n, temp_bytes);
                double t = timed_run(impls[i], dt, op, n, temp_bytes, 3, 1, stride);
                int k = (int)std::ceil(target_us / std::max(t, 0.5));
                out[i].k_hot = std::max(t > 1000.0 ? 2 : 3, std::min(k, 4000));
                out[i].k_rot = out[i].k_hot;
            }

            /* 3. hot, then rotating: the impls take turns run by run (starting with a
             * different one each run), so clock drift spreads over all of them. */
            for (int mode = 0; mode < 2; mode++) {
                if (mode == 1 && ncopies < 2)
                    break;
                const auto ts = take_turns(out, runs, [&](size_t i) {
                    return timed_run(impls[i], dt, op, n, temp_bytes, mode ? out[i].k_rot : out[i].k_hot,
                                     mode ? ncopies : 1, stride);
                });
                for (size_t i = 0; i < impls.size(); i++)
                    if (out[i].active && mode == 0)
                        spread(ts[i], out[i].hot, out[i].hot_min, out[i].hot_max);
                    else if (out[i].active)
                        spread(ts[i], out[i].rot, out[i].rot_min, out[i].rot_max);
            }

            /* 4. latency: one call + stream synchronize, host clock, hot data. */
            {
                const auto ts = take_turns(out, lat_runs, [&](size_t i) {
                    auto t0 = Clock::now();
                    launch_or_throw(impls[i], dt, op, pool, n, temp_bytes);
                    CK(cudaStreamSynchronize(stream));
                    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
                });
                for (size_t i = 0; i < impls.size(); i++)
                    if (out[i].active)
                        spread(ts[i], out[i].lat, out[i].lat_min, out[i].lat_max);
            }

            /* 5. rows and progress. */
            const Outcome &cub = out[ci_cub];
            std::string progress = strf("[%3d/%d %6.1fs] %s %-6s n=%-5s %9s:", ci, cn, elapsed_s(), dname.c_str(),
                                        oname.c_str(), pow2_name(n).c_str(), bytes_name((double)bytes).c_str());
            for (size_t i = 0; i < impls.size(); i++) {
                const Impl &im = impls[i];
                const Outcome &x = out[i];
                std::string note = strf("seed=%" PRIu64, s);
                if (!im.cub && op == OP_SUM && dt != DT_I32 && x.active && cub.active)
                    note += strf(" sum=%.17g cub_sum=%.17g", vals[i], vals[ci_cub]);
                if (!x.active) {
                    row(im.backend, dname, oname, n, (double)bytes, im.impl(), "hot", 0, 0, NAN, NAN, NAN, NAN, NAN,
                        x.check, note);
                    progress += strf(" %s %s", im.cub ? "cub" : im.backend.c_str(),
                                     x.check == "unsupported" ? "unsupported" : "ERROR");
                    continue;
                }
                auto ratio = [&](double a, double b) { return im.cub ? 1.0 : a / b; };
                row(im.backend, dname, oname, n, (double)bytes, im.impl(), "hot", runs, x.k_hot, x.hot, x.hot_min,
                    x.hot_max, bytes / (x.hot * 1e-6) / 1e9, ratio(x.hot, cub.hot), x.check, note);
                times[std::make_tuple(im.label(), dt, op, n, std::string("hot"))] = x.hot;
                if (std::isfinite(x.rot)) {
                    row(im.backend, dname, oname, n, (double)bytes, im.impl(), "rotating", runs, x.k_rot, x.rot,
                        x.rot_min, x.rot_max, bytes / (x.rot * 1e-6) / 1e9, ratio(x.rot, cub.rot), x.check,
                        note + strf(" copies=%zu", ncopies));
                    times[std::make_tuple(im.label(), dt, op, n, std::string("rotating"))] = x.rot;
                }
                row(im.backend, dname, oname, n, (double)bytes, im.impl(), "latency", lat_runs, 1, x.lat, x.lat_min,
                    x.lat_max, NAN, ratio(x.lat, cub.lat), x.check, note + " (call + cudaStreamSynchronize)");
                times[std::make_tuple(im.label(), dt, op, n, std::string("latency"))] = x.lat;
                std::string short_name = im.cub ? "cub" : im.backend == "cuda_sm20" ? "sm20"
                                                      : im.backend == "cuda_sm11_compat" ? "sm11" : im.backend;
                progress += strf(" %s %.2fus", short_name.c_str(), x.hot);
                if (!im.cub && cub.active)
                    progress += strf("(%.2fx)", x.hot / cub.hot);
                if (std::isfinite(x.rot))
                    progress += strf("/rot %.2f", x.rot);
                if (x.check != "ok")
                    progress += " !!" + x.check.substr(0, 8);
            }
            printf("%s\n", progress.c_str());
            fflush(stdout);
        }
    }

    /* A driver entry point through the runtime (the bench links no libcuda), or nullptr. */
    static void *driver_entry(const char *name)
    {
        void *fp = nullptr;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        if (cudaGetDriverEntryPointByVersion(name, &fp, 12000, cudaEnableDefault, &q) == cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            return fp;
        (void)cudaGetLastError();
        return nullptr;
    }
    typedef gs_pointer_attributes_fn PtrAttrs_t;
    typedef CUresult (*CtxGetCurrent_t)(CUcontext *);
    typedef CUresult (*StreamIsCapturing_t)(CUstream, CUstreamCaptureStatus *);
    typedef CUresult (*StreamGetId_t)(CUstream, unsigned long long *);

    /* The driver calls gs_reduce makes before its launch (null where missing). */
    struct HotPathCalls {
        PtrAttrs_t ptr_attrs;
        CtxGetCurrent_t get_current;
        StreamIsCapturing_t is_capturing;
        StreamGetId_t stream_id;
    };
    static HotPathCalls hot_path_calls()
    {
        return HotPathCalls{(PtrAttrs_t)driver_entry("cuPointerGetAttributes"),
                            (CtxGetCurrent_t)driver_entry("cuCtxGetCurrent"),
                            (StreamIsCapturing_t)driver_entry("cuStreamIsCapturing"),
                            (StreamGetId_t)driver_entry("cuStreamGetId")};
    }

    /* gs_reduce's pointer check (core/validate.c): the same call, internal/pointer_query.h. */
    static bool check_pointer(PtrAttrs_t ptr_attrs, CUdeviceptr p)
    {
        gs_pointer_info info;
        return gs_query_pointer(ptr_attrs, p, &info) == CUDA_SUCCESS && info.memtype != 0;
    }

    /* Host microseconds per call, back to back on a tiny input: gs_reduce vs CUB vs a raw
     * launch of one_block_sum. Batches well below the launch queue's depth, synchronized
     * between batches, so the host is never throttled by the GPU. */
    void host_api()
    {
        const uint64_t n = 256;
        const int batch = 200, batches = o.quick ? 11 : 21;
        fill(DT_F32, pool, n, seed ^ 0x5151);
        sync_stream("the random fill");
        size_t temp_bytes = 0;
        CK(cub_for[DT_F32](OP_SUM, nullptr, temp_bytes, pool, n, d_out, nullptr, stream));
        ensure_temp(temp_bytes);

        typedef CUresult (*cuLaunchKernel_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                             unsigned, CUstream, void **, void **);
        cuLaunchKernel_t cu_launch = (cuLaunchKernel_t)driver_entry("cuLaunchKernel");
        const HotPathCalls hp = hot_path_calls();
        const auto ptr_attrs = hp.ptr_attrs;
        const auto get_current = hp.get_current;
        const auto is_capturing = hp.is_capturing;
        const auto stream_id = hp.stream_id;
        CUfunction cu_fn = nullptr;
        {
            cudaFunction_t f = nullptr;
            CK(cudaGetFuncBySymbol(&f, (const void *)one_block_sum));
            cu_fn = (CUfunction)f;
        }
        const float *in = (const float *)pool;
        unsigned long long nn = n;
        float *outp = (float *)(d_out + 2048);
        unsigned char *ws = d_out + 3072;
        void *params[] = {(void *)&in, (void *)&nn, (void *)&outp, (void *)&ws};

        struct Way {
            std::string impl, backend;
            std::function<bool(std::string *)> call;
        };
        std::vector<Way> ways;
        for (const Impl &im : impls) {
            const Impl *p = &im;
            ways.push_back(Way{im.impl(), im.backend, [this, p, n, temp_bytes](std::string *err) {
                                   return launch(*p, DT_F32, OP_SUM, pool, n, temp_bytes, err) == GS_SUCCESS;
                               }});
        }
        ways.push_back(Way{"cudaLaunchKernel", "-", [&](std::string *err) {
                               cudaError_t e = cudaLaunchKernel((const void *)one_block_sum, dim3(1), dim3(256), params, 0, stream);
                               if (e != cudaSuccess)
                                   *err = cudaGetErrorName(e);
                               return e == cudaSuccess;
                           }});
        if (cu_launch)
            ways.push_back(Way{"cuLaunchKernel", "-", [&](std::string *err) {
                                   CUresult r = cu_launch(cu_fn, 1, 1, 1, 256, 1, 1, 0, (CUstream)stream, params, nullptr);
                                   if (r != CUDA_SUCCESS)
                                       *err = strf("CUresult %d", (int)r);
                                   return r == CUDA_SUCCESS;
                               }});
        /* The raw launch after the driver queries gs_reduce makes before its launch (an
         * explicit context: the input and output checks, the current context, the stream's
         * capture state and id, the workspace lock): what the API costs with the library's
         * own code taken out. */
        std::mutex mu;
        if (cu_launch && ptr_attrs && get_current && is_capturing && stream_id)
            ways.push_back(Way{"cuLaunchKernel+queries", "-", [&](std::string *err) {
                                   const CUstream s = (CUstream)stream;
                                   CUcontext c = nullptr;
                                   CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_ACTIVE;
                                   unsigned long long id = 0;
                                   if (!check_pointer(ptr_attrs, (CUdeviceptr)(uintptr_t)in) ||
                                       !check_pointer(ptr_attrs, (CUdeviceptr)(uintptr_t)outp) ||
                                       get_current(&c) != CUDA_SUCCESS || !c ||
                                       is_capturing(s, &cap) != CUDA_SUCCESS || cap != CU_STREAM_CAPTURE_STATUS_NONE ||
                                       stream_id(s, &id) != CUDA_SUCCESS || !id) {
                                       *err = "a driver query failed";
                                       return false;
                                   }
                                   mu.lock();
                                   mu.unlock();
                                   CUresult r = cu_launch(cu_fn, 1, 1, 1, 256, 1, 1, 0, s, params, nullptr);
                                   if (r != CUDA_SUCCESS)
                                       *err = strf("CUresult %d", (int)r);
                                   return r == CUDA_SUCCESS;
                               }});
        std::vector<std::vector<double>> ts(ways.size());
        std::vector<std::string> errs(ways.size());
        for (int r = 0; r < batches + 2; r++)
            for (size_t j = 0; j < ways.size(); j++) {
                size_t w = (j + r) % ways.size();
                if (!errs[w].empty())
                    continue;
                auto t0 = Clock::now();
                int i = 0;
                for (; i < batch; i++)
                    if (!ways[w].call(&errs[w]))
                        break;
                auto t1 = Clock::now();
                sync_stream("a batch of host-cost calls");
                if (i < batch)
                    continue;
                if (r >= 2) /* the first two batches warm up (lazy module loading, workspaces) */
                    ts[w].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / batch);
            }
        double t_cub = NAN, t_raw = NAN;
        for (size_t w = 0; w < ways.size(); w++) {
            if (ways[w].impl == "cub" && !ts[w].empty())
                t_cub = median(ts[w]);
            if (ways[w].impl == "cuLaunchKernel" && !ts[w].empty())
                t_raw = median(ts[w]);
            if (ways[w].impl == "cudaLaunchKernel" && !ts[w].empty() && !std::isfinite(t_raw))
                t_raw = median(ts[w]);
        }
        printf("host cost per call, %d back-to-back calls on %" PRIu64 " floats (SUM), median of %d batches:\n", batch, n,
               batches);
        for (size_t w = 0; w < ways.size(); w++) {
            if (ts[w].empty()) {
                printf("  %-18s %-18s error: %s\n", ways[w].impl.c_str(), ways[w].backend.c_str(), errs[w].c_str());
                row(ways[w].backend, "f32", "sum", n, 4.0 * n, ways[w].impl, "host_api", 0, batch, NAN, NAN, NAN, NAN, NAN,
                    "error:" + errs[w], "");
                errors++;
                continue;
            }
            double m = median(ts[w]);
            printf("  %-18s %-18s %7.3f us/call  (%.2fx CUB, %.2fx the raw launch)\n", ways[w].impl.c_str(),
                   ways[w].backend.c_str(), m, m / t_cub, m / t_raw);
            row(ways[w].backend, "f32", "sum", n, 4.0 * n, ways[w].impl, "host_api", (int)ts[w].size(), batch, m,
                *std::min_element(ts[w].begin(), ts[w].end()), *std::max_element(ts[w].begin(), ts[w].end()), NAN,
                m / t_cub, "ok", strf("host us per call; %.3fx the raw launch (cuLaunchKernel where available)", m / t_raw));
            host_api_times[ways[w].impl + "/" + ways[w].backend] = m;
        }
        host_api_raw = t_raw;
        host_calls(hp, pool, outp);
    }

    /* What gs_reduce's hot path asks the driver, call by call (core/context.c: the input
     * and output checks, the current context, the stream's capture state and id), each
     * timed alone back to back, no launch: where the API's cost over a raw launch goes.
     * Alternatives the path could use instead are timed beside them. Entry points through
     * the runtime, as for cuLaunchKernel above. */
    void host_calls(const HotPathCalls &hp, const void *dev_in, const void *dev_out)
    {
        typedef CUresult (*CtxGetId_t)(CUcontext, unsigned long long *);
        typedef CUresult (*MemGetAddressRange_t)(CUdeviceptr *, size_t *, CUdeviceptr);
        const auto ptr_attrs = hp.ptr_attrs;
        const auto get_current = hp.get_current;
        const auto is_capturing = hp.is_capturing;
        const auto stream_id = hp.stream_id;
        const auto ctx_id = (CtxGetId_t)driver_entry("cuCtxGetId");
        const auto addr_range = (MemGetAddressRange_t)driver_entry("cuMemGetAddressRange");
        CUcontext cur = nullptr;
        if (get_current)
            get_current(&cur);
        const CUstream st = (CUstream)stream;
        const CUdeviceptr pin = (CUdeviceptr)(uintptr_t)dev_in, pout = (CUdeviceptr)(uintptr_t)dev_out;
        std::mutex mu;
        struct Call {
            const char *name, *what;
            std::function<bool()> fn;
        };
        std::vector<Call> calls;
        if (ptr_attrs) {
            calls.push_back({"cuPointerGetAttributes(3)", "gs_reduce: in and out, each (type, start, size)",
                             [=] { return check_pointer(ptr_attrs, pout); }});
            calls.push_back({"cuPointerGetAttributes(1)", "alternative: the memory type only", [=] {
                                 CUpointer_attribute a[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE};
                                 unsigned int type = 0;
                                 void *d[] = {&type};
                                 return ptr_attrs(1, a, d, pin) == CUDA_SUCCESS && type != 0;
                             }});
        }
        if (addr_range)
            calls.push_back({"cuMemGetAddressRange", "alternative: start and size only", [=] {
                                 CUdeviceptr start = 0;
                                 size_t size = 0;
                                 return addr_range(&start, &size, pin) == CUDA_SUCCESS && size != 0;
                             }});
        if (get_current)
            calls.push_back({"cuCtxGetCurrent", "gs_reduce: once (an explicit context), twice (the default one)", [=] {
                                 CUcontext c = nullptr;
                                 return get_current(&c) == CUDA_SUCCESS && c == cur;
                             }});
        if (ctx_id && cur)
            calls.push_back({"cuCtxGetId", "gs_reduce: the default context only", [=] {
                                 unsigned long long id = 0;
                                 return ctx_id(cur, &id) == CUDA_SUCCESS && id != 0;
                             }});
        if (is_capturing)
            calls.push_back({"cuStreamIsCapturing", "gs_reduce: once", [=] {
                                 CUstreamCaptureStatus c = CU_STREAM_CAPTURE_STATUS_ACTIVE;
                                 return is_capturing(st, &c) == CUDA_SUCCESS && c == CU_STREAM_CAPTURE_STATUS_NONE;
                             }});
        if (stream_id)
            calls.push_back({"cuStreamGetId", "gs_reduce: once", [=] {
                                 unsigned long long id = 0;
                                 return stream_id(st, &id) == CUDA_SUCCESS && id != 0;
                             }});
        calls.push_back({"pthread_mutex", "gs_reduce: the workspace table's lock and unlock, uncontended", [&mu] {
                             mu.lock();
                             mu.unlock();
                             return true;
                         }});
        const int batch = 1000, batches = o.quick ? 11 : 21;
        printf("the driver calls of gs_reduce's hot path, each alone, %d back to back, median of %d batches:\n", batch,
               batches);
        for (const Call &c : calls) {
            std::vector<double> ts;
            bool ok = true;
            for (int r = 0; r < batches + 2 && ok; r++) {
                auto t0 = Clock::now();
                for (int i = 0; i < batch && ok; i++)
                    ok = c.fn();
                auto t1 = Clock::now();
                if (r >= 2)
                    ts.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / batch);
            }
            if (!ok) {
                printf("  %-26s error\n", c.name);
                row("-", "-", "-", 0, 0, c.name, "host_call", 0, batch, NAN, NAN, NAN, NAN, NAN, "error", c.what);
                errors++;
                continue;
            }
            const double m = median(ts);
            printf("  %-26s %7.3f us/call  (%s)\n", c.name, m, c.what);
            row("-", "-", "-", 0, 0, c.name, "host_call", (int)ts.size(), batch, m,
                *std::min_element(ts.begin(), ts.end()), *std::max_element(ts.begin(), ts.end()), NAN, NAN, "ok",
                c.what);
        }
    }
    std::map<std::string, double> host_api_times;
    double host_api_raw = NAN;

    /* The read ceiling (read_kernel) at every input size of the sweep in bytes, hot, timed
     * as the reductions are (back to back between events, median of o.runs runs), the best
     * of several grids; after the sweep, on its random data. */
    std::map<size_t, double> ceiling_us;
    void read_ceiling()
    {
        std::vector<size_t> sizes;
        for (int dt : o.dtypes)
            for (uint64_t n : o.sizes) {
                const size_t bytes = (size_t)n * dt_size[dt];
                if (bytes % 16 == 0 && bytes <= pool_bytes)
                    sizes.push_back(bytes);
            }
        std::sort(sizes.begin(), sizes.end());
        sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
        const int sms = prop.multiProcessorCount;
        const double target_us = o.target_ms * 1e3;
        printf("read ceiling: one launch reading the input and nothing else, best of 1 .. 8 blocks of 256 per SM:\n");
        for (size_t bytes : sizes) {
            const size_t n16 = bytes / 16;
            auto run = [&](unsigned grid, int k) {
                CK(cudaEventRecord(ev0, stream));
                for (int i = 0; i < k; i++)
                    read_kernel<<<grid, 256, 0, stream>>>((const uint4 *)pool, n16, (unsigned *)(d_out + 4032));
                CK(cudaGetLastError());
                CK(cudaEventRecord(ev1, stream));
                wait_event(ev1, "a read-ceiling run");
                float ms = 0;
                CK(cudaEventElapsedTime(&ms, ev0, ev1));
                return ms * 1e3 / k;
            };
            double best = NAN, best_min = NAN, best_max = NAN;
            unsigned best_grid = 0;
            int best_k = 0;
            unsigned last = 0;
            for (int per_sm : {1, 2, 3, 4, 6, 8}) {
                const size_t useful = (n16 + 255) / 256;
                const unsigned grid = (unsigned)std::max<size_t>(1, std::min<size_t>((size_t)sms * per_sm, useful));
                if (grid == last)
                    continue;
                last = grid;
                const double t1 = run(grid, 3);
                const int k =
                    std::max(t1 > 1000.0 ? 2 : 3, std::min((int)std::ceil(target_us / std::max(t1, 0.5)), 4000));
                std::vector<double> ts;
                for (int r = 0; r < o.runs; r++)
                    ts.push_back(run(grid, k));
                const double m = median(ts);
                if (!std::isfinite(best) || m < best) {
                    best = m;
                    best_min = *std::min_element(ts.begin(), ts.end());
                    best_max = *std::max_element(ts.begin(), ts.end());
                    best_grid = grid;
                    best_k = k;
                }
            }
            ceiling_us[bytes] = best;
            const double gbps = bytes / (best * 1e-6) / 1e9;
            printf("  %10s  %9.3f us  %7.1f GB/s  (grid %u)\n", bytes_name((double)bytes).c_str(), best, gbps,
                   best_grid);
            row("-", "u8", "read", bytes, (double)bytes, "read_kernel", "read_ceiling", o.runs, best_k, best, best_min,
                best_max, gbps, NAN, "ok", strf("grid %u of 256 threads (best of 1 .. 8 per SM); n = bytes", best_grid));
        }
    }

    static double target_for(uint64_t n)
    {
        if (n <= (1ull << 18))
            return 0.6;
        if (n <= (1ull << 25))
            return 0.85;
        return 1.0;
    }

    /* The summary on stdout, and in --summary's file. */
    void write_summary()
    {
        const std::string s = summary();
        printf("%s", s.c_str());
        write_summary_file(o.summary, s);
    }

    std::string summary()
    {
        std::string s;
        s += strf("\n==== summary: gridsync time / CUB time per call (lower is better), worst over dtype x op ====\n");
        s += strf("targets: n<=2^18 <=0.60; 2^19..2^25 <=0.85; n>=2^26 <=1.00 (throughput >= CUB); "
                  "cuda_sm11_compat throughput >= 0.95x cuda_sm20\n");
        s += strf("dtypes:");
        for (int dt : o.dtypes)
            s += strf(" %s", dt_name[dt]);
        s += strf("  ops:");
        for (int op : o.ops)
            s += strf(" %s", op_name[op]);
        s += strf("   (hot = same buffer; rot = rotating copies, L2 flushed; geo = geometric mean)\n");
        std::vector<std::string> be;
        for (const Impl &im : impls)
            if (!im.cub)
                be.push_back(im.backend);
        /* columns per backend: worst hot ratio (and where), geometric mean, worst rotating */
        s += strf("%-6s %6s |", "", "");
        for (const std::string &b : be)
            s += strf(" %-36.36s|", b.c_str());
        s += strf(" %-20s|\n", "sm11_compat/sm20");
        s += strf("%-6s %6s |", "n", "target");
        for (size_t i = 0; i < be.size(); i++)
            s += strf(" %-5s %-12s %5s %-8s  |", "worst", "(where)", "geo", "rot");
        s += strf(" %-5s %-13s |", "thr", "(worst)");
        s += strf(" met\n");
        std::vector<std::string> failing;
        int met_all = 0, rows_all = 0;
        for (uint64_t n : o.sizes) {
            const double tgt = target_for(n);
            bool any = false, met = true;
            std::string line = strf("%-6s %6.2f |", pow2_name(n).c_str(), tgt);
            for (const std::string &b : be) {
                double worst = NAN, worst_rot = NAN, logsum = 0;
                int cnt = 0;
                std::string where;
                for (int dt : o.dtypes)
                    for (int op : o.ops) {
                        auto g = times.find(std::make_tuple(b, dt, op, n, std::string("hot")));
                        auto c = times.find(std::make_tuple(std::string("cub"), dt, op, n, std::string("hot")));
                        if (g == times.end() || c == times.end())
                            continue;
                        double r = g->second / c->second;
                        logsum += std::log(r);
                        cnt++;
                        if (!std::isfinite(worst) || r > worst) {
                            worst = r;
                            where = strf("%s/%s", dt_name[dt], op_name[op]);
                        }
                        if (r > tgt) {
                            met = false;
                            failing.push_back(strf("%-16s %-3s %-6s n=%-5s hot      %.3f > %.2f", b.c_str(), dt_name[dt],
                                                   op_name[op], pow2_name(n).c_str(), r, tgt));
                        }
                        auto gr = times.find(std::make_tuple(b, dt, op, n, std::string("rotating")));
                        auto cr = times.find(std::make_tuple(std::string("cub"), dt, op, n, std::string("rotating")));
                        if (gr != times.end() && cr != times.end()) {
                            double rr = gr->second / cr->second;
                            worst_rot = std::isfinite(worst_rot) ? std::max(worst_rot, rr) : rr;
                            if (rr > tgt)
                                failing.push_back(strf("%-16s %-3s %-6s n=%-5s rotating %.3f > %.2f (not counted in 'met')",
                                                       b.c_str(), dt_name[dt], op_name[op], pow2_name(n).c_str(), rr, tgt));
                        }
                    }
                if (cnt) {
                    any = true;
                    line += strf(" %5.3f %-12s %5.3f ", worst, where.c_str(), std::exp(logsum / cnt));
                    line += std::isfinite(worst_rot) ? strf("%-8.3f  |", worst_rot) : strf("%-8s  |", "-");
                } else {
                    line += strf(" %5s %-12s %5s %-8s  |", "-", "", "-", "-");
                }
            }
            /* cuda_sm11_compat throughput relative to cuda_sm20: t_sm20 / t_sm11, >= 0.95. */
            double worst_bb = NAN;
            std::string where_bb;
            for (int dt : o.dtypes)
                for (int op : o.ops) {
                    auto a = times.find(std::make_tuple(std::string("cuda_sm20"), dt, op, n, std::string("hot")));
                    auto b = times.find(std::make_tuple(std::string("cuda_sm11_compat"), dt, op, n, std::string("hot")));
                    if (a == times.end() || b == times.end())
                        continue;
                    double r = a->second / b->second;
                    if (!std::isfinite(worst_bb) || r < worst_bb) {
                        worst_bb = r;
                        where_bb = strf("%s/%s", dt_name[dt], op_name[op]);
                    }
                    if (r < 0.95) {
                        met = false;
                        failing.push_back(strf("cuda_sm11_compat %-3s %-6s n=%-5s hot      %.3f of cuda_sm20 < 0.95",
                                               dt_name[dt], op_name[op], pow2_name(n).c_str(), r));
                    }
                }
            line += std::isfinite(worst_bb) ? strf(" %5.3f %-13s |", worst_bb, where_bb.c_str()) : strf(" %-19s |", "-");
            if (!any) {
                line += " (no data)";
            } else {
                line += met ? " yes" : " NO";
                rows_all++;
                met_all += met;
            }
            s += line + "\n";
        }
        s += strf("sizes meeting every target (hot): %d of %d\n", met_all, rows_all);
        if (!failing.empty()) {
            s += strf("targets missed (%zu):\n", failing.size());
            for (size_t i = 0; i < failing.size() && i < 40; i++)
                s += "  " + failing[i] + "\n";
            if (failing.size() > 40)
                s += strf("  ... and %zu more (see the CSV)\n", failing.size() - 40);
        }
        /* Large sizes against the copy bandwidth and the datasheet. */
        s += strf("throughput at the largest size measured per dtype/op (GB/s; fraction of the %.0f GB/s copy, of %.0f GB/s peak):\n",
                  copy_gbps, o.peak_gbps);
        for (int dt : o.dtypes)
            for (int op : o.ops) {
                uint64_t nmax = 0;
                for (uint64_t n : o.sizes)
                    if (times.count(std::make_tuple(std::string("cub"), dt, op, n, std::string("hot"))))
                        nmax = n;
                if (nmax < (1ull << 26))
                    continue;
                std::string line = strf("  %-3s %-6s n=%-5s", dt_name[dt], op_name[op], pow2_name(nmax).c_str());
                for (const Impl &im : impls) {
                    auto it = times.find(std::make_tuple(im.label(), dt, op, nmax, std::string("hot")));
                    if (it == times.end())
                        continue;
                    double g = nmax * dt_size[dt] / (it->second * 1e-6) / 1e9;
                    line += strf("  %s %.0f (%.2f, %.2f)", im.label().c_str(), g, g / copy_gbps, g / o.peak_gbps);
                }
                s += line + "\n";
            }
        if (!ceiling_us.empty()) {
            std::string block;
            for (int dt : o.dtypes)
                for (int op : o.ops)
                    for (const Impl &im : impls) {
                        std::string line;
                        for (uint64_t n : o.sizes) {
                            auto it = times.find(std::make_tuple(im.label(), dt, op, n, std::string("hot")));
                            auto c = ceiling_us.find((size_t)n * dt_size[dt]);
                            if (n < (1ull << 18) || it == times.end() || c == ceiling_us.end())
                                continue;
                            line += strf(" %s %.2f", pow2_name(n).c_str(), it->second / c->second);
                        }
                        if (!line.empty())
                            block += strf("  %-3s %-6s %-16s%s\n", dt_name[dt], op_name[op], im.label().c_str(),
                                          line.c_str());
                    }
            if (!block.empty())
                s += "time per call over the read ceiling at the same bytes (one launch that only reads; hot), "
                     "n >= 2^18:\n" + block;
        }
        if (!host_api_times.empty()) {
            s += strf("host cost per call (us): ");
            for (auto &kv : host_api_times)
                s += strf(" %s %.2f;", kv.first.c_str(), kv.second);
            s += "\n";
        }
        s += strf("checks: %d mismatches, %d errors%s\n", mismatches, errors, aborted ? "; SWEEP ABORTED (see above)" : "");
        for (size_t i = 0; i < bad.size() && i < 30; i++)
            s += "  !!! " + bad[i] + "\n";
        return s;
    }
};

/* --selftest-summary: the CSV, summary and plot code on made-up numbers, without a GPU. */
[[noreturn]] static void selftest(Bench &b)
{
    b.gpu = "synthetic (no GPU)";
    b.l2 = 50u << 20;
    b.copy_gbps = 2900;
    for (const std::string &be : b.o.backends)
        b.impls.push_back(Impl{be, false, nullptr, 0});
    b.impls.push_back(Impl{"-", true, nullptr, 0});
    b.row("-", "u8", "copy", 1u << 30, 2.0 * (1u << 30), "memcpy", "copy", 9, 1, 740.0, 735.0, 750.0, 2900, NAN, "ok", "");
    int ci = 0;
    for (int dt : b.o.dtypes)
        for (uint64_t n : b.o.sizes) {
            ci++;
            const double bytes = (double)n * dt_size[dt];
            for (int op : b.o.ops) {
                const double t_cub = 6.0 + bytes / 2.8e6 * (op == OP_ARGMAX ? 1.2 : 1.0);
                for (size_t i = 0; i < b.impls.size(); i++) {
                    const Impl &im = b.impls[i];
                    double f = im.cub ? 1.0 : (0.4 + 0.6 * std::min(1.0, bytes / 4e8)) * (i == 1 ? 1.03 : 1.0);
                    if (!im.cub && dt == DT_F16 && op == OP_ARGMAX) {
                        b.row(im.backend, dt_name[dt], op_name[op], n, bytes, im.impl(), "hot", 0, 0, NAN, NAN, NAN, NAN,
                              NAN, "unsupported", "");
                        continue;
                    }
                    double t = t_cub * f;
                    b.row(im.backend, dt_name[dt], op_name[op], n, bytes, im.impl(), "hot", 7, 100, t, t * 0.98, t * 1.05,
                          bytes / (t * 1e-6) / 1e9, f, "ok", "synthetic");
                    b.times[std::make_tuple(im.label(), dt, op, n, std::string("hot"))] = t;
                    if (bytes <= b.l2) {
                        b.row(im.backend, dt_name[dt], op_name[op], n, bytes, im.impl(), "rotating", 7, 100, t * 1.3,
                              t * 1.2, t * 1.4, bytes / (t * 1.3e-6) / 1e9, f, "ok", "synthetic");
                        b.times[std::make_tuple(im.label(), dt, op, n, std::string("rotating"))] = t * 1.3;
                    }
                    b.row(im.backend, dt_name[dt], op_name[op], n, bytes, im.impl(), "latency", 7, 1, t + 10, t + 9,
                          t + 12, NAN, (t + 10) / (t_cub + 10), "ok", "synthetic");
                }
            }
        }
    b.host_api_times["gridsync/cuda_sm20"] = 1.9;
    b.host_api_times["cub/-"] = 2.4;
    b.host_api_times["cuLaunchKernel/-"] = 1.6;
    b.mismatches = 1;
    b.bad.push_back("cuda_sm20 f64 sum n=2^20: MISMATCH (synthetic)");
    b.write_summary();
    end_selftest(0);
}

int main(int argc, char **argv)
{
    Bench b;
    if (!start("gridsync-bench", argc, argv, parse, b,
               "gpu,backend,dtype,op,n,log2n,bytes,impl,mode,runs,calls_per_run,time_us_median,time_us_min,"
               "time_us_max,gbps,frac_copy_bw,frac_peak,ratio_vs_cub,check,note\n",
               selftest))
        return 1;
    const Options &o = b.o;
    printf("gridsync-bench: seed %" PRIu64 " (--seed to replay), %d runs of ~%.2f ms per measurement, watchdog %.0f s\n",
           b.seed, o.runs, o.target_ms, o.max_seconds);
    try {
        b.setup();
        b.allocate();
    } catch (const std::exception &e) {
        setup_failed("gridsync-bench", e.what());
    }

    try {
        b.host_api();
    } catch (const HangError &e) {
        fprintf(stderr, "!!! HANG in the host-cost measurement: %s\n", e.what());
        fflush(g_csv);
        fflush(stdout);
        _exit(3);
    } catch (const std::exception &e) {
        fprintf(stderr, "!!! the host-cost measurement failed: %s (going on with the sweep)\n", e.what());
        b.errors++;
        b.bad.push_back(std::string("ERROR host_api: ") + e.what());
        (void)cudaGetLastError();
    }

    const int cn = (int)(o.dtypes.size() * o.sizes.size());
    int ci = 0;
    for (int dt : o.dtypes)
        for (uint64_t n : o.sizes) {
            if (b.aborted)
                break;
            ci++;
            b.guarded(strf("%s n=%s", dt_name[dt], pow2_name(n).c_str()), [&] { b.run_config(dt, n, ci, cn); },
                      [&](bool hang, const std::string &what) {
                          b.row("-", dt_name[dt], "-", n, (double)n * dt_size[dt], "-", "hot", 0, 0, NAN, NAN, NAN, NAN,
                                NAN, (hang ? "error:hang: " : "error:") + what, "");
                      });
        }
    if (!b.aborted)
        b.guarded("read ceiling", [&] { b.read_ceiling(); }, [](bool, const std::string &) {});

    b.write_summary();
    b.finish(o.csv);
}
