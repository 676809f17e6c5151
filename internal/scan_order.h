/*
 * gs_scan's association order, as numbers (docs/semantics.md, "Scans"; hostref/scan.c is
 * the model that runs it): tiles of GS_SCAN_THREADS threads x GS_SCAN_ITEMS(output size)
 * elements, their carries folded in groups of GS_SCAN_GROUP tiles. These are part of the
 * contract, not tuning: every backend, GPU and grid uses them, so float scans give the same
 * bits everywhere. Changing one changes results, and is a release note.
 */
#ifndef GS_SCAN_ORDER_H
#define GS_SCAN_ORDER_H

#define GS_SCAN_THREADS 256u
/* elements per thread: 64 bytes of output, so every tile's outputs fill 16 KiB */
#define GS_SCAN_ITEMS(out_bytes) (64u / (unsigned)(out_bytes))
/* tiles per group: one lane of a warp per tile in a group's look-back */
#define GS_SCAN_GROUP 32u

#endif
