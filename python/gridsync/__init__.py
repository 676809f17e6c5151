"""gridsync: single-launch grid-wide reductions and scans of CUDA arrays (PyTorch, CuPy,
Numba, JAX, anything with __dlpack__ or __cuda_array_interface__), over the C library
libgridsync.so.1.

    import torch, gridsync
    x = torch.randn(1 << 20, device="cuda")
    s = gridsync.reduce(x)                 # a 0-d torch tensor, on torch's current stream
    i = gridsync.reduce(x, "argmax")       # int64 index into x flattened
    w = gridsync.reduce(x.half(), out_dtype="float32")
    c = gridsync.cumsum(x)                 # running sums, a 1-d torch tensor (gridsync >= 0.4)
    a = gridsync.exact_accumulator(x)      # 76 int64: add them across GPUs (all_reduce), then
    t = gridsync.exact_round(a, x.dtype)   # the correctly rounded total, on the device

Pure Python (ctypes); the library is found as the system finds libgridsync.so.1, or named by
the environment variable GRIDSYNC_LIBRARY. See python/README.md and docs/semantics.md.
"""

import ctypes as _ctypes

from . import _lib
from ._buffer import DeviceBuffer
from ._core import reduce, segmented_reduce
from ._exact import exact_accumulator, exact_round
from ._scan import cummax, cummin, cumprod, cumsum, scan
from ._lib import GridsyncError, LibraryNotFoundError, NotSupportedError, Status
from ._types import DType, Op

# The version of this package; it is released with the library of the same version (meson.build).
__version__ = "0.4.0"

__all__ = [
    "reduce", "segmented_reduce", "scan", "cumsum", "cumprod", "cummin", "cummax", "exact_accumulator",
    "exact_round", "DType", "Op", "Status",
    "DeviceBuffer", "GridsyncError",
    "NotSupportedError", "LibraryNotFoundError", "library_version", "library_path", "driver_version",
    "device_count", "context_info", "exact_sums_available", "scans_available",
]


def library_version():
    """The loaded library's version string, e.g. "0.2.0" (gs_version_string)."""
    return _lib.load().gs_version_string().decode()


def library_path():
    """The file name or path libgridsync was loaded by."""
    _lib.load()
    return _lib.library_path()


def driver_version():
    """The CUDA driver's version as an int (13000 for 13.0), gs_driver_version."""
    lib = _lib.load()
    v = _ctypes.c_int()
    _lib.check(lib, lib.gs_driver_version(_ctypes.byref(v)), "gs_driver_version")
    return v.value


def device_count():
    """The number of CUDA devices (gs_device_count)."""
    lib = _lib.load()
    v = _ctypes.c_int()
    _lib.check(lib, lib.gs_device_count(_ctypes.byref(v)), "gs_device_count")
    return v.value


def context_info(device=0):
    """What gridsync runs on for CUDA device `device` (gs_context_get_info of the cached
    context): a dict of device, cc (major, minor), multiprocessor_count, device_name,
    backend_name, backend_path, selection_log."""
    from ._core import context
    lib = _lib.load()
    info = _lib.ContextInfo()
    info.struct_size = _ctypes.sizeof(info)
    _lib.check(lib, lib.gs_context_get_info(context(device), _ctypes.byref(info)), "gs_context_get_info")
    s = lambda b: b.decode("utf-8", "replace") if b else None  # noqa: E731
    return {
        "device": info.device,
        "cc": (info.cc_major, info.cc_minor),
        "multiprocessor_count": info.multiprocessor_count,
        "device_name": s(info.device_name),
        "backend_name": s(info.backend_name),
        "backend_path": s(info.backend_path),
        "selection_log": s(info.selection_log) or "",
    }


def exact_sums_available():
    """Whether reduce(..., exact=True) can give correctly rounded float sums with the loaded
    library (needs no GPU)."""
    from ._core import exact_flags
    try:
        exact_flags(_lib.load(), DType.FLOAT32, Op.SUM)
    except NotSupportedError:
        return False
    return True


def scans_available():
    """Whether the loaded library has gs_scan (GRIDSYNC_1.3), which scan(), cumsum() and the
    other spellings need (needs no GPU; a backend older than the library may still refuse a
    scan with GS_ERROR_UNSUPPORTED)."""
    from ._scan import SYMBOL
    return getattr(_lib.load(), SYMBOL, None) is not None
