/*
 * Host-side pieces shared by the two benchmark programs, gridsync-bench (bench.cu) and
 * gridsync-bench-segmented (bench_segmented.cu): formatting, the error types and the CK
 * macro, the clock, median, CSV quoting, option-list splitting, the watchdog, polling an
 * event with a time limit, the build tree's backend path, and the no-device exit (77).
 * Each program includes it once; everything here is static or inline (no library).
 * What differs between the programs (bytes_name's precision, pow2_name / count_name, the
 * CSV columns, the setup of the contexts, the summaries) stays in each program.
 */
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#ifndef GS_BENCH_BACKEND_DIR
#  define GS_BENCH_BACKEND_DIR ""
#endif

/* ---- small utilities ------------------------------------------------------------------ */

static std::string strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static std::string strf(const char *fmt, ...)
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

typedef std::chrono::steady_clock Clock;
static const Clock::time_point g_t0 = Clock::now();
static double elapsed_s() { return std::chrono::duration<double>(Clock::now() - g_t0).count(); }

static double median(std::vector<double> v)
{
    if (v.empty())
        return NAN;
    std::sort(v.begin(), v.end());
    size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

/* CSV-safe: no commas, quotes or newlines in a field. */
static std::string csv_safe(std::string s)
{
    for (char &c : s)
        if (c == ',' || c == '"' || c == '\n' || c == '\r')
            c = c == ',' ? ';' : ' ';
    if (s.size() > 300)
        s = s.substr(0, 300) + "...";
    return s;
}

/* Calls f on each non-empty item of a comma list. */
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

static void watchdog(double seconds)
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
static void watchdog_start(double seconds)
{
    std::thread wd(watchdog, seconds);
    wd.detach();
}

/* The run is over: the watchdog returns instead of ending the program. */
static void watchdog_stop()
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
static int device_count_or_exit77(const char *prefix, const char *suffix)
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
static void use_backend_path()
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
static void wait_event_for(cudaEvent_t ev, const char *what, double seconds, bool yield)
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
static bool open_csv(const char *prog, const std::string &path, const char *header)
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
[[noreturn]] static void setup_failed(const char *prog, const char *what)
{
    fprintf(stderr, "%s: setup failed: %s\n", prog, what);
    fflush(g_csv);
    fflush(stdout);
    _exit(1);
}

/* The exit status at the end: 3 cut short, 2 a mismatch or an error, 0 all passed. */
static int final_status(bool aborted, int mismatches, int errors) { return aborted ? 3 : (mismatches || errors) ? 2 : 0; }
