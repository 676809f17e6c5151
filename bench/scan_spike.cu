/*
 * A design spike for gs_scan (issue 45), not part of the library or its build: a
 * single-pass inclusive scan with a decoupled look-back over a constant-size ring of tile
 * states, whose float results follow hostref_scan's association order (hostref/scan.c),
 * timed against CUB's DeviceScan::InclusiveSum and a device-to-device copy on the same
 * buffers. It answers two questions before the kernel goes into backends/common: does the
 * ring keep every result right and bitwise reproducible on any grid, and how close to the
 * copy does one launch get. Build and run on a GPU machine:
 *
 *   nvcc -std=c++17 -O3 -arch=sm_90 -I api -I internal -I hostref -o scan_spike \
 *       bench/scan_spike.cu hostref/values.c hostref/reduce.c hostref/scan.c && ./scan_spike
 *
 * The protocol (one launch, persistent blocks, tiles from an atomic ticket):
 * - tile j's state lives in slot j % R of a ring, tagged with its lap j / R and a flag
 *   (1: aggregate published, 2: inclusive prefix published). 4-byte values share one
 *   64-bit word with their tag, so anyone may raise a tile from aggregate to prefix with a
 *   compare-and-swap; 8-byte values sit in arrays beside the tags, published before them,
 *   and a reader checks the tags again after reading (no raising by others);
 * - before tile j writes slot j % R (j >= R), it waits until tile j - R + 1 has its
 *   inclusive prefix: from then on no tile needs tile j - R, since a look-back that reached
 *   it would have stopped at j - R + 1. A reader that meets a newer lap starts again;
 * - tile j finds the nearest predecessor k with its prefix P_k (4-byte values: window by
 *   window; 8-byte values: within its 32 predecessors, waiting for one), then folds
 *   forward, P_k op AGG_{k+1} op ... op AGG_{j-1}: the left fold of every earlier
 *   aggregate, whichever k it found, so float results do not depend on timing. The oldest
 *   unfinished tile always finds its predecessor's prefix, so the scan always progresses;
 * - the last block to finish (tickets ntiles + gridDim.x in all) zeroes the tags it used
 *   and the ticket, so the next launch needs no memset and a captured graph replays.
 * Full tiles are loaded and stored with coalesced 16-byte vectors through shared memory.
 * The results and what they say: bench/results/nvidia-h200/scan-spike/README.md.
 */
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
#include "hostref.h"
}

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static const int kThreads = 256, kWarps = kThreads / 32;
static const unsigned kRing = 1536; /* slots; the grid is capped at kRing - 32 blocks */

template <typename T> struct Sum {
    static __device__ __forceinline__ T op(T a, T b) { return a + b; }
};
__device__ __forceinline__ float sum_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double sum_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ int sum_rn(int a, int b) { return (int)((unsigned)a + (unsigned)b); }

struct Ring {
    unsigned long long *tag; /* kRing: lap << 2 | flag */
    unsigned char *agg;      /* kRing values */
    unsigned char *incl;     /* kRing values */
    unsigned int *ticket;
};

__device__ __forceinline__ unsigned long long load_tag(const unsigned long long *p)
{
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void store_tag(unsigned long long *p, unsigned long long v)
{
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* Kogge-Stone within the warp through shuffles: lane l ends with v_0 op ... op v_l,
 * v_{l-d} the left operand at every step (hostref/scan.c, steps 2 and 3). */
template <typename T> __device__ __forceinline__ T warp_scan(T v, unsigned lane)
{
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        const T o = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= (unsigned)d)
            v = sum_rn(o, v);
    }
    return v;
}

/* 4-byte values: the value and its tag in one 64-bit word, value bits << 32 | lap << 2 |
 * flag, so a reader sees both at once and anyone may raise a tile from aggregate to prefix
 * with a compare-and-swap. Tags compare as their low 32 bits (laps modulo 2^30). */
