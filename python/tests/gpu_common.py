"""Shared parts of the GPU tests of the gridsync Python package (test_gpu_torch.py,
test_gpu_cupy.py; test_gpu.py runs both): the host reference, the check counter, the Base
test case with its dtype x op sweep, the DLPack-only and __cuda_array_interface__-only
wrappers, and main(), which skips (exit 77) without a device or PyTorch and prints the summary.

Fresh random data each run (the seed is printed; GRIDSYNC_TEST_SEED repeats one).
"""

import math
import os
import threading
import time
import types
import unittest
import zlib

import gridsync
from gridsync import DType, Op

SKIP = 77
SEED = int(os.environ.get("GRIDSYNC_TEST_SEED", time.time_ns() % 1000000007))
CHECKS = [0]
_count_lock = threading.Lock()

try:
    import numpy as np
    import torch
except ImportError:  # pragma: no cover - decided in main()
    np = torch = None
try:
    import cupy
except ImportError:
    cupy = None

SIZES = [0, 1, 33, 1000, 65537, (1 << 20) + 3]
INT_TYPES = [DType.INT8, DType.UINT8, DType.INT32, DType.UINT32, DType.INT64, DType.UINT64]
FLOAT_TYPES = [DType.FLOAT16, DType.BFLOAT16, DType.FLOAT32, DType.FLOAT64]
EPS = {DType.FLOAT16: 2.0 ** -10, DType.BFLOAT16: 2.0 ** -7, DType.FLOAT32: 2.0 ** -23, DType.FLOAT64: 2.0 ** -52}
# The accumulator of each float type (docs/semantics.md §3): 16-bit floats add in float32.
ACC_EPS = {DType.FLOAT16: EPS[DType.FLOAT32], DType.BFLOAT16: EPS[DType.FLOAT32],
           DType.FLOAT32: EPS[DType.FLOAT32], DType.FLOAT64: EPS[DType.FLOAT64]}


def ok(n=1):
    with _count_lock:
        CHECKS[0] += n


def ops_for(d):
    ops = [Op.SUM, Op.PROD, Op.MIN, Op.MAX, Op.ARGMIN, Op.ARGMAX]
    return ops if d.is_float else ops + [Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR]


def np_dtype(d):
    return None if d == DType.BFLOAT16 else np.dtype(d.type_name)


def bits(d):
    return d.itemsize * 8


def wrap(v, d):
    """v reduced mod 2^w, read as d's signedness."""
    w = bits(d)
    v &= (1 << w) - 1
    if d.name.startswith("INT") and v >> (w - 1):
        v -= 1 << w
    return v


def make_host(d, op, n, rng):
    """Random, never all-zero data for (d, op): a numpy array (float32 values for bfloat16)."""
    if d.is_float:
        if op == Op.PROD:
            # Near 1, so that a product of 2^20 of them stays finite in float16.
            step = 2.0 ** -10 if d != DType.BFLOAT16 else 2.0 ** -7
            a = 1.0 + step * rng.integers(-2, 3, n).astype(np.float64)
        else:
            a = rng.uniform(-1.0, 1.0, n) * (4.0 if d in (DType.FLOAT16, DType.BFLOAT16) else 1000.0)
        return a.astype(np.float32 if d == DType.BFLOAT16 else np_dtype(d))
    info = np.iinfo(np_dtype(d))
    a = rng.integers(info.min, info.max, n, dtype=np_dtype(d), endpoint=True)
    if op == Op.PROD:
        a |= 1  # odd factors: the wrapped product is not just 0
    return a


def to_torch(a, d):
    if d == DType.BFLOAT16:
        return torch.from_numpy(a).cuda().to(torch.bfloat16)
    try:
        return torch.from_numpy(a).cuda()
    except TypeError:  # a torch without uint32/uint64 in from_numpy
        return None


def host_values(x, d):
    """The exact input values as Python-friendly numpy (bfloat16 widened to float32)."""
    if isinstance(x, torch.Tensor):
        if d == DType.BFLOAT16:
            return x.float().cpu().numpy()
        try:
            return x.cpu().numpy()
        except TypeError:  # a torch whose numpy() lacks uint32/uint64: the same bits, signed
            signed = {DType.UINT32: (torch.int32, np.uint32), DType.UINT64: (torch.int64, np.uint64)}[d]
            return x.view(signed[0]).cpu().numpy().view(signed[1])
    return cupy.asnumpy(x)


