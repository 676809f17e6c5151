/*
 * gridsync device-side helpers for your own CUDA kernels: the last-block guard (both
 * generations' variants) with the fences of gridsync's protocol and a self-resetting
 * counter. Header-only; needs nvcc. gridsync's own backends use these same functions.
 *
 * The protocol, per block, once its partial result is computed:
 *   1. one thread stores the partial (e.g. partials[blockIdx.x] = v);
 *   2. that thread calls gs_publish(): __threadfence, a release, so the partial is
 *      visible device-wide before the ticket that announces it;
 *   3.+4. every thread calls gs_last_block_*(counter): one ticket per block, and the
 *      answer "is this block the last to finish?" in every thread of the block;
 *   5. in the last block only, gs_acquire() (another __threadfence) before reading the
 *      other blocks' partials, with volatile loads (gs_load_volatile);
 *   6. combine, write the result;
 *   7. gs_reset_counter(counter) so the next launch on the same counter needs no memset.
 * Contract: every thread of every block calls gs_last_block_* exactly once, uniformly
 * (it contains a barrier); the grid is one-dimensional; *counter is 0 before the first
 * launch and only launches ordered one after another (one stream) share a counter.
 */
#ifndef GRIDSYNC_DEVICE_CUH
#define GRIDSYNC_DEVICE_CUH

#ifndef __CUDACC__
#  error "gridsync_device.cuh is for CUDA device code (compile with nvcc)"
#endif

/* Step 2: release the partial stored by this thread before its block takes a ticket. */
static __device__ __forceinline__ void gs_publish(void)
{
    __threadfence();
}

/* Steps 3-4, compute capability 2.0+: thread 0 takes the ticket; __syncthreads_or
 * broadcasts "last" to the whole block and is the block's barrier. */
static __device__ __forceinline__ bool gs_last_block_sm20(unsigned int *counter)
{
    unsigned int ticket = 0;
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)
        ticket = atomicAdd(counter, 1u);
    return __syncthreads_or(threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0 &&
                            ticket == gridDim.x - 1) != 0;
}

/* Steps 3-4, compute capability 1.1+: thread 0 writes its verdict to a __shared__ flag,
 * __syncthreads publishes it. (No __syncthreads_or, which arrived with 2.0.) */
static __device__ __forceinline__ bool gs_last_block_sm11(unsigned int *counter)
{
    __shared__ unsigned int gs_is_last;
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)
        gs_is_last = atomicAdd(counter, 1u) == gridDim.x - 1;
    __syncthreads();
    return gs_is_last != 0;
}

/* Step 5: acquire, in the last block, before it reads what the other blocks published. */
static __device__ __forceinline__ void gs_acquire(void)
{
    __threadfence();
}

/* Step 5: read another block's published value without a cached (L1) load. Works for
 * any trivially copyable T: scalars load as themselves, structs (a value and its index,
 * say) word by word, since a volatile struct cannot be copied as a whole. */
template <typename T, int kWords8 = (sizeof(T) % 8 == 0 && alignof(T) >= 8) ? (int)(sizeof(T) / 8) : 0,
          int kWords4 = (sizeof(T) % 4 == 0 && alignof(T) >= 4) ? (int)(sizeof(T) / 4) : 0>
struct gs_volatile_loader {
    static __device__ __forceinline__ T load(const T *p)
    {
        unsigned long long w[kWords8];
#pragma unroll
        for (int k = 0; k < kWords8; k++)
            w[k] = ((const volatile unsigned long long *)p)[k];
        T v;
        memcpy(&v, w, sizeof v);
        return v;
    }
};
template <typename T, int kWords4> struct gs_volatile_loader<T, 0, kWords4> {
    static __device__ __forceinline__ T load(const T *p)
    {
        unsigned int w[kWords4];
#pragma unroll
        for (int k = 0; k < kWords4; k++)
            w[k] = ((const volatile unsigned int *)p)[k];
        T v;
        memcpy(&v, w, sizeof v);
        return v;
    }
};
template <typename T> struct gs_volatile_loader<T, 0, 0> {
    static __device__ __forceinline__ T load(const T *p) { return *(const volatile T *)p; }
};

template <typename T> static __device__ __forceinline__ T gs_load_volatile(const T *p)
{
    return gs_volatile_loader<T>::load(p);
}

/* Step 7: by the last block, after its result is written. The next launch on this
 * counter is ordered after this one (same stream), so a plain store suffices. */
static __device__ __forceinline__ void gs_reset_counter(unsigned int *counter)
{
    *counter = 0;
}

#endif /* GRIDSYNC_DEVICE_CUH */
