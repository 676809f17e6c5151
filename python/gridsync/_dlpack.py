"""DLPack in pure Python: reading a producer's DLManagedTensor out of its PyCapsule, and
exporting DeviceBuffer as a capsule of our own (dlpack.h, the Python specification of
data-apis.org, "DLPack protocol").

Consumer rules followed here: the capsule named "dltensor" ("dltensor_versioned" for DLPack
>= 1.0) holds a DLManagedTensor(Versioned)*; once we use it, we rename the capsule to
"used_dltensor" ("used_dltensor_versioned") so that its destructor no longer frees the
tensor, and we call the tensor's deleter ourselves when we are done with the memory.
"""

import ctypes

from . import _types

KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_HOST = 3
KDL_CUDA_MANAGED = 13
DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA pinned host", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI",
                10: "ROCm", 11: "ROCm pinned host", 12: "ext", 13: "CUDA managed", 14: "oneAPI",
                15: "WebGPU", 16: "Hexagon", 17: "MAIA"}

# The deleter may be PyTorch's C++ or CuPy's Cython ("with gil"); a PYFUNCTYPE call keeps the
# GIL held, which is right for both (CFUNCTYPE would release it for the call).
_DELETER = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


_api = ctypes.pythonapi
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetName.restype = ctypes.c_void_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]

# PyCapsule_SetName keeps the char pointer, it does not copy the string: these bytes
# objects live as long as the module (interned constants, never freed).
_NAME = b"dltensor"
_USED = b"used_dltensor"
_NAME_V = b"dltensor_versioned"
_USED_V = b"used_dltensor_versioned"


class Consumed:
    """One consumed DLPack tensor: its fields, and release() to call the producer's deleter
    (exactly once). The capsule is referenced until then."""

    __slots__ = ("capsule", "managed", "deleter", "ptr", "shape", "strides", "dtype_code", "device_type",
                 "device_id")

    def release(self):
        d, m = self.deleter, self.managed
        self.deleter = None
        self.capsule = None
        if d:
            _DELETER(d)(m)


def consume(capsule):
    """Reads the DLManagedTensor(Versioned) out of a __dlpack__ capsule and marks the capsule
    used. The caller must call .release() on the result (a try/finally)."""
    if _api.PyCapsule_IsValid(capsule, _NAME_V):
        p = _api.PyCapsule_GetPointer(capsule, _NAME_V)
        m = DLManagedTensorVersioned.from_address(p)
        if m.version.major != 1:
            # A major we do not know may have another layout: leave the capsule unused, so
            # its destructor frees it, and say what was seen.
            raise TypeError("gridsync: the producer's DLPack tensor has version %d.%d; this package reads "
                            "DLPack 1.x" % (m.version.major, m.version.minor))
        used = _USED_V
    elif _api.PyCapsule_IsValid(capsule, _NAME):
        p = _api.PyCapsule_GetPointer(capsule, _NAME)
        m = DLManagedTensor.from_address(p)
        used = _USED
    else:
        raise TypeError("gridsync: __dlpack__() returned %r, not a PyCapsule named 'dltensor' or "
                        "'dltensor_versioned' (was it consumed already?)" % (capsule,))
    if _api.PyCapsule_SetName(capsule, used) != 0:
        raise RuntimeError("gridsync: PyCapsule_SetName failed")
    c = Consumed()
    c.capsule = capsule
    c.managed = p
    c.deleter = m.deleter
    t = m.dl_tensor
    c.device_type = t.device.device_type
    c.device_id = t.device.device_id
    c.ptr = (t.data or 0) + t.byte_offset
    nd = t.ndim
    c.shape = tuple(t.shape[i] for i in range(nd))
    c.strides = tuple(t.strides[i] for i in range(nd)) if t.strides else None  # in elements
    c.dtype_code = (t.dtype.code, t.dtype.bits, t.dtype.lanes)
    return c


# ---- export (DeviceBuffer.__dlpack__) --------------------------------------------------

_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]

_exported = {}  # address of our DLManagedTensor -> (the struct, its shape and strides, the owner)


def _free_exported(addr):
    _exported.pop(addr, None)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _deleter(addr):
    # Called by the consumer (through its DLPack code) when it is done with the tensor: the
    # owner (a DeviceBuffer) and the struct may go now. ctypes takes the GIL for us.
    _free_exported(addr)


# The destructor runs while the capsule is being deallocated (reference count 0): it must
# not be turned into a Python object again, so these take it as a plain pointer.
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule_addr):
    # A capsule nobody consumed still owns its tensor: free it. A consumed one was renamed
    # "used_dltensor" and its consumer calls the deleter.
    if _raw_is_valid(capsule_addr, _NAME):
        _free_exported(_raw_get_pointer(capsule_addr, _NAME))


def export(owner, ptr, shape, dtype, device_id, strides=None, device_type=KDL_CUDA):
    """A "dltensor" capsule (DLPack 0.x layout, which every consumer reads) of the array at
    ptr (strides in elements, None: C-contiguous); owner is kept alive until the consumer's
    deleter call."""
    m = DLManagedTensor()
    nd = len(shape)
    shape_arr = (ctypes.c_int64 * max(nd, 1))(*shape)
    strides_arr = None if strides is None else (ctypes.c_int64 * max(nd, 1))(*strides)
    code, bits = _types.DLPACK_CODE[dtype]
    m.dl_tensor.data = ptr
    m.dl_tensor.device = DLDevice(device_type, device_id)
    m.dl_tensor.ndim = nd
    m.dl_tensor.dtype = DLDataType(code, bits, 1)
    m.dl_tensor.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    if strides_arr is not None:
        m.dl_tensor.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    m.dl_tensor.byte_offset = 0
    m.manager_ctx = None
    m.deleter = ctypes.cast(_deleter, ctypes.c_void_p)
    addr = ctypes.addressof(m)
    _exported[addr] = (m, shape_arr, strides_arr, owner)
    return _api.PyCapsule_New(addr, _NAME, _capsule_destructor)
