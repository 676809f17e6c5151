// gridsync_backend.h from C++ (a backend may be written in C++), also next to every frozen
// header: compiles cleanly, and a function with the documented entry point signature
// converts to gs_backend_entry_v1_fn.
#include "gridsync_backend.h"
#include "gridsync_backend_v1.h"
#include "gridsync_backend_v1_1.h"
#include "gridsync_backend_v1_2.h"
#include "gridsync_backend_v1_3.h"

extern "C" gs_status gridsync_backend_entry_v1(uint32_t, const gs_backend_host *, const gs_backend_ops **);
gs_backend_entry_v1_fn gs_backend_header_use();
gs_backend_entry_v1_fn gs_backend_header_use() { return gridsync_backend_entry_v1; }
