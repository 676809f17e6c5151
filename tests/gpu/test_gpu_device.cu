/*
 * gpu suite: the device helpers of gridsync_device.cuh in kernels of this program's own
 * (the last-block guard and the global work queue), with the host queue API of gridsync.h
 * (gs_queue_create / gs_queue_reset / gs_queue_destroy).
 *
 *   test_gpu_device --guard sm20     every kernel that elects a last block uses gs_last_block_sm20
 *   test_gpu_device --guard sm11     ... gs_last_block_sm11
 *   test_gpu_device --guard sm20-acqrel, --guard sm11-acqrel
 *                                    ... gs_last_block_acqrel_sm20 / _sm11 (the ticket releases and
 *                                    acquires; no gs_publish, no gs_acquire; meson runs all four)
 *   test_gpu_device                  all four, one after the other
 *   GS_TEST_SEED=<n>                 replays a run (the seed is printed first)
 *   GS_TEST_QUICK=1                  one round of fewer and smaller cases (for compute-sanitizer);
 *                                    otherwise three rounds, each with new random cases
 *
 * Exit status: 0 all checks passed; 77 (skipped) only when there is no CUDA driver or no
 * device; 1 otherwise, with one "FAIL ..." line per failed check (and "FATAL ..." for a
 * CUDA call that failed).
 *
 * What it checks (every launch's data is fresh: seeds differ per launch, outputs are
 * poisoned or zeroed first, and results are compared with a host reference):
 *  exactly-once   every item of the queue is handed to exactly one block: hits per item
 *                 counted with atomics, for grids of 1 .. 65536 blocks, 0, 1, fewer items
 *                 than blocks, more, and 10^6 items; one- and three-dimensional blocks;
 *                 items that spin for random (heavy-tailed) times; per launch also the
 *                 combined result of the last block, that gs_queue_finish names exactly one
 *                 block (all of its threads) the last, and the queue and the guard counter
 *                 read back all zero afterwards.
 *  guard          the guard elects exactly one block per launch and every thread of that
 *                 block (and no other thread) sees "last"; the elected block reads every
 *                 block's published 16-byte record (fresh random value, block index and
 *                 launch number) and finds it current, after the other blocks first pulled
 *                 a neighbour's stale record through the cached load path; 1000 launches
 *                 back to back on one counter with a different grid each time.
 *  repeated       1000 launches back to back on one queue and one guard counter, never
 *                 reset, random grid, count (0 included) and block shape per launch: hits
 *                 per item equal the number of launches that covered it, each launch's
 *                 result is right, the queue and the counter end at zero.
 *  reset          a launch whose blocks fetch but never finish (and one where half of them
 *                 do) leaves the queue dirty; without a reset the next launch goes wrong
 *                 (the check that this test can see the difference); gs_queue_reset on the
 *                 legacy, per-thread and a created stream, with an explicit and the default
 *                 context, makes it right again. Also the status of a reset of host memory.
 *  graph          reset + launch captured into a graph (one memset node, one kernel node)
 *                 and replayed 1000 times; unfinished launch + reset + launch captured and
 *                 replayed 200 times; gs_queue_create while another stream of the thread is
 *                 being captured in global mode (the capture must stay valid).
 *  sizes          GS_QUEUE_BYTES == GS_WORK_QUEUE_BYTES == sizeof(gs_work_queue), at compile time.
 */
#include <cuda_runtime.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <type_traits>
#include <vector>

#include "checks.h"
#include "gridsync.h"
#include "gridsync_device.cuh"

static_assert(GS_QUEUE_BYTES == GS_WORK_QUEUE_BYTES, "gridsync.h's GS_QUEUE_BYTES must equal GS_WORK_QUEUE_BYTES");
static_assert(sizeof(gs_work_queue) == GS_WORK_QUEUE_BYTES, "gs_work_queue must be GS_WORK_QUEUE_BYTES");
static_assert(alignof(gs_work_queue) == 8, "gs_work_queue holds a 64-bit atomic counter");

/* ---- host side: checks, randomness ------------------------------------------------------ */

static int g_failures, g_checks;
static bool g_quick;
static unsigned long long g_rng;

