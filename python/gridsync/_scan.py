"""gridsync.scan and its usual spellings (cumsum, cumprod, cummin, cummax): from an array
object to one gs_scan (GRIDSYNC_1.3).

The input, the stream and the output are taken as _core takes them for reduce(): the same
frameworks, the same contiguity and host-memory rules, the same stream handshakes. The
results are n values instead of one: x flattened in C order, scanned, as numpy.cumsum(x)
with axis=None does.

gs_scan is looked up when a scan is asked for, not when the library is loaded: a library
before GRIDSYNC_1.3 still loads, and only a scan raises NotSupportedError.
"""

import ctypes
import sys

from . import _core, _exact, _lib, _types
from ._types import DType, Op

SYMBOL = "gs_scan"
WORDS = _lib.GS_EXACT_ACC_WORDS

# ARGMIN/ARGMAX have no scan (gridsync.h): refused here, before any CUDA call.
_SCAN_OPS = (Op.SUM, Op.PROD, Op.MIN, Op.MAX, Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR)
_FAST_OPS = {name: int(o) for name, o in _types._OP_NAMES.items() if o in _SCAN_OPS}

# The options of the fast path, made once: NULL is "inclusive, the input's type"
# (gridsync.h), and the exclusive scan's struct is never written after this.
_EXCLUSIVE = _lib.ScanOptions(ctypes.sizeof(_lib.ScanOptions), _lib.GS_OUT_DEFAULT, _lib.GS_SCAN_EXCLUSIVE)
_FAST_OPTS = {False: None, True: ctypes.byref(_EXCLUSIVE)}

_gs_scan = None  # lib.gs_scan once a scan found it (the fast path's call)


def scan_function(lib):
    """lib.gs_scan, or NotSupportedError naming the loaded library (an older one lacks it)."""
    global _gs_scan
    f = getattr(lib, SYMBOL, None)  # ctypes looks the symbol up here (dlsym)
    if f is None:
        raise _lib.NotSupportedError(
            "scans need gs_scan (GRIDSYNC_1.3, gridsync >= 0.4), which the loaded libgridsync %s (%s) does not "
            "have: nothing was computed" % (lib.gs_version_string().decode(), _lib.library_path()), SYMBOL)
    _gs_scan = f
    return f


def scan_op(op):
    """The gs_op of a scan, or ValueError for the ops that have none."""
    o = _types.op_from(op)
    if o not in _SCAN_OPS:
        raise ValueError("gridsync: %s has no scan (an index of the running extreme is not offered); "
                         "scan ops: sum, prod, min, max, and, or, xor" % o.name.lower())
    return o


def _out_type(out, out_dtype, in_dtype):
    """The results' gs_dtype: out_dtype, else out's dtype (out= says it by itself), else
    the input's. out= and out_dtype= that disagree are refused."""
    if out_dtype is not None:
        want = _types.dtype_from(out_dtype)
        if out is not None and out.dtype != want:
            raise TypeError("gridsync: out is %s but out_dtype is %s: give one of them, or agree"
                            % (out.dtype.type_name, want.type_name))
        return want
    return out.dtype if out is not None else in_dtype


def _exact_checks(op, exact, carry_in, total):
    """The exact options' errors that need no export: the kind of each, and exact's op."""
    if not exact:
        if carry_in is not None or (total is not None and total is not False):
            raise ValueError("gridsync: carry_in= and total= are exact scans' (exact=True)")
        return
    if op != Op.SUM:
        raise ValueError("gridsync: exact=True is for sums (float16, bfloat16, float32, float64), not %s"
                         % op.name.lower())
    if carry_in is not None:
        dt, shape = _exact._peek(carry_in)
        _acc_array(dt, shape, "carry_in", (1, 2))
    if total is not None and total is not False and total is not True:
        dt, shape = _exact._peek(total)
        _acc_array(dt, shape, "total", (1,))


def _acc_array(dt, shape, what, ndims):
    """An accumulator array's dtype (int64) and shape ((76,), or (k, 76) where ndims has 2)."""
    if dt is not None and dt != DType.INT64:
        raise TypeError("gridsync: %s is an array of exact accumulators: int64 (76 words of gs_exact_acc), not %s"
                        % (what, getattr(dt, "type_name", dt)))
    if shape is not None and (len(shape) not in ndims or shape[-1] != WORDS):
        raise ValueError("gridsync: %s must have shape %s, it has %r"
                         % (what, "(76,) or (k, 76)" if 2 in ndims else "(76,)", shape))


