/* The pointer check's one driver call, shared by core/validate.c (gs_check_pointer) and
 * bench/bench.cu (which times the same call on its own): the memory type, the start and
 * the size of the allocation that holds p, in one cuPointerGetAttributes. The driver does
 * not fail on unknown pointers: it reports a memory type of 0 (pageable host memory,
 * freed or never-allocated addresses), and some kinds of memory report no range (size 0).
 * Header-only; needs cuda.h (CUDA 12.0 or newer). */
#ifndef GS_INTERNAL_POINTER_QUERY_H
#define GS_INTERNAL_POINTER_QUERY_H

#include <cuda.h>
#include <stddef.h>

typedef CUresult (*gs_pointer_attributes_fn)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr);

typedef struct gs_pointer_info {
    unsigned int memtype;
    CUdeviceptr start;
    size_t size;
} gs_pointer_info;

static inline CUresult gs_query_pointer(gs_pointer_attributes_fn attrs, CUdeviceptr p, gs_pointer_info *info)
{
    CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *data[] = {&info->memtype, &info->start, &info->size};
    info->memtype = 0;
    info->start = 0;
    info->size = 0;
    return attrs(3, which, data, p);
}

#endif