__device__ __forceinline__ unsigned to_bits(float v) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned to_bits(int v) { return (unsigned)v; }
template <typename T> __device__ __forceinline__ T from_bits(unsigned b);
template <> __device__ __forceinline__ float from_bits<float>(unsigned b) { return __uint_as_float(b); }
template <> __device__ __forceinline__ int from_bits<int>(unsigned b) { return (int)b; }
__device__ __forceinline__ unsigned tag_of(unsigned long long q, unsigned flag)
{
    return (unsigned)((q / kRing) & 0x3fffffffull) << 2 | flag;
}
template <typename T> __device__ __forceinline__ unsigned long long word_of(T v, unsigned tag)
{
    return (unsigned long long)to_bits(v) << 32 | tag;
}

/* Tile j's carry C_j (j >= 1) by warp 0, from packed words: walk back window by window to
 * the nearest tile with its prefix, then fold forward to j - 1, raising every tile on the
 * way from aggregate to prefix (the value it would compute itself: the same left fold). A
 * reused slot anywhere restarts the walk: its successor had its prefix by then, so the
 * next walk stops sooner. */
template <typename T> __device__ T lookback_packed(unsigned long long *words, unsigned long long j, unsigned lane)
{
    const unsigned full = 0xffffffffu;
restart:
    long long top = (long long)j - 1;
    unsigned long long w = 0;
    int k;
    for (;;) {
        const long long q = top - 31 + (long long)lane;
        bool ready = true, pref = false, newer = false;
        if (q >= 0) {
            const unsigned want = tag_of((unsigned long long)q, 0);
            w = load_tag(&words[q % kRing]);
            const unsigned tg = (unsigned)w;
            newer = tg > (want | 3);
            ready = tg >= (want | 1);
            pref = tg == (want | 2);
        }
        if (__any_sync(full, newer))
            goto restart;
        if (!__all_sync(full, ready)) {
            __nanosleep(32);
            continue;
        }
        const unsigned have = __ballot_sync(full, pref);
        if (have) {
            k = 31 - __clz(have);
            break;
        }
        top -= 32;
    }
    T c = from_bits<T>((unsigned)(__shfl_sync(full, w, k) >> 32));
    for (long long start = top - 31 + k + 1; start <= (long long)j - 1; start += 32) {
        const long long q = start + (long long)lane;
        const bool in = q <= (long long)j - 1;
        unsigned long long wq = 0;
        unsigned want = 0;
        if (in) {
            want = tag_of((unsigned long long)q, 0);
            wq = load_tag(&words[q % kRing]);
        }
        const bool newer = in && (unsigned)wq > (want | 3);
        if (__any_sync(full, newer))
            goto restart;
        T mine = c;
#pragma unroll 1
        for (int i = 0; i < 32 && start + i <= (long long)j - 1; i++) {
            const unsigned long long wi = __shfl_sync(full, wq, i);
            const unsigned ti = (unsigned)wi, wanti = __shfl_sync(full, want, i);
            const T vi = from_bits<T>((unsigned)(wi >> 32));
            c = ti == (wanti | 2) ? vi : sum_rn(c, vi);
            if (lane == (unsigned)i)
                mine = c;
        }
        if (in && (unsigned)wq == (want | 1))
            atomicCAS(&words[q % kRing], wq, word_of(mine, want | 2));
    }
    return c;
}

/* kLookback false: every tile's carry is left out (wrong results, timing only): the
 * floor of the loads, the in-tile scan and the stores, without the look-back. */