def _acquire_acc(a, inp, what, ndims):
    """An accumulator array acquired on the scan's stream (ordered after its producer) and
    checked as _acc_array, on x's device, 8-byte aligned; its .n is its words."""
    acc = _core.acquire(a, inp.stream, what)
    try:
        _acc_array(acc.dtype, acc.shape, what, ndims)
        if acc.device != inp.device:
            raise ValueError("gridsync: %s is on CUDA device %d, x on %d" % (what, acc.device, inp.device))
        if acc.ptr % 8:
            raise ValueError("gridsync: %s must be 8-byte aligned (gs_exact_acc), it is at 0x%x" % (what, acc.ptr))
    except BaseException:
        if acc.release is not None:
            acc.release()
        raise
    return acc


def scan(x, op="sum", *, exclusive=False, exact=False, carry_in=None, total=None, out_dtype=None, out=None,
         stream=None):
    """The running op of x (C-contiguous, in CUDA memory, flattened in C order) in one kernel
    launch: out[i] = x[0] op x[1] op ... op x[i]. Returns a 1-d array of x.size results of
    x's framework (a DeviceBuffer for others), or `out`; with total=, the pair (results,
    accumulator).

    op: "sum", "prod", "min", "max", "and", "or", "xor" (or gridsync.Op); argmin/argmax
      have no scan (ValueError). and/or/xor are for integers (floats: GridsyncError,
      GS_ERROR_UNSUPPORTED).
    exclusive: out[0] is the op's identity (sum +0.0 / 0, prod 1, min +inf or the type's
      largest, ...) and out[i] = x[0] op ... op x[i-1].
    out_dtype: None is x's dtype (gridsync's default, also for integer sums: torch.cumsum
      and numpy.cumsum widen int8/int32 to int64, gridsync does not unless asked), or a
      wider type as reduce() offers: int8/int32 -> int64 and uint8/uint32 -> uint64 for
      sum/prod, float32 -> float64 for sum/prod, float16/bfloat16 -> float32 for
      sum/prod/min/max. Integer sums and products wrap in the output's width; float16 and
      bfloat16 are carried in float32 and each result rounded once.
    out: a preallocated C-contiguous CUDA array of x.size elements (any shape) on x's device,
      of the results' type (it sets out_dtype when that is None); x itself scans in place.
      Any other overlap of x and out is the library's GS_ERROR_INVALID_ARGUMENT.
    stream: as for reduce(); the results are allocated on it and nothing waits for the
      device. Float results are the same bits on every GPU, stream and alignment of x: the
      order of the operations depends on x.size alone.
    exact: correctly rounded running sums (GS_SCAN_EXACT): each result is the exact sum
      rounded once to the output type, the same bits however x is split. op "sum" over
      float16, bfloat16, float32 or float64 (outputs as out_dtype allows); other ops:
      ValueError, other dtypes or a backend without exact scans: GridsyncError
      (GS_ERROR_UNSUPPORTED).
    carry_in: exact only. Exact accumulators (int64, shape (76,) or (k, 76), on x's device,
      as exact_accumulator() returns them) whose sum comes before x[0]: the totals of the
      shards before this one, e.g. all-gathered from the earlier ranks; (0, 76) is none.
    total: exact only. True: also return the exact accumulator of x alone (not carry_in), a
      NEW int64 array of 76 words of x's framework on x's device, as (results, total); or an
      int64 (76,) array on x's device to write it into, returned the same way. Written for
      an empty x too (the accumulator of nothing). Feeds the next shards' carry_in.
      carry_in, total, x and the results may not overlap (GridsyncError, invalid argument).
    """
    # The common call, in as few Python steps as reduce()'s fast path (the same checks and
    # C call as the general path below): a contiguous CUDA torch.Tensor or CuPy array, an
    # op by name, the default output, the framework's current stream.
    if out is None and out_dtype is None and stream is None and type(op) is str and _gs_scan is not None and \
            (exclusive is False or exclusive is True) and exact is False and carry_in is None and total is None:
        if type(x) is _core._torch_tensor:
            o = _FAST_OPS.get(op)
            dt = _core._torch_fast.get(x.dtype)
            if o is not None and dt is not None and x.is_cuda and x.is_contiguous():
                dev = x.get_device()
                s = _core._torch_raw_stream(dev)
                ctx = _core._contexts.get(dev) or _core.context(dev)
                n = x.numel()
                r = sys.modules["torch"].empty((n,), dtype=x.dtype, device=x.device)
                st = _gs_scan(ctx, x.data_ptr(), n, dt, o, r.data_ptr(), s, _FAST_OPTS[exclusive])
                if st:
                    raise _lib.fail(_lib.load(), st, SYMBOL)
                return r
        elif type(x) is _core._cupy_ndarray:
            o = _FAST_OPS.get(op)
            dt = _core._cupy_fast.get(x.dtype)
            if o is not None and dt is not None and x.flags.c_contiguous:
                mem = x.data
                dev = mem.device_id
                cupy = sys.modules["cupy"]
                s = _core._cupy_current(cupy, dev)
                ctx = _core._contexts.get(dev) or _core.context(dev)
                with cupy.cuda.Device(dev):
                    r = cupy.empty((x.size,), dtype=x.dtype)
                st = _gs_scan(ctx, mem.ptr, x.size, dt, o, r.data.ptr, s, _FAST_OPTS[exclusive])
                if st:
                    raise _lib.fail(_lib.load(), st, SYMBOL)
                return r
    op = scan_op(op)
    if out_dtype is not None:
        _types.dtype_from(out_dtype)  # a bad name is refused before anything is acquired
    _exact_checks(op, exact, carry_in, total)
    s = None if stream is None else _core.stream_handle(stream)
    lib = _lib.load()
    fn = scan_function(lib)
    inp = _core.acquire(x, s)
    o = c = t = None
    try:
        if carry_in is not None:
            c = _acquire_acc(carry_in, inp, "carry_in", (1, 2))
        if total is not None and total is not False and total is not True:
            t = _acquire_acc(total, inp, "total", (1,))
        if out is not None:
            # out is written on the same stream as x is read (ordered after out's producer).
            o = _core.acquire(out, inp.stream, "out")
            if o.n != inp.n:
                raise ValueError("gridsync: out has %d elements, the scan of x gives %d" % (o.n, inp.n))
            if o.device != inp.device:
                raise ValueError("gridsync: out is on CUDA device %d, x on %d" % (o.device, inp.device))
        res_dt = _out_type(o, out_dtype, inp.dtype)
        ctx = _core.context(inp.device)
        if o is not None:
            result, outp = out, o.ptr
        else:
            result, outp = _core._alloc(inp, x, res_dt, (inp.n,))
        if t is not None:
            acc, accp = total, t.ptr
        elif total is True:
            acc, accp = _core._alloc(inp, x, DType.INT64, (WORDS,))
        else:
            acc, accp = None, None
        flags = (_lib.GS_SCAN_EXCLUSIVE if exclusive else 0) | (_lib.GS_SCAN_EXACT if exact else 0)
        count = c.n // WORDS if c is not None else 0
        opts = _lib.ScanOptions(ctypes.sizeof(_lib.ScanOptions),
                                _lib.GS_OUT_DEFAULT if res_dt == inp.dtype else int(res_dt), flags,
                                c.ptr if count else None, count, accp)
        st = fn(ctx, inp.ptr, inp.n, inp.dtype, op, outp, inp.stream, ctypes.byref(opts))
        if st:
            raise _lib.fail(lib, st, SYMBOL)
        return result if acc is None else (result, acc)
    finally:
        for a in (t, c, o, inp):
            if a is not None and a.release is not None:
                a.release()