OP_NAMES = {Op.SUM: "sum", Op.PROD: "prod", Op.MIN: "min", Op.MAX: "max", Op.ARGMIN: "argmin",
            Op.ARGMAX: "argmax", Op.BIT_AND: "and", Op.BIT_OR: "or", Op.BIT_XOR: "xor"}
IDENT = {Op.SUM: 0, Op.PROD: 1, Op.BIT_OR: 0, Op.BIT_XOR: 0, Op.ARGMIN: -1, Op.ARGMAX: -1}


def identity(d, op):
    if op in IDENT:
        return IDENT[op]
    if op == Op.BIT_AND:
        return wrap(-1, d)
    if d.is_float:
        return math.inf if op == Op.MIN else -math.inf
    info = np.iinfo(np_dtype(d))
    return int(info.max) if op == Op.MIN else int(info.min)


def reference(a, d, op):
    """(value, tolerance) of the exact semantics of docs/semantics.md, from host values."""
    n = a.size
    if n == 0:
        return identity(d, op), 0.0
    if op == Op.ARGMIN:
        return int(np.argmin(a)), 0.0
    if op == Op.ARGMAX:
        return int(np.argmax(a)), 0.0
    if op == Op.MIN:
        return a.min().item(), 0.0
    if op == Op.MAX:
        return a.max().item(), 0.0
    if not d.is_float:
        # In uint64 (signed types sign-extended first), where numpy's sum and product wrap
        # mod 2^64 and the bitwise reductions see the same low w bits.
        u = a.astype(np.int64).view(np.uint64) if d.name.startswith("INT") else a.astype(np.uint64)
        r = {Op.SUM: lambda: np.sum(u, dtype=np.uint64), Op.PROD: lambda: np.prod(u, dtype=np.uint64),
             Op.BIT_AND: lambda: np.bitwise_and.reduce(u), Op.BIT_OR: lambda: np.bitwise_or.reduce(u),
             Op.BIT_XOR: lambda: np.bitwise_xor.reduce(u)}[op]()
        return wrap(int(r), d), 0.0
    f = a.astype(np.float64)
    if op == Op.SUM:
        ref = math.fsum(f.tolist())
        # n·ε·Σ|x| for the additions, ε of the output for the final rounding (semantics §7).
        return ref, n * ACC_EPS[d] * float(np.abs(f).sum()) + EPS[d] * abs(ref)
    ref = float(np.prod(f))
    return ref, (n + 1) * ACC_EPS[d] * abs(ref) + EPS[d] * abs(ref)


def value(r):
    """A result object's value as a Python number (this waits for its stream)."""
    if isinstance(r, gridsync.DeviceBuffer):
        return r.item()
    if isinstance(r, torch.Tensor):
        r = r.cpu()
        if r.dtype == torch.bfloat16:
            r = r.float()
        try:
            return r.item()
        except RuntimeError:  # uint32/uint64 without .item(): read the bits
            return r.view(torch.int32 if r.dtype == getattr(torch, "uint32", None) else torch.int64).item()
    return cupy.asnumpy(r).item()


def framework_result(x, d, op):
    """The framework's own answer where it has the op, else None; exact types wrapped to the
    output width like gridsync's."""
    try:
        if isinstance(x, torch.Tensor):
            if op == Op.SUM:
                v = (x.sum(dtype=torch.float64) if d.is_float else x.to(torch.int64).sum()).item()
            elif op == Op.PROD:
                v = (x.double().prod() if d.is_float else x.to(torch.int64).prod()).item()
            elif op in (Op.MIN, Op.MAX):
                v = value(torch.amin(x) if op == Op.MIN else torch.amax(x))
            elif op in (Op.ARGMIN, Op.ARGMAX):
                v = (torch.argmin(x) if op == Op.ARGMIN else torch.argmax(x)).item()
            else:
                return None
        else:
            if op == Op.SUM:
                v = cupy.sum(x, dtype=cupy.float64 if d.is_float else x.dtype).item()
            elif op == Op.PROD:
                v = cupy.prod(x, dtype=cupy.float64 if d.is_float else x.dtype).item()
            elif op == Op.MIN:
                v = x.min().item()
            elif op == Op.MAX:
                v = x.max().item()
            elif op == Op.ARGMIN:
                v = int(x.argmin())
            elif op == Op.ARGMAX:
                v = int(x.argmax())
            else:
                ufunc = {Op.BIT_AND: cupy.bitwise_and, Op.BIT_OR: cupy.bitwise_or, Op.BIT_XOR: cupy.bitwise_xor}[op]
                v = ufunc.reduce(x).item()
    except (RuntimeError, NotImplementedError, TypeError, AttributeError):
        return None  # e.g. torch ops on uint32/uint64, or a CuPy ufunc without reduce
    if not d.is_float and op in (Op.SUM, Op.PROD, Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR):
        v = wrap(int(v), d)
    return v


