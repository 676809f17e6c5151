/*
 * The per-stream workspace's regions, declared here only (C and C++). The core allocates
 * GS_WORKSPACE_BYTES per stream, zeroed once; every kernel leaves the ticket, the scan's
 * exits, the queue and the zero state zero, so no launch needs a memset. A stream's launches are ordered, so
 * features may share a region; two streams never share a workspace.
 */
#ifndef GS_WORKSPACE_H
#define GS_WORKSPACE_H

#include "gridsync.h" /* gs_exact_acc */
#include "scan_order.h"

#ifdef __cplusplus
#  define GS_WS_ASSERT(c, m) static_assert(c, m)
#else
#  define GS_WS_ASSERT(c, m) _Static_assert(c, m)
#endif
/* a region shared by two features is as large as the larger of them */
#define GS_WS_MAX(a, b) ((a) > (b) ? (a) : (b))

/* the most a backend may ask (docs/ABI.md) */
#define GS_WORKSPACE_LIMIT (64u * 1024u)

/* the ticket of gs_reduce and the exact sums */
#define GS_TICKET_OFFSET 0

/* gs_scan's count of blocks that have finished (agent/scan.cuh) */
#define GS_SCAN_EXITS_OFFSET 8

/* the segmented work queue */
#define GS_SEG_QUEUE_OFFSET 16
#define GS_SEG_QUEUE_BYTES 16 /* asserted where defined */

/* gs_scan's ring of group states (agent/scan_lookback.cuh), in the zero state: per slot,
 * GS_SCAN_GROUP + 1 entries of one 64-bit word per 4 bytes of value, and a 4-byte done
 * counter. Its size is taken from the segmented chunks' share: 26 KiB holds 99 slots of
 * 4-byte values (3168 tiles) and 50 of 8-byte ones (1600), more than a grid keeps in flight. */
#define GS_SCAN_STATE_BYTES (26u * 1024u)
#define GS_SCAN_SLOT_BYTES(value_bytes) ((GS_SCAN_GROUP + 1u) * 8u * ((value_bytes) / 4u) + 4u)
#define GS_SCAN_SLOTS(value_bytes) (GS_SCAN_STATE_BYTES / GS_SCAN_SLOT_BYTES(value_bytes))
/* the bytes of a scan's carried value (its op's accumulator) for an output of out_bytes */
#define GS_SCAN_VALUE_BYTES(out_bytes) ((out_bytes) < 4u ? 4u : (unsigned)(out_bytes))

/* The exact scan's widths in 32-bit words (agent/scan_exact.cuh): 128 bits hold ordinary
 * data (float32 and float64 of a normal distribution up to 2^30 elements, every float16
 * input), 320 bits every float32 and bfloat16 input, 2304 bits anything, carry-ins of any
 * int64 limbs included; a carried value is the words and a word of flags. The widest runs
 * alone, on blocks of GS_EXACT_SCAN_WIDE_THREADS: its values, in shared memory per thread,
 * would not fit 256 of them, nor its entries the ring. */
#define GS_EXACT_SCAN_NARROW 4
#define GS_EXACT_SCAN_MID 10
#define GS_EXACT_SCAN_WIDE 72
#define GS_EXACT_SCAN_WIDE_THREADS 64
#define GS_EXACT_SCAN_VALUE_BYTES(words) (4u * (words) + 4u)

/* Scratch, rewritten by every launch: per-block partials, or two slots per segmented chunk. */
#define GS_MAX_BLOCKS 2048
#define GS_MAX_PARTIAL_BYTES 16
#define GS_SEG_SLOT_BYTES(wide) ((wide) ? 16u : 8u)
#define GS_PARTIALS_OFFSET 256
/* chunks: as many as the rest holds two narrow slots for, beside the scan's ring (whose
 * region the chunks' counters share) */
#define GS_SEG_COUNTERS ((GS_WORKSPACE_LIMIT - GS_PARTIALS_OFFSET - GS_SCAN_STATE_BYTES) / (2u * GS_SEG_SLOT_BYTES(0)))
#define GS_SCRATCH_BYTES                                                                       \
    GS_WS_MAX(GS_MAX_BLOCKS * GS_MAX_PARTIAL_BYTES, 2u * GS_SEG_COUNTERS * GS_SEG_SLOT_BYTES(0))

/* Zero state, left zero by every launch: the segmented chunk counters, the exact sums'
 * accumulator copies (block b adds to copy b % GS_EXACT_COPIES, spreading the atomics), or
 * the scan's ring; a launch uses one of the three, so they share the region. */
#define GS_ZERO_OFFSET (GS_PARTIALS_OFFSET + GS_SCRATCH_BYTES)
#define GS_SEG_COUNTERS_OFFSET GS_ZERO_OFFSET
#define GS_SEG_MAX_CHUNKS(wide) (GS_SCRATCH_BYTES / (2u * GS_SEG_SLOT_BYTES(wide)))
#define GS_EXACT_COPIES 8u
#define GS_EXACT_ACC_OFFSET GS_ZERO_OFFSET
#define GS_SCAN_STATE_OFFSET GS_ZERO_OFFSET
#define GS_ZERO_BYTES                                                                          \
    GS_WS_MAX(GS_WS_MAX(4u * GS_SEG_COUNTERS, GS_EXACT_COPIES * (unsigned)sizeof(gs_exact_acc)), GS_SCAN_STATE_BYTES)

#define GS_WORKSPACE_BYTES (GS_ZERO_OFFSET + GS_ZERO_BYTES)

GS_WS_ASSERT(GS_SCAN_EXITS_OFFSET >= GS_TICKET_OFFSET + 4, "the scan's exits clear the ticket");
GS_WS_ASSERT(GS_SEG_QUEUE_OFFSET >= GS_SCAN_EXITS_OFFSET + 4, "the queue clears the scan's exits");
GS_WS_ASSERT(GS_PARTIALS_OFFSET >= GS_SEG_QUEUE_OFFSET + GS_SEG_QUEUE_BYTES, "the scratch clears the queue");
GS_WS_ASSERT(GS_SEG_MAX_CHUNKS(0) == GS_SEG_COUNTERS, "a counter per narrow chunk");
GS_WS_ASSERT(GS_EXACT_ACC_OFFSET % 8u == 0, "the exact accumulators' int64 limbs are aligned");
GS_WS_ASSERT(GS_SCAN_STATE_OFFSET % 8u == 0, "the scan's 64-bit entries are aligned");
GS_WS_ASSERT(GS_SCAN_SLOTS(8) >= 2, "the scan's look-back needs two slots");
GS_WS_ASSERT(GS_WORKSPACE_BYTES <= GS_WORKSPACE_LIMIT, "the workspace fits the core's bound");

#endif
