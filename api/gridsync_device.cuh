/*
 * gridsync device-side helpers for your own CUDA kernels: the last-block guard (both
 * generations' variants) with the fences of gridsync's protocol and a self-resetting
 * counter, and a global work queue (below). Header-only; needs nvcc. gridsync's own
 * backends use these same functions.
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
 * gs_last_block_acqrel_*(counter) does steps 2 to 5 in one: the ticket itself releases
 * and acquires (below), so neither gs_publish nor gs_acquire is called; the partial must
 * then be stored by thread 0 (the release covers that thread's own writes).
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

/* Steps 2, 3 and 5 in one atomic: the ticket with release and acquire semantics. On
 * compute capability 7.0+ an atom.acq_rel.gpu: a release of what this thread wrote before
 * it, and an acquire of what the threads that took the earlier tickets released (PTX
 * memory model); the barrier of the guard then orders the other threads of the block
 * after it. It replaces two __threadfence (MEMBAR.SC.GPU) per block - the release is a
 * lighter MEMBAR.ALL.GPU before the atomic, the acquire no fence at all (bench/HISTORY.md,
 * v8).
 * Before 7.0: __threadfence on both sides of an atomicAdd. */
static __device__ __forceinline__ unsigned int gs_ticket_acq_rel(unsigned int *counter)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    unsigned int ticket;
    asm volatile("atom.acq_rel.gpu.add.u32 %0, [%1], 1;" : "=r"(ticket) : "l"(counter) : "memory");
    return ticket;
#else
    __threadfence();
    const unsigned int ticket = atomicAdd(counter, 1u);
    __threadfence();
    return ticket;
#endif
}

/* Steps 3-4, compute capability 2.0+, for `expected` arrivals on one counter (the
 * blocks of a grid, or the pieces of one piece of work spread over several blocks):
 * thread 0 takes the ticket (acq_rel: with gs_ticket_acq_rel); __syncthreads_or
 * broadcasts "last" to the whole block and is the block's barrier. */
static __device__ __forceinline__ bool gs_detail_last_arrival_sm20(unsigned int *counter, unsigned int expected,
                                                                   bool acq_rel)
{
    unsigned int ticket = 0;
    const bool t0 = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
    if (t0)
        ticket = acq_rel ? gs_ticket_acq_rel(counter) : atomicAdd(counter, 1u);
    return __syncthreads_or(t0 && ticket == expected - 1) != 0;
}
static __device__ __forceinline__ bool gs_last_arrival_sm20(unsigned int *counter, unsigned int expected)
{
    return gs_detail_last_arrival_sm20(counter, expected, false);
}
/* Steps 2-5: the caller's thread 0 has stored what it publishes; no gs_publish, no
 * gs_acquire. */
static __device__ __forceinline__ bool gs_last_arrival_acqrel_sm20(unsigned int *counter, unsigned int expected)
{
    return gs_detail_last_arrival_sm20(counter, expected, true);
}

/* Steps 3-4, compute capability 1.1+: thread 0 writes its verdict to a __shared__ flag,
 * __syncthreads publishes it. (No __syncthreads_or, which arrived with 2.0.) Two calls in
 * one block need a __syncthreads between them: the second one rewrites the flag. */
static __device__ __forceinline__ bool gs_detail_last_arrival_sm11(unsigned int *counter, unsigned int expected,
                                                                   bool acq_rel)
{
    __shared__ unsigned int gs_is_last;
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)
        gs_is_last = (acq_rel ? gs_ticket_acq_rel(counter) : atomicAdd(counter, 1u)) == expected - 1;
    __syncthreads();
    return gs_is_last != 0;
}
static __device__ __forceinline__ bool gs_last_arrival_sm11(unsigned int *counter, unsigned int expected)
{
    return gs_detail_last_arrival_sm11(counter, expected, false);
}
/* Steps 2-5, as gs_last_arrival_acqrel_sm20. */
static __device__ __forceinline__ bool gs_last_arrival_acqrel_sm11(unsigned int *counter, unsigned int expected)
{
    return gs_detail_last_arrival_sm11(counter, expected, true);
}

