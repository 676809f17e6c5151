/* gridsync_backend.h must compile cleanly on its own as C11 (with cuda.h), also next to
 * every frozen header, and its driver prototypes must be exactly the ABI versions the core
 * resolves (core/driver.h): the core hands its resolved pointers straight to backends. */
#include "gridsync_backend.h"
#include "gridsync_backend.h"
#include "gridsync_backend_v1.h"
#include "gridsync_backend_v1_1.h"
#include "gridsync_backend_v1_2.h"
#include "gridsync_backend_v1_3.h"

#include <cudaTypedefs.h>

#define SAME_TYPE(member, pfn)                                                                    \
    _Static_assert(__builtin_types_compatible_p(__typeof__(((gs_backend_host *)0)->member), pfn), \
                   "gs_backend_host." #member " is not " #pfn)
SAME_TYPE(cuGetErrorName, PFN_cuGetErrorName_v6000);
SAME_TYPE(cuDeviceGetAttribute, PFN_cuDeviceGetAttribute_v2000);
SAME_TYPE(cuModuleLoadData, PFN_cuModuleLoadData_v2000);
SAME_TYPE(cuModuleUnload, PFN_cuModuleUnload_v2000);
SAME_TYPE(cuModuleGetFunction, PFN_cuModuleGetFunction_v2000);
SAME_TYPE(cuFuncGetAttribute, PFN_cuFuncGetAttribute_v2020);
SAME_TYPE(cuFuncSetAttribute, PFN_cuFuncSetAttribute_v9000);
SAME_TYPE(cuOccupancyMaxActiveBlocksPerMultiprocessor, PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050);
SAME_TYPE(cuLaunchKernel, PFN_cuLaunchKernel_v4000);
SAME_TYPE(cuGetProcAddress, PFN_cuGetProcAddress_v12000);
_Static_assert(__builtin_types_compatible_p(gs_backend_entry_v1_fn,
                                            gs_status (*)(uint32_t, const gs_backend_host *,
                                                          const gs_backend_ops **)),
               "the v1 entry point's type changed");
_Static_assert(GS_BACKEND_ABI_VERSION_MAJOR(GS_BACKEND_ABI_VERSION) == GS_BACKEND_ABI_MAJOR,
               "GS_BACKEND_ABI_VERSION encodes major << 16 | minor");

/* The current names are the newest frozen version's structs, not copies of them. */
#define CURRENT_IS(name, frozen)                                                   \
    _Static_assert(__builtin_types_compatible_p(name, frozen), #name " is not " #frozen)
CURRENT_IS(gs_backend_host, gs_backend_host_v1_3);
CURRENT_IS(gs_backend_device, gs_backend_device_v1_3);
CURRENT_IS(gs_backend_reduce_args, gs_backend_reduce_args_v1_3);
CURRENT_IS(gs_backend_segmented_args, gs_backend_segmented_args_v1_3);
CURRENT_IS(gs_backend_scan_args, gs_backend_scan_args_v1_3);
CURRENT_IS(gs_backend_exact_round_args, gs_backend_exact_round_args_v1_3);
CURRENT_IS(gs_backend_ops, gs_backend_ops_v1_3);
CURRENT_IS(gs_backend_entry_v1_fn, gs_backend_entry_v1_3_fn);
_Static_assert(GS_BACKEND_ABI_VERSION == GS_BACKEND_ABI_VERSION_V1_3, "the current minor is not the newest frozen one");

/* 1.3's ops take exactly these arguments (query_scan grew its flags before 1.3's release),
 * and the scan args' flags are the public gs_scan_options values, which the core passes on. */
#define OP_TYPE(member, type)                                                                     \
    _Static_assert(__builtin_types_compatible_p(__typeof__(((gs_backend_ops *)0)->member), type), \
                   "gs_backend_ops." #member " is not " #type)
OP_TYPE(query_scan, gs_status (*)(const gs_backend_instance *, gs_dtype, gs_op, gs_dtype, uint32_t));
OP_TYPE(scan, gs_status (*)(gs_backend_instance *, const gs_backend_scan_args *));
OP_TYPE(exact_round, gs_status (*)(gs_backend_instance *, const gs_backend_exact_round_args *));
_Static_assert(GS_BACKEND_SCAN_EXCLUSIVE == GS_SCAN_EXCLUSIVE && GS_BACKEND_SCAN_EXACT == GS_SCAN_EXACT,
               "the scan args' flags are gs_scan_options' values");