def _spelling(op, name, what):
    if op == "sum":
        def f(x, *, exclusive=False, exact=False, carry_in=None, total=None, out_dtype=None, out=None,
              stream=None):
            return scan(x, op, exclusive=exclusive, exact=exact, carry_in=carry_in, total=total, out_dtype=out_dtype,
                        out=out, stream=stream)
    else:
        def f(x, *, exclusive=False, out_dtype=None, out=None, stream=None):
            return scan(x, op, exclusive=exclusive, out_dtype=out_dtype, out=out, stream=stream)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = ("%s of x flattened in C order: scan(x, %r, ...), which see. Values only (no indices). The "
                 "results have x's dtype unless out_dtype (or out) says otherwise%s." % (what, op, {
                     "sum": ": unlike torch.cumsum and numpy.cumsum, an int8/int32 input is not widened to "
                            "int64 by default (out_dtype=\"int64\" asks for it); exact=True, carry_in= and "
                            "total= give correctly rounded float sums across shards",
                     "prod": ": unlike torch.cumprod and numpy.cumprod, an int8/int32 input is not widened to "
                             "int64 by default (out_dtype=\"int64\" asks for it)"}.get(op, "")))
    return f


cumsum = _spelling("sum", "cumsum", "The running sums")
cumprod = _spelling("prod", "cumprod", "The running products")
cummin = _spelling("min", "cummin", "The running minima (NaN propagates)")
cummax = _spelling("max", "cummax", "The running maxima (NaN propagates)")
