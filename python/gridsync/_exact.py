"""gridsync.exact_accumulator and gridsync.exact_round: exact sums across GPUs and processes.

exact_accumulator(x) is one gs_reduce_ex with GS_REDUCE_EXACT_ACCUMULATOR (GRIDSYNC_1.2):
the exact sum of x as a gs_exact_acc, 76 int64 words of x's framework on x's device. The
accumulators of shards add as plain int64 arrays (torch.distributed.all_reduce, NCCL, MPI,
`a + b`), and exact_round(total, dtype) rounds the total once: the bits one exact sum over
all the data gives (docs/semantics.md §12, docs/multi-gpu.md).

exact_round rounds on the device with gs_exact_round_device (GRIDSYNC_1.3), looked up when
it is asked for, as gs_scan is: an older library still loads, and only a device rounding
raises NotSupportedError. A host numpy accumulator is rounded on the host with
gs_exact_round (GRIDSYNC_1.2, no driver or device needed) into a numpy result.
"""

import ctypes
import sys

from . import _core, _lib, _types
from ._types import DType, Op

SYMBOL = "gs_exact_round_device"
WORDS = _lib.GS_EXACT_ACC_WORDS
NBYTES = 8 * WORDS
FLOATS = "float16, bfloat16, float32, float64"

# The options of every accumulator call, made once and never written after.
_ACC_OPTS = _lib.ReduceOptions(ctypes.sizeof(_lib.ReduceOptions), _lib.GS_OUT_DEFAULT,
                               _lib.GS_REDUCE_EXACT_ACCUMULATOR)


def _older(lib, what, level, symbol):
    return _lib.NotSupportedError(
        "%s needs %s, which the loaded libgridsync %s (%s) does not have: nothing was computed"
        % (what, level, lib.gs_version_string().decode(), _lib.library_path()), symbol)


def round_function(lib):
    """lib.gs_exact_round_device, or NotSupportedError naming the loaded library."""
    f = getattr(lib, SYMBOL, None)  # ctypes looks the symbol up here (dlsym)
    if f is None:
        raise _older(lib, "exact_round of a device accumulator", "gs_exact_round_device (GRIDSYNC_1.3)", SYMBOL)
    return f


def _need_accumulators(lib, symbol):
    # GRIDSYNC_1.2 brought gs_reduce_options.flags, the accumulator and gs_exact_round; a
    # library before it would ignore the flag and write one float: never asked.
    if getattr(lib, _lib.EXACT_SYMBOL, None) is None:
        raise _older(lib, "exact accumulators", "GS_REDUCE_EXACT_ACCUMULATOR and gs_exact_round (GRIDSYNC_1.2)",
                     symbol)


def float_dtype(dtype, what="dtype"):
    """The gs_dtype of a float type, or TypeError (int types, unknown names)."""
    d = _types.dtype_from(dtype)
    if not d.is_float:
        raise TypeError("gridsync: %s must be a float type (%s), not %s" % (what, FLOATS, d.type_name))
    return d


def _peek(x):
    """(DType or None, shape tuple or None) from x's own .dtype and .shape, when it has them,
    so that wrong arguments are refused before the input is exported or any CUDA call made.
    A dtype gridsync does not know is returned as its name (a str)."""
    dt = getattr(x, "dtype", None)
    if dt is not None:
        try:
            dt = _types.dtype_from(dt)
        except (TypeError, ValueError):
            dt = str(dt).replace("torch.", "")
    shape = getattr(x, "shape", None)
    try:
        shape = None if shape is None or callable(shape) else tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        shape = None
    return dt, shape


def _input_float(dt):
    if dt is not None and not (isinstance(dt, DType) and dt.is_float):
        raise TypeError("gridsync: exact_accumulator takes float arrays (%s), not %s: integer sums are "
                        "exact already (gridsync.reduce)" % (FLOATS, getattr(dt, "type_name", dt)))


def _acc_checks(dt, shape):
    if dt is not None and dt != DType.INT64:
        raise TypeError("gridsync: an exact accumulator is int64 (76 words of gs_exact_acc), not %s"
                        % getattr(dt, "type_name", dt))
    if shape is not None and (len(shape) == 0 or shape[-1] != WORDS):
        raise ValueError("gridsync: an exact accumulator's last dimension is %d (gs_exact_acc), acc has shape %r"
                         % (WORDS, shape))


def exact_accumulator(x, *, stream=None):
    """The exact sum of x (float16, bfloat16, float32 or float64; any shape, C-contiguous, in
    CUDA memory, flattened as reduce() flattens it) as a gs_exact_acc: a NEW 1-d int64 array
    of 76 words of x's framework (a DeviceBuffer for others) on x's device, written by one
    gs_reduce_ex with GS_REDUCE_EXACT_ACCUMULATOR. Nothing waits for the device.

    Accumulators add: the int64 sum of the accumulators of shards (torch.distributed's
    all_reduce, NCCL, MPI, or `a + b` on one device) is the accumulator of all of them, for up
    to 2^30 normalised ones (what this writes). exact_round(total, dtype) rounds it once.
    An empty x gives the accumulator of nothing (its exact_round is +0.0).
    stream: as for reduce(); the accumulator is allocated on it.
    Needs a library with GRIDSYNC_1.2 (NotSupportedError otherwise); other dtypes: TypeError.
    """
    _input_float(_peek(x)[0])
    s = None if stream is None else _core.stream_handle(stream)
    lib = _lib.load()
    _need_accumulators(lib, "gs_reduce_ex")
    inp = _core.acquire(x, s)
    try:
        _input_float(inp.dtype)
        ctx = _core.context(inp.device)
        out, outp = _core._alloc(inp, x, DType.INT64, (WORDS,))
        st = lib.gs_reduce_ex(ctx, inp.ptr, inp.n, inp.dtype, Op.SUM, outp, inp.stream, ctypes.byref(_ACC_OPTS))
        if st:
            raise _lib.fail(lib, st, "gs_reduce_ex")
        return out
    finally:
        if inp.release is not None:
            inp.release()