template <typename T, int kItems, bool kLookback = true>
__global__ void __launch_bounds__(kThreads) scan_kernel(const T *__restrict__ in, T *__restrict__ out, unsigned long long n,
                                                        Ring ring)
{
    const unsigned long long kTile = (unsigned long long)kThreads * kItems;
    const unsigned long long ntiles = (n + kTile - 1) / kTile;
    T *agg = (T *)ring.agg, *incl = (T *)ring.incl;
    __shared__ unsigned long long s_tile;
    __shared__ T s_warp[kWarps]; /* the warp totals, then their Kogge-Stone scan */
    __shared__ T s_last[kWarps]; /* each warp's last thread inclusive I_t */
    __shared__ T s_carry;
    __shared__ uint4 s_tilebuf[kThreads * kItems * sizeof(T) / 16]; /* the tile, for coalesced loads and stores */
    __shared__ int s_has_carry;
    const unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
    for (;;) {
        if (t == 0)
            s_tile = atomicAdd(ring.ticket, 1u);
        __syncthreads();
        const unsigned long long j = s_tile;
        __syncthreads(); /* every thread read s_tile before it changes again */
        if (j >= ntiles) {
            /* the last of ntiles + gridDim.x tickets: everyone is done, reset the ring */
            if (j == ntiles + gridDim.x - 1) {
                const unsigned used = ntiles < kRing ? (unsigned)ntiles : kRing;
                for (unsigned s = t; s < used; s += kThreads)
                    ring.tag[s] = 0;
                if (t == 0)
                    *ring.ticket = 0;
            }
            return;
        }
        /* 1. the thread's elements, folded left */
        const unsigned long long base = j * kTile + (unsigned long long)t * kItems;
        T x[kItems];
        const bool full = (j + 1) * kTile <= n;
        const int kVec = 16 / (int)sizeof(T), kVecs = kItems / kVec;
        static_assert(kItems % (16 / sizeof(T)) == 0, "whole 16-byte vectors per thread");
        if (full) {
            /* coalesced: vector v of the tile by thread v % kThreads, through shared memory */
            const uint4 *vin = (const uint4 *)(in + j * kTile);
#pragma unroll
            for (int k = 0; k < kVecs; k++)
                s_tilebuf[k * kThreads + t] = __ldg(&vin[k * kThreads + t]);
            __syncthreads();
#pragma unroll
            for (int k = 0; k < kVecs; k++) {
                const uint4 u = s_tilebuf[t * kVecs + k];
                memcpy(&x[k * kVec], &u, 16);
            }
        } else {
#pragma unroll
            for (int k = 0; k < kItems; k++)
                x[k] = base + k < n ? in[base + k] : T(0);
        }
        const int mine = base >= n ? 0 : n - base < (unsigned long long)kItems ? (int)(n - base) : kItems;
        T a = x[0];
#pragma unroll
        for (int k = 1; k < kItems; k++)
            if (k < mine)
                a = sum_rn(a, x[k]);
        if (mine == 0)
            a = T(-0.0); /* padding identity: exact, never reaches an output */
        /* 2-4. warp scan, warp totals scanned, thread inclusive */
        T v = warp_scan(a, lane);
        if (lane == 31)
            s_warp[warp] = v;
        __syncthreads();
        if (warp == 0) {
            T w = lane < kWarps ? s_warp[lane] : T(-0.0);
#pragma unroll
            for (int d = 1; d < kWarps; d *= 2) {
                const T o = __shfl_up_sync(0xffffffffu, w, d);
                if (lane >= (unsigned)d)
                    w = sum_rn(o, w);
            }
            if (lane < kWarps)
                s_warp[lane] = w;
        }
        __syncthreads();
        const T incl_t = warp ? sum_rn(s_warp[warp - 1], v) : v;
        const T up = __shfl_up_sync(0xffffffffu, incl_t, 1);
        if (lane == 31)
            s_last[warp] = incl_t;
        __syncthreads();
        const T tile_agg = s_last[kWarps - 1]; /* I of the tile's last thread */
        /* 5. the tile's carry, by warp 0 */
        if (warp == 0 && kLookback) {
            const unsigned slot = (unsigned)(j % kRing);
            const unsigned long long lap = j / kRing;
            if (j >= kRing) {
                /* the slot is free once tile j - R + 1 has its prefix (or was overwritten) */
                const unsigned long long p = j - kRing + 1;
                if (lane == 0) {
                    if constexpr (sizeof(T) == 4) {
                        while ((unsigned)load_tag(&ring.tag[p % kRing]) < tag_of(p, 2))
                            __nanosleep(32);
                    } else {
                        while (load_tag(&ring.tag[p % kRing]) < ((p / kRing) << 2 | 2))
                            __nanosleep(32);
                    }
                }
                __syncwarp();
            }
            bool has = false;
            T carry = T(0);
            if constexpr (sizeof(T) == 4) {
                unsigned long long *words = ring.tag;
                if (j == 0) {
                    if (lane == 0)
                        store_tag(&words[slot], word_of(tile_agg, tag_of(j, 2)));
                } else {
                    const unsigned long long a_word = word_of(tile_agg, tag_of(j, 1));
                    if (lane == 0)
                        store_tag(&words[slot], a_word);
                    carry = lookback_packed<T>(words, j, lane);
                    has = true;
                    if (lane == 0) /* a helper may have raised it already, to the same word */
                        atomicCAS(&words[slot], a_word, word_of(sum_rn(carry, tile_agg), tag_of(j, 2)));
                }
            } else if (j == 0) {
                if (lane == 0) {
                    incl[slot] = tile_agg;
                    store_tag(&ring.tag[slot], lap << 2 | 2);
                }
            } else {
                if (lane == 0) {
                    agg[slot] = tile_agg;
                    store_tag(&ring.tag[slot], lap << 2 | 1);
                }
                /* the window: lane l looks at tile j - 32 + l (those >= 0) */
                const long long q = (long long)j - 32 + (long long)lane;
                for (;;) {
                    unsigned long long tg = 0, want = 0;
                    T val = T(0);
                    bool ready = true, pref = false, newer = false;
                    if (q >= 0) {
                        const unsigned s = (unsigned)(q % kRing);
                        want = ((unsigned long long)q / kRing) << 2;
                        tg = load_tag(&ring.tag[s]);
                        newer = tg > (want | 3); /* reused: tile q + 1 had its prefix by then */
                        ready = tg >= (want | 1);
                        pref = tg == (want | 2);
                        if (ready && !newer) {
                            __threadfence();
                            val = pref ? *(volatile T *)&incl[s] : *(volatile T *)&agg[s];
                        }
                    }
                    const unsigned have = __ballot_sync(0xffffffffu, pref);
                    const unsigned gone = __ballot_sync(0xffffffffu, newer);
                    const int k = have ? 31 - __clz(have) : -1, h = gone ? 31 - __clz(gone) : -1;
                    if (!__all_sync(0xffffffffu, ready) || k < 0 || k < h) {
                        __nanosleep(64);
                        continue;
                    }
                    /* the highest prefix, then the later aggregates folded forward */
                    T c = __shfl_sync(0xffffffffu, val, k);
                    for (int i = k + 1; i < 32; i++)
                        c = sum_rn(c, __shfl_sync(0xffffffffu, val, i));
                    /* the tags must still be the ones the values were read under */
                    __threadfence(); /* the value loads before the tags' second look */
                    bool same = true;
                    if (q >= 0 && lane > (unsigned)k)
                        same = load_tag(&ring.tag[(unsigned)(q % kRing)]) == tg;
                    if (!__all_sync(0xffffffffu, same))
                        continue;
                    carry = c;
                    has = true;
                    break;
                }
                if (lane == 0) {
                    incl[slot] = sum_rn(carry, tile_agg);
                    store_tag(&ring.tag[slot], lap << 2 | 2);
                }
            }
            if (lane == 0) {
                s_carry = carry;
                s_has_carry = has;
            }
        } else if (!kLookback && t == 0) {
            s_carry = T(0);
            s_has_carry = 0;
        }
        __syncthreads();
        /* 6-7. thread carry, then each element */
        bool have_r = s_has_carry || t > 0;
        T r = s_carry;
        if (t > 0) {
            const T prev = lane ? up : s_last[warp - 1]; /* P_t = I_{t-1} */
            r = s_has_carry ? sum_rn(s_carry, prev) : prev;
        }
#pragma unroll
        for (int k = 0; k < kItems; k++)
            if (k < mine) {
                r = have_r ? sum_rn(r, x[k]) : x[k];
                have_r = true;
                x[k] = r;
            }
        if (full) {
            /* every thread's loads from s_tilebuf were before the look-back's barrier */
#pragma unroll
            for (int k = 0; k < kVecs; k++) {
                uint4 u;
                memcpy(&u, &x[k * kVec], 16);
                s_tilebuf[t * kVecs + k] = u;
            }
            __syncthreads();
            uint4 *vout = (uint4 *)(out + j * kTile);
#pragma unroll
            for (int k = 0; k < kVecs; k++)
                vout[k * kThreads + t] = s_tilebuf[k * kThreads + t];
        } else {
#pragma unroll
            for (int k = 0; k < kItems; k++)
                if (k < mine)
                    out[base + k] = x[k];
        }
        __syncthreads(); /* s_warp, s_carry, s_tilebuf reused by the next tile */
    }
}

