// gridsync.h from C++: compiles cleanly, and its functions link with C linkage (a missing
// extern "C" shows as undefined mangled names) and answer. Built and run by the abi suite.
#include "gridsync.h"

#include <cstdio>
#include <cstring>

int main()
{
    if (gs_version() != GS_VERSION) {
        std::printf("FAIL: gs_version() is %#x, the header says %#x\n", gs_version(), GS_VERSION);
        return 1;
    }
    if (std::strncmp(gs_status_string(GS_ERROR_NO_DRIVER), "GS_ERROR_NO_DRIVER", 18) != 0) {
        std::printf("FAIL: gs_status_string from C++\n");
        return 1;
    }
    // The runtime's cudaStream_t converts without a cast (both are CUstream_st *).
    struct CUstream_st *runtime_stream = nullptr;
    gs_stream s = runtime_stream;
    gs_context *ctx = nullptr;
    if (gs_reduce(ctx, nullptr, 1, GS_FLOAT32, GS_OP_SUM, nullptr, s) != GS_ERROR_INVALID_ARGUMENT) {
        std::printf("FAIL: gs_reduce from C++ did not reject out = NULL\n");
        return 1;
    }
    return 0;
}
