/*
 * The driver's stream-capture and graph entry points that the gpu tests call beyond the
 * shim's (tests/gpu/cudashim.h), looked up by their exported names; a driver without one
 * ends the program. Needs cuda.h (types only) and cudashim.h.
 */
#ifndef GS_GPU_GRAPH_API_H
#define GS_GPU_GRAPH_API_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudashim.h"

typedef struct gpu_graph_api {
    CUresult (*StreamBeginCapture)(CUstream, CUstreamCaptureMode);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
    CUresult (*GraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*GraphDestroy)(CUgraph);
} gpu_graph_api;

/* The driver's symbol `name`, or the end of the program. */
static inline void gpu_driver_symbol(void *slot, const char *name)
{
    void *p = cushim_driver_symbol(name);
    if (!p) {
        fprintf(stderr, "FATAL: the CUDA driver lacks %s\n", name);
        exit(1);
    }
    memcpy(slot, &p, sizeof p);
}

static inline void gpu_graph_api_load(gpu_graph_api *g)
{
    gpu_driver_symbol(&g->StreamBeginCapture, "cuStreamBeginCapture_v2");
    gpu_driver_symbol(&g->StreamEndCapture, "cuStreamEndCapture");
    gpu_driver_symbol(&g->GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    gpu_driver_symbol(&g->GraphLaunch, "cuGraphLaunch");
    gpu_driver_symbol(&g->GraphExecDestroy, "cuGraphExecDestroy");
    gpu_driver_symbol(&g->GraphDestroy, "cuGraphDestroy");
}

#endif