def exact_round(acc, dtype, *, out=None, stream=None):
    """The correctly rounded sums that exact accumulators stand for: acc is int64 with a last
    dimension of 76 ((76,) for one accumulator, (k, 76) for k, or any leading shape); returns
    an array of `dtype` (float16, bfloat16, float32, float64) of shape acc.shape[:-1] (0-d for
    one accumulator): the bits gridsync.reduce(..., exact=True) gives for the same elements.

    A CUDA array (torch, CuPy, DLPack, __cuda_array_interface__; C-contiguous, 8-byte
    aligned): rounded ON THE DEVICE by one gs_exact_round_device launch on `stream` (as for
    reduce(): None is the framework's current stream), into a new array of acc's framework
    or into `out` (C-contiguous, acc.shape[:-1] elements of dtype, on acc's device). No host
    synchronisation. Needs GRIDSYNC_1.3: an older library raises NotSupportedError.
    A host numpy array: rounded on the host by gs_exact_round (GRIDSYNC_1.2, no GPU needed)
    into a numpy array (or a numpy `out`); bfloat16 needs ml_dtypes for its numpy dtype.
    """
    dt = float_dtype(dtype)
    adt, shape = _peek(acc)
    _acc_checks(adt, shape)
    if type(acc).__module__.startswith("torch") and getattr(getattr(acc, "device", None), "type", None) == "cpu":
        raise TypeError("gridsync: acc is a CPU torch tensor: round it on the host as numpy "
                        "(exact_round(acc.numpy(), dtype)) or move it to the GPU")
    np = sys.modules.get("numpy")
    if np is not None and isinstance(acc, np.ndarray):
        if stream is not None:
            raise ValueError("gridsync: acc is a host (numpy) array, rounded on the host: stream= is for "
                             "device accumulators")
        return _round_host(np, acc, dt, out)
    s = None if stream is None else _core.stream_handle(stream)
    lib = _lib.load()
    fn = round_function(lib)
    inp = _core.acquire(acc, s, "acc")
    o = None
    try:
        _acc_checks(inp.dtype, inp.shape)
        if inp.ptr % 8:
            raise ValueError("gridsync: acc must be 8-byte aligned (gs_exact_acc), it is at 0x%x" % inp.ptr)
        count = inp.n // WORDS
        if out is not None:
            o = _core.acquire(out, inp.stream, "out")
            if o.dtype != dt:
                raise TypeError("gridsync: out is %s but dtype is %s" % (o.dtype.type_name, dt.type_name))
            if o.n != count:
                raise ValueError("gridsync: out has %d elements, acc holds %d accumulators" % (o.n, count))
            if o.device != inp.device:
                raise ValueError("gridsync: out is on CUDA device %d, acc on %d" % (o.device, inp.device))
            result, outp = out, o.ptr
        else:
            result, outp = _core._alloc(inp, acc, dt, inp.shape[:-1])
        ctx = _core.context(inp.device)
        st = fn(ctx, inp.ptr, count, dt, outp, inp.stream)
        if st:
            raise _lib.fail(lib, st, SYMBOL)
        return result
    finally:
        if o is not None and o.release is not None:
            o.release()
        if inp.release is not None:
            inp.release()


def _numpy_dtype(np, dt):
    if dt != DType.BFLOAT16:
        return np.dtype(dt.type_name)
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError("gridsync: numpy has no bfloat16: a host bfloat16 result needs ml_dtypes (or round a "
                        "device accumulator, or to float32)") from None
    return np.dtype(ml_dtypes.bfloat16)


def _round_host(np, acc, dt, out):
    if acc.dtype != np.dtype(np.int64):   # native byte order only: '>i8' is another dtype
        raise TypeError("gridsync: an exact accumulator is int64 (native byte order), not %s" % acc.dtype)
    _acc_checks(None, acc.shape)
    a = np.require(acc, requirements=["C", "A"])   # a copy only for a strided or unaligned view
    lib = _lib.load()
    _need_accumulators(lib, _lib.EXACT_SYMBOL)
    npdt = _numpy_dtype(np, dt)
    if out is None:
        result = np.empty(a.shape[:-1], dtype=npdt)
    else:
        if not isinstance(out, np.ndarray):
            raise TypeError("gridsync: a host accumulator is rounded into a numpy out=, not %s" % type(out).__name__)
        if out.dtype != npdt:
            raise TypeError("gridsync: out is %s but dtype is %s" % (out.dtype, dt.type_name))
        if out.size != a.size // WORDS:
            raise ValueError("gridsync: out has %d elements, acc holds %d accumulators" % (out.size, a.size // WORDS))
        if not (out.flags.c_contiguous and out.flags.writeable):
            raise ValueError("gridsync: a numpy out= must be C-contiguous and writeable")
        result = out
    fn = lib.gs_exact_round
    src, dst, size = a.ctypes.data, result.ctypes.data, dt.itemsize
    for i in range(a.size // WORDS):
        st = fn(src + i * NBYTES, dt, dst + i * size)
        if st:
            raise _lib.fail(lib, st, _lib.EXACT_SYMBOL)
    return result