class Base(unittest.TestCase):
    def setUp(self):
        # keyed as when every test lived in test_gpu.py's __main__, so that a seed from an
        # older log gives the same data (self.id() now names the test's module)
        key = "__main__.%s.%s" % (type(self).__name__, self._testMethodName)
        self.rng = np.random.default_rng(SEED + zlib.crc32(key.encode()))

    def assert_result(self, got, ref, tol, what):
        if isinstance(ref, float) and math.isinf(ref):
            self.assertEqual(got, ref, what)
        elif tol:
            self.assertLessEqual(abs(got - ref), tol, "%s: got %r, reference %r, bound %g" % (what, got, ref, tol))
        else:
            self.assertEqual(got, ref, what)
        ok()

    def sweep(self, fw):
        types = INT_TYPES + FLOAT_TYPES
        for d in types:
            for op in ops_for(d):
                for n in SIZES:
                    a = self.make(d, op, n)
                    x = to_torch(a, d) if fw == "torch" else (
                        None if d == DType.BFLOAT16 else cupy.asarray(a))
                    if x is None:
                        continue
                    # A name takes the framework's fast path, an Op the general one: both, by size.
                    oparg = op if n % 2 else OP_NAMES[op]
                    what = "%s %s %s n=%d" % (fw, d.type_name, op.name, n)
                    r = gridsync.reduce(x, oparg)
                    self.assertIs(type(r), type(x), what)
                    self.assertEqual(tuple(r.shape), (), what)
                    want_dt = "int64" if op in (Op.ARGMIN, Op.ARGMAX) else d.type_name
                    self.assertEqual(str(r.dtype).replace("torch.", ""), want_dt, what)
                    got = value(r)
                    hv = host_values(x, d)
                    ref, tol = reference(hv, d, op)
                    self.assert_result(got, ref, tol, what + " vs host reference")
                    if n:
                        fr = framework_result(x, d, op)
                        if fr is not None:
                            self.assert_result(got, fr, 2 * tol + (EPS[d] * abs(fr) if tol else 0),
                                               what + " vs %s" % fw)

    def make(self, d, op, n):
        return make_host(d, op, n, self.rng)


class DLPackOnly:
    def __init__(self, x):
        self.x = x

    def __dlpack__(self, **kw):
        return self.x.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


class CAIOnly:
    def __init__(self, x):
        self.__cuda_array_interface__ = x.__cuda_array_interface__


def main(test_classes):
    """Runs test_classes (unittest's command line applies: a test name picks one) and prints
    'python-gpu: N checks, ...'. Exit status: 0, 1 on a failure, SKIP without a device."""
    if torch is None:
        print("python-gpu: skipped: PyTorch or numpy is not installed")
        return SKIP
    try:
        n = gridsync.device_count()
    except gridsync.GridsyncError as e:
        if e.status_name in ("GS_ERROR_NO_DRIVER", "GS_ERROR_NO_DEVICE"):
            print("python-gpu: skipped: %s" % e)
            return SKIP
        raise
    if n == 0 or not torch.cuda.is_available():
        print("python-gpu: skipped: no CUDA device (or PyTorch without CUDA)")
        return SKIP
    print("python-gpu: seed %d, %s, torch %s, cupy %s, library %s (%s)" % (
        SEED, torch.cuda.get_device_name(), torch.__version__, getattr(cupy, "__version__", "-"),
        gridsync.library_version(), gridsync.library_path()), flush=True)
    tests = types.ModuleType("python_gpu")  # what unittest.main() loads from and resolves names in
    for cls in test_classes:
        setattr(tests, cls.__name__, cls)
    prog = unittest.main(module=tests, exit=False, verbosity=2)
    print("python-gpu: %d checks, %d tests, %d failures, %d errors, %d skipped" % (
        CHECKS[0], prog.result.testsRun, len(prog.result.failures), len(prog.result.errors),
        len(prog.result.skipped)))
    return 0 if prog.result.wasSuccessful() else 1
