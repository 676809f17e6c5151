/*
 * gs_scan's carries between tiles: the look-back over a ring of group states in the
 * workspace (workspace.h, GS_SCAN_*). The order is hostref/scan.c's step 5: tiles in groups
 * of G = GS_SCAN_GROUP; L_j = the left fold of the group's aggregates before tile j; GT_g =
 * the left fold of all of them; B_g = the left fold of GT_0 .. GT_{g-1}; C_j = B_g op L_j.
 *
 * The ring: group g lives in slot g % kSlots, lap g / kSlots. A slot holds G aggregate
 * entries (tile r of the group writes entry r), the group's entry (GT_g, then B_{g+1} =
 * B_g op GT_g) and a done counter. An entry is kWords 64-bit words, each 32 bits of the
 * value beside the tag (lap << 2 | flag; flag 1 aggregate or GT, 2 B_{g+1}), so one load
 * sees a value's half and its tag together, and a value is whole when its words' tags
 * agree. Every (slot, lap, flag) is written once, so agreeing tags mean one write.
 *
 * Protocol of tile j = g * G + r (one block; tiles come from an atomic ticket in order, so
 * every earlier tile is held by a running block and every wait below ends):
 *  1. Before its first write into the slot (lap >= 1): wait until groups g - kSlots and
 *     g - kSlots + 1 are done (every tile of each has its carry): then nobody reads the old
 *     lap's aggregates, and nobody needs B_{g-kSlots+1} from the old group entry.
 *  2. Publish AGG_j; fold L_j from entries 0 .. r - 1 once they are published.
 *  3. The group's last tile publishes GT_g = L_j op AGG_j.
 *  4. B_g (g >= 1): the 32 groups before g, nearest first: the nearest with B_{h+1}
 *     published (or the virtual start, h = -1), every group between with GT published;
 *     B_g = B_{h+1} op GT_{h+1} op ... op GT_{g-1}, the same left fold whichever h was
 *     found. A group not published yet: look again. A newer lap in a slot: that group is
 *     done (step 1), so a nearer B exists or will: look again.
 *  5. The last tile publishes B_{g+1} = B_g op GT_g; every tile then counts itself done,
 *     a release that orders all its ring reads before it.
 * The last block of the launch zeroes the slots it used and the ticket (the caller).
 */
#pragma once

#include <stdint.h>
#include <string.h>

#include "scan_order.h"
#include "workspace.h"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
#  error "gs_scan's ring uses the PTX memory model's relaxed, acquire and release operations (sm_70+)"
#endif

