"""gridsync.reduce and gridsync.segmented_reduce: from an array object to one gs_reduce.

The path of a call:
  1. the input: a PyTorch tensor or a CuPy array is read through its own attributes (the
     same facts __dlpack__ would give, without making and parsing a capsule on every call);
     any other object through __dlpack__ (first, as cuda.core does) or
     __cuda_array_interface__ v3;
  2. the stream: `stream`, else the framework's current stream on the input's device, else
     (another framework) the legacy default stream; it is ordered after the producer's
     stream (the DLPack handshake, or an event for __cuda_array_interface__'s `stream`);
  3. the output: allocated by the input's framework (a 0-d tensor / array) or a DeviceBuffer;
  4. one gs_reduce / gs_reduce_ex / gs_segmented_reduce on the device's cached context.
Nothing waits for the device: the result is ready once its stream reaches it.
"""

import ctypes
import itertools
import sys
import threading

from . import _buffer, _cuda, _dlpack, _lib, _types
from ._types import DType, Op

_contexts = {}
_ctx_lock = threading.Lock()
_gs_reduce = None  # lib.gs_reduce, bound with the first context (the fast path's call)
_FAST_OPS = {name: int(o) for name, o in _types._OP_NAMES.items()}
assert (Op.ARGMIN, Op.ARGMAX, DType.INT64) == (4, 5, 2)  # reduce()'s fast path spells them so


def context(device):
    """The gridsync context of CUDA device `device` (created on first use, kept for the life
    of the process: destroying it would need every stream it was used on to be idle)."""
    ctx = _contexts.get(device)
    if ctx is not None:
        return ctx
    global _gs_reduce
    lib = _lib.load()
    with _ctx_lock:
        _gs_reduce = lib.gs_reduce
        ctx = _contexts.get(device)
        if ctx is None:
            ctx = _lib.ctx_p()
            _lib.check(lib, lib.gs_context_create(device, ctypes.byref(ctx)), "gs_context_create(%d)" % device)
            _contexts[device] = ctx
    return ctx


# ---- streams ------------------------------------------------------------------------------

