"""The few CUDA driver calls the Python layer makes itself, through ctypes.

gridsync's C API does not order one stream after another, find the device of a pointer or
allocate memory, and the package must not depend on a framework for them. So this module
loads libcuda.so.1 (the driver the C library loads too) and makes, in the device's primary
context (the one gridsync's contexts, the CUDA runtime, PyTorch and CuPy use):
  - an event recorded on a producer's stream and waited for on ours (the stream handshake
    of __cuda_array_interface__ v3, and of our own __dlpack__ export);
  - cuPointerGetAttribute(DEVICE_ORDINAL) for a __cuda_array_interface__ pointer;
  - cuMemAlloc/cuMemFree/cuMemcpyDtoH for DeviceBuffer, the result object used when the
    input's framework cannot make one.
It is loaded only after the C library's gs_driver_version() succeeded, so "no driver" is
always reported by gridsync's own status (GS_ERROR_NO_DRIVER) and message.
"""

import ctypes
import threading

from . import _lib

CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
CU_EVENT_DISABLE_TIMING = 0x2

# Stream handles as the driver and the DLPack / __cuda_array_interface__ protocols spell them.
STREAM_LEGACY = 1
STREAM_PER_THREAD = 2

_lock = threading.Lock()
_cu = None
_devices = {}  # ordinal -> _Device


class _Device:
    def __init__(self, ordinal):
        self.ordinal = ordinal
        self.ctx = ctypes.c_void_p()
        self.event = ctypes.c_void_p()
        # Guards the event between its record and the wait: another thread recording it in
        # between would make our stream wait for the wrong work.
        self.lock = threading.Lock()


def _driver():
    global _cu
    if _cu is not None:
        return _cu
    with _lock:
        if _cu is not None:
            return _cu
        lib = _lib.load()
        v = ctypes.c_int()
        # Loads the driver in the C library; without one this raises GS_ERROR_NO_DRIVER with
        # gridsync's own message, before we try to open libcuda ourselves.
        _lib.check(lib, lib.gs_driver_version(ctypes.byref(v)), "gs_driver_version")
        cu = ctypes.CDLL("libcuda.so.1")
        vp, i, u = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint
        for name, args in {
            "cuInit": [u],
            "cuDeviceGet": [ctypes.POINTER(i), i],
            "cuDevicePrimaryCtxRetain": [ctypes.POINTER(vp), i],
            "cuCtxPushCurrent_v2": [vp],
            "cuCtxPopCurrent_v2": [ctypes.POINTER(vp)],
            "cuEventCreate": [ctypes.POINTER(vp), u],
            "cuEventRecord": [vp, vp],
            "cuStreamWaitEvent": [vp, vp, u],
            "cuStreamSynchronize": [vp],
            "cuPointerGetAttribute": [vp, i, ctypes.c_uint64],
            "cuMemAlloc_v2": [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t],
            "cuMemFree_v2": [ctypes.c_uint64],
            "cuMemcpyDtoH_v2": [vp, ctypes.c_uint64, ctypes.c_size_t],
            "cuGetErrorName": [i, ctypes.POINTER(ctypes.c_char_p)],
        }.items():
            f = getattr(cu, name)
            f.restype = i
            f.argtypes = args
        _check(cu, cu.cuInit(0), "cuInit")
        _cu = cu
        return cu


class CudaError(_lib.GridsyncError):
    """A CUDA driver call made by the Python layer failed (status GS_ERROR_CUDA)."""


def _check(cu, rc, what):
    if rc != 0:
        name = ctypes.c_char_p()
        err = "CUDA error %d" % rc
        if cu.cuGetErrorName(rc, ctypes.byref(name)) == 0 and name.value:
            err = name.value.decode()
        raise CudaError(_lib.Status.ERROR_CUDA, "%s failed: %s" % (what, err))


