/*
 * Host-side pieces shared by the benchmark programs, gridsync-bench (bench.cu) and
 * gridsync-bench-segmented (bench_segmented.cu), and in part gridsync-bench-exact
 * (bench_exact.cu: the error macros and median): formatting, the error types and the CK
 * and GS_CK macros, the clock, median, CSV quoting, the options both take, the watchdog,
 * the device, stream and events (BenchBase: waiting with a time limit, timing
 * back-to-back calls), one gridsync context per backend, a measurement that fails or
 * hangs, and the end of a run. Each program includes it once; everything here is static
 * inline or a template (no library, and no unused-function warning in a program that
 * takes only part of it).
 * What differs between the programs (their own options, the CSV columns, the data, the
 * checks and the summaries) stays in each program.
 */
#pragma once

#include <cuda_runtime.h>
#include <cub/version.cuh>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cinttypes>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "gridsync.h"

#ifndef GS_BENCH_BACKEND_DIR
#  define GS_BENCH_BACKEND_DIR ""
#endif

/* ---- small utilities ------------------------------------------------------------------ */

static inline std::string strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline std::string strf(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

struct BenchError : std::runtime_error {
    explicit BenchError(const std::string &s) : std::runtime_error(s) {}
};
/* GPU work that does not finish: the context cannot be used (or even torn down) any more. */
struct HangError : BenchError {
    explicit HangError(const std::string &s) : BenchError(s) {}
};

#define CK(call)                                                                                          \
    do {                                                                                                  \
        cudaError_t e_ = (call);                                                                          \
        if (e_ != cudaSuccess)                                                                            \
            throw BenchError(strf("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call, cudaGetErrorName(e_), \
                                  cudaGetErrorString(e_)));                                               \
    } while (0)

/* The same for a gridsync call: its status and gridsync's message for the calling thread. */
#define GS_CK(call)                                                                                    \
    do {                                                                                               \
        gs_status s_ = (call);                                                                         \
        if (s_ != GS_SUCCESS)                                                                          \
            throw BenchError(strf("%s:%d: %s: %s: %s", __FILE__, __LINE__, #call, gs_status_string(s_), \
                                  gs_last_error_message()));                                           \
    } while (0)

typedef std::chrono::steady_clock Clock;
static const Clock::time_point g_t0 = Clock::now();
static inline double elapsed_s() { return std::chrono::duration<double>(Clock::now() - g_t0).count(); }

static inline double median(std::vector<double> v)
{
    if (v.empty())
        return NAN;
    std::sort(v.begin(), v.end());
    size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

/* The median, the smallest and the largest of ts (not empty). */
static inline void spread(const std::vector<double> &ts, double &med, double &lo, double &hi)
{
    med = median(ts);
    lo = *std::min_element(ts.begin(), ts.end());
    hi = *std::max_element(ts.begin(), ts.end());
}

/* CSV-safe: no commas, quotes or newlines in a field. */
static inline std::string csv_safe(std::string s)
{
    for (char &c : s)
        if (c == ',' || c == '"' || c == '\n' || c == '\r')
            c = c == ',' ? ';' : ' ';
    if (s.size() > 300)
        s = s.substr(0, 300) + "...";
    return s;
}

/* 2^k for powers of two, else the number. */
static inline std::string pow2_name(uint64_t n)
{
    if (n && !(n & (n - 1)))
        return strf("2^%d", 63 - __builtin_clzll(n));
    return strf("%" PRIu64, n);
}

static inline std::string bytes_name(double b)
{
    if (b >= 1073741824.0)
        return strf("%.2f GiB", b / 1073741824.0);
    if (b >= 1048576.0)
        return strf("%.1f MiB", b / 1048576.0);
    if (b >= 1024.0)
        return strf("%.1f KiB", b / 1024.0);
    return strf("%.0f B", b);
}

/* Calls f on each non-empty item of a comma list. */
/* work(0), ..., work(nt - 1), each on a thread of its own (work(0) on this one). */
template <typename F> static void on_threads(unsigned nt, F work)
{
    std::vector<std::thread> th;
    for (unsigned k = 1; k < nt; k++)
        th.emplace_back(work, k);
    work(0);
    for (auto &x : th)
        x.join();
}

template <typename F> static void split_list(const std::string &s, F f)
{
    size_t a = 0;
    while (a <= s.size()) {
        size_t b = s.find(',', a);
        if (b == std::string::npos)
            b = s.size();
        if (b > a)
            f(s.substr(a, b - a));
        a = b + 1;
    }
}

/* splitmix64 (one step from state z): the random data's hash on the device and, in the
 * segmented benchmark, the host's random numbers and test data. */
__host__ __device__ __forceinline__ uint64_t splitmix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- the watchdog ---------------------------------------------------------------------- */

static std::mutex g_wd_mu;
static std::condition_variable g_wd_cv;
static bool g_wd_done;
static FILE *g_csv;

static inline void watchdog(double seconds)
{
    std::unique_lock<std::mutex> lk(g_wd_mu);
    if (g_wd_cv.wait_for(lk, std::chrono::duration<double>(seconds), [] { return g_wd_done; }))
        return;
    fprintf(stderr, "\n!!! WATCHDOG: still running after %.0f s; exiting (status 3). The CSV holds the rows written so far.\n",
            seconds);
    fflush(stdout);
    fflush(stderr);
    if (g_csv)
        fflush(g_csv);
    _exit(3);
}

/* Starts the watchdog thread (detached: the program ends with _exit). */
static inline void watchdog_start(double seconds)
{
    std::thread wd(watchdog, seconds);
    wd.detach();
}

/* The run is over: the watchdog returns instead of ending the program. */
static inline void watchdog_stop()
{
    {
        std::lock_guard<std::mutex> lk(g_wd_mu);
        g_wd_done = true;
    }
    g_wd_cv.notify_all();
}

/* ---- CUDA and gridsync setup ----------------------------------------------------------- */

/* The number of CUDA devices; with none (or no usable driver), prints
 * "<prefix>no CUDA device (<why>): nothing to measure<suffix>" and exits 77 at once. */
static inline int device_count_or_exit77(const char *prefix, const char *suffix)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        printf("%sno CUDA device (%s): nothing to measure%s\n", prefix,
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices", suffix);
        fflush(stdout);
        _exit(77); /* no teardown: the watchdog thread is still waiting */
    }
    return count;
}

/* GRIDSYNC_BACKEND_PATH: the environment's, else this build tree's backends (set for
 * gridsync to find); printed either way. */
static inline void use_backend_path()
{
    const char *bp = getenv("GRIDSYNC_BACKEND_PATH");
    if ((!bp || !*bp) && GS_BENCH_BACKEND_DIR[0]) {
        setenv("GRIDSYNC_BACKEND_PATH", GS_BENCH_BACKEND_DIR, 1);
        bp = GS_BENCH_BACKEND_DIR;
    }
    printf("GRIDSYNC_BACKEND_PATH=%s\n", bp ? bp : "(unset)");
}

/* Waits for ev (polling cudaEventQuery; yield: std::this_thread::yield between polls,
 * else spinning as cudaEventSynchronize does by default), but gives up after `seconds`:
 * a kernel that never ends must not hang the benchmark. */
static inline void wait_event_for(cudaEvent_t ev, const char *what, double seconds, bool yield)
{
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
        cudaError_t e = cudaEventQuery(ev);
        if (e == cudaSuccess)
            return;
        if (e != cudaErrorNotReady)
            throw BenchError(strf("waiting for %s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e)));
        if (Clock::now() > deadline)
            throw HangError(strf("waiting for %s: not finished after %.0f s (a hung kernel?)", what, seconds));
        if (yield)
            std::this_thread::yield();
    }
}

/* Opens the CSV (g_csv) and writes its header line (flushed); false, with a message, if
 * it cannot be written. */
static inline bool open_csv(const char *prog, const std::string &path, const char *header)
{
    g_csv = fopen(path.c_str(), "w");
    if (!g_csv) {
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, path.c_str(), strerror(errno));
        return false;
    }
    fputs(header, g_csv);
    fflush(g_csv);
    return true;
}

/* Setup failed: say so, flush what was written, and exit 1 without teardown (after a
 * failed CUDA call it may block). */
[[noreturn]] static inline void setup_failed(const char *prog, const char *what)
{
    fprintf(stderr, "%s: setup failed: %s\n", prog, what);
    fflush(g_csv);
    fflush(stdout);
    _exit(1);
}

/* The summary: on stdout, and with --summary PATH in that file too. */
static inline void write_summary_file(const std::string &path, const std::string &text)
{
    if (path.empty())
        return;
    FILE *f = fopen(path.c_str(), "w");
    if (!f) {
        fprintf(stderr, "cannot write %s: %s\n", path.c_str(), strerror(errno));
        return;
    }
    fputs(text.c_str(), f);
    fclose(f);
}

/* The exit status at the end: 3 cut short, 2 a mismatch or an error, 0 all passed. */
static inline int final_status(bool aborted, int mismatches, int errors) { return aborted ? 3 : (mismatches || errors) ? 2 : 0; }

/* ---- the options both programs take ---------------------------------------------------- */

struct CommonOptions {
    std::vector<std::string> backends{"cuda_sm20", "cuda_sm11_compat"};
    int runs = 11; /* timed runs per measurement; the median is reported */
    double max_seconds = 0; /* the watchdog (each program sets its default) */
    uint64_t seed = 0;      /* the data; default from the clock */
    int device = 0;
    bool quick = false;
    bool selftest = false; /* --selftest-summary: no GPU; made-up timings through the CSV and summary */
    bool runs_given = false;
    std::string csv, summary;
};

/* Parses argv into o: first the program's own options (own(a, val) returns whether it
 * took `a`; val() reads its value), then the shared ones. Throws BenchError on a bad one,
 * after printing the usage to stderr; --help prints it to stdout and exits 0. */
template <typename Own>
static void parse_options(int argc, char **argv, CommonOptions &o, void (*usage)(FILE *), Own own)
{
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc)
                throw BenchError(a + " needs a value");
            return argv[++i];
        };
        if (own(a, val))
            continue;
        if (a == "--csv")
            o.csv = val();
        else if (a == "--summary")
            o.summary = val();
        else if (a == "--quick")
            o.quick = true;
        else if (a == "--backends") {
            o.backends.clear();
            split_list(val(), [&](const std::string &t) { o.backends.push_back(t); });
        } else if (a == "--runs") {
            o.runs = std::stoi(val());
            o.runs_given = true;
        } else if (a == "--seed")
            o.seed = std::stoull(val());
        else if (a == "--device")
            o.device = std::stoi(val());
        else if (a == "--max-seconds")
            o.max_seconds = std::stod(val());
        else if (a == "--selftest-summary")
            o.selftest = true;
        else if (a == "-h" || a == "--help") {
            usage(stdout);
            exit(0);
        } else {
            usage(stderr);
            throw BenchError("unknown option " + a);
        }
    }
}

/* ---- what both Bench structs hold -------------------------------------------------------- */

struct BenchBase {
    cudaDeviceProp prop{};
    std::string gpu;
    cudaStream_t stream = nullptr;
    cudaEvent_t ev0 = nullptr, ev1 = nullptr;
    /* (backend, context) of each gridsync backend that could be set up */
    std::vector<std::pair<std::string, gs_context *>> contexts;
    uint64_t seed = 0;
    int mismatches = 0, errors = 0;
    bool aborted = false;
    bool yield_while_waiting = false; /* see wait_event_for */
    std::vector<std::string> bad;     /* one line per mismatch, error or hang, for the summary */

    /* Makes `device` current (exit 77 when there is none: prefix and suffix frame that
     * message), reads its properties, creates the stream and the two events. */
    void open_device(int device, const char *prefix77, const char *suffix77)
    {
        const int count = device_count_or_exit77(prefix77, suffix77);
        if (device < 0 || device >= count)
            throw BenchError(strf("--device %d: there are %d devices", device, count));
        CK(cudaSetDevice(device));
        CK(cudaFree(0)); /* creates the runtime's (primary) context, which gridsync shares */
        CK(cudaGetDeviceProperties(&prop, device));
        gpu = prop.name;
        CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        CK(cudaEventCreate(&ev0));
        CK(cudaEventCreate(&ev1));
    }

    /* The versions line of a run's header. */
    static void print_versions()
    {
        int drv = 0, rt = 0;
        CK(cudaDriverGetVersion(&drv));
        CK(cudaRuntimeGetVersion(&rt));
        printf("CUDA driver %d, runtime %d, CUB %d.%d.%d; gridsync %s\n", drv, rt, CUB_VERSION / 100000,
               CUB_VERSION / 100 % 1000, CUB_VERSION % 100, gs_version_string());
    }

    /* One gridsync context per backend; the backend is chosen at creation, from
     * GRIDSYNC_BACKEND (restored afterwards). A backend that cannot be set up, or whose
     * context runs another one, is counted as an error, passed to failed(backend,
     * message) and skipped. */
    /* Whether backend b (a name, or the absolute path of a gridsync-<name>.so, for an A/B of
     * two builds' kernels in one process) is the one named name. */
    static bool backend_is(const std::string &b, const char *name)
    {
        if (b.empty() || b[0] != '/')
            return b == name;
        return b.substr(b.rfind('/') + 1) == std::string("gridsync-") + name + ".so";
    }

    void open_backends(int device, const std::vector<std::string> &backends,
                       const std::function<void(const std::string &, const std::string &)> &failed)
    {
        use_backend_path();
        const char *saved = getenv("GRIDSYNC_BACKEND");
        const std::string saved_backend = saved ? saved : "";
        for (const std::string &b : backends) {
            setenv("GRIDSYNC_BACKEND", b.c_str(), 1);
            gs_context *ctx = nullptr;
            gs_status st = gs_context_create(device, &ctx);
            gs_context_info info;
            memset(&info, 0, sizeof info);
            info.struct_size = sizeof info;
            std::string why;
            if (st != GS_SUCCESS)
                why = strf("gs_context_create failed: %s: %s", gs_status_string(st), gs_last_error_message());
            else if ((st = gs_context_get_info(ctx, &info)) != GS_SUCCESS)
                why = strf("gs_context_get_info failed: %s: %s", gs_status_string(st), gs_last_error_message());
            else if (!info.backend_name || !backend_is(b, info.backend_name))
                why = strf("the context runs %s instead", info.backend_name ? info.backend_name : "?");
            if (!why.empty()) {
                fprintf(stderr, "!!! backend %s: %s (skipped)\n", b.c_str(), why.c_str());
                errors++;
                failed(b, why);
                if (ctx && (st = gs_context_destroy(ctx)) != GS_SUCCESS)
                    fprintf(stderr, "gs_context_destroy(%s): %s: %s\n", b.c_str(), gs_status_string(st),
                            gs_last_error_message());
                continue;
            }
            printf("gridsync backend %s: %s (device %s, cc %d.%d)\n", info.backend_name,
                   info.backend_path ? info.backend_path : "?", info.device_name ? info.device_name : "?", info.cc_major,
                   info.cc_minor);
            contexts.emplace_back(b, ctx);
        }
        if (saved)
            setenv("GRIDSYNC_BACKEND", saved_backend.c_str(), 1);
        else
            unsetenv("GRIDSYNC_BACKEND");
        if (contexts.empty())
            fprintf(stderr, "!!! no gridsync backend could be set up: measuring CUB only\n");
    }

    /* Waits for ev, giving up after `seconds`: a hung kernel must not hang the run. */
    void wait_event(cudaEvent_t ev, const char *what, double seconds = 30.0)
    {
        wait_event_for(ev, what, seconds, yield_while_waiting);
    }

    /* Everything queued on the stream so far, with the same limit. */
    void sync_stream(const char *what, double seconds = 30.0)
    {
        CK(cudaEventRecord(ev1, stream));
        wait_event(ev1, what, seconds);
    }

    /* Microseconds per call over k back-to-back launch() calls, from the two events. */
    template <typename Launch> double time_calls(int k, Launch launch)
    {
        CK(cudaEventRecord(ev0, stream));
        for (int i = 0; i < k; i++)
            launch();
        CK(cudaEventRecord(ev1, stream));
        wait_event(ev1, "a timed run");
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, ev0, ev1));
        return ms * 1e3 / k;
    }

    /* Runs one measurement (a configuration, a layout). A failure is counted, reported as
     * "ERROR <label>: ..." (a hang as "HANG ...", which ends the run), and passed to
     * failed(hang, message); after an error, a context the error left unusable (a sticky
     * error such as an illegal address) ends the run too, rather than reporting garbage. */
    template <typename Body>
    void guarded(const std::string &label, Body body, const std::function<void(bool, const std::string &)> &failed)
    {
        try {
            body();
        } catch (const HangError &e) {
            fprintf(stderr, "!!! HANG %s: %s\n", label.c_str(), e.what());
            bad.push_back(strf("HANG %s: %s", label.c_str(), e.what()));
            errors++;
            aborted = true;
            failed(true, e.what());
        } catch (const std::exception &e) {
            fprintf(stderr, "!!! ERROR %s: %s\n", label.c_str(), e.what());
            bad.push_back(strf("ERROR %s: %s", label.c_str(), e.what()));
            errors++;
            failed(false, e.what());
            (void)cudaGetLastError(); /* clears a non-sticky error; a sticky one stays */
            try {
                sync_stream("the stream after an error");
            } catch (const std::exception &e2) {
                fprintf(stderr, "!!! the CUDA context is not usable any more (%s): stopping\n", e2.what());
                aborted = true;
            }
        }
    }

    /* The end of a run: the CSV closed, the contexts destroyed (unless the run was cut
     * short: a stuck context may block), the watchdog stopped; never returns. _exit: no
     * teardown of statics under the detached watchdog thread. */
    [[noreturn]] void finish(const std::string &csv)
    {
        printf("total %.1f s; CSV: %s\n", elapsed_s(), csv.c_str());
        fclose(g_csv);
        g_csv = nullptr;
        if (!aborted) {
            try {
                sync_stream("the end of the run"); /* gs_context_destroy wants the work finished */
                for (const auto &c : contexts) {
                    gs_status st = gs_context_destroy(c.second);
                    if (st != GS_SUCCESS)
                        fprintf(stderr, "gs_context_destroy(%s): %s: %s\n", c.first.c_str(), gs_status_string(st),
                                gs_last_error_message());
                }
            } catch (const std::exception &e) {
                fprintf(stderr, "!!! at the end: %s\n", e.what());
            }
        }
        watchdog_stop();
        fflush(stdout);
        fflush(stderr);
        _exit(final_status(aborted, mismatches, errors));
    }
};

/* The end of --selftest-summary (no GPU, no watchdog, nothing to tear down). */
[[noreturn]] static inline void end_selftest(int rc)
{
    fclose(g_csv);
    g_csv = nullptr;
    fflush(stdout);
    _exit(rc);
}

/* The start of main: the options (a bad one: a message and false), the seed, the CSV
 * with its header; then --selftest-summary (which does not return), or the watchdog. */
template <typename Bench, typename Options>
static bool start(const char *prog, int argc, char **argv, Options (*parse)(int, char **), Bench &b,
                  const char *csv_header, void (*selftest)(Bench &))
{
    setvbuf(stdout, nullptr, _IOLBF, 0);
    try {
        b.o = parse(argc, argv);
    } catch (const std::exception &e) {
        fprintf(stderr, "%s: %s\n", prog, e.what());
        return false;
    }
    b.seed = b.o.seed ? b.o.seed : (uint64_t)std::chrono::system_clock::now().time_since_epoch().count();
    if (!open_csv(prog, b.o.csv, csv_header))
        return false;
    if (b.o.selftest)
        selftest(b);
    watchdog_start(b.o.max_seconds);
    return true;
}