template <typename T> struct Dt;
template <> struct Dt<float> { static const gs_dtype v = GS_FLOAT32; };
template <> struct Dt<double> { static const gs_dtype v = GS_FLOAT64; };
template <> struct Dt<int> { static const gs_dtype v = GS_INT32; };

template <typename T, int kItems> struct Runner {
    Ring ring;
    int grid;
    Runner()
    {
        CK(cudaMalloc(&ring.tag, kRing * 8));
        CK(cudaMalloc(&ring.agg, kRing * 8));
        CK(cudaMalloc(&ring.incl, kRing * 8));
        CK(cudaMalloc(&ring.ticket, 4));
        CK(cudaMemset(ring.tag, 0, kRing * 8));
        CK(cudaMemset(ring.ticket, 0, 4));
        int per_sm = 0, sms = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, scan_kernel<T, kItems>, kThreads, 0));
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        grid = std::min<int>(per_sm * sms, (int)kRing - 32);
    }
    void run(const T *in, T *out, unsigned long long n, int g, cudaStream_t s, bool lookback = true)
    {
        if (n && lookback)
            scan_kernel<T, kItems><<<g, kThreads, 0, s>>>(in, out, n, ring);
        else if (n)
            scan_kernel<T, kItems, false><<<g, kThreads, 0, s>>>(in, out, n, ring);
    }
};

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
template <typename T> static void fill(std::vector<T> &h)
{
    for (auto &v : h) {
        const double u = hostref_rand_unit(&g_rng) * 2.0 - 1.0;
        v = std::is_integral<T>::value ? (T)(u * 1000.0) : (T)u;
    }
}