def _device(ordinal):
    d = _devices.get(ordinal)
    if d is not None:
        return d
    cu = _driver()
    with _lock:
        d = _devices.get(ordinal)
        if d is not None:
            return d
        d = _Device(ordinal)
        dev = ctypes.c_int()
        _check(cu, cu.cuDeviceGet(ctypes.byref(dev), ordinal), "cuDeviceGet(%d)" % ordinal)
        # Retained for the life of the process, as the runtime's primary context is.
        _check(cu, cu.cuDevicePrimaryCtxRetain(ctypes.byref(d.ctx), dev.value), "cuDevicePrimaryCtxRetain")
        with _Current(cu, d.ctx):
            _check(cu, cu.cuEventCreate(ctypes.byref(d.event), CU_EVENT_DISABLE_TIMING), "cuEventCreate")
        _devices[ordinal] = d
        return d


class _Current:
    """The device's primary context made current for a few driver calls, then popped."""

    def __init__(self, cu, ctx):
        self.cu, self.ctx = cu, ctx

    def __enter__(self):
        _check(self.cu, self.cu.cuCtxPushCurrent_v2(self.ctx), "cuCtxPushCurrent")

    def __exit__(self, *exc):
        old = ctypes.c_void_p()
        _check(self.cu, self.cu.cuCtxPopCurrent_v2(ctypes.byref(old)), "cuCtxPopCurrent")


def same_stream(a, b):
    """Whether two stream handles name the same stream for ordering purposes: 0 and 1 are
    both the legacy default stream."""
    if a == b:
        return True
    return {a, b} == {0, STREAM_LEGACY}


def wait(device, consumer, producer):
    """Orders the stream `consumer` after the work queued so far on `producer`, without
    blocking the host: an event recorded on producer, waited for on consumer."""
    if producer is None or same_stream(consumer, producer):
        return
    cu = _driver()
    d = _device(device)
    with d.lock, _Current(cu, d.ctx):
        _check(cu, cu.cuEventRecord(d.event, producer), "cuEventRecord on stream 0x%x" % producer)
        _check(cu, cu.cuStreamWaitEvent(consumer, d.event, 0), "cuStreamWaitEvent on stream 0x%x" % consumer)


def pointer_device(ptr):
    """The CUDA device ordinal that owns memory at ptr (GS_ERROR_INVALID_POINTER when the
    driver does not know the pointer: pageable host memory, a freed pointer)."""
    cu = _driver()
    v = ctypes.c_int(-1)
    rc = cu.cuPointerGetAttribute(ctypes.byref(v), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)
    if rc != 0:
        raise _lib.GridsyncError(
            _lib.Status.ERROR_INVALID_POINTER,
            "__cuda_array_interface__ data pointer 0x%x is not memory the CUDA driver knows "
            "(cuPointerGetAttribute failed with error %d): host arrays are not accepted; copy the "
            "array to the GPU first" % (ptr, rc))
    return v.value


def mem_alloc(device, nbytes):
    cu = _driver()
    d = _device(device)
    p = ctypes.c_uint64()
    with _Current(cu, d.ctx):
        _check(cu, cu.cuMemAlloc_v2(ctypes.byref(p), max(nbytes, 1)), "cuMemAlloc(%d bytes)" % nbytes)
    return p.value


def mem_free(device, ptr):
    cu = _driver()
    d = _device(device)
    with _Current(cu, d.ctx):
        _check(cu, cu.cuMemFree_v2(ptr), "cuMemFree")


def read(device, stream, ptr, nbytes):
    """Waits for `stream`, then copies nbytes at ptr to the host (bytes)."""
    cu = _driver()
    d = _device(device)
    buf = ctypes.create_string_buffer(nbytes)
    with _Current(cu, d.ctx):
        _check(cu, cu.cuStreamSynchronize(stream), "cuStreamSynchronize")
        _check(cu, cu.cuMemcpyDtoH_v2(buf, ptr, nbytes), "cuMemcpyDtoH")
    return buf.raw