#define CK(call)                                                                                          \
    do {                                                                                                  \
        cudaError_t e_ = (call);                                                                          \
        if (e_ != cudaSuccess) {                                                                          \
            fprintf(stderr, "FATAL %s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_), \
                    cudaGetErrorString(e_));                                                              \
            exit(1);                                                                                      \
        }                                                                                                 \
    } while (0)

/* splitmix64: the host's and the kernels' one source of values. */
static __host__ __device__ __forceinline__ unsigned long long mix(unsigned long long z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static unsigned long long rnd() { return mix(g_rng++); }
static unsigned long long rnd_below(unsigned long long n) { return n ? rnd() % n : 0; }

static double now_s()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* The guard's name for the output (d.guard: 20, 11, 21, 12; see last_block). */
static const char *guard_name(int g)
{
    return g == 20 ? "gs_last_block_sm20" : g == 11 ? "gs_last_block_sm11" : g == 21 ? "gs_last_block_acqrel_sm20"
                                                                                  : "gs_last_block_acqrel_sm11";
}

/* ---- device side ------------------------------------------------------------------------ */

/* Guard G: 20 gs_last_block_sm20, 11 gs_last_block_sm11 (with gs_publish and gs_acquire
 * around them), 21 and 12 their acqrel variants (the ticket releases and acquires; no
 * gs_publish, no gs_acquire). */
template <int G> static __device__ __forceinline__ bool last_block(unsigned int *counter)
{
    if constexpr (G == 20)
        return gs_last_block_sm20(counter);
    else if constexpr (G == 11)
        return gs_last_block_sm11(counter);
    else if constexpr (G == 21)
        return gs_last_block_acqrel_sm20(counter);
    else
        return gs_last_block_acqrel_sm11(counter);
}
template <int G> static __device__ __forceinline__ void publish()
{
    if constexpr (G == 20 || G == 11)
        gs_publish();
}
template <int G> static __device__ __forceinline__ void acquire()
{
    if constexpr (G == 20 || G == 11)
        gs_acquire();
}

static __device__ __forceinline__ bool thread0() { return threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0; }
static __device__ __forceinline__ unsigned int flat_tid()
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
static __device__ __forceinline__ unsigned int block_threads() { return blockDim.x * blockDim.y * blockDim.z; }

/* Busy for about `cycles` clock cycles. */
static __device__ void spin(unsigned long long cycles)
{
    const long long start = clock64();
    while ((unsigned long long)(clock64() - start) < cycles)
        ;
}

/* How long item `item` keeps its block busy: uniform below spin_max, and one item in 32
 * sixteen times longer (a heavy tail, so blocks finish their items far out of order). */
static __device__ __forceinline__ unsigned long long item_cycles(unsigned long long seed, unsigned long long item,
                                                                 unsigned int spin_max)
{
    if (!spin_max)
        return 0;
    const unsigned long long h = mix(seed ^ (item * 0x2545f4914f6cdd1dull));
    return (h % spin_max) * ((h >> 59) == 0 ? 16 : 1);
}

/* Per-launch outputs (result, elected, elected_threads) live in slot launch % kSlots; the
 * launch number itself (unique over the whole run) stamps the records, so a record left
 * over from any earlier launch is recognised as stale. */
constexpr unsigned int kSlots = 1000;

/* What each block publishes for the last block: 16 bytes, read back with gs_load_volatile. */
struct Record {
    unsigned long long value;
    unsigned int block;
    unsigned int launch;
};
static_assert(sizeof(Record) == 16, "Record is two 8-byte words");

/* The sum of the whole block's `v`, in every thread (wrapping 64-bit arithmetic). */
static __device__ unsigned long long block_sum(unsigned long long v)
{
    __shared__ unsigned long long red[1024];
    const unsigned int tid = flat_tid(), n = block_threads();
    __syncthreads(); /* red may still be read by a previous call */
    red[tid] = v;
    __syncthreads();
    for (unsigned int width = 1; width < n; width *= 2) {
        unsigned long long other = (tid % (2 * width) == 0 && tid + width < n) ? red[tid + width] : 0;
        __syncthreads();
        if (tid % (2 * width) == 0)
            red[tid] += other;
        __syncthreads();
    }
    const unsigned long long total = red[0];
    __syncthreads();
    return total;
}

/* The last block reads every block's record (release by gs_publish, acquire by
 * gs_acquire, or both by the acqrel guard's ticket; volatile loads), checks each is this
 * launch's, and returns their sum. */
static __device__ unsigned long long combine_records(const Record *records, unsigned int launch,
                                                     unsigned long long seed, bool check_values,
                                                     unsigned int *errors)
{
    unsigned long long acc = 0;
    unsigned int bad = 0;
    for (unsigned int b = flat_tid(); b < gridDim.x; b += block_threads()) {
        const Record r = gs_load_volatile(&records[b]);
        if (r.block != b || r.launch != launch || (check_values && r.value != mix(seed ^ (0x100000000ull + b))))
            bad++;
        acc += r.value;
    }
    if (bad)
        atomicAdd(errors, bad);
    return block_sum(acc);
}

/*
 * The queue and the guard together: blocks take items from the queue (each item counted
 * in hits[] and worth mix(seed + item)), spin for the item's time, then finish with the
 * queue (the block gs_queue_finish names the last counts itself in finish_last[], and
 * its threads in finish_last_threads[]); each block publishes its sum, and the last block
 * (guard G) adds the sums up in result[] and resets the counter.
 */
template <int G>
__global__ void queue_kernel(gs_work_queue *q, unsigned long long count, unsigned int *hits, unsigned long long seed,
                             unsigned int spin_max, Record *records, unsigned int *counter, unsigned long long *result,
                             unsigned int launch, unsigned int *errors, unsigned int *finish_last,
                             unsigned int *finish_last_threads)
{
    unsigned long long acc = 0;
    for (long long item; (item = gs_queue_fetch(q, count)) >= 0;) {
        if (thread0()) {
            atomicAdd(&hits[item], 1u);
            acc += mix(seed + (unsigned long long)item);
        }
        spin(item_cycles(seed, (unsigned long long)item, spin_max));
        __syncthreads(); /* contract: a barrier between two fetches */
    }
    if (gs_queue_finish(q)) { /* "this block finished last": one block, all its threads */
        atomicAdd(&finish_last_threads[launch % kSlots], 1u);
        if (thread0())
            atomicAdd(&finish_last[launch % kSlots], 1u);
    }
    if (thread0()) {
        records[blockIdx.x] = Record{acc, blockIdx.x, launch};
        publish<G>();
    }
    if (last_block<G>(counter)) {
        acquire<G>();
        const unsigned long long total = combine_records(records, launch, seed, false, errors);
        if (thread0()) {
            result[launch % kSlots] = total;
            gs_reset_counter(counter);
        }
    }
}

/*
 * The guard alone: each block first pulls its neighbour's record through the ordinary
 * (cacheable) load path -- still last launch's -- then spins a random time and publishes
 * a fresh record. The elected block counts itself (elected[launch], once per block and
 * once per thread) and checks every record is this launch's.
 */
template <int G>
__global__ void guard_kernel(unsigned int *counter, Record *records, unsigned long long seed, unsigned int launch,
                             unsigned int spin_max, unsigned int *elected, unsigned int *elected_threads,
                             unsigned long long *result, unsigned int *errors, unsigned int *sink)
{
    if (thread0()) {
        const Record stale = records[(blockIdx.x + 1) % gridDim.x];
        if (stale.value == seed) /* practically never: keeps the load */
            atomicAdd(sink, 1u);
    }
    spin(item_cycles(seed, blockIdx.x, spin_max));
    if (thread0()) {
        records[blockIdx.x] = Record{mix(seed ^ (0x100000000ull + blockIdx.x)), blockIdx.x, launch};
        publish<G>();
    }
    const bool last = last_block<G>(counter);
    if (last) {
        atomicAdd(&elected_threads[launch % kSlots], 1u);
        if (thread0())
            atomicAdd(&elected[launch % kSlots], 1u);
        acquire<G>();
        const unsigned long long total = combine_records(records, launch, seed, true, errors);
        if (thread0()) {
            result[launch % kSlots] = total;
            gs_reset_counter(counter);
        }
    }
}

/* Breaks the contract on purpose: blocks fetch up to `fetches` items (counted in hits[])
 * and then return without gs_queue_finish, except, when finish_odd is set, the blocks of
 * odd index, which finish properly (after a fetch that returned -1, or not: they may still
 * hold items; what matters is the state left behind). */
__global__ void unfinished_kernel(gs_work_queue *q, unsigned long long count, unsigned int *hits, unsigned int fetches,
                                  int finish_odd)
{
    for (unsigned int k = 0; k < fetches; k++) {
        const long long item = gs_queue_fetch(q, count);
        if (item < 0)
            break;
        if (thread0())
            atomicAdd(&hits[item], 1u);
        __syncthreads();
    }
    if (finish_odd && (blockIdx.x & 1))
        gs_queue_finish(q);
}

/* ---- host side: running and checking ------------------------------------------------------ */

struct Dev {
    gs_context *ctx = nullptr;
    int sms = 0;
    int guard = 20;
    cudaStream_t stream = nullptr;
    /* one queue and one guard counter, reused by everything unless a test says otherwise */
    gs_work_queue *q = nullptr;
    unsigned int *counter = nullptr;
    unsigned int *hits = nullptr, *scratch_hits = nullptr;
    size_t hits_cap = 0;
    Record *records = nullptr;
    size_t records_cap = 0;
    unsigned long long *result = nullptr;
    unsigned int *errors = nullptr, *elected = nullptr, *elected_threads = nullptr, *sink = nullptr;
    unsigned int *finish_last = nullptr, *finish_last_threads = nullptr;
    size_t launches_cap = 0;
};

static const dim3 k_shapes[] = {dim3(256), dim3(32), dim3(1024), dim3(64), dim3(32, 4), dim3(8, 4, 4), dim3(128, 2)};

static dim3 random_shape() { return k_shapes[rnd_below(sizeof k_shapes / sizeof k_shapes[0])]; }

static unsigned int g_launch; /* the next launch number */

/* Calls f with guard g as a compile-time constant (std::integral_constant<int, g>), for
 * the kernels' template argument. */
template <typename F> static void with_guard(int g, F f)
{
    switch (g) {
    case 20: f(std::integral_constant<int, 20>()); break;
    case 11: f(std::integral_constant<int, 11>()); break;
    case 21: f(std::integral_constant<int, 21>()); break;
    default: f(std::integral_constant<int, 12>()); break;
    }
}

/* Queues one queue_kernel launch; returns its launch number (its outputs are in slot
 * launch % kSlots). */
static unsigned int launch_queue(Dev &d, unsigned int grid, dim3 block, unsigned long long count, unsigned int *hits,
                                 unsigned long long seed, unsigned int spin_max, cudaStream_t s)
{
    const unsigned int launch = g_launch++;
    with_guard(d.guard, [&](auto g) {
        queue_kernel<decltype(g)::value><<<grid, block, 0, s>>>(d.q, count, hits, seed, spin_max, d.records, d.counter,
                                                                d.result, launch, d.errors, d.finish_last,
                                                                d.finish_last_threads);
    });
    CK(cudaGetLastError());
    return launch;
}

static unsigned int launch_guard(Dev &d, unsigned int grid, dim3 block, unsigned long long seed, unsigned int spin_max,
                                 cudaStream_t s)
{
    const unsigned int launch = g_launch++;
    with_guard(d.guard, [&](auto g) {
        guard_kernel<decltype(g)::value><<<grid, block, 0, s>>>(d.counter, d.records, seed, launch, spin_max, d.elected,
                                                                d.elected_threads, d.result, d.errors, d.sink);
    });
    CK(cudaGetLastError());
    return launch;
}

static unsigned long long ref_items(unsigned long long seed, unsigned long long count)
{
    unsigned long long s = 0;
    for (unsigned long long i = 0; i < count; i++)
        s += mix(seed + i);
    return s;
}

static gs_work_queue read_queue(const Dev &d, const void *q)
{
    gs_work_queue h;
    CK(cudaMemcpy(&h, q, sizeof h, cudaMemcpyDeviceToHost));
    (void)d;
    return h;
}

/* The queue and the guard counter are back at zero (after a synchronised launch). */
static void check_clean(const Dev &d, const char *what)
{
    gs_work_queue h = read_queue(d, d.q);
    unsigned int c = 0;
    CK(cudaMemcpy(&c, d.counter, sizeof c, cudaMemcpyDeviceToHost));
    CHECK(h.next == 0 && h.finished == 0 && h.reserved == 0,
          "%s: the queue is not all zero after the launch: next %llu, finished %u, reserved %u", what, h.next,
          h.finished, h.reserved);
    CHECK(c == 0, "%s: the guard counter is %u after the launch, not 0", what, c);
}

/* hits[i] == want(i) for i < n; reports the first few differences and how many. */
template <typename Want> static bool check_hits(const char *what, const unsigned int *hits, size_t n, Want want)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (hits[i] != want(i)) {
            if (bad < 5)
                FAIL("%s: item %zu was handed out %u times, expected %u", what, i, hits[i], (unsigned)want(i));
            bad++;
        }
    g_checks++;
    if (bad > 5)
        FAIL("%s: %zu items in all were handed out a wrong number of times", what, bad);
    return bad == 0;
}

static unsigned int read_u32(const unsigned int *p)
{
    unsigned int v;
    CK(cudaMemcpy(&v, p, sizeof v, cudaMemcpyDeviceToHost));
    return v;
}

/* Scratch sizes: the largest grid and count any case uses. */
static const unsigned int k_max_grid = 65536;
static const size_t k_max_items = 1000000;
static const unsigned int k_reps = kSlots;

static void dev_buffers(Dev &d)
{
    d.hits_cap = k_max_items;
    d.records_cap = k_max_grid;
    d.launches_cap = kSlots;
    CK(cudaMalloc(&d.hits, d.hits_cap * sizeof *d.hits));
    CK(cudaMalloc(&d.scratch_hits, d.hits_cap * sizeof *d.scratch_hits));
    CK(cudaMalloc(&d.records, d.records_cap * sizeof *d.records));
    CK(cudaMalloc(&d.result, d.launches_cap * sizeof *d.result));
    CK(cudaMalloc(&d.elected, d.launches_cap * sizeof *d.elected));
    CK(cudaMalloc(&d.elected_threads, d.launches_cap * sizeof *d.elected_threads));
    CK(cudaMalloc(&d.finish_last, d.launches_cap * sizeof *d.finish_last));
    CK(cudaMalloc(&d.finish_last_threads, d.launches_cap * sizeof *d.finish_last_threads));
    CK(cudaMalloc(&d.errors, sizeof *d.errors));
    CK(cudaMalloc(&d.sink, sizeof *d.sink));
    CK(cudaMalloc(&d.counter, sizeof *d.counter));
    CK(cudaMemset(d.counter, 0, sizeof *d.counter)); /* the guard's contract: 0 before the first launch */
    CK(cudaMemset(d.scratch_hits, 0, d.hits_cap * sizeof *d.scratch_hits)); /* counted into, never checked */
    CK(cudaMemset(d.records, 0xa5, d.records_cap * sizeof *d.records));
    CK(cudaMemset(d.errors, 0, sizeof *d.errors));
    CK(cudaMemset(d.sink, 0, sizeof *d.sink));
}

/* gs_queue_finish said "last" in exactly `launches` blocks of the launches that wrote slot
 * `slot`, and in all `threads` threads of each (zeroed with zero_finish before them). */
static void zero_finish(Dev &d, unsigned int slot, unsigned int n, cudaStream_t s)
{
    CK(cudaMemsetAsync(d.finish_last + slot, 0, n * sizeof *d.finish_last, s));
    CK(cudaMemsetAsync(d.finish_last_threads + slot, 0, n * sizeof *d.finish_last_threads, s));
}

static bool check_finish(const Dev &d, unsigned int slot, unsigned int launches, unsigned int threads, const char *what)
{
    unsigned int blocks = 0, nthreads = 0;
    CK(cudaMemcpy(&blocks, d.finish_last + slot, sizeof blocks, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&nthreads, d.finish_last_threads + slot, sizeof nthreads, cudaMemcpyDeviceToHost));
    g_checks++;
    if (blocks != launches || nthreads != launches * threads) {
        FAIL("%s: gs_queue_finish named %u blocks (%u threads) the last, expected %u (%u threads)", what, blocks,
             nthreads, launches, launches * threads);
        return false;
    }
    return true;
}

/* ---- exactly-once --------------------------------------------------------------------- */

static void test_exactly_once(Dev &d)
{
    const double t0 = now_s();
    std::vector<unsigned int> hits(k_max_items);
    const unsigned int sm = (unsigned)d.sms;
    std::vector<unsigned int> grids = {1, 2, 3, 5, 31, sm, 2 * sm, 8 * sm, 1000, 4099};
    if (!g_quick)
        grids.push_back(k_max_grid);
    struct Case {
        unsigned int grid;
        unsigned long long count;
        unsigned int spin;
    };
    std::vector<Case> cases;
    for (unsigned int g : grids) {
        const unsigned long long counts[] = {0, 1, g > 1 ? g - 1 : 2, g, g + 1ull, 1 + rnd_below(g_quick ? 5000 : 50000)};
        for (unsigned long long c : counts) {
            static const unsigned int spins[] = {0, 300, 3000, 30000};
            unsigned int spin = spins[rnd_below(4)];
            /* keep each case's busy time around a few ms at most */
            const unsigned long long width = g < 8 * sm ? g : 8 * sm;
            const unsigned long long cap = c ? 4000000ull * width / c : spin;
            cases.push_back({g, c, (unsigned int)(spin < cap ? spin : cap)});
        }
    }
    /* 10^6 items: on a grid that fits the device, on many small waves, and on one block */
    cases.push_back({2 * sm, k_max_items, 200});
    cases.push_back({g_quick ? 1000u : k_max_grid, k_max_items, 0});

    for (const Case &c : cases) {
        const dim3 block = random_shape();
        const unsigned long long seed = rnd();
        char what[160];
        snprintf(what, sizeof what, "exactly-once: grid %u, block %ux%ux%u, %llu items, spin < %u cycles", c.grid,
                 block.x, block.y, block.z, c.count, c.spin);
        CK(cudaMemsetAsync(d.hits, 0, c.count * sizeof *d.hits, d.stream));
        const unsigned int slot = g_launch % kSlots;
        CK(cudaMemsetAsync(d.result + slot, 0xa5, sizeof *d.result, d.stream));
        zero_finish(d, slot, 1, d.stream);
        launch_queue(d, c.grid, block, c.count, d.hits, seed, c.spin, d.stream);
        CK(cudaStreamSynchronize(d.stream));
        CK(cudaMemcpy(hits.data(), d.hits, c.count * sizeof *d.hits, cudaMemcpyDeviceToHost));
        check_hits(what, hits.data(), c.count, [](size_t) { return 1u; });
        unsigned long long got;
        CK(cudaMemcpy(&got, d.result + slot, sizeof got, cudaMemcpyDeviceToHost));
        const unsigned long long want = ref_items(seed, c.count);
        CHECK(got == want, "%s: the last block's sum is 0x%llx, expected 0x%llx", what, got, want);
        check_finish(d, slot, 1, block.x * block.y * block.z, what);
        check_clean(d, what);
        unsigned int errors = read_u32(d.errors);
        CHECK(errors == 0, "%s: the last block found %u records that were not this launch's", what, errors);
        CK(cudaMemset(d.errors, 0, sizeof *d.errors));
    }
    printf("exactly-once: %zu launches checked (%.2f s)\n", cases.size(), now_s() - t0);
}

/* ---- guard ------------------------------------------------------------------------------ */

static void test_guard(Dev &d)
{
    const double t0 = now_s();
    const unsigned int reps = g_quick ? 100 : k_reps;
    std::vector<unsigned int> grid(reps), threads(reps);
    std::vector<unsigned long long> seed(reps);
    CK(cudaMemsetAsync(d.elected, 0, kSlots * sizeof *d.elected, d.stream));
    CK(cudaMemsetAsync(d.elected_threads, 0, kSlots * sizeof *d.elected_threads, d.stream));
    CK(cudaMemsetAsync(d.result, 0xa5, kSlots * sizeof *d.result, d.stream));
    std::vector<unsigned int> slot(reps);
    /* back to back on one counter, no host sync, a different grid every launch */
    for (unsigned int l = 0; l < reps; l++) {
        static const unsigned int fixed[] = {1, 2, 3, 64, 1000, k_max_grid};
        grid[l] = l < 6 ? fixed[l] : 1 + (unsigned)rnd_below(rnd_below(4) == 0 ? 20000 : 2 * (unsigned)d.sms * 8);
        const dim3 block = random_shape();
        threads[l] = block.x * block.y * block.z;
        seed[l] = rnd();
        slot[l] = launch_guard(d, grid[l], block, seed[l], rnd_below(2) ? 2000 : 0, d.stream) % kSlots;
    }
    CK(cudaStreamSynchronize(d.stream));
    std::vector<unsigned int> elected_s(kSlots), elected_threads_s(kSlots);
    std::vector<unsigned long long> result_s(kSlots);
    CK(cudaMemcpy(elected_s.data(), d.elected, kSlots * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(elected_threads_s.data(), d.elected_threads, kSlots * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(result_s.data(), d.result, kSlots * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    std::vector<unsigned int> elected(reps), elected_threads(reps);
    std::vector<unsigned long long> result(reps);
    for (unsigned int l = 0; l < reps; l++) {
        elected[l] = elected_s[slot[l]];
        elected_threads[l] = elected_threads_s[slot[l]];
        result[l] = result_s[slot[l]];
    }
    int bad = 0;
    for (unsigned int l = 0; l < reps; l++) {
        unsigned long long want = 0;
        for (unsigned int b = 0; b < grid[l]; b++)
            want += mix(seed[l] ^ (0x100000000ull + b));
        g_checks += 3;
        if (elected[l] != 1 || elected_threads[l] != threads[l] || result[l] != want) {
            if (bad++ < 10)
                FAIL("guard: launch %u (grid %u, %u threads per block): %u blocks elected (expected 1), %u threads "
                     "saw \"last\" (expected %u), combined 0x%llx (expected 0x%llx)",
                     l, grid[l], threads[l], elected[l], elected_threads[l], threads[l], result[l], want);
        }
    }
    if (bad > 10)
        FAIL("guard: %d of %u launches wrong", bad, reps);
    const unsigned int errors = read_u32(d.errors);
    CHECK(errors == 0, "guard: the elected blocks found %u records that were stale or not their launch's", errors);
    CK(cudaMemset(d.errors, 0, sizeof *d.errors));
    unsigned int c = read_u32(d.counter);
    CHECK(c == 0, "guard: the counter is %u after %u launches, not 0", c, reps);
    printf("guard (%s): %u launches back to back on one counter (%.2f s)\n", guard_name(d.guard), reps,
           now_s() - t0);
}

/* ---- repeated launches on one queue, no reset ---------------------------------------------- */

static void test_repeated(Dev &d)
{
    const double t0 = now_s();
    const unsigned int reps = g_quick ? 100 : k_reps;
    const unsigned long long max_count = 5000;
    std::vector<unsigned long long> count(reps), seed(reps);
    std::vector<unsigned int> want_hits(max_count, 0), slot(reps);
    CK(cudaMemsetAsync(d.hits, 0, max_count * sizeof *d.hits, d.stream));
    CK(cudaMemsetAsync(d.result, 0xa5, kSlots * sizeof *d.result, d.stream));
    zero_finish(d, 0, kSlots, d.stream);
    std::vector<unsigned int> threads(reps);
    for (unsigned int l = 0; l < reps; l++) {
        count[l] = l % 97 == 0 ? 0 : l % 89 == 0 ? 1 : rnd_below(max_count + 1);
        seed[l] = rnd();
        const unsigned int grid = l % 101 == 0 ? 1 : 1 + (unsigned)rnd_below(2000);
        const dim3 block = random_shape();
        threads[l] = block.x * block.y * block.z;
        slot[l] = launch_queue(d, grid, block, count[l], d.hits, seed[l], rnd_below(2) ? 500 : 0, d.stream) % kSlots;
        for (unsigned long long i = 0; i < count[l]; i++)
            want_hits[i]++;
    }
    CK(cudaStreamSynchronize(d.stream));
    std::vector<unsigned int> hits(max_count);
    CK(cudaMemcpy(hits.data(), d.hits, max_count * sizeof *d.hits, cudaMemcpyDeviceToHost));
    check_hits("repeated: 1000 launches on one queue without a reset", hits.data(), max_count,
               [&](size_t i) { return want_hits[i]; });
    std::vector<unsigned long long> result(kSlots);
    CK(cudaMemcpy(result.data(), d.result, kSlots * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (unsigned int l = 0; l < reps; l++) {
        const unsigned long long want = ref_items(seed[l], count[l]);
        g_checks++;
        if (result[slot[l]] != want && bad++ < 10)
            FAIL("repeated: launch %u (%llu items): the last block's sum is 0x%llx, expected 0x%llx", l, count[l],
                 result[slot[l]], want);
    }
    if (bad > 10)
        FAIL("repeated: %d of %u launches had a wrong sum", bad, reps);
    int bad_finish = 0;
    for (unsigned int l = 0; l < reps && bad_finish < 10; l++) {
        char what[64];
        snprintf(what, sizeof what, "repeated: launch %u", l);
        bad_finish += !check_finish(d, slot[l], 1, threads[l], what);
    }
    const unsigned int errors = read_u32(d.errors);
    CHECK(errors == 0, "repeated: the last blocks found %u records not of their launch", errors);
    CK(cudaMemset(d.errors, 0, sizeof *d.errors));
    check_clean(d, "repeated");
    printf("repeated: %u launches on one queue and one counter, no reset (%.2f s)\n", reps, now_s() - t0);
}

/* ---- reset after an unfinished launch ------------------------------------------------------- */

/* One good launch of `count` items on a fresh hits array: whether every item was handed out
 * once (reported as FAIL only when `expect_right`). */
static bool good_launch(Dev &d, unsigned long long count, unsigned int grid, cudaStream_t s, bool expect_right,
                        const char *what)
{
    std::vector<unsigned int> hits(count);
    const unsigned long long seed = rnd();
    CK(cudaMemsetAsync(d.hits, 0, count * sizeof *d.hits, s));
    launch_queue(d, grid, random_shape(), count, d.hits, seed, 100, s);
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(hits.data(), d.hits, count * sizeof *d.hits, cudaMemcpyDeviceToHost));
    if (expect_right)
        return check_hits(what, hits.data(), count, [](size_t) { return 1u; });
    for (size_t i = 0; i < count; i++)
        if (hits[i] != 1)
            return false;
    return true;
}

static void test_reset(Dev &d)
{
    const double t0 = now_s();
    const unsigned long long count = 20000;
    cudaStream_t created;
    CK(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
    const struct {
        const char *name;
        cudaStream_t s;
        bool default_ctx;
    } streams[] = {{"created stream", created, false},
                   {"legacy default stream", nullptr, false},
                   {"per-thread default stream", cudaStreamPerThread, false},
                   {"created stream, default context", created, true},
                   {"legacy default stream, default context", nullptr, true}};
    for (const auto &st : streams)
        for (int finish_odd = 0; finish_odd < 2; finish_odd++) {
            char what[160];
            snprintf(what, sizeof what, "reset on the %s after a launch where %s blocks finished", st.name,
                     finish_odd ? "only the odd" : "no");
            const unsigned int grid = 2 * (unsigned)d.sms + 1, fetches = 3;
            unfinished_kernel<<<grid, 128, 0, st.s>>>(d.q, count, d.scratch_hits, fetches, finish_odd);
            CK(cudaGetLastError());
            CK(cudaStreamSynchronize(st.s));
            const gs_work_queue dirty = read_queue(d, d.q);
            CHECK(dirty.next == (unsigned long long)grid * fetches,
                  "%s: after the unfinished launch next is %llu, expected %llu", what, dirty.next,
                  (unsigned long long)grid * fetches);
            CHECK(dirty.finished == (finish_odd ? grid / 2 : 0),
                  "%s: after the unfinished launch finished is %u, expected %u", what, dirty.finished,
                  finish_odd ? grid / 2 : 0);
            /* The check has teeth: without a reset the next launch goes wrong (and leaves the
             * queue dirty again), so the unfinished launch is repeated before the reset. */
            if (st.s == created && !st.default_ctx) {
                const bool right = good_launch(d, count, 64, st.s, false, what);
                CHECK(!right, "%s: a launch on the dirty queue without a reset handed every item out once: the "
                              "test cannot tell a reset from none",
                      what);
                CHECK_GS(gs_queue_reset(d.ctx, d.q, st.s));
                unfinished_kernel<<<grid, 128, 0, st.s>>>(d.q, count, d.scratch_hits, fetches, finish_odd);
                CK(cudaGetLastError());
            }
            CHECK_GS(gs_queue_reset(st.default_ctx ? nullptr : d.ctx, d.q, st.s));
            /* ordered after the reset on the same stream, no host sync in between */
            good_launch(d, count, 2 * (unsigned)d.sms, st.s, true, what);
            check_clean(d, what);
        }
    /* What a reset refuses: host memory, NULL. */
    static long long host_queue[2];
    gs_status stt = gs_queue_reset(d.ctx, host_queue, d.stream);
    CHECK(stt == GS_ERROR_INVALID_POINTER, "gs_queue_reset(pageable host memory) returned %s, expected %s",
          gs_status_string(stt), gs_status_string(GS_ERROR_INVALID_POINTER));
    stt = gs_queue_reset(d.ctx, nullptr, d.stream);
    CHECK(stt == GS_ERROR_INVALID_ARGUMENT, "gs_queue_reset(NULL) returned %s", gs_status_string(stt));
    CK(cudaStreamDestroy(created));
    printf("reset: unfinished launches recovered on 3 streams, explicit and default context (%.2f s)\n",
           now_s() - t0);
}

/* ---- graphs ---------------------------------------------------------------------------------- */

static void check_graph_nodes(cudaGraph_t g, size_t want_kernels, const char *what)
{
    size_t n = 0;
    CK(cudaGraphGetNodes(g, nullptr, &n));
    std::vector<cudaGraphNode_t> nodes(n);
    CK(cudaGraphGetNodes(g, nodes.data(), &n));
    size_t memsets = 0, kernels = 0;
    for (cudaGraphNode_t node : nodes) {
        cudaGraphNodeType t;
        CK(cudaGraphNodeGetType(node, &t));
        memsets += t == cudaGraphNodeTypeMemset;
        kernels += t == cudaGraphNodeTypeKernel;
    }
    CHECK(memsets == 1 && kernels == want_kernels && n == want_kernels + 1,
          "%s: the graph has %zu nodes (%zu memset, %zu kernel), expected one memset node and %zu kernel nodes", what,
          n, memsets, kernels, want_kernels);
}

static void test_graph(Dev &d)
{
    const double t0 = now_s();
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int with_unfinished = 0; with_unfinished < 2; with_unfinished++) {
        const char *what = with_unfinished ? "graph: unfinished launch + gs_queue_reset + launch"
                                           : "graph: gs_queue_reset + launch";
        const unsigned int replays = g_quick ? 50 : with_unfinished ? 200 : k_reps;
        const unsigned long long count = with_unfinished ? 3000 : 1000 + rnd_below(9000);
        const unsigned long long seed = rnd();
        const unsigned int grid = 1 + (unsigned)rnd_below(4 * (unsigned)d.sms);
        const unsigned int slot = g_launch % kSlots;
        CK(cudaMemsetAsync(d.hits, 0, count * sizeof *d.hits, s));
        CK(cudaMemsetAsync(d.result + slot, 0xa5, sizeof *d.result, s));
        zero_finish(d, slot, 1, s);
        CK(cudaStreamSynchronize(s));
        cudaGraph_t graph;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        if (with_unfinished) {
            unfinished_kernel<<<grid, 64, 0, s>>>(d.q, count, d.scratch_hits, 2, 1);
            CK(cudaGetLastError());
        }
        gs_status st = gs_queue_reset(with_unfinished ? nullptr : d.ctx, d.q, s);
        const dim3 block = random_shape();
        launch_queue(d, grid, block, count, d.hits, seed, 50, s); /* every replay: the same launch number */
        CK(cudaStreamEndCapture(s, &graph));
        if (st != GS_SUCCESS) {
            FAIL("%s: gs_queue_reset during capture: %s: %s", what, gs_status_string(st), gs_last_error_message());
            CK(cudaGraphDestroy(graph));
            continue;
        }
        check_graph_nodes(graph, with_unfinished ? 2 : 1, what);
        cudaGraphExec_t exec;
        CK(cudaGraphInstantiate(&exec, graph, 0));
        for (unsigned int r = 0; r < replays; r++)
            CK(cudaGraphLaunch(exec, s));
        CK(cudaStreamSynchronize(s));
        std::vector<unsigned int> hits(count);
        CK(cudaMemcpy(hits.data(), d.hits, count * sizeof *d.hits, cudaMemcpyDeviceToHost));
        char w[160];
        snprintf(w, sizeof w, "%s, replayed %u times (grid %u, %llu items)", what, replays, grid, count);
        check_hits(w, hits.data(), count, [&](size_t) { return replays; });
        unsigned long long got;
        CK(cudaMemcpy(&got, d.result + slot, sizeof got, cudaMemcpyDeviceToHost));
        const unsigned long long want = ref_items(seed, count);
        CHECK(got == want, "%s: the last block's sum is 0x%llx, expected 0x%llx", w, got, want);
        check_finish(d, slot, replays, block.x * block.y * block.z, w);
        check_clean(d, w);
        CK(cudaGraphExecDestroy(exec));
        CK(cudaGraphDestroy(graph));
    }

    /* gs_queue_create while this thread captures another stream in global mode: it must
     * neither fail nor invalidate the capture (it relaxes the thread's mode and fills the
     * queue on a stream of its own). */
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    void *q2 = nullptr;
    gs_status st = gs_queue_create(d.ctx, &q2);
    launch_queue(d, 4, dim3(64), 10, d.hits, 1, 0, s); /* captured, never run */
    cudaGraph_t graph = nullptr;
    cudaError_t e = cudaStreamEndCapture(s, &graph);
    CHECK(st == GS_SUCCESS, "gs_queue_create during another stream's capture: %s: %s", gs_status_string(st),
          gs_last_error_message());
    CHECK(e == cudaSuccess, "gs_queue_create invalidated another stream's capture: cudaStreamEndCapture: %s",
          cudaGetErrorName(e));
    if (e != cudaSuccess)
        cudaGetLastError();
    if (graph)
        CK(cudaGraphDestroy(graph));
    if (q2) {
        const gs_work_queue h = read_queue(d, q2);
        CHECK(h.next == 0 && h.finished == 0 && h.reserved == 0, "a queue made during a capture is not all zero");
        CHECK_GS(gs_queue_destroy(d.ctx, q2));
    }
    CK(cudaStreamDestroy(s));
    printf("graph: reset + launch replayed, unfinished + reset + launch replayed, create during a capture (%.2f s)\n",
           now_s() - t0);
}

/* ---- main ---------------------------------------------------------------------------------- */

static void run_guard(Dev &d, int guard)
{
    d.guard = guard;
    /* Every round draws new grids, counts, shapes and seeds. */
    const int rounds = g_quick ? 1 : 3;
    for (int r = 0; r < rounds; r++) {
        printf("-- guard %s, round %d of %d --\n", guard_name(guard), r + 1, rounds);
        test_guard(d);
        test_exactly_once(d);
        test_repeated(d);
        test_reset(d);
        test_graph(d);
    }
}

int main(int argc, char **argv)
{
    setvbuf(stdout, nullptr, _IOLBF, 0);
    std::vector<int> guards;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--guard") == 0 && i + 1 < argc) {
            const char *g = argv[++i];
            if (strcmp(g, "sm20") == 0)
                guards.push_back(20);
            else if (strcmp(g, "sm11") == 0)
                guards.push_back(11);
            else if (strcmp(g, "sm20-acqrel") == 0)
                guards.push_back(21);
            else if (strcmp(g, "sm11-acqrel") == 0)
                guards.push_back(12);
            else {
                fprintf(stderr, "unknown guard %s (sm20, sm11, sm20-acqrel or sm11-acqrel)\n", g);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: %s [--guard sm20|sm11|sm20-acqrel|sm11-acqrel]...\n", argv[0]);
            return 2;
        }
    }
    if (guards.empty())
        guards = {20, 11, 21, 12};
    const char *q = getenv("GS_TEST_QUICK");
    g_quick = q && *q && strcmp(q, "0") != 0;
    const char *seed_env = getenv("GS_TEST_SEED");
    g_rng = seed_env ? strtoull(seed_env, nullptr, 0) : (unsigned long long)time(nullptr) ^ ((unsigned long long)clock() << 32);
    printf("seed %llu (GS_TEST_SEED=%llu replays it)%s\n", g_rng, g_rng, g_quick ? ", quick" : "");

    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || (e == cudaSuccess && count == 0)) {
        printf("skipped: no CUDA %s (%s)\n", e == cudaErrorInsufficientDriver ? "driver" : "device",
               e == cudaSuccess ? "0 devices" : cudaGetErrorString(e));
        return 77;
    }
    CK(e);
    CK(cudaSetDevice(0));
    CK(cudaFree(0)); /* the runtime's primary context, which gridsync's context shares */

    Dev d;
    CK(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, 0));
    gs_status st = gs_context_create(0, &d.ctx);
    if (st == GS_ERROR_NO_DRIVER || st == GS_ERROR_NO_DEVICE) {
        printf("skipped: %s: %s\n", gs_status_string(st), gs_last_error_message());
        return 77;
    }
    CHECK_GS(st);
    gs_context_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_GS(gs_context_get_info(d.ctx, &info));
    printf("device 0: %s, %d multiprocessors, compute capability %d.%d\n", info.device_name, d.sms, info.cc_major,
           info.cc_minor);
    CK(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking));

    /* A new queue is ready at once: zero, on any stream, without a reset. */
    void *queue = (void *)&queue;
    CHECK_GS(gs_queue_create(d.ctx, &queue));
    d.q = (gs_work_queue *)queue;
    const gs_work_queue fresh = read_queue(d, d.q);
    CHECK(fresh.next == 0 && fresh.finished == 0 && fresh.reserved == 0,
          "gs_queue_create: the new queue is not all zero");
    CHECK((uintptr_t)d.q % 8 == 0, "gs_queue_create: %p is not 8-byte aligned", queue);
    CHECK(gs_queue_create(d.ctx, nullptr) == GS_ERROR_INVALID_ARGUMENT, "gs_queue_create(ctx, NULL) accepted");
    /* ... also through the default context, several at once */
    void *more[4] = {};
    for (void *&m : more)
        CHECK_GS(gs_queue_create(nullptr, &m));
    for (void *m : more) {
        const gs_work_queue h = read_queue(d, m);
        CHECK(h.next == 0 && h.finished == 0 && m != queue, "gs_queue_create(NULL ctx): not a fresh zero queue");
    }
    for (void *m : more)
        CHECK_GS(gs_queue_destroy(nullptr, m));

    dev_buffers(d);
    const double t0 = now_s();
    for (int g : guards)
        run_guard(d, g);

    CHECK_GS(gs_queue_destroy(d.ctx, d.q));
    CHECK_GS(gs_queue_destroy(d.ctx, nullptr));
    CK(cudaDeviceSynchronize());
    CK(cudaStreamDestroy(d.stream));
    cudaFree(d.hits);
    cudaFree(d.scratch_hits);
    cudaFree(d.records);
    cudaFree(d.result);
    cudaFree(d.elected);
    cudaFree(d.elected_threads);
    cudaFree(d.finish_last);
    cudaFree(d.finish_last_threads);
    cudaFree(d.errors);
    cudaFree(d.sink);
    cudaFree(d.counter);
    CHECK_GS(gs_context_destroy(d.ctx));
    printf("%d checks, %d failed (%.1f s)\n", g_checks, g_failures, now_s() - t0);
    if (g_failures) {
        printf("FAILED (seed: GS_TEST_SEED=%s to replay)\n", seed_env ? seed_env : "the one printed above");
        return 1;
    }
    printf("PASS\n");
    return 0;
}
