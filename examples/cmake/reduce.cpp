/*
 * reduce_cxx: gridsync from C++, built with CMake (CMakeLists.txt beside this file).
 *
 * gridsync.h is a C header with extern "C" declarations; a C++ program includes it as it
 * is. This one passes NULL for the context: gridsync then uses the default context of the
 * calling thread's current CUDA context, the one the CUDA runtime made current for device
 * 0. It sums 4 M + 1 random doubles and finds the index of their maximum in two launches on
 * one stream, and checks both against the host.
 *
 * Exit status: 0 results right, 1 a result wrong or an error, 77 no CUDA device.
 */
#include <cuda_runtime.h> /* C++: the typed cudaMalloc overloads */
#include <gridsync/gridsync.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

namespace {

bool cuda_ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess)
        std::fprintf(stderr, "reduce_cxx: %s: %s\n", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

bool gs_ok(gs_status st, const char *what)
{
    if (st != GS_SUCCESS)
        std::fprintf(stderr, "reduce_cxx: %s: %s: %s\n", what, gs_status_string(st), gs_last_error_message());
    return st == GS_SUCCESS;
}

} // namespace

int main()
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("reduce_cxx: no CUDA device: nothing to do\n");
        return 77;
    }

    const std::uint64_t n = (1u << 22) + 1;
    const unsigned seed = std::random_device{}();
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> dist(1.0, 3.0);
    std::vector<double> host(n);
    double want_sum = 0.0;
    std::int64_t want_arg = 0;
    for (std::uint64_t i = 0; i < n; i++) {
        host[i] = dist(rng);
        want_sum += host[i];
        if (host[i] > host[want_arg])
            want_arg = static_cast<std::int64_t>(i);
    }

    double *d_in = nullptr, *d_sum = nullptr;
    std::int64_t *d_arg = nullptr;
    cudaStream_t stream = nullptr;
    double sum = 0.0;
    std::int64_t arg = -1;
    bool ok = cuda_ok(cudaSetDevice(0), "cudaSetDevice") &&
              cuda_ok(cudaMalloc(&d_in, n * sizeof(double)), "cudaMalloc") &&
              cuda_ok(cudaMalloc(&d_sum, sizeof(double)), "cudaMalloc") &&
              cuda_ok(cudaMalloc(&d_arg, sizeof(std::int64_t)), "cudaMalloc") &&
              cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate") &&
              cuda_ok(cudaMemcpyAsync(d_in, host.data(), n * sizeof(double), cudaMemcpyHostToDevice, stream),
                      "cudaMemcpyAsync") &&
              // cudaStream_t converts to gs_stream without a cast; ARGMAX writes an int64.
              gs_ok(gs_reduce(nullptr, d_in, n, GS_FLOAT64, GS_OP_SUM, d_sum, stream), "gs_reduce SUM") &&
              gs_ok(gs_reduce(nullptr, d_in, n, GS_FLOAT64, GS_OP_ARGMAX, d_arg, stream), "gs_reduce ARGMAX") &&
              cuda_ok(cudaMemcpyAsync(&sum, d_sum, sizeof sum, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync") &&
              cuda_ok(cudaMemcpyAsync(&arg, d_arg, sizeof arg, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync") &&
              cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");

    if (ok) {
        // Both sums are float64 over the same values in different orders: they agree to far
        // better than 1e-9 of the sum of magnitudes (about 1.6e7 here).
        const double tol = 1e-9 * 3.0 * static_cast<double>(n);
        std::printf("reduce_cxx: gridsync %s, seed %u: sum %.17g (host %.17g), argmax %lld (host %lld)\n",
                    gs_version_string(), seed, sum, want_sum, static_cast<long long>(arg),
                    static_cast<long long>(want_arg));
        ok = std::fabs(sum - want_sum) <= tol && arg == want_arg;
        std::printf("reduce_cxx: %s\n", ok ? "right" : "WRONG");
    }
    if (stream)
        cudaStreamDestroy(stream);
    cudaFree(d_in);
    cudaFree(d_sum);
    cudaFree(d_arg);
    return ok ? 0 : 1;
}