namespace gs {

__device__ __forceinline__ unsigned long long scan_load_relaxed(const unsigned long long *p)
{
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void scan_store_relaxed(unsigned long long *p, unsigned long long v)
{
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned int scan_load_acquire(const unsigned int *p)
{
    unsigned int v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void scan_add_release(unsigned int *p, unsigned int v)
{
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void scan_pause() { __nanosleep(64); }

/* An entry's state as a reader sees it. */
enum ScanFlag : unsigned int { kScanWait = 0, kScanAgg = 1, kScanIncl = 2, kScanNewer = 3 };

template <typename V> struct ScanRing {
    static const unsigned int kWords = sizeof(V) / 4;
    static_assert(sizeof(V) % 4 == 0, "whole 32-bit words (4 and 8 bytes; the exact scan's fixed point wider)");
    static const unsigned int kG = GS_SCAN_GROUP;
    static const unsigned int kSlots = GS_SCAN_SLOTS(sizeof(V));
    static_assert(kSlots >= 2, "steps 1 and 4 need two slots at least");
    static const unsigned int kEntryWords = (kG + 1) * kWords; /* per slot */

    unsigned long long *words; /* [kSlots][kG + 1][kWords] */
    unsigned int *done;        /* [kSlots] */

    __device__ __forceinline__ explicit ScanRing(unsigned char *workspace)
        : words((unsigned long long *)(workspace + GS_SCAN_STATE_OFFSET)),
          done((unsigned int *)(workspace + GS_SCAN_STATE_OFFSET + kSlots * kEntryWords * 8u))
    {
    }
    static __device__ __forceinline__ unsigned int tag(uint32_t group, unsigned int flag)
    {
        return (group / kSlots & 0x3fffffffu) << 2 | flag;
    }
    __device__ __forceinline__ unsigned long long *entry(uint32_t group, unsigned int e) const
    {
        return words + (group % kSlots) * kEntryWords + e * kWords;
    }
    __device__ __forceinline__ void publish(uint32_t group, unsigned int e, unsigned int flag, V v) const
    {
        unsigned int half[kWords];
        memcpy(half, &v, sizeof v);
        unsigned long long *p = entry(group, e);
        const unsigned int t = tag(group, flag);
#pragma unroll
        for (unsigned int k = 0; k < kWords; k++)
            scan_store_relaxed(p + k, (unsigned long long)half[k] << 32 | t);
    }
    /* Entry e of `group` as it stands: kScanAgg or kScanIncl with its value, kScanNewer when
     * a later lap has the slot, kScanWait otherwise (not yet written, or caught mid-write). */
    __device__ __forceinline__ unsigned int read(uint32_t group, unsigned int e, V &v) const
    {
        const unsigned long long *p = entry(group, e);
        unsigned int half[kWords], tags[kWords];
#pragma unroll
        for (unsigned int k = 0; k < kWords; k++) {
            const unsigned long long w = scan_load_relaxed(p + k);
            half[k] = (unsigned int)(w >> 32);
            tags[k] = (unsigned int)w;
        }
#pragma unroll
        for (unsigned int k = 1; k < kWords; k++)
            if (tags[k] != tags[0])
                return kScanWait;
        memcpy(&v, half, sizeof v);
        const unsigned int lap = group / kSlots & 0x3fffffffu, have = tags[0] >> 2, flag = tags[0] & 3u;
        if (have == lap)
            return flag; /* kScanWait while the slot is zero (lap 0, flag 0) */
        return have == ((lap + 1) & 0x3fffffffu) ? (unsigned int)kScanNewer : (unsigned int)kScanWait;
    }
    /* The done count a slot reaches once `group` is done: G per lap up to and including it. */
    static __device__ __forceinline__ unsigned int done_at(uint32_t group)
    {
        return (group / kSlots + 1u) * kG;
    }
    __device__ __forceinline__ void wait_done(uint32_t group) const
    {
        const unsigned int *p = &done[group % kSlots];
        while ((int)(scan_load_acquire(p) - done_at(group)) < 0)
            scan_pause();
    }
    /* The last block, after every tile: zero the slots used (min(groups, kSlots)). */
    __device__ __forceinline__ void reset(uint32_t groups) const
    {
        const unsigned int used = groups < kSlots ? groups : kSlots;
        for (unsigned int i = threadIdx.x; i < used * kEntryWords; i += blockDim.x)
            words[i] = 0;
        for (unsigned int i = threadIdx.x; i < used; i += blockDim.x)
            done[i] = 0;
    }
};

/* No ring: a scan whose blocks run alone (ScanEdge::kAlone) never touches one. */
struct ScanNoRing {
    __device__ __forceinline__ explicit ScanNoRing(unsigned char *) {}
};

/* A value that may be absent ("none" in hostref/scan.c): a op b, or whichever exists. */
template <typename Op> struct Maybe {
    typename Op::Acc v;
    bool has;
    static __device__ __forceinline__ Maybe join(Maybe a, Maybe b)
    {
        if (!a.has || !b.has)
            return a.has ? a : b;
        return Maybe{Op::combine(a.v, b.v), true};
    }
};

/* What the look-back's threads share; lanes are threads 0 .. 31 of the block. */
template <typename V> struct LookbackScratch {
    V val[32];
    unsigned int flag[32];
    V out;
    unsigned int out_has, again;
};

/*
 * Tile j's carry C_j (steps 1 to 5); every thread of the block calls it with the tile's
 * aggregate AGG_j, and gets C_j back. Barriers inside; the caller puts one
 * before s is written again.
 */
template <typename Op>
__device__ __forceinline__ Maybe<Op> scan_carry(const ScanRing<typename Op::Acc> &ring, uint32_t j,
                                                typename Op::Acc agg, LookbackScratch<typename Op::Acc> &s)
{
    typedef typename Op::Acc V;
    typedef ScanRing<V> Ring;
    const unsigned int t = threadIdx.x, r = j % Ring::kG;
    const uint32_t g = j / Ring::kG;
    /* 1, 2: the slot free, then AGG_j */
    if (t == 0) {
        if (g >= Ring::kSlots) {
            ring.wait_done(g - Ring::kSlots);
            ring.wait_done(g - Ring::kSlots + 1);
        }
        ring.publish(g, r, kScanAgg, agg);
    }
    /* 2: L_j, each lane waiting for its predecessor's aggregate */
    if (t < r) {
        V v;
        while (ring.read(g, t, v) != kScanAgg)
            scan_pause();
        s.val[t] = v;
    }
    __syncthreads();
    Maybe<Op> within{V(), false};
    for (unsigned int i = 0; i < r; i++)
        within = Maybe<Op>::join(within, Maybe<Op>{s.val[i], true});
    const Maybe<Op> gt = Maybe<Op>::join(within, Maybe<Op>{agg, true});
    /* 3 */
    if (t == 0 && r == Ring::kG - 1)
        ring.publish(g, Ring::kG, kScanAgg, gt.v);
    /* 4: B_g */
    Maybe<Op> before{V(), false};
    if (g > 0) {
        for (;;) {
            __syncthreads(); /* s.val is free (first round: every thread has read it above) */
            if (t < 32) {
                const int64_t h = (int64_t)g - 1 - t;
                V v = V();
                s.flag[t] = h < 0 ? (unsigned int)kScanIncl : ring.read((uint32_t)h, Ring::kG, v);
                s.val[t] = v;
            }
            __syncthreads();
            if (t == 0) {
                /* the nearest B_{h+1}, every group nearer with its GT */
                unsigned int k = 0;
                while (k < 32 && s.flag[k] == kScanAgg)
                    k++;
                s.again = k == 32 || s.flag[k] != kScanIncl;
                if (!s.again) {
                    Maybe<Op> b{s.val[k], (int64_t)g - 1 - (int64_t)k >= 0};
                    for (unsigned int i = k; i-- > 0;)
                        b = Maybe<Op>::join(b, Maybe<Op>{s.val[i], true});
                    s.out = b.v;
                    s.out_has = b.has;
                }
            }
            __syncthreads();
            if (!s.again)
                break;
            if (t < 32)
                scan_pause();
        }
        before = Maybe<Op>{s.out, s.out_has != 0};
    }
    /* 5 */
    if (t == 0) {
        if (r == Ring::kG - 1)
            ring.publish(g, Ring::kG, kScanIncl, Maybe<Op>::join(before, gt).v);
        scan_add_release(&ring.done[g % Ring::kSlots], 1u);
    }
    return Maybe<Op>::join(before, within);
}

} // namespace gs
