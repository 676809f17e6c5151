/*
 * gridsync-tune: times a backend's gs_reduce kernels directly (no API, no CUB) at every
 * grid size worth trying, for choosing the backend's launch policy
 * (backends/common/dispatch/grid.h). Not part of the library's build: bench/tune.sh
 * compiles it once per policy variant (threads per block, loads in flight, backend), each variant a
 * separate program with the backend's kernels.cu compiled in.
 *
 * For each kernel: fresh random data (each n a prefix of it) and host references; per
 * n and grid size, one checked launch and 7 runs of 20 back-to-back launches timed with
 * CUDA events (median per launch). Prints CSV on stdout:
 *   variant,kernel,n,log2n,grid,blocks_per_sm,is_default,time_us,check
 * where is_default marks the grid the backends would choose (dispatch/grid.h); with
 * --default-grid, only that grid is run (for profiling one launch of it). With --queued,
 * each run of 20 waits behind a kernel that spins for 200 us, so all 20 launches are
 * queued before the first starts: the time per launch is the GPU's alone, where a small
 * kernel otherwise takes about as long as the host needs to launch it (comparing two
 * versions of a kernel at small n). With --places N, the launches of a run take turns
 * among N workspaces and outputs 64 KiB apart: a small kernel's time also depends on
 * where its workspace (ticket counter, partials) lies, the same places in two processes
 * (bench/placement.cu, bench/HISTORY.md v10); N places time the average instead of one
 * place's luck.
 */
#include TUNE_KERNELS

#include "bench_common.cuh"
#include "launch_timer.cuh"
#include "dispatch/grid.h"
#include "tune_cases.cuh"

#include <array>

static const Case kCases[] = {
    TUNE_CASE(f32, sum, f32, 4, 0, 0, 0, REF_SUM),
    TUNE_CASE(f32, max, f32, 4, 0, 0, 0, REF_MAX),
    TUNE_CASE(f32, argmax, i64, 4, 0, 0, 0, REF_ARGMAX),
    TUNE_CASE(i32, sum, i32, 4, 1, 0, 0, REF_SUM),
    TUNE_CASE(i32, argmax, i64, 4, 1, 0, 0, REF_ARGMAX),
    TUNE_CASE(f64, sum, f64, 8, 0, 0, 1, REF_SUM),
    TUNE_CASE(f64, max, f64, 8, 0, 0, 1, REF_MAX),
    TUNE_CASE(f64, argmax, i64, 8, 0, 0, 1, REF_ARGMAX),
    TUNE_CASE(f16, max, f16, 2, 0, 1, 0, REF_MAX),
    TUNE_CASE(f16, argmax, i64, 2, 0, 1, 0, REF_ARGMAX),
};

int main(int argc, char **argv)
{
    int lo = 16, hi = 25;
    const char *only = NULL;
    bool default_only = false, queued = false;
    int places = 1;
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--min-log2") && k + 1 < argc)
            lo = atoi(argv[++k]);
        else if (!strcmp(argv[k], "--max-log2") && k + 1 < argc)
            hi = atoi(argv[++k]);
        else if (!strcmp(argv[k], "--only") && k + 1 < argc)
            only = argv[++k];
        else if (!strcmp(argv[k], "--default-grid"))
            default_only = true;
        else if (!strcmp(argv[k], "--queued"))
            queued = true;
        else if (!strcmp(argv[k], "--places") && k + 1 < argc)
            places = atoi(argv[++k]);
        else {
            lo = -1;
            break;
        }
    }
    if (lo < 0 || hi < lo || hi > 31 || places < 1 || places > 64) {
        fprintf(stderr,
                "usage: %s [--min-log2 L] [--max-log2 H] [--only SUBSTRING] [--default-grid] [--queued]\n"
                "       [--places N]  (0 <= L <= H <= 31, 1 <= N <= 64)\n",
                argv[0]);
        return 2;
    }
    return tune_run("gridsync-tune", [&] {
        const TuneDevice d = tune_device("gridsync-tune: ");
        const unsigned int sms = d.sms;
        const uint64_t l2_bytes = d.l2_bytes;
        fprintf(stderr, "gridsync-tune %s on %s (%u SMs), %d threads per block, %d loads in flight\n",
                TUNE_VARIANT, d.prop.name, sms, GS_BACKEND_BLOCK, GS_BACKEND_ITEMS);
        printf("variant,kernel,n,log2n,grid,blocks_per_sm,is_default,time_us,check\n");

        const uint64_t max_n = 1ull << hi;
        void *in = NULL;
        /* `places` workspaces, each followed by its output, and each place's kernel
         * arguments (n set per launch); the checked launch takes place 0 */
        const size_t kPlace = GS_WORKSPACE_BYTES + 256;
        unsigned char *region = NULL;
        CK(cudaMalloc(&in, max_n * 8));
        CK(cudaMalloc((void **)&region, kPlace * places));
        CK(cudaMemset(region, 0, kPlace * places));
        uint64_t nn = 0;
        std::vector<unsigned char *> pws(places), pout(places);
        std::vector<std::array<void *, 4> > pargs(places);
        for (int p = 0; p < places; p++) {
            pws[p] = region + kPlace * p;
            pout[p] = pws[p] + GS_WORKSPACE_BYTES;
            pargs[p] = {{&in, &nn, &pout[p], &pws[p]}};
        }
        cudaStream_t s;
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        std::mt19937_64 rng(12345);
        std::vector<unsigned char> h;
        int failures = 0;

        for (const Case &c : kCases) {
            if (only && !strstr(c.name, only))
                continue;
            const Loaded l = load_case(c, in, max_n, lo, hi, h, rng);
            const int per_sm = l.per_sm;
            const std::vector<Ref> &refs = l.refs;
            for (int lg = lo; lg <= hi; lg++) {
                const uint64_t n = 1ull << lg;
                const Ref &ref = refs[lg - lo];
                const unsigned int def = policy_grid(c, n, sms, per_sm, l2_bytes);
                /* Candidates: the default, a quarter and a half of the SMs, then every whole
                 * number of blocks per SM up to what is resident, and no more blocks than
                 * give every thread one 16-byte vector. */
                std::vector<unsigned int> grids = {def, sms / 4, sms / 2};
                for (int b = 1; b <= per_sm; b++)
                    grids.push_back((unsigned int)b * sms);
                const uint64_t one_vec = (n * c.elem / 16 + GS_BACKEND_BLOCK - 1) / GS_BACKEND_BLOCK;
                std::sort(grids.begin(), grids.end());
                grids.erase(std::unique(grids.begin(), grids.end()), grids.end());
                for (unsigned int g : grids) {
                    if (g == 0 || g > GS_MAX_BLOCKS || (g != def && (default_only || g > one_vec)))
                        continue;
                    nn = n;
                    const bool ok = launch_checked(c, g, pargs[0].data(), pout[0], s, ref);
                    failures += !ok;
                    const double us = time_launches(c.fn, g, GS_BACKEND_BLOCK, s, queued,
                                                    [&](int k) { return pargs[k % places].data(); });
                    printf("%s,%s,%llu,%d,%u,%.3f,%d,%.3f,%s\n", TUNE_VARIANT, c.name, (unsigned long long)n, lg, g,
                           (double)g / sms, g == def, us, ok ? "ok" : "FAIL");
                }
                fflush(stdout);
            }
        }
        return failures;
    });
}
