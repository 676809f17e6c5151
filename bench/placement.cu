/*
 * gridsync-placement: how much a gs_reduce kernel's time depends on where in device
 * memory its workspace (the ticket counter and the partials) or its output lies. Built
 * like bench/tune.cu (one backend's kernels.cu compiled in; bench/tune.sh builds it with
 * TUNE_PROGRAM=placement) and not part of the library.
 *
 *   gridsync-placement [--only SUBSTRING] [--log2 L,L,...] [--count N] [--stride BYTES]
 *
 * For each kernel (float32 SUM and ARGMAX) and n (the backends' default grid): the
 * workspace at N places, `stride` bytes apart in one allocation (the output in an
 * allocation of its own), then the output at those N places (the workspace in an
 * allocation of its own); at each place one launch checked against a host reference and
 * 7 runs of 20 launches queued behind a 200 us spin (the GPU's time alone), the median
 * per launch. Defaults: n = 2^10, 2^14, 2^16, 2^18; 32 places 64 KiB apart. CSV on stdout:
 *   variant,kernel,n,log2n,grid,what,offset,time_us,check
 */
#include TUNE_KERNELS

#include "bench_common.cuh"
#include "launch_timer.cuh"
#include "dispatch/grid.h"
#include "tune_cases.cuh"

static const Case kCases[] = {
    TUNE_CASE(f32, sum, f32, 4, 0, 0, 0, REF_SUM),
    TUNE_CASE(f32, argmax, i64, 4, 0, 0, 0, REF_ARGMAX),
};

int main(int argc, char **argv)
{
    const char *only = NULL;
    std::vector<int> sizes = {10, 14, 16, 18};
    int count = 32;
    unsigned long long stride = 65536;
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--only") && k + 1 < argc)
            only = argv[++k];
        else if (!strcmp(argv[k], "--log2") && k + 1 < argc) {
            sizes.clear();
            for (char *p = strtok(argv[++k], ","); p; p = strtok(NULL, ",")) {
                char *end = NULL;
                const long v = strtol(p, &end, 10);
                sizes.push_back(end != p && !*end && v >= 0 && v <= 28 ? (int)v : -1);
            }
        } else if (!strcmp(argv[k], "--count") && k + 1 < argc)
            count = atoi(argv[++k]);
        else if (!strcmp(argv[k], "--stride") && k + 1 < argc)
            stride = strtoull(argv[++k], NULL, 0);
        else {
            fprintf(stderr, "usage: %s [--only SUBSTRING] [--log2 L,L,...] [--count N] [--stride BYTES]\n", argv[0]);
            return 2;
        }
    }
    if (count < 1 || stride < GS_WORKSPACE_BYTES || stride % 256) {
        fprintf(stderr, "gridsync-placement: --count >= 1, --stride a multiple of 256 of at least %d\n",
                GS_WORKSPACE_BYTES);
        return 2;
    }
    for (int lg : sizes)
        if (lg < 0 || lg > 28) {
            fprintf(stderr, "gridsync-placement: --log2 values from 0 to 28\n");
            return 2;
        }
    if (sizes.empty()) {
        fprintf(stderr, "gridsync-placement: --log2 needs at least one value\n");
        return 2;
    }
    return tune_run("gridsync-placement", [&] {
        const TuneDevice d = tune_device("gridsync-placement: ");
        const unsigned int sms = d.sms;
        const uint64_t l2_bytes = d.l2_bytes;
        printf("variant,kernel,n,log2n,grid,what,offset,time_us,check\n");
        int max_lg = 0;
        for (int lg : sizes)
            max_lg = lg > max_lg ? lg : max_lg;
        const uint64_t max_n = 1ull << max_lg;
        void *in = NULL;
        unsigned char *region = NULL;
        CK(cudaMalloc(&in, max_n * 8));
        CK(cudaMalloc((void **)&region, (size_t)count * stride));
        CK(cudaMemset(region, 0, (size_t)count * stride));
        unsigned char *fixed_ws = NULL, *fixed_out = NULL;
        CK(cudaMalloc((void **)&fixed_ws, GS_WORKSPACE_BYTES));
        CK(cudaMemset(fixed_ws, 0, GS_WORKSPACE_BYTES));
        CK(cudaMalloc((void **)&fixed_out, 256));
        std::mt19937_64 rng(12345);
        std::vector<unsigned char> h;
        cudaStream_t s;
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        int failures = 0;
        for (const Case &c : kCases) {
            if (only && !strstr(c.name, only))
                continue;
            const Loaded l = load_case(c, in, max_n, 0, max_lg, h, rng);
            const int per_sm = l.per_sm;
            const std::vector<Ref> &refs = l.refs;
            for (int lg : sizes) {
                const uint64_t n = 1ull << lg;
                const unsigned int grid = policy_grid(c, n, sms, per_sm, l2_bytes);
                for (int what = 0; what < 2; what++) {
                    /* counters at 0 again (the output sweep wrote into the region) */
                    CK(cudaMemset(region, 0, (size_t)count * stride));
                    for (int i = 0; i < count; i++) {
                        /* the workspace at place i and the output in its own allocation,
                         * or the output at place i and the workspace in its own */
                        unsigned char *ws = what == 0 ? region + (size_t)i * stride : fixed_ws;
                        unsigned char *out = what == 0 ? fixed_out : region + (size_t)i * stride;
                        uint64_t nn = n;
                        void *args[] = {&in, &nn, &out, &ws};
                        const bool ok = launch_checked(c, grid, args, out, s, refs[lg]);
                        failures += !ok;
                        const double us =
                            time_launches(c.fn, grid, GS_BACKEND_BLOCK, s, true, [&](int) { return (void **)args; });
                        printf("%s,%s,%llu,%d,%u,%s,%llu,%.3f,%s\n", TUNE_VARIANT, c.name, (unsigned long long)n, lg,
                               grid, what == 0 ? "workspace" : "output", (unsigned long long)i * stride, us,
                               ok ? "ok" : "FAIL");
                    }
                    fflush(stdout);
                }
            }
        }
        return failures;
    });
}