template <typename T, int kItems> static int check_and_time(const char *name)
{
    Runner<T, kItems> r;
    int failures = 0;
    printf("%s: tile %d, grid %d (resident), ring %u\n", name, kThreads * kItems, r.grid, kRing);
    const unsigned long long tile = (unsigned long long)kThreads * kItems;
    const unsigned long long sizes[] = {1, 2, 255, tile - 1, tile, tile + 1, 31 * tile + 7, 1000003, (1ull << 22) + 5,
                                        (1ull << 24) - 1, 3 * kRing * tile + 11};
    for (unsigned long long n : sizes) {
        std::vector<T> h(n), want(n), got(n);
        fill(h);
        if (hostref_scan(h.data(), n, Dt<T>::v, GS_OP_SUM, GS_OUT_DEFAULT, 0, kThreads, kItems, want.data()) != GS_SUCCESS) {
            printf("  hostref_scan failed\n");
            return 1;
        }
        T *din, *dout;
        CK(cudaMalloc(&din, n * sizeof(T)));
        CK(cudaMalloc(&dout, n * sizeof(T)));
        CK(cudaMemcpy(din, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
        const int grids[] = {1, 2, 7, r.grid};
        for (int g : grids) {
            for (int rep = 0; rep < 3; rep++) {
                CK(cudaMemset(dout, 0xff, n * sizeof(T)));
                r.run(din, dout, n, g, 0);
                CK(cudaDeviceSynchronize());
                CK(cudaMemcpy(got.data(), dout, n * sizeof(T), cudaMemcpyDeviceToHost));
                if (memcmp(got.data(), want.data(), n * sizeof(T))) {
                    unsigned long long i = 0;
                    while (i < n && !memcmp(&got[i], &want[i], sizeof(T)))
                        i++;
                    printf("  n=%llu grid=%d rep=%d: MISMATCH at %llu\n", n, g, rep, i);
                    failures++;
                }
            }
        }
        CK(cudaFree(din));
        CK(cudaFree(dout));
    }
    printf("  bitwise against hostref_scan: %d mismatches\n", failures);
    /* timing: scan, CUB InclusiveSum, copy on the same buffers, median of 21 */
    printf("  %5s %10s %10s %10s %10s %10s %8s %8s\n", "log2n", "spike_us", "no_lb_us", "fitgrid_us", "cub_us", "copy_us",
           "spk/cub", "copy/spk");
    for (int L = 10; L <= 28; L += 2) {
        const unsigned long long n = 1ull << L;
        T *din, *dout;
        CK(cudaMalloc(&din, n * sizeof(T)));
        CK(cudaMalloc(&dout, n * sizeof(T)));
        CK(cudaMemset(din, 0, n * sizeof(T)));
        size_t temp = 0;
        void *dtemp = nullptr;
        cub::DeviceScan::InclusiveSum(nullptr, temp, din, dout, (int)n);
        CK(cudaMalloc(&dtemp, temp + 1));
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        const int calls = L <= 20 ? 200 : L <= 24 ? 50 : 10;
        const unsigned long long tiles = (n + (unsigned long long)kThreads * kItems - 1) / ((unsigned long long)kThreads * kItems);
        const int fit = (int)std::min<unsigned long long>(tiles, (unsigned long long)r.grid);
        double med[5];
        for (int w = 0; w < 5; w++) {
            std::vector<float> ts;
            for (int rep = 0; rep < 21; rep++) {
                CK(cudaEventRecord(e0));
                for (int c = 0; c < calls; c++) {
                    if (w == 0)
                        r.run(din, dout, n, r.grid, 0);
                    else if (w == 3)
                        r.run(din, dout, n, r.grid, 0, false);
                    else if (w == 4)
                        r.run(din, dout, n, fit, 0);
                    else if (w == 1)
                        cub::DeviceScan::InclusiveSum(dtemp, temp, din, dout, (int)n);
                    else
                        CK(cudaMemcpyAsync(dout, din, n * sizeof(T), cudaMemcpyDeviceToDevice));
                }
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                ts.push_back(ms * 1000.0f / calls);
            }
            std::sort(ts.begin(), ts.end());
            med[w] = ts[ts.size() / 2];
        }
        CK(cudaGetLastError());
        printf("  %5d %10.2f %10.2f %10.2f %10.2f %10.2f %8.3f %8.3f\n", L, med[0], med[3], med[4], med[1], med[2],
               med[0] / med[1], med[2] / med[0]);
        CK(cudaFree(din));
        CK(cudaFree(dout));
        CK(cudaFree(dtemp));
    }
    return failures;
}

int main()
{
    int dev = 0;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, dev));
    printf("device: %s\n", p.name);
    int f = 0;
    f += check_and_time<float, 16>("f32 sum");
    f += check_and_time<int, 16>("i32 sum");
    f += check_and_time<double, 8>("f64 sum");
    printf("%s\n", f ? "FAILED" : "all results bitwise equal to hostref_scan");
    return f ? 1 : 0;
}
