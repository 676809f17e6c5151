"""DeviceBuffer: the result when the input's framework cannot make one (any object that is
not a PyTorch tensor or a CuPy array: Numba, JAX, a plain __cuda_array_interface__ or
__dlpack__ exporter)."""

import struct

from . import _cuda, _dlpack, _types

_STRUCT = {
    _types.DType.INT8: "b", _types.DType.UINT8: "B", _types.DType.INT32: "i", _types.DType.UINT32: "I",
    _types.DType.INT64: "q", _types.DType.UINT64: "Q", _types.DType.FLOAT16: "e",
    _types.DType.FLOAT32: "f", _types.DType.FLOAT64: "d",
}


def _unpack(dtype, raw):
    if dtype == _types.DType.BFLOAT16:
        # bfloat16 is the high half of a float32.
        return [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
    return list(struct.unpack("<%d%s" % (len(raw) // dtype.itemsize, _STRUCT[dtype]), raw))


class DeviceBuffer:
    """A C-contiguous array in CUDA device memory, written by gridsync on `stream`.

    Exports __dlpack__ (torch.from_dlpack, cupy.from_dlpack, jax.dlpack.from_dlpack ... take
    it without a copy, ordered after `stream` by the DLPack stream handshake) and
    __cuda_array_interface__ v3 (whose `stream` is the one the result was written on).
    item() / tolist() / float() / int() wait for the stream and read the value.
    The memory is freed (cuMemFree, which waits for the device as cudaFree does) when the
    object and every DLPack consumer of it are gone.
    """

    __slots__ = ("ptr", "device", "dtype", "shape", "stream", "__weakref__")

    def __init__(self, device, dtype, shape, stream):
        self.device = device
        self.dtype = dtype
        self.shape = tuple(shape)
        self.stream = stream
        self.ptr = 0
        self.ptr = _cuda.mem_alloc(device, self.nbytes)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    def __del__(self):
        if self.ptr:
            try:
                _cuda.mem_free(self.device, self.ptr)
            except Exception:  # interpreter shutdown, a context torn down: nothing to report to
                pass
            self.ptr = 0

    @property
    def __cuda_array_interface__(self):
        return {
            "shape": self.shape,
            "typestr": _types.TYPESTR[self.dtype],
            "descr": [("", _types.TYPESTR[self.dtype])],
            "data": (self.ptr, False),
            "strides": None,
            "version": 3,
            # 0 is not allowed here (ambiguous): the legacy default stream is 1.
            "stream": self.stream or _cuda.STREAM_LEGACY,
        }

    def __dlpack_device__(self):
        return (_dlpack.KDL_CUDA, self.device)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("gridsync.DeviceBuffer lives on CUDA device %d and cannot be exported to %r"
                              % (self.device, dl_device))
        if copy:
            raise BufferError("gridsync.DeviceBuffer does not export copies")
        # DLPack's stream handshake: None means the consumer uses the legacy default stream;
        # -1 asks for no synchronisation.
        if stream is None:
            stream = _cuda.STREAM_LEGACY
        if stream != -1:
            _cuda.wait(self.device, stream, self.stream)
        return _dlpack.export(self, self.ptr, self.shape, self.dtype, self.device)

    def tolist(self):
        """The values (waits for the stream the result was written on)."""
        vals = _unpack(self.dtype, _cuda.read(self.device, self.stream, self.ptr, self.nbytes))
        return vals[0] if self.shape == () else vals

    def item(self):
        if self.size != 1:
            raise ValueError("item(): the buffer holds %d values" % self.size)
        v = self.tolist()
        return v if self.shape == () else v[0]

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.is_float:
            raise TypeError("a float result is not an index")
        return int(self.item())

    def __repr__(self):
        return "gridsync.DeviceBuffer(shape=%r, dtype=%s, device=%d, stream=0x%x)" % (
            self.shape, self.dtype.type_name, self.device, self.stream)