def stream_handle(stream):
    """A raw CUDA stream handle (int) from what users pass as stream=: an int (a
    cudaStream_t / CUstream value; 0 the legacy default stream, 1 CU_STREAM_LEGACY, 2 the
    per-thread default stream), a torch.cuda.Stream, a cupy.cuda.Stream, an object with
    __cuda_stream__ (cuda.core), or anything int() takes (numba's streams)."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        h = stream
    elif hasattr(stream, "__cuda_stream__"):
        h = stream.__cuda_stream__()[1]
    elif hasattr(stream, "cuda_stream"):   # torch.cuda.Stream
        h = stream.cuda_stream
    elif hasattr(stream, "ptr") and isinstance(getattr(stream, "ptr"), int):  # cupy.cuda.Stream
        h = stream.ptr
    else:
        try:
            if isinstance(stream, (float, str, bytes)):
                raise TypeError
            h = int(stream)
        except (TypeError, ValueError):
            raise TypeError("gridsync: stream must be a CUDA stream (an int handle, a torch.cuda.Stream, a "
                            "cupy.cuda.Stream, an object with __cuda_stream__), not %r" % (stream,)) from None
    if h < 0:
        raise ValueError("gridsync: stream handle %d is negative" % h)
    # CU_STREAM_LEGACY (1) and NULL (0) are the same stream; one spelling keeps the
    # same-stream tests below simple.
    return 0 if h == _cuda.STREAM_LEGACY else h


# ---- inputs -------------------------------------------------------------------------------

class _In:
    # stream: where the kernel goes; cur: the framework's current stream (torch, cupy);
    # shape: the array's (a tuple), for the calls that keep some of it (exact_round).
    __slots__ = ("ptr", "n", "dtype", "device", "stream", "cur", "framework", "release", "shape")


def _contiguous(shape, strides, itemsize):
    """Whether strides (None: C-contiguous by definition) describe a C-contiguous array.
    strides are in units of `itemsize` (1 for bytes). Dimensions of size 1 may have any
    stride, and an empty array is contiguous."""
    if strides is None:
        return True
    if len(strides) != len(shape):
        return False
    if 0 in shape:
        return True
    expect = itemsize
    for dim, st in zip(reversed(shape), reversed(strides)):
        if dim != 1 and st != expect:
            return False
        expect *= dim
    return True


def _count(shape, what):
    n = 1
    for s in shape:
        if not isinstance(s, int) or s < 0:
            raise ValueError("gridsync: %s has a bad shape %r" % (what, shape))
        n *= s
    return n


_STRIDED = ("gridsync: the input is a strided (non C-contiguous) view; gridsync reduces contiguous "
            "memory: pass a contiguous copy (x.contiguous() in PyTorch, cupy.ascontiguousarray(x))")


def _host(where):
    return TypeError("gridsync: the input lives on %s; gridsync reduces CUDA device memory: copy it to the "
                     "GPU first (torch: x.cuda(), cupy.asarray(x))" % where)


_cupy_ndarray = None      # cupy.ndarray, once an array was seen (its fast path's test)
_cupy_fast = None         # numpy dtype -> gs_dtype as a plain int
def _on_stream(i, stream, cur):
    """i (a framework's array, cur its current stream) set to run on `stream` (None: cur).
    The array's producer is its framework's current stream, what its __dlpack__ would make
    the consumer wait for: another stream is ordered after it."""
    i.release = None
    i.cur = cur
    i.stream = cur if stream is None else stream
    if i.stream != cur:
        _cuda.wait(i.device, i.stream, cur)
    return i


_torch_dtypes = None
_torch_fast = None        # torch dtype -> gs_dtype as a plain int
_torch_tensor = None      # torch.Tensor, once a tensor was seen (the fast path's test)
_torch_raw_stream = None  # device -> the raw handle of torch's current stream there


def _torch_map(torch):
    global _torch_dtypes, _torch_fast, _torch_tensor, _torch_raw_stream
    if _torch_dtypes is None:
        m = {}
        for d in DType:
            t = getattr(torch, d.type_name, None)   # torch.uint32/uint64 exist from 2.3
            if t is not None:
                m[t] = d
        # torch.cuda.current_stream(dev).cuda_stream makes a Stream object per call; the
        # raw handle is what torch's own compiled kernels ask for.
        _torch_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or \
            (lambda dev: torch.cuda.current_stream(dev).cuda_stream)
        _torch_fast = {t: int(d) for t, d in m.items()}
        _torch_dtypes = m
        _torch_tensor = torch.Tensor
    return _torch_dtypes


def _from_torch(x, stream, torch):
    if x.device.type != "cuda":
        raise _host("the %s device (a torch tensor)" % x.device.type)
    dtype = _torch_map(torch).get(x.dtype)
    if dtype is None:
        raise TypeError("gridsync: torch dtype %s is not supported (supported: %s); cast first, e.g. "
                        "x.to(torch.int32)" % (x.dtype, _types.SUPPORTED))
    if not x.is_contiguous():
        raise ValueError(_STRIDED)
    i = _In()
    i.device = dev = x.get_device()
    i.ptr = x.data_ptr()
    i.n = x.numel()
    i.shape = tuple(x.shape)
    i.dtype = dtype
    i.framework = "torch"
    return _on_stream(i, stream, _torch_raw_stream(dev))


def _cupy_learn(cupy):
    global _cupy_fast, _cupy_ndarray
    if _cupy_fast is None:
        m = {}
        for d in DType:
            try:
                m[cupy.dtype(d.type_name)] = int(d)
            except TypeError:  # bfloat16 without ml_dtypes
                pass
        _cupy_fast = m
        _cupy_ndarray = cupy.ndarray


def _cupy_current(cupy, dev):
    try:
        return cupy.cuda.get_current_stream(dev).ptr
    except TypeError:  # CuPy before 13 takes no device
        return cupy.cuda.get_current_stream().ptr


def _from_cupy(x, stream, cupy):
    _cupy_learn(cupy)
    # numpy's dtype names (ml_dtypes' "bfloat16" too) are gridsync's DType names.
    dtype = _types._DTYPE_NAMES.get(x.dtype.name)
    if dtype is None:
        raise TypeError("gridsync: cupy dtype %s is not supported (supported: %s); cast first, e.g. "
                        "x.astype(cupy.int32)" % (x.dtype, _types.SUPPORTED))
    if not x.flags.c_contiguous:
        raise ValueError(_STRIDED)
    i = _In()
    i.device = dev = x.device.id
    i.ptr = x.data.ptr
    i.n = x.size
    i.shape = tuple(x.shape)
    i.dtype = dtype
    i.framework = "cupy"
    return _on_stream(i, stream, _cupy_current(cupy, dev))


def _dlpack_stream(s):
    # DLPack and __cuda_array_interface__ reserve 0 (ambiguous): the legacy default is 1.
    return _cuda.STREAM_LEGACY if s == 0 else s


def _from_dlpack(x, stream, what):
    try:
        dev_type, dev_id = x.__dlpack_device__()
    except AttributeError:
        raise TypeError("gridsync: %s has __dlpack__ but no __dlpack_device__" % what) from None
    if dev_type not in (_dlpack.KDL_CUDA, _dlpack.KDL_CUDA_MANAGED, _dlpack.KDL_CUDA_HOST):
        raise _host("the %s device (DLPack device type %d)" % (_dlpack.DEVICE_NAMES.get(dev_type, "?"), dev_type))
    s = 0 if stream is None else stream
    try:
        cap = x.__dlpack__(stream=_dlpack_stream(s), max_version=(1, 0))
    except TypeError:
        # A producer older than DLPack 1.0 has no max_version; it returns a 0.x capsule.
        cap = x.__dlpack__(stream=_dlpack_stream(s))
    c = _dlpack.consume(cap)
    try:
        dtype = _types.dtype_from_dlpack(*c.dtype_code)
        n = _count(c.shape, what)
        if not _contiguous(c.shape, c.strides, 1):
            raise ValueError(_STRIDED)
    except BaseException:
        c.release()
        raise
    i = _In()
    i.ptr, i.n, i.dtype, i.framework, i.cur, i.shape = c.ptr, n, dtype, None, None, tuple(c.shape)
    i.device = dev_id if dev_type != _dlpack.KDL_CUDA_HOST else 0
    i.stream = s
    i.release = c.release
    return i


def _from_cai(x, stream, what):
    cai = x.__cuda_array_interface__
    if not isinstance(cai, dict):
        raise TypeError("gridsync: %s's __cuda_array_interface__ is not a dict" % what)
    try:
        shape, typestr, data = cai["shape"], cai["typestr"], cai["data"]
    except KeyError as e:
        raise TypeError("gridsync: %s's __cuda_array_interface__ lacks %s" % (what, e)) from None
    version = cai.get("version", 0)
    if not isinstance(version, int) or version < 2:
        raise TypeError("gridsync: __cuda_array_interface__ version %r is not supported (2 or 3)" % (version,))
    if cai.get("mask") is not None:
        raise TypeError("gridsync: masked arrays (__cuda_array_interface__ 'mask') are not supported")
    dtype = _types.dtype_from_typestr(typestr, x)
    shape = tuple(shape)
    n = _count(shape, what)
    strides = cai.get("strides")
    if not _contiguous(shape, None if strides is None else tuple(strides), dtype.itemsize):
        raise ValueError(_STRIDED)
    if not (isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], int)):
        raise TypeError("gridsync: __cuda_array_interface__ 'data' must be (pointer, read_only), not %r" % (data,))
    ptr = data[0]
    producer = cai.get("stream") if version >= 3 else None
    if producer is not None:
        if not isinstance(producer, int) or isinstance(producer, bool) or producer < 0:
            raise TypeError("gridsync: __cuda_array_interface__ 'stream' must be None or a stream handle, not %r"
                            % (producer,))
        if producer == 0:
            raise ValueError("gridsync: __cuda_array_interface__ 'stream' is 0, which v3 forbids (ambiguous); "
                             "the producer must say 1 (legacy default) or 2 (per-thread default)")
    if ptr == 0 and n > 0:
        raise ValueError("gridsync: __cuda_array_interface__ data pointer is NULL for %d elements" % n)
    i = _In()
    i.ptr, i.n, i.dtype, i.framework, i.release, i.cur, i.shape = ptr, n, dtype, None, None, None, shape
    # Which device: the driver knows it from the pointer (this needs the driver, so without
    # one the call ends here with gridsync's GS_ERROR_NO_DRIVER).
    i.device = _cuda.pointer_device(ptr) if n > 0 else _current_device()
    i.stream = 0 if stream is None else stream
    # v3: "consumers must synchronize on the provided stream before accessing the data".
    _cuda.wait(i.device, i.stream, producer)
    return i


def _current_device():
    # An empty array names no memory; its result goes to device 0 unless a framework says
    # otherwise. The driver must be there all the same: the call would need it.
    _cuda._driver()
    return 0


def acquire(x, stream, what="the input"):
    """An _In for x; the caller must call .release() (when not None) after the launch."""
    mod = type(x).__module__
    if mod.startswith("torch"):
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(x, torch.Tensor):
            return _from_torch(x, stream, torch)
    elif mod.startswith("cupy"):
        cupy = sys.modules.get("cupy")
        if cupy is not None and isinstance(x, cupy.ndarray):
            return _from_cupy(x, stream, cupy)
    if hasattr(x, "__dlpack__"):
        return _from_dlpack(x, stream, what)
    if hasattr(x, "__cuda_array_interface__"):
        return _from_cai(x, stream, what)
    if hasattr(x, "__array_interface__") or hasattr(x, "__array__") or isinstance(x, (list, tuple, int, float)):
        raise _host("the host (an object without __dlpack__ or __cuda_array_interface__, such as a numpy "
                    "array or a list)")
    raise TypeError("gridsync: %s (%s) is not an array: it needs __dlpack__ or __cuda_array_interface__"
                    % (what, type(x).__name__))


# ---- outputs ------------------------------------------------------------------------------

# 0-d torch results come from slabs: one torch.empty of SLAB elements, cut into SLAB 0-d
# views by one unbind(), handed out one per call and never twice. torch.empty(()) costs
# more than the whole rest of a call (7.4 us of host time on the H100 machine, against
# 6.6 us for the C call itself); a view costs a list.pop(). A result is an ordinary 0-d
# tensor (a view: its storage is the slab's 8 KiB at most), and a slab's memory goes back
# to PyTorch when its last view is gone. Slabs are kept per (device, dtype, stream) so
# that the caching allocator's per-stream reuse stays right (record_stream below).
SLAB = 1024
_slabs = {}


def _torch_slot(torch, dev, dtype, stream, cur):
    """(a 0-d tensor of dtype on device dev, its pointer), for a kernel on `stream`."""
    dtype = DType(dtype)
    key = (dev, int(dtype), stream)
    lst = _slabs.get(key)
    if lst:
        try:
            return lst.pop()
        except IndexError:  # another thread took the last one
            pass
    tdt = getattr(torch, dtype.type_name)
    device = torch.device("cuda", dev)
    slab = torch.empty(SLAB, dtype=tdt, device=device)
    if stream != cur:
        # The caching allocator hands memory out per stream: tell it our stream uses this
        # block, or freeing it could let the current stream reuse it early.
        slab.record_stream(torch.cuda.ExternalStream(stream, device=device))
    base, size = slab.data_ptr(), dtype.itemsize
    views = slab.unbind(0)
    lst = [(views[i], base + i * size) for i in range(SLAB - 1, -1, -1)]
    if len(_slabs) >= 256:
        # Streams come and go: forget the unused views of the others (their slabs are freed
        # once the results handed out from them are gone).
        _slabs.clear()
    _slabs[key] = lst
    return lst.pop()


# CuPy's 0-d results: cupy.empty(()) and its device switch cost about 10 us of host time on
# the H100 machine; a 0-d ndarray over a slot of a slab costs one constructor call. The slab
# (SLAB elements, allocated from CuPy's pool on the stream that writes it: the pool is per
# stream) stays alive as long as a result made from it does (each holds its MemoryPointer).
_cupy_slabs = {}


def _cupy_slot(cupy, dev, dtype, stream, cur):
    """(a 0-d cupy.ndarray of dtype on device dev, its pointer), for a kernel on `stream`."""
    key = (dev, dtype, stream)
    slab = _cupy_slabs.get(key)
    if slab is not None:
        i = next(slab[2])  # itertools.count: atomic under the GIL, so no slot goes out twice
        if i < SLAB:
            mp = slab[0] + i * slab[3]
            return cupy.ndarray((), slab[1], mp), mp.ptr
    d = DType(dtype)
    npdt = cupy.dtype(d.type_name)
    with cupy.cuda.Device(dev):
        if stream != cur:
            with _cupy_stream(cupy, stream):
                mem = cupy.empty(SLAB, dtype=npdt).data
        else:
            mem = cupy.empty(SLAB, dtype=npdt).data
    slab = (mem, npdt, itertools.count(1), d.itemsize)
    if len(_cupy_slabs) >= 256:
        _cupy_slabs.clear()  # as for _slabs
    _cupy_slabs[key] = slab
    return cupy.ndarray((), npdt, mem), mem.ptr


def _alloc(inp, x, dtype, shape):
    """(result object, its device pointer): the input's framework's array when it has one."""
    if inp.framework == "torch":
        torch = sys.modules["torch"]
        tdt = getattr(torch, dtype.type_name, None)
        if tdt is not None:
            if shape == ():
                return _torch_slot(torch, inp.device, dtype, inp.stream, inp.cur)
            out = torch.empty(shape, dtype=tdt, device=x.device)
            if inp.stream != inp.cur:
                # As in _torch_slot.
                out.record_stream(torch.cuda.ExternalStream(inp.stream, device=x.device))
            return out, out.data_ptr()
    elif inp.framework == "cupy":
        cupy = sys.modules["cupy"]
        try:
            cdt = cupy.dtype(dtype.type_name)
        except TypeError:   # bfloat16 without ml_dtypes
            cdt = None
        if cdt is not None and shape == ():
            return _cupy_slot(cupy, inp.device, int(dtype), inp.stream, inp.cur)
        if cdt is not None:
            with cupy.cuda.Device(inp.device):
                if inp.stream != inp.cur:
                    # CuPy's pool is per stream too: allocate on the stream that writes it.
                    with _cupy_stream(cupy, inp.stream):
                        out = cupy.empty(shape, dtype=cdt)
                else:
                    out = cupy.empty(shape, dtype=cdt)
            return out, out.data.ptr
    b = _buffer.DeviceBuffer(inp.device, dtype, shape, inp.stream)
    return b, b.ptr


class _StreamRef:
    """A raw stream handle in the CUDA stream protocol (__cuda_stream__: version, handle)."""

    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def _cupy_stream(cupy, handle):
    # CuPy 14 deprecates ExternalStream for Stream.from_external(an object of the protocol).
    from_external = getattr(cupy.cuda.Stream, "from_external", None)
    if from_external is not None:
        return from_external(_StreamRef(handle))
    return cupy.cuda.ExternalStream(handle)


# ---- exact sums ---------------------------------------------------------------------------

def exact_flags(lib, dtype, op, segmented=False):
    """The gs_reduce_options flags (segmented: gs_segmented_reduce's) for exact=True, or
    raises. Only a float SUM needs them: integer ops, MIN/MAX and ARG* are exact already
    (docs/semantics.md), and the library refuses GS_REDUCE_EXACT for them."""
    if op != Op.SUM:
        if op == Op.PROD and dtype.is_float:
            raise ValueError("gridsync: exact=True is offered for sums only; a float PROD is rounded at each step")
        return 0
    if not dtype.is_float:
        return 0
    if not hasattr(lib, _lib.EXACT_SYMBOL):
        raise _lib.NotSupportedError(
            "exact=True needs correctly rounded sums (GS_REDUCE_EXACT, GRIDSYNC_1.2), which the loaded "
            "libgridsync %s (%s) does not have: nothing was computed"
            % (lib.gs_version_string().decode(), _lib.library_path()),
            "gs_segmented_reduce" if segmented else "gs_reduce_ex")
    return _lib.GS_SEGMENTED_EXACT if segmented else _lib.GS_REDUCE_EXACT


# ---- the calls ----------------------------------------------------------------------------

def reduce(x, op="sum", *, out_dtype=None, exact=False, stream=None):
    """Reduces all elements of x (any shape, C-contiguous, in CUDA memory) with op in one
    kernel launch; returns a 0-d array of x's framework (a DeviceBuffer for others).

    op: "sum", "prod", "min", "max", "argmin", "argmax", "and", "or", "xor" (or gridsync.Op).
    out_dtype: a wider result (docs/semantics.md §2: int32 sum -> int64, float32 -> float64,
      float16/bfloat16 -> float32 ...); None is gridsync's default (x's dtype; int64 for
      argmin/argmax, the index into x flattened in C order).
    exact: a float sum correctly rounded (the exact sum rounded once, to nearest-even, to the
      output type: the same bits on every GPU and backend): needs a library with
      GS_REDUCE_EXACT (GRIDSYNC_1.2), else NotSupportedError; ValueError for a float prod;
      for integer ops, min/max and arg*, which are exact anyway, it changes nothing.
    stream: where to queue the kernel; None is x's framework's current stream on x's device
      (the legacy default stream for other frameworks). The result is ready when that stream
      reaches it; nothing here waits for the device. Keep x alive until then, as for any
      asynchronous use of its memory on that stream.
    Raises GridsyncError (status_name, message) for what the library refuses, TypeError /
    ValueError for arguments that are not what gridsync takes.
    """
    # The common call - a contiguous CUDA torch.Tensor, an op by name, torch's current
    # stream, the default output - in as few Python steps as it takes: the same checks and
    # the same C call as the general path below, which takes everything else. Its tables
    # hold plain ints: an IntEnum key costs a Python-level __hash__ per lookup.
    if type(x) is _torch_tensor and type(op) is str and out_dtype is None and stream is None and not exact:
        o = _FAST_OPS.get(op)
        dt = _torch_fast.get(x.dtype)
        if o is not None and dt is not None and x.is_cuda and x.is_contiguous():
            dev = x.get_device()
            s = _torch_raw_stream(dev)
            ctx = _contexts.get(dev) or context(dev)
            res = dt if o < 4 or o > 5 else 2   # ARGMIN (4), ARGMAX (5) give int64 (2)
            lst = _slabs.get((dev, res, s))
            try:
                out, outp = lst.pop()
            except (AttributeError, IndexError):
                out, outp = _torch_slot(sys.modules["torch"], dev, res, s, s)
            st = _gs_reduce(ctx, x.data_ptr(), x.numel(), dt, o, outp, s)
            if st:
                raise _lib.fail(_lib.load(), st, "gs_reduce")
            return out
    # The same for a CuPy array.
    if type(x) is _cupy_ndarray and type(op) is str and out_dtype is None and stream is None and not exact:
        o = _FAST_OPS.get(op)
        dt = _cupy_fast.get(x.dtype)
        if o is not None and dt is not None and x.flags.c_contiguous:
            mem = x.data
            dev = mem.device_id
            cupy = sys.modules["cupy"]
            s = _cupy_current(cupy, dev)
            ctx = _contexts.get(dev) or context(dev)
            out, outp = _cupy_slot(cupy, dev, dt if o < 4 or o > 5 else 2, s, s)
            st = _gs_reduce(ctx, mem.ptr, x.size, dt, o, outp, s)
            if st:
                raise _lib.fail(_lib.load(), st, "gs_reduce")
            return out
    op = _types.op_from(op)
    out_dt = None if out_dtype is None else _types.dtype_from(out_dtype)
    s = None if stream is None else stream_handle(stream)
    lib = _lib.load()
    inp = acquire(x, s)
    try:
        flags = exact_flags(lib, inp.dtype, op) if exact else 0
        ctx = context(inp.device)
        res_dt = out_dt if out_dt is not None else _types.default_out(inp.dtype, op)
        out, outp = _alloc(inp, x, res_dt, ())
        if out_dt is None and not flags:
            st = lib.gs_reduce(ctx, inp.ptr, inp.n, inp.dtype, op, outp, inp.stream)
            fn = "gs_reduce"
        else:
            opts = _lib.ReduceOptions(ctypes.sizeof(_lib.ReduceOptions), res_dt, flags)
            st = lib.gs_reduce_ex(ctx, inp.ptr, inp.n, inp.dtype, op, outp, inp.stream, ctypes.byref(opts))
            fn = "gs_reduce_ex"
        if st:
            raise _lib.fail(lib, st, fn)
        return out
    finally:
        if inp.release is not None:
            inp.release()


def segmented_reduce(x, offsets, op="sum", *, check_offsets=False, exact=False, stream=None):
    """Reduces each segment x[offsets[j]:offsets[j+1]] (x flattened in C order) with op, in one
    kernel launch; returns a 1-d array of len(offsets) - 1 results, of x's framework.

    offsets: int64, C-contiguous, in CUDA memory on x's device (num_segments + 1 values, as
      CUB takes them). Their values are not checked unless check_offsets=True, which waits for
      the stream (GS_SEGMENTED_CHECK_OFFSETS; docs/semantics.md §11); bad offsets never make
      gridsync read or write out of bounds, but give unspecified results.
    op, stream: as for reduce(); argmin/argmax give the index within the segment.
    exact: each segment's float sum correctly rounded to x's dtype (GS_SEGMENTED_EXACT), as
      reduce(..., exact=True) rounds one; an empty segment gives +0.0.
    """
    op = _types.op_from(op)
    s = None if stream is None else stream_handle(stream)
    lib = _lib.load()
    if not hasattr(lib, "gs_segmented_reduce"):
        raise _lib.NotSupportedError("the loaded libgridsync %s has no gs_segmented_reduce (gridsync >= 0.2)"
                                     % lib.gs_version_string().decode(), "gs_segmented_reduce")
    inp = acquire(x, s)
    off = None
    try:
        # The offsets are read on the same stream as x.
        off = acquire(offsets, inp.stream, "offsets")
        if off.dtype != DType.INT64:
            raise TypeError("gridsync: offsets must be int64 (CUB's convention), not %s: cast them first"
                            % off.dtype.type_name)
        if off.n < 1:
            raise ValueError("gridsync: offsets needs num_segments + 1 >= 1 values, it is empty")
        if off.device != inp.device:
            raise ValueError("gridsync: offsets are on CUDA device %d, x on %d" % (off.device, inp.device))
        m = off.n - 1
        ctx = context(inp.device)
        out, outp = _alloc(inp, x, _types.default_out(inp.dtype, op), (m,))
        flags = _lib.GS_SEGMENTED_CHECK_OFFSETS if check_offsets else 0
        if exact:
            flags |= exact_flags(lib, inp.dtype, op, segmented=True)
        st = lib.gs_segmented_reduce(ctx, inp.ptr, inp.n, inp.dtype, op, off.ptr, m, outp, inp.stream, flags)
        if st:
            raise _lib.fail(lib, st, "gs_segmented_reduce")
        return out
    finally:
        if off is not None and off.release is not None:
            off.release()
        if inp.release is not None:
            inp.release()