/* The last-block guard of a whole launch: is this block the last of the grid to arrive? */
static __device__ __forceinline__ bool gs_last_block_sm20(unsigned int *counter)
{
    return gs_last_arrival_sm20(counter, gridDim.x);
}
static __device__ __forceinline__ bool gs_last_block_sm11(unsigned int *counter)
{
    return gs_last_arrival_sm11(counter, gridDim.x);
}
/* The same with steps 2 to 5 in the ticket (gs_ticket_acq_rel): thread 0 stores the
 * partial, then every thread calls this; no gs_publish, no gs_acquire. */
static __device__ __forceinline__ bool gs_last_block_acqrel_sm20(unsigned int *counter)
{
    return gs_last_arrival_acqrel_sm20(counter, gridDim.x);
}
static __device__ __forceinline__ bool gs_last_block_acqrel_sm11(unsigned int *counter)
{
    return gs_last_arrival_acqrel_sm11(counter, gridDim.x);
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

/*
 * The global work queue: blocks take the next work item when they finish the previous
 * one, instead of being assigned items up front, so items of very different cost still
 * finish in balance.
 *
 *   __global__ void k(gs_work_queue *q, uint64_t count, ...)
 *   {
 *       for (long long item; (item = gs_queue_fetch(q, count)) >= 0;) {
 *           ... the whole block works on item ...
 *           __syncthreads(); // contract: a barrier between two fetches
 *       }
 *       gs_queue_finish(q);  // every block, once, after its last fetch
 *   }
 *
 * Contract (the seed's, and one more rule for the reset):
 *  - the queue is GS_WORK_QUEUE_BYTES of device memory, all zero before its first launch
 *    (gs_queue_create makes one, gs_queue_reset zeroes one again, stream-ordered);
 *  - gs_queue_fetch is called uniformly by all threads of a block (it holds a barrier),
 *    and there is a __syncthreads between two calls in one block: thread 0 writes the
 *    item to shared memory that the previous call's readers may still be reading;
 *  - count is the same in every call of one launch; items are the indices 0 .. count-1,
 *    each handed to exactly one block;
 *  - every block of the (one-dimensional) grid calls gs_queue_finish exactly once, after
 *    a fetch returned -1: the last block to do so returns the queue to all-zero, so the
 *    next launch on the same queue needs no reset. A launch that ends early (a block
 *    that returns without finishing, a fault) leaves the queue dirty: gs_queue_reset it;
 *  - only launches ordered one after another (one stream) share a queue.
 */
typedef struct gs_work_queue {
    unsigned long long next;   /* the next item to hand out */
    unsigned int finished;     /* blocks that called gs_queue_finish in this launch */
    unsigned int reserved;
} gs_work_queue;
#define GS_WORK_QUEUE_BYTES 16

/* The next item for the calling block, in every thread of it: an index in [0, count), or
 * -1 when the queue is empty. One atomic per block per item. */
static __device__ __forceinline__ long long gs_queue_fetch(gs_work_queue *q, unsigned long long count)
{
    __shared__ long long gs_item;
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
        unsigned long long i = atomicAdd(&q->next, 1ull);
        gs_item = i < count ? (long long)i : -1;
    }
    __syncthreads();
    return gs_item;
}

/* The block is done with the queue; returns, in every thread, whether it was the last
 * block of the launch to finish (which may then tidy up more of its own state). That
 * block resets the queue: by then every block has made its final fetch (each block's
 * fetches precede its ticket here), so no atomic on q->next can land after the reset.
 * Contains barriers; call it uniformly. */
static __device__ __forceinline__ bool gs_queue_finish(gs_work_queue *q)
{
    __shared__ unsigned int gs_finished_last;
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
        __threadfence();
        const bool last = atomicAdd(&q->finished, 1u) == gridDim.x - 1;
        if (last) {
            __threadfence();
            q->next = 0;
            q->finished = 0;
        }
        gs_finished_last = last;
    }
    __syncthreads();
    return gs_finished_last != 0;
}

#endif /* GRIDSYNC_DEVICE_CUH */
